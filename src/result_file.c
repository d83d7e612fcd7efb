/* result_file.c — naming and writing the result file of a launch (result_file.h). */
#include "result_file.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "h5out.h"
#include "log.h"

static void join_args(int argc, char **argv, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? " " : "", argv[i]);
    }
}

int result_file_prepare(struct session *s, struct result_file *f)
{
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit becomes a write error we report, not a crash */
    char stamp[32], job[64], err[1024] = "";
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    strftime(f->created_utc, sizeof f->created_utc, "%Y-%m-%dT%H:%M:%SZ", &tm);
    const char *slurm_job = getenv("SLURM_JOB_ID");
    if (slurm_job != NULL && slurm_job[0]) snprintf(job, sizeof job, "job%s", slurm_job);
    else snprintf(job, sizeof job, "pid%d", (int)getpid());
    int bad = 0;
    f->path[0] = '\0';
    f->peers = NULL;
    if (s->launch.rank == 0) {
        bad = h5out_choose_path(&s->cfg, stamp, job, f->path, sizeof f->path, err, sizeof err) != 0;
        if (bad) fprintf(stderr, "dpscale: error: %s\n", err);
    }
    if (session_any_failed(bad)) {
        session_end(s);
        return EXIT_BAD_INPUT;
    }
    world_bcast_bytes(f->path, sizeof f->path);
    world_bcast_bytes(f->created_utc, sizeof f->created_utc);
    return EXIT_OK;
}

/* Collective: rank 0 writes `contents` with the launch's identity and system. */
static int write_contents(struct session *s, const struct result_file *f, int argc, char **argv,
                          const struct h5out_contents *contents)
{
    char *hosts = world_gather_hosts(&s->launch);
    int failed = 0;
    if (s->launch.rank == 0) {
        char cmdline[4096], err[1024];
        join_args(argc, argv, cmdline, sizeof cmdline);
        const char *job = getenv("SLURM_JOB_ID");
        const struct h5out_system sys = {
            .dpscale_version = DPSCALE_VERSION, .created_utc = f->created_utc, .command_line = cmdline,
            .job_id = job != NULL ? job : "", .backend = s->backend.ops->name,
            .device_name = s->backend.info.device_name, .backend_library = s->backend.info.library,
            .mpi_library = s->launch.mpi_library, .driver = s->backend.info.driver,
            .threads_per_rank = s->backend.info.threads, .world_size = s->launch.size, .nnodes = s->launch.nnodes,
            .hosts = hosts, .library = session_library_name(s), .path = config_value_name(&s->cfg, "comm", "path"),
            .nccl_env = s->nccl_env, .topo = &s->topo, .peers = f->peers,
        };
        if (h5out_write(f->path, &s->cfg, &sys, contents, err, sizeof err) != 0) {
            DP_ERROR("free space in run.output_dir or choose another folder", "%s", err);
            failed = 1;
        } else {
            say("\nwrote %s\n", f->path);
        }
    }
    free(hosts);
    return session_any_failed(failed) ? -1 : 0;
}

int result_file_write(struct session *s, const struct result_file *f, int argc, char **argv,
                      const struct run_result *runs, const struct run_summary *sums, int nruns,
                      const struct collective_result *colls, int ncolls)
{
    const struct h5out_contents contents = {nruns > 0 ? s->model : NULL, runs, sums, nruns, colls, ncolls, NULL};
    return write_contents(s, f, argc, argv, &contents);
}

int result_file_write_dump(struct session *s, const struct result_file *f, int argc, char **argv,
                           const struct h5out_dump *dump)
{
    const struct h5out_contents contents = {s->model, NULL, NULL, 0, NULL, 0, dump};
    return write_contents(s, f, argc, argv, &contents);
}

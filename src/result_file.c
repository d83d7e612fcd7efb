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

int result_file_prepare(struct session *s, struct result_file *f)
{
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit becomes a write error we report, not a crash */
    char stamp[32], job[64], err[1024] = "";
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    const char *slurm_job = getenv("SLURM_JOB_ID");
    if (slurm_job != NULL && slurm_job[0]) snprintf(job, sizeof job, "job%s", slurm_job);
    else snprintf(job, sizeof job, "pid%d", (int)getpid());
    int bad = 0;
    f->path[0] = '\0';
    f->peers = NULL;
    if (s->launch.rank == 0) {
        bad = h5file_choose_path(&s->cfg, stamp, job, f->path, sizeof f->path, err, sizeof err) != 0;
        if (bad) fprintf(stderr, "dpscale: error: %s\n", err);
    }
    if (session_any_failed(bad)) {
        session_end(s);
        return EXIT_BAD_INPUT;
    }
    world_bcast_bytes(f->path, sizeof f->path);
    return EXIT_OK;
}

/* Collective: every rank describes itself; rank 0 gathers the descriptions into the
 * launch's provenance. */
static void gather_provenance(struct session *s)
{
    struct provenance_rank *me = &s->rank_provenance;
    const struct backend_info *bi = &s->backend.info;
    provenance_rank_collect(me, s->launch.rank, s->launch.local_rank, s->launch.host, bi->bus_id,
                            bi->device_index >= 0 ? bi->device_name : "", bi->device_index);
    struct provenance_rank *all = world_gather_bytes(me, sizeof *me);
    if (s->launch.rank == 0) {
        free(s->provenance.ranks);
        s->provenance.ranks = all;
        s->provenance.nranks = s->launch.size;
        provenance_finish(&s->provenance);
    }
}

/* Collective: rank 0 writes `contents` with the launch's provenance and system. */
static int write_contents(struct session *s, const struct result_file *f, const struct h5out_contents *contents)
{
    char *hosts = world_gather_hosts(&s->launch);
    gather_provenance(s);
    int failed = 0;
    if (s->launch.rank == 0) {
        char err[1024];
        const struct h5out_system sys = {
            .prov = &s->provenance, .backend = s->backend.ops->name,
            .device_name = s->backend.info.device_name, .backend_library = s->backend.info.library,
            .mpi_library = s->launch.mpi_library, .driver = s->backend.info.driver,
            .threads_per_rank = s->backend.info.threads, .world_size = s->launch.size, .nnodes = s->launch.nnodes,
            .ranks_per_node = s->launch.local_size, .hosts = hosts, .library = session_library_name(s),
            .path = config_value_name(&s->cfg, "comm", "path"), .nccl_env = s->nccl_env, .topo = &s->topo,
            .peers = f->peers,
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
    (void)argc;
    (void)argv;
    const struct h5out_contents contents = {nruns > 0 ? s->model : NULL, runs, sums, nruns, colls, ncolls, NULL};
    return write_contents(s, f, &contents);
}

int result_file_write_dump(struct session *s, const struct result_file *f, int argc, char **argv,
                           const struct h5out_dump *dump)
{
    (void)argc;
    (void)argv;
    const struct h5out_contents contents = {s->model, NULL, NULL, 0, NULL, 0, dump};
    return write_contents(s, f, &contents);
}

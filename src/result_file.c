/* result_file.c — naming and writing the result file of a launch (result_file.h). */
#include "result_file.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "h5file.h"
#include "h5out.h"
#include "log.h"
#include "memlimit.h"

/* The claim (NAME.tmp) that SIGTERM and SIGINT remove: rank 0's; "" elsewhere. */
static char g_claim[4200];

static void release_claim(void)
{
    if (g_claim[0]) unlink(g_claim); /* the points done so far are in NAME already */
}

static void on_terminate(int sig)
{
    release_claim();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* About what the file will take: every timed step's phases and buckets of every rank
 * of every point, the parameters where they are saved (or a dump's parameters and
 * gradients), and the fixed groups. */
static double planned_bytes(const struct session *s)
{
    const struct config *c = &s->cfg;
    const double P = s->model != NULL ? (double)s->model->nparams : 0.0;
    const double buckets = P * 4.0 / (c->bucket_mb * 1e6) + 4.0;
    double total = 4e6 + 8.0 * P;
    for (int i = 0; i < c->nsweep; i++)
        total += (double)c->iters * c->sweep[i] * 8.0 * (16.0 + 4.0 * buckets) + (c->save_params ? 4.0 * P : 0.0);
    return total;
}

int result_file_prepare(struct session *s, struct result_file *f)
{
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit becomes a write error we report, not a crash */
    char stamp[32], job[64], err[1024] = "", note[4400] = "";
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
    f->written = 0;
    if (s->launch.rank == 0) {
        bad = h5file_choose_path(&s->cfg, stamp, job, f->path, sizeof f->path, err, sizeof err, note, sizeof note) != 0;
        /* the file and a replacement beside it, while a sweep rewrites it */
        if (!bad && h5file_check_space(f->path, 2.0 * planned_bytes(s), err, sizeof err) != 0) {
            h5file_release(f->path);
            bad = 1;
        }
        if (bad) fprintf(stderr, "dpscale: error: %s\n", err);
        else if (note[0]) fprintf(stderr, "dpscale: warning: %s\n", note);
        if (!bad) snprintf(g_claim, sizeof g_claim, "%s.tmp", f->path);
    }
    if (session_any_failed(bad)) {
        session_end(s);
        return EXIT_BAD_INPUT;
    }
    world_bcast_bytes(f->path, sizeof f->path);
    struct sigaction sa = {0};
    sa.sa_handler = on_terminate;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    dp_error_set_cleanup(release_claim); /* a failing rank 0, or the watchdog ending the job */
    return EXIT_OK;
}

void result_file_abandon(struct session *s, const struct result_file *f)
{
    if (s->launch.rank == 0 && f->path[0]) h5file_release(f->path);
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
static int write_contents(struct session *s, struct result_file *f, struct h5out_contents *contents)
{
    contents->disk_mode = f->written ? H5FILE_REWRITE : H5FILE_CLAIMED;
    const int partial = contents->points_total > contents->nruns;
    char *hosts = world_gather_hosts(&s->launch);
    gather_provenance(s);
    double mine[3];
    memlimit_figures(mine);
    double *memory = world_gather_bytes(mine, sizeof mine); /* rank 0: every rank's; NULL elsewhere */
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
            .peers = f->peers, .memory = memory,
        };
        if (session_fault_fails_write(s->launch.rank, contents->nruns)) h5file_fill_disk(); /* tests only */
        if (h5out_write(f->path, &s->cfg, &sys, contents, err, sizeof err) != 0) {
            DP_ERROR("free space in run.output_dir or set run.output_dir to another folder", "%s%s", err,
                     f->written ? " (the sweep points written before, marked incomplete)" : "");
            failed = 1;
        } else {
            f->written = 1;
            if (partial) progress_note("kept %d of %d sweep points in %s", contents->nruns, contents->points_total,
                                       f->path);
            else say("\nwrote %s\n", f->path);
        }
    }
    free(hosts);
    free(memory);
    return session_any_failed(failed) ? -1 : 0;
}

int result_file_write(struct session *s, struct result_file *f, int argc, char **argv,
                      const struct run_result *runs, const struct run_summary *sums, int nruns,
                      const struct collective_result *colls, int ncolls)
{
    (void)argc;
    (void)argv;
    struct h5out_contents contents = {nruns > 0 ? s->model : NULL, runs, sums, nruns, colls, ncolls, NULL, 0, 0, NULL};
    return write_contents(s, f, &contents);
}

int result_file_write_partial(struct session *s, struct result_file *f, const struct run_result *runs,
                              const struct run_summary *sums, int done, int planned)
{
    struct h5out_contents contents = {s->model, runs, sums, done, NULL, 0, NULL, 0, planned, NULL};
    return write_contents(s, f, &contents);
}

int result_file_write_dump(struct session *s, struct result_file *f, int argc, char **argv,
                           const struct h5out_dump *dump)
{
    (void)argc;
    (void)argv;
    struct h5out_contents contents = {s->model, NULL, NULL, 0, NULL, 0, dump, 0, 0, NULL};
    return write_contents(s, f, &contents);
}

int result_file_write_diverged(struct session *s, struct result_file *f, const struct run_result *runs,
                               const struct run_summary *sums, int done, int planned, const char *why)
{
    if (done == 0) { /* no point to keep: the error line says what happened */
        result_file_abandon(s, f);
        return 0;
    }
    struct h5out_contents contents = {s->model, runs, sums, done, NULL, 0, NULL, 0, planned, NULL};
    contents.diverged = why;
    return write_contents(s, f, &contents);
}

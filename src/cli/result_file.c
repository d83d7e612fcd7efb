/* result_file.c — naming and writing the result file of a launch (result_file.h). */
#include "cli/result_file.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "train/buckets.h"
#include "base/error.h"
#include "base/fault.h"
#include "result/h5file.h"
#include "result/h5out.h"
#include "base/log.h"
#include "base/memlimit.h"

/* SIGTERM and SIGINT (a Slurm time limit or preemption, ^C). Outside a write the
 * launch ends at once, and rank 0 removes its own claim on the way (the points done so
 * far are in NAME already). Inside one, on every rank from the gathers to the
 * agreement that the file was written, the signal waits for the write to end: rank 0
 * finishes it (or rolls it back) within the grace a launcher gives before SIGKILL
 * (Slurm's KillWait, 30 s by default; mpirun's odls_base_sigkill_timeout, 1 s), and
 * the other ranks stay in the write's collectives instead of dying first, which
 * would have mpirun kill rank 0 mid-write. A flag, not only a blocked mask: a signal
 * sent to the process may land on any thread (the watchdog's, MPI's), whose masks
 * this one does not set. */
static atomic_int g_writing, g_pending;
static sigset_t g_saved_mask;

static void release_claim(void)
{
    h5file_cleanup_now(); /* only our claim, and a temporary being written (a fatal error mid-write) */
}

static void on_terminate(int sig)
{
    if (atomic_load(&g_writing)) {
        atomic_store(&g_pending, sig);
        return;
    }
    release_claim();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void write_begin(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    atomic_store(&g_writing, 1);
    pthread_sigmask(SIG_BLOCK, &set, &g_saved_mask); /* this thread's writes and fsync never see EINTR */
}

/* The write is over (done or rolled back): a signal that came meanwhile acts now. */
static void write_end(const struct session *s, const struct result_file *f, int written)
{
    sigset_t held;
    int sig = atomic_load(&g_pending);
    if (sig == 0 && sigpending(&held) == 0)
        sig = sigismember(&held, SIGTERM) == 1 ? SIGTERM : sigismember(&held, SIGINT) == 1 ? SIGINT : 0;
    if (sig != 0 && written && s->launch.rank == 0) {
        fprintf(stderr, "dpscale: note: %s came while %s was written: the write was finished first, and the file "
                "holds every point measured; the launch ends now\n", sig == SIGINT ? "SIGINT" : "SIGTERM", f->path);
        fflush(stderr);
    }
    atomic_store(&g_writing, 0);
    pthread_sigmask(SIG_SETMASK, &g_saved_mask, NULL); /* one held for this thread is delivered here */
    sig = atomic_exchange(&g_pending, 0);
    if (sig != 0) on_terminate(sig);
}

/* The buckets of a run's per-bucket datasets: the plan training cuts (train.c), with
 * the last tensor split as on more than one rank; 0 without a model. */
static int planned_buckets(const struct config *c, const struct model *m)
{
    if (m == NULL || m->ntensors == 0) return 0;
    struct bucket_plan plan;
    bucket_plan_make(m, c->overlap, c->bucket_mb, c->first_bucket_mb, &plan);
    if (c->overlap) bucket_plan_split_last_if_used(m, c->last_layer_chunks, &plan);
    const int n = plan.nbuckets;
    bucket_plan_free(&plan);
    return n;
}

double result_file_planned_bytes(const struct config *c, const struct model *m)
{
    const double P = m != NULL ? (double)m->nparams : 0.0;
    const double buckets = (double)planned_buckets(c, m);
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
    f->target.dir.fd = -1;
    f->target.claim_fd = -1;
    if (s->launch.rank == 0) {
        bad = h5file_choose_target(&s->cfg, stamp, job, &f->target, f->path, sizeof f->path, err, sizeof err, note,
                                   sizeof note) != 0;
        /* the file and a replacement beside it, while a sweep rewrites it */
        if (!bad &&
            h5file_check_space(&f->target, 2.0 * result_file_planned_bytes(&s->cfg, s->model), err, sizeof err) != 0) {
            h5file_close_target(&f->target);
            bad = 1;
        }
        if (bad) fprintf(stderr, "dpscale: error: %s\n", err);
        else if (note[0]) fprintf(stderr, "dpscale: warning: %s\n", note);
    }
    if (session_any_failed(bad)) {
        session_end(s);
        return EXIT_BAD_INPUT;
    }
    world_bcast_bytes(f->path, sizeof f->path);
    struct sigaction sa = {0};
    sa.sa_handler = on_terminate;
    sa.sa_flags = SA_RESTART; /* a signal that waits for the write interrupts none of its calls */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    dp_error_set_cleanup(release_claim); /* a failing rank 0, or the watchdog ending the job */
    return EXIT_OK;
}

void result_file_abandon(struct session *s, struct result_file *f)
{
    if (s->launch.rank == 0 && f->path[0]) h5file_close_target(&f->target);
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
    write_begin();
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
            .ranks_per_node = s->launch.local_size, .hosts = hosts, .library = comm_library_name_of(s->library),
            .path = config_value_name(&s->cfg, "comm", "path"), .nccl_env = s->nccl_env, .topo = &s->topo,
            .peers = f->peers, .memory = memory,
        };
        if (fault_fails_write(s->launch.rank, contents->nruns)) h5file_fill_disk(); /* tests only */
        const int wrote = h5out_write(f->path, &s->cfg, &sys, contents, err, sizeof err) == 0;
        char moved[4600]; /* the folder's path may no longer lead to the folder written in */
        h5file_folder_note(&f->target, moved, sizeof moved);
        if (!wrote) {
            /* a full disk, or a name taken meanwhile: the image then kept whole beside it */
            DP_ERROR(h5file_kept() != NULL ? "the file kept is the complete result: move it to a name of your choice; "
                                             "what took the result's name is not this launch's and was left alone"
                                           : "free space in run.output_dir or set run.output_dir to another folder",
                     "%s%s%s%s", err, strstr(err, H5FILE_AS_LAST_WRITTEN) != NULL ? " (the sweep points written before, "
                                                                                     "marked incomplete)" : "",
                     moved[0] ? "; " : "", moved);
            failed = 1;
        } else {
            f->written = 1;
            if (partial) progress_note("kept %d of %d sweep points in %s%s%s%s", contents->nruns,
                                       contents->points_total, f->path, moved[0] ? " (" : "", moved,
                                       moved[0] ? ")" : "");
            else say("\nwrote %s%s%s%s\n", f->path, moved[0] ? " (" : "", moved, moved[0] ? ")" : "");
            if (!partial) h5file_close_target(&f->target); /* the launch's last write */
        }
    }
    free(hosts);
    free(memory);
    const int any_failed = session_any_failed(failed);
    write_end(s, f, !failed);
    return any_failed ? -1 : 0;
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

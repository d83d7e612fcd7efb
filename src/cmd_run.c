/* cmd_run.c — `dpscale run`: the sweep over rank counts, the scaling table and
 * the result file.
 *
 * For each N of the sweep the first N ranks train on their own communicator while
 * the others wait at a barrier; rank 0 keeps every run's timings, and at the end
 * summarises them, prints the table and writes one HDF5 file. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "error.h"
#include "h5out.h"
#include "log.h"
#include "session.h"
#include "stats.h"
#include "table.h"
#include "train.h"

static void utc_now(char *stamp, size_t len, char *iso, size_t isolen)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, len, "%Y%m%dT%H%M%SZ", &tm);
    strftime(iso, isolen, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void join_args(int argc, char **argv, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < argc; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s%s", i ? " " : "", argv[i]);
    }
}

static void print_header(const struct session *s, const char *path)
{
    const struct config *c = &s->cfg;
    const struct model *m = s->model;
    char sweep[128];
    config_format_value(c, config_find_key("run", "sweep"), sweep, sizeof sweep);
    say("dpscale %s — data-parallel scaling\n", DPSCALE_VERSION);
    say("  model     %s: %d dense layers, %d -> %d x%d -> %d, %s, %.3f M parameters\n", c->model_name, m->nlayers,
        c->input_dim, c->hidden_dim, m->nlayers > 1 ? m->nlayers - 1 : 0, c->classes,
        config_enum_name(config_find_key("model", "activation"), c->activation), m->nparams / 1e6);
    say("  gradient  %.2f MB per step, one allreduce after backward (transport %s)\n", m->nparams * 4.0 / 1e6,
        s->transport->name);
    say("  training  %s scaling, batch %s %d, %s, %s, %d warm-up + %d timed steps, seed %lld\n",
        config_enum_name(config_find_key("train", "scaling"), c->scaling),
        c->scaling == SCALING_WEAK ? "per rank" : "global", c->scaling == SCALING_WEAK ? c->batch_per_gpu : c->global_batch,
        config_enum_name(config_find_key("train", "precision"), c->precision),
        config_enum_name(config_find_key("train", "optimizer"), c->optimizer), c->warmup, c->iters, c->seed);
    if (s->backend.info.device_index >= 0)
        say("  backend   %s on %s (rank 0: GPU %d, %s), %s, driver %s, peak %s\n", s->backend.ops->name,
            s->backend.info.device_name, s->backend.info.device_index, s->backend.info.bus_id, s->backend.info.library,
            s->backend.info.driver, s->backend.info.peak_tflops > 0 ? "from table or run.peak_tflops" : "unknown: no MFU");
    else
        say("  backend   %s on %s, %s, %d thread(s) per rank\n", s->backend.ops->name, s->backend.info.device_name,
            s->backend.info.library, s->backend.info.threads);
    say("  launch    %d ranks on %d node(s), sweep %s\n", s->launch.size, s->launch.nnodes, sweep);
    say("  output    %s\n\n", path);
}

int cmd_run(int argc, char **argv)
{
    struct session s;
    int rc = session_start(argc, argv, &s);
    if (rc != EXIT_OK) return rc == SESSION_DONE ? EXIT_OK : rc;
    signal(SIGXFSZ, SIG_IGN); /* a file-size limit becomes a write error we report, not a crash */

    /* Rank 0 names the result file and checks it can be written, before any work. */
    char stamp[32], iso[32], job[64], path[4096] = "", err[1024] = "";
    utc_now(stamp, sizeof stamp, iso, sizeof iso);
    const char *slurm_job = getenv("SLURM_JOB_ID");
    if (slurm_job != NULL && slurm_job[0]) snprintf(job, sizeof job, "job%s", slurm_job);
    else snprintf(job, sizeof job, "pid%d", (int)getpid());
    int bad = 0;
    if (s.launch.rank == 0) {
        bad = h5out_choose_path(&s.cfg, stamp, job, path, sizeof path, err, sizeof err) != 0;
        if (bad) fprintf(stderr, "dpscale: error: %s\n", err);
    }
    if (session_any_failed(bad)) {
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    comm_world_bcast_bytes(path, sizeof path);
    print_header(&s, path);

    const int nruns = s.cfg.nsweep;
    struct run_result *runs = calloc((size_t)nruns, sizeof *runs);
    struct run_summary *sums = calloc((size_t)nruns, sizeof *sums);
    CHECK_ALLOC(runs);
    CHECK_ALLOC(sums);
    int failed = 0;
    for (int i = 0; i < nruns && !failed; i++) {
        const int n = s.cfg.sweep[i];
        struct comm *c = comm_create(n, s.transport, backend_stream(&s.backend));
        int mine = 0;
        if (c != NULL) {
            mine = train_run(&s.cfg, s.model, &s.backend, c, s.launch.local_size, &runs[i]) != 0;
            if (!mine && s.launch.rank == 0 && runs[i].replica_max_abs_diff != 0.0) {
                DP_ERROR("the allreduce did not give every rank the same gradient; check the MPI/NCCL installation",
                         "replicas drifted on %d ranks: parameters differ from rank 0 by up to %g", n,
                         runs[i].replica_max_abs_diff);
                mine = 1;
            }
            comm_destroy(c);
        }
        failed = session_any_failed(mine); /* also the barrier where ranks >= n waited */
        if (!failed && s.launch.rank == 0) {
            stats_summarize_run(&runs[i], &sums[i]);
            say("  n=%-4d step %.3f ms, %.1f samples/s, loss %.4f, params sum|p| %.6f hash %016llx\n", n,
                1e3 * sums[i].step_median_s, sums[i].samples_per_s, runs[i].final_loss, runs[i].params_abs_sum,
                (unsigned long long)runs[i].params_hash);
        }
    }

    char *hosts = comm_world_gather_hosts(&s.launch);
    int write_failed = 0;
    if (!failed && s.launch.rank == 0) {
        stats_fill_scaling(sums, nruns);
        say("\n");
        table_print_scaling(stdout, sums, nruns);
        char cmdline[4096];
        join_args(argc, argv, cmdline, sizeof cmdline);
        struct h5out_system sys = {
            .dpscale_version = DPSCALE_VERSION, .created_utc = iso, .command_line = cmdline,
            .job_id = slurm_job != NULL ? slurm_job : "", .backend = s.backend.ops->name,
            .device_name = s.backend.info.device_name, .backend_library = s.backend.info.library,
            .mpi_library = s.launch.mpi_library, .driver = s.backend.info.driver, .threads_per_rank = s.backend.info.threads,
            .world_size = s.launch.size, .nnodes = s.launch.nnodes, .hosts = hosts,
        };
        if (h5out_write(path, &s.cfg, &sys, runs, sums, nruns, err, sizeof err) != 0) {
            DP_ERROR("free space in run.output_dir or choose another folder", "%s", err);
            write_failed = 1;
        } else {
            say("\nwrote %s\n", path);
        }
    }
    free(hosts);
    for (int i = 0; i < nruns; i++) run_result_free(&runs[i]);
    free(runs);
    free(sums);
    failed |= session_any_failed(write_failed);
    session_end(&s);
    return failed ? EXIT_FAILURE_RUN : EXIT_OK;
}

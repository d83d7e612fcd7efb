/* cmd_run.c — `dpscale run`: the sweep over rank counts, the scaling table and
 * the result file.
 *
 * For each N of the sweep the first N ranks train as a group of their own (with a
 * communicator only when N > 1) while the others wait at a barrier; rank 0 keeps
 * every run's timings, and at the end summarises them, prints the table and writes
 * one HDF5 file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/buckets.h"
#include "cli/commands.h"
#include "base/error.h"
#include "cli/result_file.h"
#include "base/log.h"
#include "base/memlimit.h"
#include "cli/session.h"
#include "train/stats.h"
#include "model/registry.h"
#include "model/step.h"
#include "train/table.h"
#include "train/train.h"
#include "base/watchdog.h"

/* Rank 0's memory plan of each point of the sweep, and the limit it is held to. */
static void print_memory(const struct session *s)
{
    const double G = 1073741824.0;
    struct mem_limit host;
    memlimit_host(s->launch.local_size, &host);
    say("  memory    plan per rank");
    for (int i = 0; i < s->cfg.nsweep; i++) {
        struct memory_plan p;
        char err[256];
        if (train_plan_memory(&s->cfg, s->model, &s->backend, s->cfg.sweep[i], 0, &p, err, sizeof err) != 0) continue;
        say("%s n=%d %.3f GiB (device %.3f, host %.3f)", i ? "," : "", s->cfg.sweep[i], p.total_bytes / G,
            p.device_bytes / G, p.host_bytes / G);
    }
    say("; host limit %.3f GiB per rank (%s)\n", host.bytes / G, host.bytes ? host.source : "unknown");
}

static void print_header(const struct session *s, const char *path)
{
    if (log_quiet()) return; /* --quiet: the tables alone */
    const struct config *c = &s->cfg;
    const struct model *m = s->model;
    char sweep[128];
    config_format_value(c, config_find_key("run", "sweep"), sweep, sizeof sweep);
    say("dpscale %s — data-parallel scaling\n", DPSCALE_VERSION);
    char shape[256];
    m->ops->summary(m, shape, sizeof shape);
    say("  model     %s (%s): %s, %.3f M parameters\n", c->model_name, model_type_name(m->type), shape, m->nparams / 1e6);
    struct bucket_plan plan;
    bucket_plan_make(m, c->overlap, c->bucket_mb, c->first_bucket_mb, &plan);
    if (c->overlap) bucket_plan_split_last_if_used(m, c->last_layer_chunks, &plan);
    const char *reduce = c->shard_optimizer ? "reduce-scattered" : "allreduced";
    const char *library = comm_library_name_of(s->library);
    if (c->overlap)
        say("  gradient  %.2f MB per step in %d buckets, each %s as backward produces it (%s over path %s)\n",
            m->nparams * 4.0 / 1e6, plan.nbuckets, reduce, library, config_value_name(c, "comm", "path"));
    else
        say("  gradient  %.2f MB per step, %s at once after backward (%s over path %s)\n", m->nparams * 4.0 / 1e6, reduce,
            library, config_value_name(c, "comm", "path"));
    say("  update    %s%s; 1 rank: no communication at all\n",
        c->overlap_update ? "each bucket's as soon as it is reduced, beside backward" : "the whole arena after backward",
        c->shard_optimizer ? ", 1/N per rank (ZeRO-1), weights all-gathered before the next forward" : "");
    bucket_plan_free(&plan);
    say("  training  %s scaling, batch %s %d, %s, %s, %d warm-up + %d timed steps, seed %lld\n",
        config_value_name(c, "train", "scaling"),
        c->scaling == SCALING_WEAK ? "per rank" : "global", c->scaling == SCALING_WEAK ? c->batch_per_gpu : c->global_batch,
        config_value_name(c, "train", "precision"),
        config_value_name(c, "train", "optimizer"), c->warmup, c->iters, c->seed);
    if (s->backend.info.device_index >= 0)
        say("  backend   %s on %s (rank 0: GPU %d, %s), %s, driver %s, peak %s\n", s->backend.ops->name,
            s->backend.info.device_name, s->backend.info.device_index, s->backend.info.bus_id, s->backend.info.library,
            s->backend.info.driver, s->backend.info.peak_tflops > 0 ? "from table or run.peak_tflops" : "unknown: no MFU");
    else
        say("  backend   %s on %s, %s, %d thread(s) per rank\n", s->backend.ops->name, s->backend.info.device_name,
            s->backend.info.library, s->backend.info.threads);
    say("  launch    %d ranks on %d node(s), sweep %s\n", s->launch.size, s->launch.nnodes, sweep);
    print_memory(s);
    say("  output    %s\n\n", path);
}

/* A run's figures are only worth its correctness: replicas must be equal, and the
 * gradient traffic must have taken the path the run is labelled with (NVLink
 * counters, read around the real steps). Rank 0; returns -1 after saying why. */
static int verify_run(const struct config *cfg, struct run_result *r)
{
    if (r->replica_max_abs_diff != 0.0) {
        DP_ERROR("the allreduce did not give every rank the same gradient; check the MPI/NCCL installation",
                 "replicas drifted on %d ranks: parameters differ from rank 0 by up to %g", r->nranks,
                 r->replica_max_abs_diff);
        return -1;
    }
    const double tx = r->nvlink_tx_bytes, expected = r->nvlink_expected_bytes;
    const char *label = r->path;
    if (cfg->path == PATH_AUTO || r->nranks < 2) {
        snprintf(r->path_proof, sizeof r->path_proof, r->nranks < 2 ? "no communication" : "not asked (path auto)");
    } else if (isnan(tx)) {
        snprintf(r->path_proof, sizeof r->path_proof, "unverified: no NVLink counter on this system");
    } else if (cfg->path == PATH_NVLINK && tx < 0.5 * expected) {
        DP_ERROR("NCCL did not use NVLink: check `dpscale topo` and NCCL_DEBUG=INFO's transport lines",
                 "the run on %d ranks is labelled nvlink, but only %.3g of the %.3g gradient bytes crossed NVLink",
                 r->nranks, tx, expected);
        return -1;
    } else if (cfg->path != PATH_NVLINK && tx > 0.01 * expected) {
        DP_ERROR("another NCCL setting (NCCL_P2P_LEVEL, NCCL_NET...) overrode comm.path; see nccl_env in the file",
                 "the run on %d ranks is labelled %s, but %.3g bytes crossed NVLink (its gradients: %.3g)", r->nranks,
                 label, tx, expected);
        return -1;
    } else {
        snprintf(r->path_proof, sizeof r->path_proof, "verified: %.3g of %.3g gradient bytes over NVLink", tx, expected);
    }
    return 0;
}

/* Collective over the launch: a point whose loss or parameters stopped being finite
 * (train.h) ends the sweep with one line; its figures would be those of a broken run.
 * The reason, for the file, in s->stop_reason. */
static int diverged(struct session *s, const struct run_result *r, int n, int kept)
{
    /* the run's ranks agree on it; rank 0 of the launch is rank 0 of every run */
    int step = s->launch.rank == 0 ? r->diverged_step : -1, rank = s->launch.rank == 0 ? r->diverged_rank : -1;
    world_bcast_bytes(&step, sizeof step);
    world_bcast_bytes(&rank, sizeof rank);
    if (step < 0) return 0;
    if (s->launch.rank == 0) {
        snprintf(s->stop_reason, sizeof s->stop_reason, "the %d-GPU point diverged at step %d of %d on rank %d: %s", n,
                 step + 1, r->steps, rank, r->diverged_what);
        DP_ERROR("lower train.lr (or train.momentum): the figures of a diverged run are not kept",
                 "%s; the sweep stops (%s)", s->stop_reason,
                 kept ? "the points before it are kept, marked incomplete" : "no point was complete: nothing is written");
    }
    return 1;
}

/* How long the ranks wait for a result file's write before the watchdog ends the job:
 * rank 0 builds it and the disk takes it, which no step's time bounds. With run.timeout_s
 * set, that deadline, but at least 10 s plus the file at 100 MB/s; automatic, the
 * start-up deadline plus the file at 10 MB/s (a slow shared file system). */
static double write_deadline_s(const struct session *s)
{
    const double bytes = result_file_planned_bytes(&s->cfg, s->model);
    if (s->cfg.timeout_s > 0) {
        const double floor = 10.0 + bytes / 100e6;
        return s->cfg.timeout_s > floor ? s->cfg.timeout_s : floor;
    }
    return WATCHDOG_START_S + bytes / 10e6;
}

#define MEMORY_HINT "lower train.batch_per_gpu (or train.global_batch), or make the model smaller"

/* A sweep whose buffers do not fit is bad input: refused once, before the header,
 * for the first N of the sweep that a rank takes part in and cannot hold. */
static int sweep_fits(struct session *s)
{
    char err[1024] = "";
    int failed = 0;
    for (int i = 0; i < s->cfg.nsweep && !failed; i++)
        if (s->launch.rank < s->cfg.sweep[i])
            failed = train_memory_fits(&s->cfg, s->model, &s->backend, s->cfg.sweep[i], s->launch.rank,
                                       s->launch.local_size, err, sizeof err) != 0;
    return session_refuse_once(s, failed, MEMORY_HINT, err) ? -1 : 0;
}

int cmd_run(int argc, char **argv)
{
    struct session s;
    int rc = session_start(argc, argv, &s);
    if (rc != EXIT_OK) return rc; /* EXIT_HELP too: main prints the help */
    if (sweep_fits(&s) != 0) {
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    struct result_file out;
    if ((rc = result_file_prepare(&s, &out)) != EXIT_OK) return rc;
    print_header(&s, out.path);

    const int nruns = s.cfg.nsweep;
    struct run_result *runs = calloc((size_t)nruns, sizeof *runs);
    struct run_summary *sums = calloc((size_t)nruns, sizeof *sums);
    CHECK_ALLOC(runs);
    CHECK_ALLOC(sums);
    int failed = 0;
    for (int i = 0; i < nruns && !failed; i++) {
        const int n = s.cfg.sweep[i];
        /* Between the timed passes the ranks still meet in collectives (the point's
         * communicators, the agreement after it, the result file's write): each is armed,
         * so that a rank stopped there (on another node, where no heartbeat shows it) ends
         * the job instead of holding it. Only a rank that waits while others run a point
         * it is not part of waits unarmed: that takes as long as the point. */
        watchdog_arm("point set-up");
        struct group *g = group_create(n);
        int mine = 0;
        if (g != NULL) {
            struct comm *c = session_open_comm(&s, g, 2);
            mine = train_run(&s.cfg, s.model, &s.backend, g, c, comm_library_name_of(s.library), s.launch.local_size,
                             &runs[i]) != 0;
            watchdog_arm("agreement after the point");
            if (!mine && s.launch.rank == 0) mine = verify_run(&s.cfg, &runs[i]) != 0;
            comm_close(c);
            group_destroy(g);
        } else {
            watchdog_idle();
        }
        failed = session_any_failed(mine); /* also the barrier where ranks >= n waited */
        if (!failed && diverged(&s, &runs[i], n, i)) { /* every rank of the run knows; the others learn it here */
            if (s.launch.rank == 0) stats_fill_scaling(sums, i);
            watchdog_arm_for("result-file write", write_deadline_s(&s));
            result_file_write_diverged(&s, &out, runs, sums, i, nruns, s.stop_reason);
            for (int k = 0; k < nruns; k++) run_result_free(&runs[k]);
            free(runs);
            free(sums);
            session_end(&s);
            return EXIT_FAILURE_RUN;
        }
        if (!failed && s.launch.rank == 0) {
            stats_summarize_run(&runs[i], &sums[i]);
            say("  n=%-4d step %.3f ms, %.1f samples/s, loss %.4f, params sum|p| %.6f hash %016llx\n", n,
                1e3 * sums[i].step_median_s, sums[i].samples_per_s, runs[i].final_loss, runs[i].params_abs_sum,
                (unsigned long long)runs[i].params_hash);
        }
        /* what is measured is kept: the file of the points so far, marked incomplete */
        if (!failed && i + 1 < nruns) {
            watchdog_arm_for("result-file write", write_deadline_s(&s));
            if (s.launch.rank == 0) stats_fill_scaling(sums, i + 1);
            failed = result_file_write_partial(&s, &out, runs, sums, i + 1, nruns) != 0;
        }
        watchdog_idle();
    }

    if (!failed && s.launch.rank == 0) {
        stats_fill_scaling(sums, nruns);
        say("\n");
        table_print_scaling(stdout, sums, nruns);
    }
    watchdog_arm_for("result-file write", write_deadline_s(&s));
    if (!failed) failed = result_file_write(&s, &out, argc, argv, runs, sums, nruns, NULL, 0) != 0;
    else result_file_abandon(&s, &out);
    watchdog_idle();
    for (int i = 0; i < nruns; i++) run_result_free(&runs[i]);
    free(runs);
    free(sums);
    session_end(&s);
    return failed ? EXIT_FAILURE_RUN : EXIT_OK;
}

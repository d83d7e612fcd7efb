/* train.c — one run of the sweep, in three passes over the same steps:
 *
 *   1. compute only: warmup + iters steps without communication;
 *   2. the communication alone: every bucket, back to back, ranks lined up first;
 *   3. the real step: the weights reset to their initial values, warmup + iters
 *      steps with communication (overlapped with backward when comm.overlap is on).
 *
 * Pass 3 is exactly the run there would be without 1 and 2 (same weights, same
 * samples), so its loss curve and final parameters are the run's. The per-rank
 * timings of all three are gathered on rank 0, which stats.c turns into the
 * decomposition of the step: compute slowdown, rank imbalance, interference,
 * exposed comm.
 *
 * A run on one rank communicates nothing: pass 3 is its only pass, and it is its
 * own compute-only pass (the honest 1-GPU baseline every efficiency is against). */
#include "train/train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/memlimit.h"
#include "train/shard.h"
#include "train/buckets.h"
#include "train/run_loop.h"
#include "model/step.h"
#include "base/watchdog.h"

#define ALLREDUCE_ALONE_MAX_REPS 20
#define HOST_EVENT_BYTES 64 /* a host event (struct timespec) and its malloc header, rounded up */

/* How many points of the sweep come before the run on n ranks (whose saved
 * parameters rank 0 still holds while it runs). */
static size_t sweep_points_before(const struct config *cfg, int n)
{
    for (int i = 0; i < cfg->nsweep; i++)
        if (cfg->sweep[i] == n) return (size_t)i;
    return 0;
}

/* Host bytes of the timings one run keeps (train_run and gather_rows): per rank its
 * own arrays, and on rank 0 the gathered ones, which the sweep keeps to the end. */
static int timing_bytes(const struct config *cfg, int N, int rank, int nb, size_t *host)
{
    const size_t iters = (size_t)cfg->iters, steps = (size_t)(cfg->warmup + cfg->iters), D = sizeof(double);
    const size_t reps = N == 1 ? 1 : (size_t)(cfg->iters < ALLREDUCE_ALONE_MAX_REPS ? cfg->iters : ALLREDUCE_ALONE_MAX_REPS);
    size_t per_rank = 0;
    int bad = model_add_bytes(&per_rank, iters, NPHASES + 2, D);   /* phases, compute, compute_bwd */
    bad |= model_add_bytes(&per_rank, iters * (size_t)nb, 4, D);  /* bucket start, end, ready x2 */
    bad |= model_add_bytes(&per_rank, reps, 1, D);
    bad |= model_add_bytes(&per_rank, steps, 1, sizeof(float) + D); /* the losses */
    bad |= dp_size_add_checked(*host, per_rank, host);
    if (rank == 0) { /* gather_rows' two copies of every rank's, the kept tables */
        bad |= model_add_bytes(host, per_rank, (size_t)N, 3);
        bad |= model_add_bytes(host, steps, 1, D);
    }
    return bad;
}

static size_t largest_bucket(const struct bucket_plan *b)
{
    size_t most = 0;
    for (int i = 0; i < b->nbuckets; i++)
        if (b->buckets[i].count > most) most = b->buckets[i].count;
    return most;
}

int train_plan_memory(const struct config *cfg, const struct model *m, const struct backend *be, int n, int rank,
                      struct memory_plan *plan, char *err, size_t errlen)
{
    const int B = config_batch_per_rank(cfg, n), steps = cfg->warmup + cfg->iters;
    if (step_plan_memory(cfg, m, be->act_dtype, B, steps, plan, err, errlen) != 0) return -1;
    struct step_layout l;
    int bad = step_layout_make(cfg, m, be->act_dtype, steps, &l);
    const size_t P = m->nparams, F = sizeof(float);
    struct bucket_plan buckets, stages;
    bucket_plan_make(m, cfg->overlap, cfg->bucket_mb, cfg->first_bucket_mb, &buckets);
    if (n > 1 && cfg->overlap) bucket_plan_split_last_if_used(m, cfg->last_layer_chunks, &buckets);
    bucket_plan_per_stage(m, &stages);
    /* The communication buffers of run_loop_init: the copy that travels in 16 bits,
     * and ZeRO-1's replicated ranges (the registered buffers replace the plain ones). */
    if (n > 1) {
        const int ar = cfg->allreduce_dtype == ALLREDUCE_COMPUTE ? be->act_dtype : DT_F32;
        if (ar != l.grad_dtype) bad |= model_add_bytes(&plan->comm_bytes, P, 1, dtype_size(ar));
        if (cfg->shard_optimizer) {
            struct shard_plan shard;
            shard_plan_make(m, &buckets, n, rank, &shard);
            bad |= model_add_bytes(&plan->comm_bytes, shard.rep_total + 1, 1, dtype_size(ar));
            shard_plan_free(&shard);
        }
        /* comm_mpi's reduce-scatter receives each bucket's block into a host scratch
         * until the collective completes: at most every bucket's at once, 1/n of the
         * arena. Its allreduce leaves one to the MPI library: Open MPI's non-blocking
         * allreduce holds a temporary as large as the bucket while it runs (measured on
         * the cpu: the whole gradient's with one bucket). At least the largest bucket
         * is planned; more are in flight when MPI's progress lags backward, which the
         * plan does not bound (tests/integration/test_memory_plan.py). */
        if (cfg->library == LIBRARY_MPI || be->info.device_index < 0) {
            if (cfg->shard_optimizer)
                bad |= model_add_bytes(&plan->host_bytes, P / (size_t)n + (size_t)buckets.nbuckets, 1, F);
            else
                bad |= model_add_bytes(&plan->host_bytes, largest_bucket(&buckets), 1, F);
        }
    }
    /* The host's: the initial parameters every pass starts from (run_loop_init), the
     * final parameters downloaded for the replica check (collect_outcome; kept on
     * rank 0 with run.save_params, beside those of the sweep's earlier points), the
     * events and the timings. */
    bad |= model_add_bytes(&plan->host_bytes, P, 2, F);
    if (cfg->save_params && rank == 0) bad |= model_add_bytes(&plan->host_bytes, P, sweep_points_before(cfg, n), F);
    const size_t events = (size_t)cfg->iters * (NPHASES + 3 * (size_t)buckets.nbuckets) + (size_t)buckets.nbuckets +
                          (size_t)stages.nbuckets + 2;
    bad |= model_add_bytes(&plan->host_bytes, events, 1, HOST_EVENT_BYTES);
    bad |= timing_bytes(cfg, n, rank, buckets.nbuckets, &plan->host_bytes);
    bucket_plan_free(&buckets);
    bucket_plan_free(&stages);
    if (bad || model_plan_sum(plan) != 0) {
        snprintf(err, errlen, "the memory plan of the run on %d ranks overflows a 64-bit size; lower "
                 "train.batch_per_gpu or the model size", n);
        return -1;
    }
    return 0;
}

/* Whether `need` bytes fit in `have` (from `source`, on `where`): 0, or -1 and the
 * refusal in err. */
int train_plan_fits(const struct memory_plan *plan, const char *what, const struct backend *be, int local_size,
                    char *err, size_t errlen)
{
    const double G = 1073741824.0;
    struct mem_limit host;
    memlimit_host(local_size, &host);
    const int on_host = be->info.device_index < 0; /* the cpu backend: its "device" memory is the host's */
    size_t need_host = on_host ? plan->total_bytes : plan->host_bytes;
    const char *parts = "";
    char detail[256];
    snprintf(detail, sizeof detail, "parameters %.2f, gradients %.2f, optimizer %.2f, activations %.2f, data %.2f, "
             "communication %.2f, host copies %.2f GiB", plan->params_bytes / G, plan->grads_bytes / G,
             plan->optimizer_bytes / G, plan->activations_bytes / G, plan->data_bytes / G, plan->comm_bytes / G,
             plan->host_bytes / G);
    parts = detail;
    if (!on_host) {
        const size_t dev = be->ops->memory_available((struct backend *)be, local_size);
        if (dev > 0 && plan->device_bytes > dev) {
            snprintf(err, errlen, "%s needs %.2f GiB of GPU memory per rank (%s) but %s has %.2f GiB free "
                     "(cudaMemGetInfo, less a reserve for the CUDA context and the libraries)",
                     what, plan->device_bytes / G, parts, be->info.device_name, dev / G);
            return -1;
        }
    }
    if (host.bytes > 0 && need_host > host.bytes) {
        snprintf(err, errlen, "%s needs %.2f GiB of host memory per rank (%s) but this rank may take %.2f GiB: "
                 "the limit is %s (%d rank(s) on the node share it)",
                 what, need_host / G, parts, host.bytes / G, host.source, local_size);
        return -1;
    }
    return 0;
}

int train_memory_fits(const struct config *cfg, const struct model *m, struct backend *be, int n, int rank,
                      int local_size, char *err, size_t errlen)
{
    struct memory_plan plan;
    char what[64];
    if (train_plan_memory(cfg, m, be, n, rank, &plan, err, errlen) != 0) return -1;
    snprintf(what, sizeof what, "the run on %d rank%s", n, n == 1 ? "" : "s");
    return train_plan_fits(&plan, what, be, local_size, err, errlen);
}

/* All ranks of g agree whether the memory plan fits; the ranks that lack memory say
 * why (the commands refuse a plan that does not fit before they start: this is
 * the check at the moment of allocation). */
static int check_memory(const struct config *cfg, const struct model *m, struct backend *be, struct group *g,
                        int local_size)
{
    char err[1024];
    const int failed = train_memory_fits(cfg, m, be, group_size(g), group_rank(g), local_size, err, sizeof err) != 0;
    if (failed) DP_ERROR("lower train.batch_per_gpu (or train.global_batch), or make the model smaller", "%s", err);
    return group_max_double(g, failed) > 0 ? -1 : 0;
}

/* The steps of a run on n ranks, for the progress lines: warm-up + timed steps in
 * each pass, the repetitions of the communication alone counted as steps. */
static long long run_steps(const struct config *cfg, int n)
{
    const long long steps = cfg->warmup + cfg->iters;
    const int reps = cfg->iters < ALLREDUCE_ALONE_MAX_REPS ? cfg->iters : ALLREDUCE_ALONE_MAX_REPS;
    return n > 1 ? 2 * steps + reps : steps;
}

/* The progress lines learn that the run on N ranks begins: its place in the sweep,
 * its steps and those of the whole launch. */
static void announce_run(const struct config *cfg, int N)
{
    long long launch = 0;
    int index = 0;
    for (int i = 0; i < cfg->nsweep; i++) {
        launch += run_steps(cfg, cfg->sweep[i]);
        if (cfg->sweep[i] == N && index == 0) index = i + 1;
    }
    if (index == 0) launch += run_steps(cfg, N); /* a run outside the sweep (dpscale bench) */
    progress_point_begin(N, index > 0 ? index : 1, cfg->nsweep > 0 ? cfg->nsweep : 1, run_steps(cfg, N), launch,
                         N > 1 ? "compute-only, comm-only, real" : "real");
}

/* Gather `rows` x `width` values of every rank into out[row][rank][width] on rank 0
 * (NULL elsewhere). */
static double *gather_rows(struct group *c, const double *mine, int rows, int width)
{
    const int N = group_size(c);
    const size_t per_rank = (size_t)rows * width;
    double *all = NULL, *out = NULL;
    if (group_rank(c) == 0) {
        all = calloc(dp_size_mul(per_rank, (size_t)N, "gathered timings") + 1, sizeof(double));
        out = calloc(per_rank * N + 1, sizeof(double));
        CHECK_ALLOC(all);
        CHECK_ALLOC(out);
    }
    group_gather_doubles(c, mine, per_rank, all);
    if (out != NULL)
        for (int r = 0; r < N; r++)
            for (int i = 0; i < rows; i++)
                memcpy(out + ((size_t)i * N + r) * width, all + (size_t)r * per_rank + (size_t)i * width,
                       (size_t)width * sizeof(double));
    free(all);
    return out;
}

/* What diverged, in the order it is looked for (train.h). */
enum { DIVERGED_NONE, DIVERGED_LOSS_NAN, DIVERGED_LOSS_INF, DIVERGED_PARAM_NAN, DIVERGED_PARAM_INF };
static const char *const diverged_names[] = {"", "the loss is nan", "the loss is inf", "a parameter is nan",
                                             "a parameter is inf"};

/* Collective: the earliest step at which some rank diverged, the lowest such rank, and
 * what it saw, into `out` on every rank. */
static void agree_on_divergence(struct run_loop *L, int my_step, int my_kind, struct run_result *out)
{
    struct group *c = L->g;
    const double first = -group_max_double(c, -(double)my_step);
    const int mine = my_kind != DIVERGED_NONE && (double)my_step == first;
    const double who = -group_max_double(c, mine ? -(double)L->rank : -INFINITY);
    const double kind = group_max_double(c, mine && (double)L->rank == who ? (double)my_kind : 0.0);
    out->diverged_step = kind > 0 ? (int)first : -1;
    out->diverged_rank = kind > 0 ? (int)who : -1;
    snprintf(out->diverged_what, sizeof out->diverged_what, "%s", diverged_names[(int)kind]);
}

/* Pass 3's losses, replica check and (optionally) parameters into `out`. */
static void collect_outcome(struct run_loop *L, struct run_result *out)
{
    struct backend *be = L->be;
    struct group *c = L->g;
    const size_t n = L->m->nparams;
    /* Loss of every step over the global batch: the mean of the ranks' means. */
    float *loss_f = calloc((size_t)L->steps, sizeof(float));
    double *loss = calloc((size_t)L->steps, sizeof(double));
    CHECK_ALLOC(loss_f);
    CHECK_ALLOC(loss);
    be->ops->download(be, loss_f, L->rb.loss, (size_t)L->steps * sizeof(float));
    if (fault_poisons_loss(L->rank)) /* tests only: a run that diverges half-way */
        for (int s = L->steps / 2; s < L->steps; s++) loss_f[s] = NAN;
    int bad_step = L->steps, bad = DIVERGED_NONE; /* this rank's first step whose loss is not finite */
    for (int s = 0; s < L->steps; s++) {
        loss[s] = loss_f[s];
        if (bad == DIVERGED_NONE && !isfinite(loss_f[s])) {
            bad_step = s;
            bad = isnan(loss_f[s]) ? DIVERGED_LOSS_NAN : DIVERGED_LOSS_INF;
        }
    }
    group_sum_doubles(c, loss, (size_t)L->steps);
    for (int s = 0; s < L->steps; s++) loss[s] /= L->N;
    free(loss_f);

    /* Replicas must not drift: compare hashes, and measure the drift if they differ.
     * 53 bits of the hash travel exactly in a double. */
    run_loop_gather_params(L);
    float *params = malloc(n * sizeof(float));
    CHECK_ALLOC(params);
    be->ops->download(be, params, L->rb.params, n * sizeof(float));
    const uint64_t hash = model_params_hash(params, n);
    double abs_sum = 0.0;
    for (size_t i = 0; i < n; i++) abs_sum += fabs((double)params[i]);
    for (size_t i = 0; i < n && bad == DIVERGED_NONE && !isfinite(abs_sum); i++)
        if (!isfinite(params[i])) { /* the last update overflowed: NaN replicas hash alike */
            bad_step = L->steps - 1;
            bad = isnan(params[i]) ? DIVERGED_PARAM_NAN : DIVERGED_PARAM_INF;
        }
    agree_on_divergence(L, bad_step, bad, out);
    const double h53 = (double)(hash >> 11), lo = -group_max_double(c, -h53), hi = group_max_double(c, h53);
    double max_diff = 0.0;
    if (lo != hi) {
        float *reference = malloc(n * sizeof(float));
        CHECK_ALLOC(reference);
        if (L->rank == 0) memcpy(reference, params, n * sizeof(float));
        group_bcast_bytes(c, reference, n * sizeof(float));
        for (size_t i = 0; i < n; i++) {
            double diff = fabs((double)params[i] - (double)reference[i]);
            if (diff > max_diff || isnan(diff)) max_diff = isnan(diff) ? INFINITY : diff;
        }
        free(reference);
        max_diff = group_max_double(c, max_diff);
    }
    if (L->rank == 0) {
        out->loss = loss;
        loss = NULL;
        out->final_loss = out->loss[L->steps - 1];
        out->params_hash = hash;
        out->params_abs_sum = abs_sum;
        out->replica_max_abs_diff = max_diff;
        if (L->cfg->save_params) {
            out->params = params;
            params = NULL;
        }
    }
    free(loss);
    free(params);
}

/* The compute-only figures of a pass: each timed step and its backward. */
static void keep_compute_only(const double *phases, int iters, double *step, double *backward)
{
    for (int i = 0; i < iters; i++) {
        step[i] = phases[(size_t)i * NPHASES + PHASE_STEP];
        backward[i] = phases[(size_t)i * NPHASES + PHASE_BACKWARD];
    }
}

int train_run(const struct config *cfg, const struct model *m, struct backend *be, struct group *g, struct comm *c,
              const char *library, int local_size, struct run_result *out)
{
    const int N = group_size(g);
    const int B = config_batch_per_rank(cfg, N);
    const int steps = cfg->warmup + cfg->iters, iters = cfg->iters;
    memset(out, 0, sizeof *out);
    out->nranks = N;
    out->nnodes = group_nnodes(g);
    out->batch_per_rank = B;
    out->global_batch = B * N;
    out->iters = iters;
    out->steps = steps;
    out->nparams = m->nparams;
    out->communicates = c != NULL;
    out->gemm_flops_per_step = model_gemm_flops_per_sample(m) * (double)out->global_batch;
    snprintf(out->library, sizeof out->library, "%s", library);
    snprintf(out->path, sizeof out->path, "%s", config_value_name(cfg, "comm", "path"));

    announce_run(cfg, N);
    if (check_memory(cfg, m, be, g, local_size) != 0) return -1;
    struct memory_plan mplan;
    char perr[256];
    memlimit_note_baseline(); /* the resident set before the first run's buffers */
    if (train_plan_memory(cfg, m, be, N, group_rank(g), &mplan, perr, sizeof perr) == 0)
        memlimit_note_plan(mplan.total_bytes);
    struct run_loop L;
    run_loop_init(&L, cfg, m, be, g, c);
    out->allreduce_bytes = c != NULL ? (double)m->nparams * dtype_size(L.ar_dtype) : 0.0;
    out->gather_bytes = L.sharded ? (double)m->nparams * (L.rb.params_lp != NULL ? dtype_size(be->act_dtype) : 4) : 0.0;
    snprintf(out->allreduce_dtype, sizeof out->allreduce_dtype, "%s", c != NULL ? dtype_name(L.ar_dtype) : "none");
    out->nbuckets = L.plan.nbuckets;
    const int nb = L.plan.nbuckets;
    /* one rank: no pass 2, and one row of zeros stands for its communication */
    const int reps = c == NULL ? 1 : iters < ALLREDUCE_ALONE_MAX_REPS ? iters : ALLREDUCE_ALONE_MAX_REPS;
    double *phases = calloc((size_t)iters * NPHASES, sizeof(double)), *compute = calloc((size_t)iters, sizeof(double));
    double *compute_bwd = calloc((size_t)iters, sizeof(double)), *alone = calloc((size_t)reps, sizeof(double));
    double *bstart = calloc((size_t)iters * nb, sizeof(double)), *bend = calloc((size_t)iters * nb, sizeof(double));
    double *bready = calloc((size_t)iters * nb, sizeof(double)), *bready_co = calloc((size_t)iters * nb, sizeof(double));
    CHECK_ALLOC(bready);
    CHECK_ALLOC(bready_co);
    CHECK_ALLOC(phases);
    CHECK_ALLOC(compute);
    CHECK_ALLOC(compute_bwd);
    CHECK_ALLOC(alone);
    CHECK_ALLOC(bstart);
    CHECK_ALLOC(bend);

    if (c != NULL) {
        /* 1. compute only */
        progress_pass_begin("compute-only", cfg->warmup, iters);
        run_loop_reset(&L);
        watchdog_arm("compute-only");
        run_loop_steps(&L, 0);
        run_loop_phase_times(&L, phases);
        keep_compute_only(phases, iters, compute, compute_bwd);
        run_loop_ready_times(&L, bready_co);
        /* 2. the communication alone */
        progress_pass_begin("comm-only", 0, reps);
        watchdog_arm("communication-alone");
        run_loop_comm_alone(&L, reps, alone);
    }
    /* 3. the real step, from the initial weights */
    progress_pass_begin("real", cfg->warmup, iters);
    run_loop_reset(&L);
    watchdog_arm("real");
    run_loop_steps(&L, 1);
    run_loop_phase_times(&L, phases);
    run_loop_bucket_times(&L, bstart, bend);
    run_loop_ready_times(&L, bready);
    if (c == NULL) { /* the real step is its own */
        keep_compute_only(phases, iters, compute, compute_bwd);
        memcpy(bready_co, bready, (size_t)iters * nb * sizeof(double));
    }

    watchdog_note(-1, -1); /* the outcome's reductions */
    double nvlink = L.nvlink_tx_bytes;
    group_sum_doubles(g, &nvlink, 1);
    out->nvlink_tx_bytes = nvlink;
    /* every rank sends (N-1)/N of the bus bytes */
    out->nvlink_expected_bytes = (N - 1) * run_bus_bytes(out) * steps;
    double energy = L.timed_energy_j; /* NaN on any rank makes the sum NaN: no partial figure */
    group_sum_doubles(g, &energy, 1);
    out->energy_j = energy;
    out->timed_wall_s = group_max_double(g, L.timed_wall_s);
    out->host_enqueue_s = group_max_double(g, L.host_enqueue_s);
    out->peak_tflops = be->info.peak_tflops;

    double *gathered = gather_rows(g, phases, iters, NPHASES);
    out->compute_only = gather_rows(g, compute, iters, 1);
    out->compute_only_backward = gather_rows(g, compute_bwd, iters, 1);
    out->allreduce_reps = reps;
    out->allreduce_alone = gather_rows(g, alone, reps, 1);
    out->bucket_start = gather_rows(g, bstart, iters, nb);
    out->bucket_end = gather_rows(g, bend, iters, nb);
    out->bucket_ready = gather_rows(g, bready, iters, nb);
    out->bucket_ready_compute_only = gather_rows(g, bready_co, iters, nb);
    if (group_rank(g) == 0) {
        for (int p = 0; p < NPHASES; p++) {
            out->times[p] = calloc((size_t)iters * N, sizeof(double));
            CHECK_ALLOC(out->times[p]);
            for (size_t i = 0; i < (size_t)iters * N; i++) out->times[p][i] = gathered[i * NPHASES + p];
        }
        out->bucket_count = calloc((size_t)nb, sizeof(double));
        CHECK_ALLOC(out->bucket_count);
        for (int k = 0; k < nb; k++) out->bucket_count[k] = (double)L.plan.buckets[k].count;
    }
    collect_outcome(&L, out);

    free(gathered);
    free(phases);
    free(compute);
    free(compute_bwd);
    free(alone);
    free(bstart);
    free(bend);
    free(bready);
    free(bready_co);
    run_loop_free(&L);
    watchdog_idle();
    progress_point_end();
    return 0;
}

/* train.c — the data-parallel training step and its timed loop.
 *
 * step = synthetic batch -> forward (GEMM + fused bias/activation per layer) ->
 * softmax cross-entropy -> backward (activation gradient, bias gradient, weight
 * gradient, input gradient per layer, last layer first) -> allreduce of the whole
 * gradient arena -> optimizer over the whole arena.
 *
 * Timing: an event is recorded at each phase boundary of every timed step and only
 * read after the loop, so nothing but the gradient allreduce synchronises ranks
 * inside the timed loop. Per-rank timings are gathered on rank 0 afterwards. */
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "error.h"
#include "session.h"
#include "step.h"

const char *const phase_names[NPHASES] = {"forward_s", "backward_s", "allreduce_s", "update_s", "step_s"};

static void format_bytes(double bytes, char *buf, size_t len)
{
    snprintf(buf, len, "%.2f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
}

/* All ranks of c agree whether the memory plan fits; the ranks that lack memory say why. */
static int check_memory(const struct config *cfg, const struct model *m, struct backend *be, struct comm *c,
                        int local_size, int B, int steps)
{
    struct memory_plan plan;
    char err[512], need[32], have[32];
    int failed = 0;
    if (model_plan_memory(m, cfg->optimizer, dtype_size(be->act_dtype), B, steps, &plan, err, sizeof err) != 0) {
        DP_ERROR(NULL, "%s", err);
        failed = 1;
    } else {
        size_t available = be->ops->memory_available(be, local_size);
        if (available > 0 && plan.total_bytes > available) {
            format_bytes((double)plan.total_bytes, need, sizeof need);
            format_bytes((double)available, have, sizeof have);
            DP_ERROR("lower train.batch_per_gpu (or train.global_batch), model.hidden_dim or model.layers",
                     "the run on %d ranks needs %s per rank (parameters %.2f, gradients %.2f, optimizer %.2f, "
                     "activations %.2f, data %.2f GiB) but %s has %s free for this rank (%d on the node)",
                     comm_size(c), need, plan.params_bytes / 1073741824.0, plan.grads_bytes / 1073741824.0,
                     plan.optimizer_bytes / 1073741824.0, plan.activations_bytes / 1073741824.0,
                     plan.data_bytes / 1073741824.0, be->info.device_name, have, local_size);
            failed = 1;
        }
    }
    return comm_max_double(c, failed) > 0 ? -1 : 0;
}

#define ALLREDUCE_ALONE_MAX_REPS 20

/* The gradient allreduce by itself, `reps` times, the GPU idle and the ranks lined
 * up by a barrier before each: the transport's own time, free of the skew between
 * ranks that the step's allreduce phase also contains. Returns this rank's times. */
static double *time_allreduce_alone(struct backend *be, struct comm *c, float *grads, size_t count, int reps)
{
    double *t = calloc((size_t)reps, sizeof(double));
    CHECK_ALLOC(t);
    struct backend_event *a = be->ops->event_create(be), *b = be->ops->event_create(be);
    for (int i = 0; i < reps; i++) {
        be->ops->synchronize(be);
        comm_barrier(c);
        be->ops->event_record(be, a);
        comm_allreduce_start(c, grads, count);
        comm_allreduce_wait_all(c);
        be->ops->event_record(be, b);
        t[i] = be->ops->event_elapsed_s(be, a, b);
    }
    be->ops->event_destroy(be, a);
    be->ops->event_destroy(be, b);
    return t;
}

/* Gather [reps] per rank into out[reps x N] on rank 0. */
static double *gather_by_rank(struct comm *c, const double *mine, int reps)
{
    const int N = comm_size(c);
    double *all = NULL, *out = NULL;
    if (comm_rank(c) == 0) {
        all = calloc((size_t)reps * N, sizeof(double));
        out = calloc((size_t)reps * N, sizeof(double));
        CHECK_ALLOC(all);
        CHECK_ALLOC(out);
    }
    comm_gather_doubles(c, mine, (size_t)reps, all);
    if (out != NULL)
        for (int i = 0; i < reps; i++)
            for (int r = 0; r < N; r++) out[(size_t)i * N + r] = all[(size_t)r * reps + i];
    free(all);
    return out;
}

static double wall_clock_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int train_run(const struct config *cfg, const struct model *m, struct backend *be, struct comm *c, int local_size,
              struct run_result *out)
{
    const int N = comm_size(c), rank = comm_rank(c);
    const int B = config_batch_per_rank(cfg, N);
    const int steps = cfg->warmup + cfg->iters;
    memset(out, 0, sizeof *out);
    out->nranks = N;
    out->nnodes = comm_nnodes(c);
    out->batch_per_rank = B;
    out->global_batch = B * N;
    out->iters = cfg->iters;
    out->steps = steps;
    out->nparams = m->nparams;
    out->gemm_flops_per_step = model_gemm_flops_per_sample(m) * (double)out->global_batch;
    out->allreduce_bytes = (double)m->nparams * sizeof(float);
    snprintf(out->transport, sizeof out->transport, "%s", comm_transport_name(c));

    if (check_memory(cfg, m, be, c, local_size, B, steps) != 0) return -1;

    struct step_buffers rb;
    step_buffers_alloc(be, cfg, m, B, steps, &rb);
    float *host_params = malloc(dp_size_mul(m->nparams, sizeof(float), "the parameters"));
    CHECK_ALLOC(host_params);
    model_init_params(m, (uint64_t)cfg->seed, host_params);
    step_set_params(be, m, &rb, host_params);

    const size_t nevents = (size_t)cfg->iters * (NPHASES);
    struct backend_event **ev = calloc(nevents, sizeof *ev);
    CHECK_ALLOC(ev);
    for (size_t i = 0; i < nevents; i++) ev[i] = be->ops->event_create(be);

    const double loss_scale = config_loss_scale(cfg);
    struct optim_hparams h = {
        .kind = cfg->optimizer, .lr = (float)cfg->lr, .momentum = (float)cfg->momentum,
        .weight_decay = (float)cfg->weight_decay, .beta1 = (float)cfg->beta1, .beta2 = (float)cfg->beta2,
        .eps = (float)cfg->eps, .grad_scale = (float)(1.0 / (N * loss_scale)), .step = 0,
    };
    comm_barrier(c); /* start together: the first step must not absorb start-up skew */
    double energy0 = -1.0, wall0 = 0.0;

    for (int s = 0; s < steps; s++) {
        session_maybe_inject_fault(rank, s); /* tests only: a rank that dies mid-run */
        const int timed = s >= cfg->warmup;
        if (s == cfg->warmup) { /* the energy counter and the clock bracket the timed steps */
            be->ops->synchronize(be);
            energy0 = backend_energy_j(be);
            wall0 = wall_clock_s();
        }
        struct backend_event **e = timed ? ev + (size_t)(s - cfg->warmup) * NPHASES : NULL;
        /* The samples of this rank: a slice of the global batch of step s. */
        const uint64_t first = (uint64_t)s * (uint64_t)out->global_batch + (uint64_t)rank * (uint64_t)B;
        be->ops->synth_batch(be, rb.x, rb.labels, first, B, m->input_dim, m->classes, (uint64_t)cfg->seed);

        if (timed) be->ops->event_record(be, e[PHASE_STEP]); /* slot STEP holds the step's start */
        step_forward_loss(be, m, &rb, B, s, (float)loss_scale);
        if (timed) be->ops->event_record(be, e[PHASE_FORWARD]);
        step_backward(be, m, &rb, B);
        if (timed) be->ops->event_record(be, e[PHASE_BACKWARD]);
        comm_allreduce_start(c, rb.grads, m->nparams);
        comm_allreduce_wait_all(c);
        if (timed) be->ops->event_record(be, e[PHASE_ALLREDUCE]);
        h.step = s + 1;
        be->ops->optimizer_step(be, rb.params, rb.grads, rb.state1, rb.state2, rb.params_lp, m->nparams, &h);
        if (timed) be->ops->event_record(be, e[PHASE_UPDATE]);
    }
    be->ops->synchronize(be);
    const double wall = wall_clock_s() - wall0, energy1 = backend_energy_j(be);
    /* energy of the run: the sum over ranks, NaN if any rank has no counter */
    double energy = energy0 >= 0 && energy1 >= 0 ? energy1 - energy0 : NAN;
    comm_sum_doubles(c, &energy, 1);
    out->timed_wall_s = comm_max_double(c, wall);
    out->energy_j = energy;
    out->peak_tflops = be->info.peak_tflops;

    out->allreduce_reps = cfg->iters < ALLREDUCE_ALONE_MAX_REPS ? cfg->iters : ALLREDUCE_ALONE_MAX_REPS;
    double *alone = time_allreduce_alone(be, c, rb.grads, m->nparams, out->allreduce_reps);
    out->allreduce_alone = gather_by_rank(c, alone, out->allreduce_reps);
    free(alone);

    /* Phase durations of every timed step on this rank: [iter][phase]. */
    double *mine = calloc(nevents, sizeof(double));
    CHECK_ALLOC(mine);
    for (int i = 0; i < cfg->iters; i++) {
        struct backend_event **e = ev + (size_t)i * NPHASES;
        double *t = mine + (size_t)i * NPHASES;
        t[PHASE_FORWARD] = be->ops->event_elapsed_s(be, e[PHASE_STEP], e[PHASE_FORWARD]);
        t[PHASE_BACKWARD] = be->ops->event_elapsed_s(be, e[PHASE_FORWARD], e[PHASE_BACKWARD]);
        t[PHASE_ALLREDUCE] = be->ops->event_elapsed_s(be, e[PHASE_BACKWARD], e[PHASE_ALLREDUCE]);
        t[PHASE_UPDATE] = be->ops->event_elapsed_s(be, e[PHASE_ALLREDUCE], e[PHASE_UPDATE]);
        t[PHASE_STEP] = be->ops->event_elapsed_s(be, e[PHASE_STEP], e[PHASE_UPDATE]);
    }
    double *all = NULL;
    if (rank == 0) {
        all = calloc(dp_size_mul(nevents, (size_t)N, "the gathered timings"), sizeof(double));
        CHECK_ALLOC(all);
    }
    comm_gather_doubles(c, mine, nevents, all);
    if (rank == 0) {
        for (int p = 0; p < NPHASES; p++) {
            out->times[p] = calloc((size_t)cfg->iters * (size_t)N, sizeof(double));
            CHECK_ALLOC(out->times[p]);
            for (int i = 0; i < cfg->iters; i++)
                for (int r = 0; r < N; r++)
                    out->times[p][(size_t)i * N + r] = all[((size_t)r * cfg->iters + i) * NPHASES + p];
        }
    }

    /* Loss of every step over the global batch: the mean of the ranks' means. */
    float *loss_f = calloc((size_t)steps, sizeof(float));
    double *loss = calloc((size_t)steps, sizeof(double));
    CHECK_ALLOC(loss_f);
    CHECK_ALLOC(loss);
    be->ops->download(be, loss_f, rb.loss, (size_t)steps * sizeof(float));
    for (int s = 0; s < steps; s++) loss[s] = loss_f[s];
    comm_sum_doubles(c, loss, (size_t)steps);
    for (int s = 0; s < steps; s++) loss[s] /= N;

    /* Replicas must not drift: compare hashes, and measure the drift if they differ. */
    be->ops->download(be, host_params, rb.params, m->nparams * sizeof(float));
    uint64_t hash = model_params_hash(host_params, m->nparams);
    double abs_sum = 0.0;
    for (size_t i = 0; i < m->nparams; i++) abs_sum += fabs((double)host_params[i]);
    double hash_lo = (double)(hash >> 11), lo = -comm_max_double(c, -hash_lo), hi = comm_max_double(c, hash_lo);
    double max_diff = 0.0;
    if (lo != hi) {
        float *reference = malloc(m->nparams * sizeof(float));
        CHECK_ALLOC(reference);
        if (rank == 0) memcpy(reference, host_params, m->nparams * sizeof(float));
        comm_bcast_bytes(c, reference, m->nparams * sizeof(float));
        for (size_t i = 0; i < m->nparams; i++) {
            double diff = fabs((double)host_params[i] - (double)reference[i]);
            if (diff > max_diff || isnan(diff)) max_diff = isnan(diff) ? INFINITY : diff;
        }
        free(reference);
        max_diff = comm_max_double(c, max_diff);
    }
    if (rank == 0) {
        out->loss = loss;
        loss = NULL;
        out->final_loss = out->loss[steps - 1];
        out->params_hash = hash;
        out->params_abs_sum = abs_sum;
        out->replica_max_abs_diff = max_diff;
        if (cfg->save_params) {
            out->params = host_params;
            host_params = NULL;
        }
    }

    free(loss);
    free(loss_f);
    free(all);
    free(mine);
    for (size_t i = 0; i < nevents; i++) be->ops->event_destroy(be, ev[i]);
    free(ev);
    free(host_params);
    step_buffers_free(be, m, &rb);
    return 0;
}

void run_result_free(struct run_result *r)
{
    for (int p = 0; p < NPHASES; p++) free(r->times[p]);
    free(r->loss);
    free(r->allreduce_alone);
    free(r->params);
    memset(r, 0, sizeof *r);
}

/* run_loop.c — the timed loops of one run (run_loop.h).
 *
 * A step: synthetic batch -> forward + loss -> backward, which starts each gradient
 * bucket's allreduce as soon as the layers it holds are done (comm.overlap) ->
 * wait for the allreduces -> optimizer. Events mark the phase boundaries of every
 * timed step and, through the transport's marker hook, the start and end of every
 * bucket; they are read only after the loop, so nothing but the allreduce itself
 * synchronises the ranks inside it. */
#include "run_loop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "session.h"

static void *bucket_ptr(const struct run_loop *L, const struct bucket *b)
{
    return L->comm_buf != NULL ? (char *)L->comm_buf + b->offset * dtype_size(L->ar_dtype)
                               : (void *)(L->rb.grads + b->offset);
}

/* The transport's marker hook: record bucket `tag`'s start or end of the marked step. */
static void mark_bucket(void *ctx, int tag, int is_end, void *stream)
{
    struct run_loop *L = ctx;
    if (L->marking < 0) return;
    struct backend_event *e = L->bucket_ev[((size_t)L->marking * L->plan.nbuckets + tag) * 2 + is_end];
    L->be->ops->event_record_on(L->be, e, stream);
}

static void start_bucket(struct run_loop *L, int k)
{
    const struct bucket *b = &L->plan.buckets[k];
    void *p = bucket_ptr(L, b);
    if (L->comm_buf != NULL) L->be->ops->cast_from_f32(L->be, p, L->rb.grads + b->offset, b->count);
    comm_allreduce_start(L->c, p, p, b->count, L->ar_dtype, L->ar_op, k);
}

/* step_hook: backward finished `layer`; start every bucket that is now complete. */
static void on_layer_done(void *ctx, int layer)
{
    struct run_loop *L = ctx;
    while (L->next_bucket < L->plan.nbuckets && L->plan.buckets[L->next_bucket].ready_after_layer >= layer)
        start_bucket(L, L->next_bucket++);
    comm_progress(L->c);
}

void run_loop_init(struct run_loop *L, const struct config *cfg, const struct model *m, struct backend *be,
                   struct comm *c)
{
    memset(L, 0, sizeof *L);
    L->cfg = cfg;
    L->m = m;
    L->be = be;
    L->c = c;
    L->N = comm_size(c);
    L->rank = comm_rank(c);
    L->B = config_batch_per_rank(cfg, L->N);
    L->iters = cfg->iters;
    L->steps = cfg->warmup + cfg->iters;
    L->marking = -1;
    step_buffers_alloc(be, cfg, m, L->B, L->steps, &L->rb);
    bucket_plan_make(m, cfg->overlap, cfg->bucket_mb, cfg->first_bucket_mb, &L->plan);

    L->ar_dtype = cfg->allreduce_dtype == ALLREDUCE_COMPUTE ? be->act_dtype : DT_F32;
    if (L->ar_dtype != DT_F32) L->comm_buf = be->ops->alloc(be, dp_size_mul(m->nparams, dtype_size(L->ar_dtype), "gradients"));
    L->ar_op = cfg->allreduce_op;
    const double mean = L->ar_op == ALLREDUCE_AVG && comm_has_avg(c) ? 1.0 : 1.0 / L->N;
    L->grad_scale = (float)(mean / config_loss_scale(cfg));

    L->initial_params = malloc(dp_size_mul(m->nparams, sizeof(float), "the parameters"));
    CHECK_ALLOC(L->initial_params);
    model_init_params(m, (uint64_t)cfg->seed, L->initial_params);

    const size_t nphase = (size_t)L->iters * NPHASES, nbucket = (size_t)L->iters * L->plan.nbuckets * 2;
    L->phase_ev = calloc(nphase, sizeof *L->phase_ev);
    L->bucket_ev = calloc(nbucket, sizeof *L->bucket_ev);
    CHECK_ALLOC(L->phase_ev);
    CHECK_ALLOC(L->bucket_ev);
    for (size_t i = 0; i < nphase; i++) L->phase_ev[i] = be->ops->event_create(be);
    for (size_t i = 0; i < nbucket; i++) L->bucket_ev[i] = be->ops->event_create(be);
    comm_set_marker(c, mark_bucket, L);
}

void run_loop_free(struct run_loop *L)
{
    struct backend *be = L->be;
    comm_set_marker(L->c, NULL, NULL);
    for (size_t i = 0; i < (size_t)L->iters * NPHASES; i++) be->ops->event_destroy(be, L->phase_ev[i]);
    for (size_t i = 0; i < (size_t)L->iters * L->plan.nbuckets * 2; i++) be->ops->event_destroy(be, L->bucket_ev[i]);
    free(L->phase_ev);
    free(L->bucket_ev);
    if (L->comm_buf != NULL) be->ops->free(be, L->comm_buf);
    free(L->initial_params);
    bucket_plan_free(&L->plan);
    step_buffers_free(be, L->m, &L->rb);
}

void run_loop_reset(struct run_loop *L)
{
    const size_t bytes = L->m->nparams * sizeof(float);
    step_set_params(L->be, L->m, &L->rb, L->initial_params);
    L->be->ops->zero(L->be, L->rb.state1, bytes);
    if (L->rb.state2 != NULL) L->be->ops->zero(L->be, L->rb.state2, bytes);
}

static void one_step(struct run_loop *L, int s, int with_comm)
{
    struct backend *be = L->be;
    const int timed = s >= L->cfg->warmup;
    struct backend_event **e = timed ? L->phase_ev + (size_t)(s - L->cfg->warmup) * NPHASES : NULL;
    const struct step_hook hook = {on_layer_done, L};

    session_maybe_inject_fault(L->rank, s); /* tests only: a rank that dies mid-run */
    /* The samples of this rank: its slice of the global batch of step s. */
    const uint64_t first = (uint64_t)s * (uint64_t)L->B * L->N + (uint64_t)L->rank * (uint64_t)L->B;
    be->ops->synth_batch(be, L->rb.x, L->rb.labels, first, L->B, L->m->input_dim, L->m->classes, (uint64_t)L->cfg->seed);

    if (timed) be->ops->event_record(be, e[PHASE_STEP]); /* slot STEP holds the step's start */
    step_forward_loss(be, L->m, &L->rb, L->B, s, (float)config_loss_scale(L->cfg));
    if (timed) be->ops->event_record(be, e[PHASE_FORWARD]);
    L->next_bucket = 0;
    L->marking = timed && with_comm ? s - L->cfg->warmup : -1;
    step_backward(be, L->m, &L->rb, L->B, with_comm && L->cfg->overlap ? &hook : NULL);
    if (timed) be->ops->event_record(be, e[PHASE_BACKWARD]);
    if (with_comm) {
        while (L->next_bucket < L->plan.nbuckets) start_bucket(L, L->next_bucket++);
        comm_allreduce_wait_all(L->c);
        if (L->comm_buf != NULL) be->ops->cast_to_f32(be, L->rb.grads, L->comm_buf, L->m->nparams);
    }
    L->marking = -1;
    if (timed) be->ops->event_record(be, e[PHASE_COMM_EXPOSED]);
    const struct optim_hparams h = {
        .kind = L->cfg->optimizer, .lr = (float)L->cfg->lr, .momentum = (float)L->cfg->momentum,
        .weight_decay = (float)L->cfg->weight_decay, .beta1 = (float)L->cfg->beta1, .beta2 = (float)L->cfg->beta2,
        .eps = (float)L->cfg->eps, .grad_scale = L->grad_scale, .step = s + 1,
    };
    be->ops->optimizer_step(be, L->rb.params, L->rb.grads, L->rb.state1, L->rb.state2, L->rb.params_lp, L->m->nparams, &h);
    if (timed) be->ops->event_record(be, e[PHASE_UPDATE]);
}

#define ENERGY_MIN_WINDOW_S 1.0

static double wall_clock_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void run_loop_steps(struct run_loop *L, int with_comm)
{
    double energy0 = -1.0, wall0 = 0.0;
    L->be->ops->synchronize(L->be);
    const double nvlink0 = backend_nvlink_tx_bytes(L->be);
    comm_barrier(L->c); /* start together: the first step must not absorb start-up skew */
    for (int s = 0; s < L->steps; s++) {
        if (s == L->cfg->warmup) { /* the energy counter and the clock bracket the timed steps */
            L->be->ops->synchronize(L->be);
            energy0 = backend_energy_j(L->be);
            wall0 = wall_clock_s();
        }
        one_step(L, s, with_comm);
    }
    L->be->ops->synchronize(L->be);
    L->timed_wall_s = wall_clock_s() - wall0;
    const double energy1 = backend_energy_j(L->be);
    /* NVML's energy counter moves in steps (tens of ms): over a short window or with no
     * movement at all the figure would be noise or zero, so it is left unknown */
    L->timed_energy_j = energy0 >= 0 && energy1 > energy0 && L->timed_wall_s >= ENERGY_MIN_WINDOW_S ? energy1 - energy0 : NAN;
    const double nvlink1 = backend_nvlink_tx_bytes(L->be);
    L->nvlink_tx_bytes = nvlink0 >= 0 && nvlink1 >= 0 ? nvlink1 - nvlink0 : NAN;
}

void run_loop_phase_times(struct run_loop *L, double *out)
{
    struct backend *be = L->be;
    for (int i = 0; i < L->iters; i++) {
        struct backend_event **e = L->phase_ev + (size_t)i * NPHASES;
        double *t = out + (size_t)i * NPHASES;
        t[PHASE_FORWARD] = be->ops->event_elapsed_s(be, e[PHASE_STEP], e[PHASE_FORWARD]);
        t[PHASE_BACKWARD] = be->ops->event_elapsed_s(be, e[PHASE_FORWARD], e[PHASE_BACKWARD]);
        t[PHASE_COMM_EXPOSED] = be->ops->event_elapsed_s(be, e[PHASE_BACKWARD], e[PHASE_COMM_EXPOSED]);
        t[PHASE_UPDATE] = be->ops->event_elapsed_s(be, e[PHASE_COMM_EXPOSED], e[PHASE_UPDATE]);
        t[PHASE_STEP] = be->ops->event_elapsed_s(be, e[PHASE_STEP], e[PHASE_UPDATE]);
    }
}

void run_loop_bucket_times(struct run_loop *L, double *start, double *end)
{
    struct backend *be = L->be;
    const int nb = L->plan.nbuckets;
    for (int i = 0; i < L->iters; i++) {
        struct backend_event *step_start = L->phase_ev[(size_t)i * NPHASES + PHASE_STEP];
        for (int k = 0; k < nb; k++) {
            struct backend_event **e = L->bucket_ev + ((size_t)i * nb + k) * 2;
            start[(size_t)i * nb + k] = be->ops->event_elapsed_s(be, step_start, e[0]);
            end[(size_t)i * nb + k] = be->ops->event_elapsed_s(be, step_start, e[1]);
        }
    }
}

void run_loop_allreduce_alone(struct run_loop *L, int reps, double *out)
{
    struct backend *be = L->be;
    struct backend_event *a = be->ops->event_create(be), *b = be->ops->event_create(be);
    for (int i = 0; i < reps; i++) {
        be->ops->synchronize(be);
        comm_barrier(L->c);
        be->ops->event_record(be, a);
        for (int k = 0; k < L->plan.nbuckets; k++) {
            void *p = bucket_ptr(L, &L->plan.buckets[k]);
            comm_allreduce_start(L->c, p, p, L->plan.buckets[k].count, L->ar_dtype, L->ar_op, k);
        }
        comm_allreduce_wait_all(L->c);
        be->ops->event_record(be, b);
        out[i] = be->ops->event_elapsed_s(be, a, b);
    }
    be->ops->event_destroy(be, a);
    be->ops->event_destroy(be, b);
}

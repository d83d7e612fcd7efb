/* run_loop.c — the timed loops of one run (run_loop.h).
 *
 * A step: synthetic batch -> forward + loss -> backward, which starts each gradient
 * bucket's reduction as soon as the layers it holds are done (comm.overlap) ->
 * wait for the reductions -> the update left. With train.overlap_update each
 * bucket's optimizer runs on the backend's update stream as soon as its reduction
 * is complete (on one rank: as soon as backward produced the layer), so only the
 * last bucket's update remains after backward. With comm.shard_optimizer the
 * reduction is a reduce-scatter, the update touches the rank's block, and the
 * weights' blocks are all-gathered at the end of the step; the next forward waits
 * for each layer's all-gather just before it needs the layer.
 *
 * Events mark the phase boundaries of every timed step and, through the comm
 * marker, the start and end of every bucket; they are read only after the loop, so
 * nothing but the collectives themselves synchronises the ranks inside it. */
#include "train/run_loop.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/fault.h"
#include "base/log.h"
#include "base/watchdog.h"

/* Element `index` of a buffer of `dtype`. */
static void *elem(void *base, size_t index, int dtype) { return (char *)base + index * dtype_size(dtype); }

/* Where the reduced gradients are, and in which type: the 16-bit copy that
 * travelled, or the gradient arena (always, in a pass without communication). */
static void *grad_src(const struct run_loop *L) { return L->with_comm && L->comm_buf != NULL ? L->comm_buf : L->rb.grads; }
static int grad_dtype(const struct run_loop *L) { return L->with_comm ? L->ar_dtype : L->rb.grad_dtype; }

/* The optimizer over arena elements [off, off + n), gradients from `g` (grad_dtype). */
static void update_range(struct run_loop *L, size_t off, size_t n, const void *g)
{
    struct step_buffers *rb = &L->rb;
    L->be->ops->optimizer_step(L->be, rb->master ? rb->params + off : NULL, g, grad_dtype(L), elem(rb->state1, off, rb->state_dtype),
                               rb->state2 != NULL ? elem(rb->state2, off, rb->state_dtype) : NULL, rb->state_dtype,
                               rb->params_lp != NULL ? elem(rb->params_lp, off, L->be->act_dtype) : NULL, n, &L->h);
}

/* Update bucket k of `plan` from its reduced gradients: all of it, or (sharded) the
 * rank's block and the replicated ranges. */
static void update_bucket(struct run_loop *L, const struct bucket_plan *plan, int k)
{
    const struct bucket *b = &plan->buckets[k];
    if (!(L->sharded && L->with_comm)) {
        update_range(L, b->offset, b->count, elem(grad_src(L), b->offset, grad_dtype(L)));
        return;
    }
    const struct shard_bucket *sb = &L->shard.b[k];
    for (int i = 0; i < sb->nown; i++)
        update_range(L, sb->own[i].offset, sb->own[i].count, elem(grad_src(L), sb->own[i].offset, grad_dtype(L)));
    for (int i = 0; i < sb->nrep; i++)
        update_range(L, sb->rep[i].offset, sb->rep[i].count, elem(L->rep_buf, sb->rep[i].rep_offset, grad_dtype(L)));
}

/* The plan whose buckets the pass in progress updates, and their events. */
static const struct bucket_plan *update_plan(const struct run_loop *L) { return L->with_comm ? &L->plan : &L->stages; }
static struct backend_event **updated_events(const struct run_loop *L)
{
    return L->with_comm ? L->plan_updated : L->stage_updated;
}

/* Bucket k of the pass's plan has its final gradients, once the work enqueued so far
 * on `after` is done (a comm library's stream, or NULL: the compute stream). Its
 * update goes to the update stream, and the next forward waits for it just before
 * it reads the bucket's layers; the last bucket's update is the step's critical
 * path, left to the compute stream right after backward and communication. */
static void bucket_reduced(struct run_loop *L, int k, void *after)
{
    const struct bucket_plan *plan = update_plan(L);
    if (k == plan->nbuckets - 1) {
        L->last_ready = 1;
        return;
    }
    void *upd = backend_update_stream(L->be);
    backend_stream_wait(L->be, upd, after);
    backend_set_stream(L->be, upd);
    update_bucket(L, plan, k);
    L->be->ops->event_record(L->be, updated_events(L)[k]);
    backend_set_stream(L->be, NULL);
}

/* The comm marker: bucket `tag`'s reduction starts or ends (tags from nbuckets on
 * are the all-gathers of the sharded weights). */
static void on_marker(void *ctx, int tag, int is_end, void *stream)
{
    struct run_loop *L = ctx;
    const int nb = L->plan.nbuckets;
    if (tag >= nb) return;
    if (L->marking >= 0) {
        struct backend_event *e = L->bucket_ev[((size_t)L->marking * nb + tag) * 2 + is_end];
        L->be->ops->event_record_on(L->be, e, stream);
    }
    if (is_end && L->updating) bucket_reduced(L, tag, stream);
}

/* Reduce bucket k: one tagged comm operation. */
static void start_bucket(struct run_loop *L, int k)
{
    const struct bucket *b = &L->plan.buckets[k];
    const int dt = L->ar_dtype;
    void *src = grad_src(L);
    watchdog_note(L->step_index, k);
    fault_hang_if_pending(); /* tests only (DPSCALE_FAULT=...:hang): the peers wait in this reduction */
    watchdog_entered();
    comm_begin(L->c, k);
    if (L->comm_buf != NULL) { /* the 16-bit copy of fp32 gradients, made on the library's stream */
        backend_set_stream(L->be, comm_stream(L->c));
        L->be->ops->cast_from_f32(L->be, elem(L->comm_buf, b->offset, dt), (const float *)L->rb.grads + b->offset,
                                  b->count);
        backend_set_stream(L->be, NULL);
    }
    if (!L->sharded) {
        comm_allreduce(L->c, elem(src, b->offset, dt), elem(src, b->offset, dt), b->count, dt, L->ar_op);
    } else {
        /* the replicated ranges first, out of place, done before the reduce-scatter
         * overwrites the rank's block (which may hold a bias) */
        const struct shard_bucket *sb = &L->shard.b[k];
        comm_group_begin(L->c);
        for (int i = 0; i < sb->nrep; i++)
            comm_allreduce(L->c, elem(src, sb->rep[i].offset, dt), elem(L->rep_buf, sb->rep[i].rep_offset, dt),
                           sb->rep[i].count, dt, L->ar_op);
        comm_group_end(L->c);
        if (sb->block > 0) comm_reduce_scatter(L->c, elem(src, b->offset, dt), sb->block, dt, L->ar_op);
    }
    comm_end(L->c, k);
}

/* Sharded: every bucket's block of the weights the GEMMs read, to every rank; the
 * bucket of layer 0 first, since the next forward needs it first. */
static void gather_weights(struct run_loop *L, int fp32_master)
{
    const int nb = L->plan.nbuckets, dt = fp32_master || L->rb.params_lp == NULL ? DT_F32 : L->be->act_dtype;
    void *w = dt == DT_F32 ? (void *)L->rb.params : L->rb.params_lp;
    for (int k = nb - 1; k >= 0; k--) {
        comm_begin(L->c, nb + k);
        if (L->shard.b[k].block > 0) comm_all_gather(L->c, elem(w, L->plan.buckets[k].offset, dt), L->shard.b[k].block, dt);
        comm_end(L->c, nb + k);
    }
}

/* step_hook: forward is about to use stage `stage`'s tensors: wait for their
 * all-gather (sharded), or for the update of their buckets (the update stream may
 * still be working through the last step's buckets). */
static void on_stage_begin(void *ctx, int stage)
{
    struct run_loop *L = ctx;
    /* the buckets that hold the stage's tensors: one or a few consecutive ones (none: -1) */
    const int *first_of = L->with_comm ? L->first_bucket : L->first_stage_bucket;
    const int *last_of = L->with_comm ? L->last_bucket : L->last_stage_bucket;
    for (int k = first_of[stage]; k >= 0 && k <= last_of[stage]; k++) {
        if (L->with_comm && L->sharded) comm_wait(L->c, L->plan.nbuckets + k);
        else if (L->updating && L->be->ops->event_wait != NULL) L->be->ops->event_wait(L->be, updated_events(L)[k]);
    }
}

static size_t bucket_end(const struct bucket *b) { return b->offset + b->count; }

/* Mark every bucket of the plan that is complete with the gradients [0, prefix). */
static void mark_ready(struct run_loop *L, size_t prefix)
{
    const int nb = L->plan.nbuckets;
    for (; L->next_ready < nb && bucket_end(&L->plan.buckets[L->next_ready]) <= prefix; L->next_ready++)
        if (L->timed_step >= 0) L->be->ops->event_record(L->be, L->ready_ev[(size_t)L->timed_step * nb + L->next_ready]);
}

/* step_hook: backward has produced the gradients [0, prefix): start every bucket
 * that is now complete, or (no communication) update every layer that is. */
static void on_grads_done(void *ctx, size_t prefix)
{
    struct run_loop *L = ctx;
    mark_ready(L, prefix);
    if (L->with_comm) {
        if (L->cfg->overlap)
            while (L->next_bucket < L->plan.nbuckets && bucket_end(&L->plan.buckets[L->next_bucket]) <= prefix)
                start_bucket(L, L->next_bucket++);
        comm_progress(L->c);
    } else if (L->updating) {
        while (L->next_bucket < L->stages.nbuckets && bucket_end(&L->stages.buckets[L->next_bucket]) <= prefix)
            bucket_reduced(L, L->next_bucket++, NULL);
    }
}

/* Device memory that collectives touch: registered with the library when asked
 * (the plain buffer is freed first, so that both never exist at once). */
static void *comm_buffer(struct run_loop *L, void *plain, size_t bytes, int which)
{
    if (L->c == NULL || !L->cfg->register_buffers) return plain != NULL ? plain : L->be->ops->alloc(L->be, bytes);
    if (plain != NULL) L->be->ops->free(L->be, plain);
    void *p = comm_mem_alloc(L->c, bytes);
    if (p == NULL) return L->be->ops->alloc(L->be, bytes); /* a library without registered memory */
    L->registered[which] = 1;
    return p;
}

void run_loop_init(struct run_loop *L, const struct config *cfg, const struct model *m, struct backend *be,
                   struct group *g, struct comm *c)
{
    memset(L, 0, sizeof *L);
    L->cfg = cfg;
    L->m = m;
    L->be = be;
    L->g = g;
    L->c = c;
    L->N = group_size(g);
    L->rank = group_rank(g);
    L->B = config_batch_per_rank(cfg, L->N);
    L->iters = cfg->iters;
    L->steps = cfg->warmup + cfg->iters;
    L->marking = -1;
    step_buffers_alloc(be, cfg, m, L->B, L->steps, &L->rb);
    bucket_plan_make(m, cfg->overlap, cfg->bucket_mb, cfg->first_bucket_mb, &L->plan);
    if (c != NULL && cfg->overlap) L->rb.last_rows = bucket_plan_split_last_if_used(m, cfg->last_layer_chunks, &L->plan);
    bucket_plan_per_stage(m, &L->stages);
    const size_t ns = (size_t)m->nstages;
    L->first_bucket = calloc(ns, sizeof(int));
    L->last_bucket = calloc(ns, sizeof(int));
    L->first_stage_bucket = calloc(ns, sizeof(int));
    L->last_stage_bucket = calloc(ns, sizeof(int));
    CHECK_ALLOC(L->first_bucket);
    CHECK_ALLOC(L->last_bucket);
    CHECK_ALLOC(L->first_stage_bucket);
    CHECK_ALLOC(L->last_stage_bucket);
    for (int stage = 0; stage < m->nstages; stage++) { /* a stage's tensors are contiguous in the arena */
        size_t lo, hi;
        if (model_stage_range(m, stage, &lo, &hi) != 0) {
            L->first_bucket[stage] = L->last_bucket[stage] = L->first_stage_bucket[stage] = L->last_stage_bucket[stage] = -1;
            continue;
        }
        L->first_bucket[stage] = bucket_plan_find(&L->plan, lo);
        L->last_bucket[stage] = bucket_plan_find(&L->plan, hi - 1);
        L->first_stage_bucket[stage] = bucket_plan_find(&L->stages, lo);
        L->last_stage_bucket[stage] = bucket_plan_find(&L->stages, hi - 1);
    }

    L->ar_dtype = c != NULL && cfg->allreduce_dtype == ALLREDUCE_COMPUTE ? be->act_dtype : DT_F32;
    L->ar_op = cfg->allreduce_op;
    L->sharded = c != NULL && cfg->shard_optimizer;
    if (c != NULL) {
        L->rb.grads = comm_buffer(L, L->rb.grads, dp_size_mul(m->nparams, dtype_size(L->rb.grad_dtype), "gradients"), 0);
        if (L->ar_dtype != L->rb.grad_dtype)
            L->comm_buf = comm_buffer(L, NULL, dp_size_mul(m->nparams, dtype_size(L->ar_dtype), "gradients"), 1);
        if (L->sharded) {
            shard_plan_make(m, &L->plan, L->N, L->rank, &L->shard);
            L->rep_buf = be->ops->alloc(be, dp_size_mul(L->shard.rep_total + 1, dtype_size(L->ar_dtype), "gradients"));
            if (L->rb.params_lp != NULL)
                L->rb.params_lp = comm_buffer(L, L->rb.params_lp, m->nparams * dtype_size(be->act_dtype), 2);
            else
                L->rb.params = comm_buffer(L, L->rb.params, m->nparams * sizeof(float), 2);
        }
    }
    const double mean = c == NULL || (L->ar_op == REDUCE_AVG && comm_has_avg(c)) ? 1.0 : 1.0 / L->N;
    L->grad_scale = (float)(mean / config_loss_scale(cfg));

    L->initial_params = malloc(dp_size_mul(m->nparams, sizeof(float), "the parameters"));
    CHECK_ALLOC(L->initial_params);
    model_init_params(m, (uint64_t)cfg->seed, L->initial_params);

    const size_t nphase = (size_t)L->iters * NPHASES, nbucket = (size_t)L->iters * L->plan.nbuckets * 2;
    L->phase_ev = calloc(nphase, sizeof *L->phase_ev);
    L->bucket_ev = calloc(nbucket + 1, sizeof *L->bucket_ev);
    L->ready_ev = calloc(nbucket / 2 + 1, sizeof *L->ready_ev);
    CHECK_ALLOC(L->phase_ev);
    CHECK_ALLOC(L->bucket_ev);
    CHECK_ALLOC(L->ready_ev);
    for (size_t i = 0; i < nphase; i++) L->phase_ev[i] = be->ops->event_create(be);
    for (size_t i = 0; i < nbucket / 2; i++) L->ready_ev[i] = be->ops->event_create(be);
    L->plan_updated = calloc((size_t)L->plan.nbuckets, sizeof *L->plan_updated);
    L->stage_updated = calloc((size_t)L->stages.nbuckets, sizeof *L->stage_updated);
    CHECK_ALLOC(L->plan_updated);
    CHECK_ALLOC(L->stage_updated);
    for (int k = 0; k < L->plan.nbuckets; k++) L->plan_updated[k] = be->ops->event_create(be);
    for (int k = 0; k < L->stages.nbuckets; k++) L->stage_updated[k] = be->ops->event_create(be);
    if (c != NULL) {
        for (size_t i = 0; i < nbucket; i++) L->bucket_ev[i] = be->ops->event_create(be);
        comm_set_marker(c, on_marker, L);
    }
}

void run_loop_free(struct run_loop *L)
{
    struct backend *be = L->be;
    be->ops->synchronize(be);
    if (L->c != NULL) {
        comm_set_marker(L->c, NULL, NULL);
        for (size_t i = 0; i < (size_t)L->iters * L->plan.nbuckets * 2; i++) be->ops->event_destroy(be, L->bucket_ev[i]);
        void **bufs[3] = {(void **)&L->rb.grads, &L->comm_buf, L->rb.params_lp != NULL ? &L->rb.params_lp : (void **)&L->rb.params};
        for (int i = 0; i < 3; i++)
            if (L->registered[i]) {
                comm_mem_free(L->c, *bufs[i]);
                *bufs[i] = NULL;
            }
    }
    for (size_t i = 0; i < (size_t)L->iters * NPHASES; i++) be->ops->event_destroy(be, L->phase_ev[i]);
    for (size_t i = 0; i < (size_t)L->iters * L->plan.nbuckets; i++) be->ops->event_destroy(be, L->ready_ev[i]);
    free(L->ready_ev);
    for (int k = 0; k < L->plan.nbuckets; k++) be->ops->event_destroy(be, L->plan_updated[k]);
    for (int k = 0; k < L->stages.nbuckets; k++) be->ops->event_destroy(be, L->stage_updated[k]);
    free(L->plan_updated);
    free(L->stage_updated);
    free(L->phase_ev);
    free(L->bucket_ev);
    if (L->comm_buf != NULL) be->ops->free(be, L->comm_buf);
    if (L->rep_buf != NULL) be->ops->free(be, L->rep_buf);
    if (L->sharded) shard_plan_free(&L->shard);
    free(L->initial_params);
    free(L->first_bucket);
    free(L->last_bucket);
    free(L->first_stage_bucket);
    free(L->last_stage_bucket);
    bucket_plan_free(&L->plan);
    bucket_plan_free(&L->stages);
    step_buffers_free(be, L->m, &L->rb);
}

void run_loop_reset(struct run_loop *L)
{
    const size_t bytes = L->m->nparams * dtype_size(L->rb.state_dtype);
    step_set_params(L->be, L->m, &L->rb, L->initial_params);
    L->be->ops->zero(L->be, L->rb.state1, bytes);
    if (L->rb.state2 != NULL) L->be->ops->zero(L->be, L->rb.state2, bytes);
}

/* SMs the GEMMs may use while other work runs beside them (train.gemm_sm_margin). */
static void limit_gemms(struct run_loop *L, int limited)
{
    if (L->cfg->gemm_sm_margin > 0 && L->be->ops->gemm_sm_limit != NULL)
        L->be->ops->gemm_sm_limit(L->be, limited ? L->cfg->gemm_sm_margin : 0);
}

static void one_step(struct run_loop *L, int s)
{
    struct backend *be = L->be;
    const int timed = s >= L->cfg->warmup;
    struct backend_event **e = timed ? L->phase_ev + (size_t)(s - L->cfg->warmup) * NPHASES : NULL;
    const struct step_hook hook = {on_stage_begin, on_grads_done, L};

    fault_maybe_inject(L->rank); /* tests only: a rank that dies, stops or hangs mid-run */
    L->step_index = s;
    watchdog_note(s, -1);
    /* The samples of this rank: its slice of the global batch of step s. */
    const uint64_t first = (uint64_t)s * (uint64_t)L->B * L->N + (uint64_t)L->rank * (uint64_t)L->B;
    step_data(be, L->m, &L->rb, first, L->B, (uint64_t)L->cfg->seed);
    L->h = (struct optim_hparams){
        .kind = L->cfg->optimizer, .lr = (float)L->cfg->lr, .momentum = (float)L->cfg->momentum,
        .weight_decay = (float)L->cfg->weight_decay, .beta1 = (float)L->cfg->beta1, .beta2 = (float)L->cfg->beta2,
        .eps = (float)L->cfg->eps, .grad_scale = L->grad_scale, .step = s + 1,
    };

    if (timed) be->ops->event_record(be, e[PHASE_STEP]); /* slot STEP holds the step's start */
    limit_gemms(L, (L->with_comm && L->sharded) || L->updating);
    step_forward_loss(be, L->m, &L->rb, L->B, s, (float)config_loss_scale(L->cfg), &hook);
    if (timed) be->ops->event_record(be, e[PHASE_FORWARD]);
    L->next_bucket = 0; /* of the plan this pass updates or reduces by */
    L->next_ready = 0;
    L->timed_step = timed ? s - L->cfg->warmup : -1;
    L->marking = timed && L->with_comm ? s - L->cfg->warmup : -1;
    limit_gemms(L, L->with_comm || L->updating);
    step_backward(be, L->m, &L->rb, L->B, &hook);
    limit_gemms(L, 0);
    mark_ready(L, L->m->nparams); /* a model that does not report its last stage */
    if (timed) be->ops->event_record(be, e[PHASE_BACKWARD]);
    if (L->with_comm) {
        while (L->next_bucket < L->plan.nbuckets) start_bucket(L, L->next_bucket++);
        comm_wait_all(L->c);
    }
    L->marking = -1;
    if (timed && L->with_comm) be->ops->event_record(be, e[PHASE_COMM_EXPOSED]);
    if (L->updating) { /* the last bucket's update: the one left after backward */
        if (L->last_ready) update_bucket(L, update_plan(L), update_plan(L)->nbuckets - 1);
        L->last_ready = 0;
    } else { /* the whole update, after backward and communication */
        if (L->sharded && L->with_comm)
            for (int k = 0; k < L->plan.nbuckets; k++) update_bucket(L, &L->plan, k);
        else
            update_range(L, 0, L->m->nparams, grad_src(L));
    }
    /* the all-gathers send what every update wrote; otherwise the next forward waits
     * for each bucket's update only when it needs the bucket */
    if (L->with_comm && L->sharded) backend_stream_wait(be, NULL, backend_update_stream(be));
    if (timed) be->ops->event_record(be, e[PHASE_UPDATE]);
    if (L->with_comm && L->sharded) gather_weights(L, 0);
}

#define ENERGY_MIN_WINDOW_S 1.0

static double wall_clock_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* DPSCALE_PROFILE=step (backend.h): a profiler's capture of this step's kernels alone, the
 * collectives before it (and its own, after it) done first */
static void profile_bracket(struct run_loop *L, int on)
{
    if (!backend_profiling()) return;
    if (L->with_comm) comm_wait_all(L->c);
    backend_profile_step(L->be, on);
}

void run_loop_steps(struct run_loop *L, int with_comm)
{
    double energy0 = -1.0, wall0 = 0.0;
    L->with_comm = with_comm && L->c != NULL;
    L->updating = L->cfg->overlap_update;
    L->be->ops->synchronize(L->be);
    const double nvlink0 = backend_nvlink_tx_bytes(L->be);
    group_barrier(L->g); /* start together: the first step must not absorb start-up skew */
    for (int s = 0; s < L->steps; s++) {
        if (s == L->cfg->warmup) { /* the energy counter and the clock bracket the timed steps */
            L->be->ops->synchronize(L->be);
            energy0 = backend_energy_j(L->be);
            wall0 = wall_clock_s();
        }
        if (s == L->cfg->warmup) profile_bracket(L, 1);
        const double t0 = wall_clock_s();
        one_step(L, s);
        const double dt = wall_clock_s() - t0; /* enqueue only, but for a launch queue that is full */
        if (s == L->cfg->warmup) profile_bracket(L, 0);
        if (s == 0 || dt < L->host_enqueue_s) L->host_enqueue_s = dt;
        progress_step(); /* a line every few seconds on rank 0, outside the step's events */
    }
    if (L->with_comm) comm_wait_all(L->c);
    L->be->ops->synchronize(L->be);
    L->timed_wall_s = wall_clock_s() - wall0;
    const double energy1 = backend_energy_j(L->be);
    /* NVML's energy counter moves in steps (tens of ms): over a short window or with no
     * movement at all the figure would be noise or zero, so it is left unknown */
    L->timed_energy_j = energy0 >= 0 && energy1 > energy0 && L->timed_wall_s >= ENERGY_MIN_WINDOW_S ? energy1 - energy0 : NAN;
    const double nvlink1 = backend_nvlink_tx_bytes(L->be);
    L->nvlink_tx_bytes = nvlink0 >= 0 && nvlink1 >= 0 ? nvlink1 - nvlink0 : NAN;
    L->timed_with_comm = L->with_comm;
    L->with_comm = 0;
}

void run_loop_phase_times(struct run_loop *L, double *out)
{
    struct backend *be = L->be;
    for (int i = 0; i < L->iters; i++) {
        struct backend_event **e = L->phase_ev + (size_t)i * NPHASES;
        double *t = out + (size_t)i * NPHASES;
        t[PHASE_FORWARD] = be->ops->event_elapsed_s(be, e[PHASE_STEP], e[PHASE_FORWARD]);
        t[PHASE_BACKWARD] = be->ops->event_elapsed_s(be, e[PHASE_FORWARD], e[PHASE_BACKWARD]);
        /* a pass without communication has no such phase: the update follows backward */
        struct backend_event *comm_done = L->timed_with_comm ? e[PHASE_COMM_EXPOSED] : e[PHASE_BACKWARD];
        t[PHASE_COMM_EXPOSED] = L->timed_with_comm ? be->ops->event_elapsed_s(be, e[PHASE_BACKWARD], comm_done) : 0.0;
        t[PHASE_UPDATE] = be->ops->event_elapsed_s(be, comm_done, e[PHASE_UPDATE]);
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
            start[(size_t)i * nb + k] = L->c != NULL ? be->ops->event_elapsed_s(be, step_start, e[0]) : 0.0;
            end[(size_t)i * nb + k] = L->c != NULL ? be->ops->event_elapsed_s(be, step_start, e[1]) : 0.0;
        }
    }
}

void run_loop_ready_times(struct run_loop *L, double *ready)
{
    struct backend *be = L->be;
    const int nb = L->plan.nbuckets;
    for (int i = 0; i < L->iters; i++) {
        struct backend_event *step_start = L->phase_ev[(size_t)i * NPHASES + PHASE_STEP];
        for (int k = 0; k < nb; k++)
            ready[(size_t)i * nb + k] = be->ops->event_elapsed_s(be, step_start, L->ready_ev[(size_t)i * nb + k]);
    }
}

void run_loop_comm_alone(struct run_loop *L, int reps, double *out)
{
    struct backend *be = L->be;
    struct backend_event *a = be->ops->event_create(be), *b = be->ops->event_create(be);
    L->with_comm = 1;
    L->updating = 0;
    for (int i = 0; i < reps; i++) {
        L->step_index = i;
        watchdog_note(i, -1);
        be->ops->synchronize(be);
        group_barrier(L->g);
        be->ops->event_record(be, a);
        for (int k = 0; k < L->plan.nbuckets; k++) start_bucket(L, k);
        if (L->sharded) gather_weights(L, 0);
        comm_wait_all(L->c);
        be->ops->event_record(be, b);
        out[i] = be->ops->event_elapsed_s(be, a, b);
        progress_step();
    }
    L->with_comm = 0;
    be->ops->event_destroy(be, a);
    be->ops->event_destroy(be, b);
}

void run_loop_gather_params(struct run_loop *L)
{
    if (!L->rb.master) { /* the weights are their 16-bit copy, whole on every rank after the step's all-gathers */
        L->be->ops->cast_to_f32(L->be, L->rb.params, L->rb.params_lp, L->m->nparams);
        L->be->ops->synchronize(L->be);
        return;
    }
    if (!L->sharded) return;
    L->with_comm = 1;
    gather_weights(L, 1);
    comm_wait_all(L->c);
    L->with_comm = 0;
    L->be->ops->synchronize(L->be);
}

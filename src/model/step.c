/* step.c — the step's arenas, and its hand-over to the model's functions (step.h). */
#include "model/step.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

void *step_alloc(struct backend *be, size_t count, size_t elem)
{
    return be->ops->alloc(be, dp_size_mul(count, elem, "a training buffer"));
}

int step_layout_make(const struct config *cfg, const struct model *m, int act_dtype, int steps, struct step_layout *l)
{
    memset(l, 0, sizeof *l);
    const size_t n = m->nparams;
    l->grad_dtype = cfg->grad_dtype == ALLREDUCE_COMPUTE ? act_dtype : DT_F32;
    l->state_dtype = cfg->optimizer_state == STATE_COMPUTE ? act_dtype : DT_F32;
    l->nstates = cfg->optimizer == OPT_ADAMW ? 2 : 1;
    int bad = dp_size_mul_checked(n, sizeof(float), &l->params_bytes);
    if (act_dtype != DT_F32) bad |= dp_size_mul_checked(n, dtype_size(act_dtype), &l->params_lp_bytes);
    bad |= dp_size_mul_checked(n, dtype_size(l->grad_dtype), &l->grads_bytes);
    bad |= dp_size_mul_checked(n, dtype_size(l->state_dtype), &l->state_bytes);
    bad |= dp_size_mul_checked((size_t)(steps > 0 ? steps : 0), sizeof(float), &l->loss_bytes);
    return bad ? -1 : 0;
}

int step_plan_memory(const struct config *cfg, const struct model *m, int act_dtype, int B, int steps,
                     struct memory_plan *plan, char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    struct step_layout l;
    int bad = step_layout_make(cfg, m, act_dtype, steps, &l);
    bad |= dp_size_add_checked(l.params_bytes, l.params_lp_bytes, &plan->params_bytes);
    plan->grads_bytes = l.grads_bytes;
    bad |= dp_size_mul_checked(l.state_bytes, (size_t)l.nstates, &plan->optimizer_bytes);
    if (!bad) bad |= m->ops->plan_activations(m, dtype_size(act_dtype), B, &plan->activations_bytes, &plan->data_bytes);
    bad |= dp_size_add_checked(plan->data_bytes, l.loss_bytes, &plan->data_bytes);
    if (bad || model_plan_sum(plan) != 0) {
        snprintf(err, errlen, "the memory plan for batch %d overflows a 64-bit size; lower train.batch_per_gpu or the "
                 "model size", B);
        return -1;
    }
    return 0;
}

/* A buffer of exactly `bytes` (the layout's), zero-filled. */
static void *alloc_bytes(struct backend *be, size_t bytes) { return be->ops->alloc(be, bytes); }

void step_buffers_alloc(struct backend *be, const struct config *cfg, const struct model *m, int B, int steps,
                        struct step_buffers *rb)
{
    memset(rb, 0, sizeof *rb);
    struct step_layout l;
    if (step_layout_make(cfg, m, be->act_dtype, steps, &l) != 0)
        DP_FATAL("make the model smaller", "the step's arenas overflow a 64-bit size");
    rb->elem = dtype_size(be->act_dtype);
    rb->params = alloc_bytes(be, l.params_bytes);
    rb->grad_dtype = l.grad_dtype;
    rb->fuse_forward = cfg->gemm_epilogue != EPILOGUE_OFF && be->ops->gemm_fused != NULL;
    rb->fuse_dgelu = rb->fuse_forward && cfg->gemm_epilogue == EPILOGUE_ON;
    rb->fuse_backward = rb->fuse_dgelu && rb->grad_dtype == be->act_dtype;
    rb->fuse_bgrad = rb->fuse_dgelu && cfg->bias_grad == BIAS_GRAD_EPILOGUE;
    rb->grads = alloc_bytes(be, l.grads_bytes);
    rb->master = !(cfg->master_weights == MASTER_OFF && be->act_dtype != DT_F32);
    rb->state_dtype = l.state_dtype;
    rb->state1 = alloc_bytes(be, l.state_bytes);
    rb->state2 = l.nstates > 1 ? alloc_bytes(be, l.state_bytes) : NULL;
    rb->params_lp = l.params_lp_bytes > 0 ? alloc_bytes(be, l.params_lp_bytes) : NULL;
    rb->loss = alloc_bytes(be, l.loss_bytes);
    m->ops->alloc_acts(be, m, B, rb); /* may turn the fusions off where the model has no use for them */
}

void step_buffers_free(struct backend *be, const struct model *m, struct step_buffers *rb)
{
    void (*f)(struct backend *, void *) = be->ops->free;
    m->ops->free_acts(be, m, rb);
    f(be, rb->params);
    f(be, rb->grads);
    f(be, rb->state1);
    if (rb->state2 != NULL) f(be, rb->state2);
    if (rb->params_lp != NULL) f(be, rb->params_lp);
    f(be, rb->loss);
}

void step_set_params(struct backend *be, const struct model *m, struct step_buffers *rb, const float *host)
{
    be->ops->upload(be, rb->params, host, m->nparams * sizeof(float));
    if (rb->params_lp != NULL) be->ops->cast_from_f32(be, rb->params_lp, rb->params, m->nparams);
}

void step_data(struct backend *be, const struct model *m, struct step_buffers *rb, uint64_t first_sample, int B,
               uint64_t seed)
{
    m->ops->data(be, m, rb, first_sample, B, seed);
}

void step_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                       float loss_scale, const struct step_hook *hook)
{
    m->ops->forward_loss(be, m, rb, B, slot, loss_scale, hook);
}

void step_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B,
                   const struct step_hook *hook)
{
    m->ops->backward(be, m, rb, B, hook);
}

int step_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int attention)
{
    return m->ops->gemms_only(be, m, rb, B, attention);
}

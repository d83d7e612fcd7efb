/* step.c — the step's arenas, and its hand-over to the model's functions (step.h). */
#include "step.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

void *step_alloc(struct backend *be, size_t count, size_t elem)
{
    return be->ops->alloc(be, dp_size_mul(count, elem, "a training buffer"));
}

void step_buffers_alloc(struct backend *be, const struct config *cfg, const struct model *m, int B, int steps,
                        struct step_buffers *rb)
{
    memset(rb, 0, sizeof *rb);
    rb->elem = dtype_size(be->act_dtype);
    rb->params = step_alloc(be, m->nparams, sizeof(float));
    rb->grad_dtype = cfg->grad_dtype == ALLREDUCE_COMPUTE ? be->act_dtype : DT_F32;
    rb->fuse_forward = cfg->gemm_epilogue != EPILOGUE_OFF && be->ops->gemm_fused != NULL;
    rb->fuse_dgelu = rb->fuse_forward && cfg->gemm_epilogue == EPILOGUE_ON;
    rb->fuse_backward = rb->fuse_dgelu && rb->grad_dtype == be->act_dtype;
    rb->grads = step_alloc(be, m->nparams, dtype_size(rb->grad_dtype));
    rb->master = !(cfg->master_weights == MASTER_OFF && be->act_dtype != DT_F32);
    rb->state_dtype = cfg->optimizer_state == STATE_COMPUTE ? be->act_dtype : DT_F32;
    rb->state1 = step_alloc(be, m->nparams, dtype_size(rb->state_dtype));
    rb->state2 = cfg->optimizer == OPT_ADAMW ? step_alloc(be, m->nparams, dtype_size(rb->state_dtype)) : NULL;
    rb->params_lp = be->act_dtype != DT_F32 ? step_alloc(be, m->nparams, rb->elem) : NULL;
    rb->loss = step_alloc(be, (size_t)steps, sizeof(float));
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

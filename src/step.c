/* step.c — buffers, forward and backward pass of the MLP on one rank (step.h).
 * Shapes: input [B x in] times W^T [in x out] gives [B x out]; see model.h for
 * where each layer's weight and bias live in the flat arenas. */
#include "step.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

static void *balloc(struct backend *be, size_t count, size_t elem)
{
    return be->ops->alloc(be, dp_size_mul(count, elem, "a training buffer"));
}

/* Element `index` of a compute-dtype buffer. */
static inline void *at(void *base, size_t index, size_t elem) { return (char *)base + index * elem; }

/* The weights the GEMMs read: the compute copy, or the master arena in fp32. */
static inline void *weights(const struct step_buffers *rb) { return rb->params_lp ? rb->params_lp : rb->params; }

void step_buffers_alloc(struct backend *be, const struct config *cfg, const struct model *m, int B, int steps,
                        struct step_buffers *rb)
{
    memset(rb, 0, sizeof *rb);
    const size_t e = dtype_size(be->act_dtype), b = (size_t)B;
    rb->elem = e;
    rb->params = balloc(be, m->nparams, sizeof(float));
    rb->grad_dtype = cfg->grad_dtype == ALLREDUCE_COMPUTE ? be->act_dtype : DT_F32;
    rb->fuse_forward = cfg->gemm_epilogue != EPILOGUE_OFF && be->ops->gemm_fused != NULL && cfg->activation == ACT_GELU;
    rb->fuse_backward = rb->fuse_forward && cfg->gemm_epilogue == EPILOGUE_ON && rb->grad_dtype == be->act_dtype;
    rb->grads = balloc(be, m->nparams, dtype_size(rb->grad_dtype));
    rb->master = !(cfg->master_weights == MASTER_OFF && be->act_dtype != DT_F32);
    rb->state_dtype = cfg->optimizer_state == STATE_COMPUTE ? be->act_dtype : DT_F32;
    rb->state1 = balloc(be, m->nparams, dtype_size(rb->state_dtype));
    rb->state2 = cfg->optimizer == OPT_ADAMW ? balloc(be, m->nparams, dtype_size(rb->state_dtype)) : NULL;
    rb->params_lp = be->act_dtype != DT_F32 ? balloc(be, m->nparams, e) : NULL;
    rb->x = balloc(be, b * (size_t)m->input_dim, e);
    rb->labels = balloc(be, b, sizeof(int));
    rb->pre = calloc((size_t)m->nlayers, sizeof(void *));
    rb->act = calloc((size_t)m->nlayers, sizeof(void *));
    CHECK_ALLOC(rb->pre);
    CHECK_ALLOC(rb->act);
    for (int l = 0; l < m->nlayers; l++) {
        rb->pre[l] = balloc(be, b * (size_t)m->layers[l].out, e);
        rb->act[l] = m->layers[l].act == ACT_NONE ? rb->pre[l] : balloc(be, b * (size_t)m->layers[l].out, e);
    }
    rb->dlogits = balloc(be, b * (size_t)m->classes, e);
    rb->scratch[0] = balloc(be, b * (size_t)m->max_dim, e);
    rb->scratch[1] = balloc(be, b * (size_t)m->max_dim, e);
    rb->loss = balloc(be, (size_t)steps, sizeof(float));
    if (be->ops->reserve != NULL) be->ops->reserve(be, B, m->max_dim);
}

void step_buffers_free(struct backend *be, const struct model *m, struct step_buffers *rb)
{
    void (*f)(struct backend *, void *) = be->ops->free;
    for (int l = 0; l < m->nlayers; l++) {
        if (rb->act[l] != rb->pre[l]) f(be, rb->act[l]);
        f(be, rb->pre[l]);
    }
    free(rb->pre);
    free(rb->act);
    f(be, rb->params);
    f(be, rb->grads);
    f(be, rb->state1);
    if (rb->state2 != NULL) f(be, rb->state2);
    if (rb->params_lp != NULL) f(be, rb->params_lp);
    f(be, rb->x);
    f(be, rb->labels);
    f(be, rb->dlogits);
    f(be, rb->scratch[0]);
    f(be, rb->scratch[1]);
    f(be, rb->loss);
}

void step_set_params(struct backend *be, const struct model *m, struct step_buffers *rb, const float *host)
{
    be->ops->upload(be, rb->params, host, m->nparams * sizeof(float));
    if (rb->params_lp != NULL) be->ops->cast_from_f32(be, rb->params_lp, rb->params, m->nparams);
}

/* The forward pass; with_elementwise = 0 leaves only its GEMMs (the benchmark's floor). */
static void forward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int with_elementwise,
                         const struct step_hook *hook)
{
    const void *input = rb->x;
    for (int l = 0; l < m->nlayers; l++) {
        const struct layer_shape *s = &m->layers[l];
        if (hook != NULL && hook->layer_begin != NULL) hook->layer_begin(hook->ctx, l);
        /* pre[B x out] = input[B x in] * W^T */
        const void *w = at(weights(rb), s->w_offset, rb->elem);
        if (with_elementwise && rb->fuse_forward) { /* + bias (its compute copy), then GELU, in the epilogue */
            const struct gemm_fusion f = {s->act == ACT_GELU ? EPI_GELU_BIAS : EPI_BIAS,
                                          at(weights(rb), s->b_offset, rb->elem), rb->pre[l]};
            be->ops->gemm_fused(be, 0, 1, B, s->out, s->in, input, s->in, w, s->in, rb->act[l], s->out, &f);
        } else {
            be->ops->gemm(be, 0, 1, B, s->out, s->in, 1.0f, input, s->in, w, s->in, 0.0f, rb->pre[l], 0, s->out);
            if (with_elementwise) /* the bias from the fp32 master, or from the weights when there is none */
                be->ops->bias_act_forward(be, rb->act[l], rb->pre[l],
                                          rb->master ? (const void *)(rb->params + s->b_offset)
                                                     : at(rb->params_lp, s->b_offset, rb->elem),
                                          rb->master ? DT_F32 : be->act_dtype, B, s->out, s->act);
        }
        input = rb->act[l];
    }
}

/* The backward pass from rb->dlogits, last layer first; with_elementwise as above. */
static void backward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int with_elementwise,
                          const struct step_hook *hook)
{
    void *d = rb->dlogits; /* dL/d(output of layer l) */
    int which = 0;
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const struct layer_shape *s = &m->layers[l];
        const void *input = l == 0 ? rb->x : rb->act[l - 1];
        /* fused: layer l's GELU' and bias gradient were done by layer l+1's input-gradient GEMM */
        const int fused_here = with_elementwise && rb->fuse_backward && l < m->nlayers - 1;
        if (with_elementwise && !fused_here) {
            be->ops->act_backward(be, d, rb->pre[l], B, s->out, s->act);
            be->ops->bias_grad(be, step_grad_at(rb, s->b_offset), rb->grad_dtype, d, B, s->out);
        }
        /* dW[out x in] = d^T[out x B] * input[B x in], straight into the gradient arena; layer 0,
         * which ends backward, in row blocks whose reduction can start one by one */
        const int rows = l == 0 && rb->last_rows > 0 ? rb->last_rows : s->out;
        for (int r = 0; r < s->out; r += rows) {
            const int n = s->out - r < rows ? s->out - r : rows;
            be->ops->gemm(be, 1, 0, n, s->in, B, 1.0f, at(d, (size_t)r, rb->elem), s->out, input, s->in, 0.0f,
                          step_grad_at(rb, s->w_offset + (size_t)r * s->in), rb->grad_dtype == DT_F32, s->in);
            if (l == 0 && hook != NULL && hook->grads_done != NULL) /* layer 0 has no input gradient to compute */
                hook->grads_done(hook->ctx, s->w_offset + (size_t)(r + n) * s->in);
        }
        if (l > 0) {
            /* dX[B x in] = d[B x out] * W[out x in]; fused, already dL/d(pre) of layer l-1, and its bias gradient */
            void *dx = rb->scratch[which];
            const void *w = at(weights(rb), s->w_offset, rb->elem);
            if (with_elementwise && rb->fuse_backward) {
                const struct gemm_fusion f = {EPI_DGELU_BGRAD, step_grad_at(rb, m->layers[l - 1].b_offset), rb->pre[l - 1]};
                be->ops->gemm_fused(be, 0, 0, B, s->in, s->out, d, s->out, w, s->in, dx, s->in, &f);
            } else {
                be->ops->gemm(be, 0, 0, B, s->in, s->out, 1.0f, d, s->out, w, s->in, 0.0f, dx, 0, s->in);
            }
            d = dx;
            which ^= 1;
        }
        if (l > 0 && hook != NULL && hook->grads_done != NULL) hook->grads_done(hook->ctx, s->w_offset + (size_t)s->out * s->in);
    }
}

void step_forward(struct backend *be, const struct model *m, struct step_buffers *rb, int B, const struct step_hook *hook)
{
    forward_pass(be, m, rb, B, 1, hook);
}

void step_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                       float loss_scale, const struct step_hook *hook)
{
    step_forward(be, m, rb, B, hook);
    be->ops->softmax_xent(be, rb->dlogits, rb->loss + slot, rb->pre[m->nlayers - 1], rb->labels, B, m->classes,
                          loss_scale / (float)B);
}

void step_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B,
                   const struct step_hook *hook)
{
    backward_pass(be, m, rb, B, 1, hook);
}

void step_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B)
{
    forward_pass(be, m, rb, B, 0, NULL);
    backward_pass(be, m, rb, B, 0, NULL);
}

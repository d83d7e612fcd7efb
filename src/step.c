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

void step_buffers_alloc(struct backend *be, const struct config *cfg, const struct model *m, int B, int steps,
                          struct step_buffers *rb)
{
    memset(rb, 0, sizeof *rb);
    rb->params = balloc(be, m->nparams, sizeof(float));
    rb->grads = balloc(be, m->nparams, sizeof(float));
    rb->state1 = balloc(be, m->nparams, sizeof(float));
    rb->state2 = cfg->optimizer == OPT_ADAMW ? balloc(be, m->nparams, sizeof(float)) : NULL;
    rb->x = balloc(be, (size_t)B * (size_t)m->input_dim, sizeof(float));
    rb->labels = balloc(be, (size_t)B, sizeof(int));
    rb->pre = calloc((size_t)m->nlayers, sizeof(float *));
    rb->act = calloc((size_t)m->nlayers, sizeof(float *));
    CHECK_ALLOC(rb->pre);
    CHECK_ALLOC(rb->act);
    for (int l = 0; l < m->nlayers; l++) {
        rb->pre[l] = balloc(be, (size_t)B * (size_t)m->layers[l].out, sizeof(float));
        rb->act[l] = m->layers[l].act == ACT_NONE ? rb->pre[l] : balloc(be, (size_t)B * (size_t)m->layers[l].out, sizeof(float));
    }
    rb->dlogits = balloc(be, (size_t)B * (size_t)m->classes, sizeof(float));
    rb->scratch[0] = balloc(be, (size_t)B * (size_t)m->max_dim, sizeof(float));
    rb->scratch[1] = balloc(be, (size_t)B * (size_t)m->max_dim, sizeof(float));
    rb->loss = balloc(be, (size_t)steps, sizeof(float));
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
    f(be, rb->params); f(be, rb->grads); f(be, rb->state1);
    if (rb->state2 != NULL) f(be, rb->state2);
    f(be, rb->x); f(be, rb->labels); f(be, rb->dlogits);
    f(be, rb->scratch[0]); f(be, rb->scratch[1]); f(be, rb->loss);
}

void step_forward(struct backend *be, const struct model *m, struct step_buffers *rb, int B)
{
    const float *input = rb->x;
    for (int l = 0; l < m->nlayers; l++) {
        const struct layer_shape *s = &m->layers[l];
        /* pre[B x out] = input[B x in] * W^T */
        be->ops->gemm(be, 0, 1, B, s->out, s->in, 1.0f, input, s->in, rb->params + s->w_offset, s->in, 0.0f, rb->pre[l], s->out);
        be->ops->bias_act_forward(be, rb->act[l], rb->pre[l], rb->params + s->b_offset, B, s->out, s->act);
        input = rb->act[l];
    }
}

void step_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B)
{
    float *d = rb->dlogits; /* dL/d(output of layer l) */
    int which = 0;
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const struct layer_shape *s = &m->layers[l];
        const float *input = l == 0 ? rb->x : rb->act[l - 1];
        be->ops->act_backward(be, d, rb->pre[l], B, s->out, s->act);
        be->ops->bias_grad(be, rb->grads + s->b_offset, d, B, s->out);
        /* dW[out x in] = d^T[out x B] * input[B x in] */
        be->ops->gemm(be, 1, 0, s->out, s->in, B, 1.0f, d, s->out, input, s->in, 0.0f, rb->grads + s->w_offset, s->in);
        if (l > 0) {
            /* dX[B x in] = d[B x out] * W[out x in] */
            float *dx = rb->scratch[which];
            be->ops->gemm(be, 0, 0, B, s->in, s->out, 1.0f, d, s->out, rb->params + s->w_offset, s->in, 0.0f, dx, s->in);
            d = dx;
            which ^= 1;
        }
    }
}

void step_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot)
{
    step_forward(be, m, rb, B);
    be->ops->softmax_xent(be, rb->dlogits, rb->loss + slot, rb->pre[m->nlayers - 1], rb->labels, B, m->classes,
                          1.0f / (float)B);
}

void step_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B)
{
    const float *input = rb->x;
    for (int l = 0; l < m->nlayers; l++) {
        const struct layer_shape *s = &m->layers[l];
        be->ops->gemm(be, 0, 1, B, s->out, s->in, 1.0f, input, s->in, rb->params + s->w_offset, s->in, 0.0f, rb->pre[l], s->out);
        input = rb->act[l];
    }
    float *d = rb->dlogits;
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const struct layer_shape *s = &m->layers[l];
        input = l == 0 ? rb->x : rb->act[l - 1];
        be->ops->gemm(be, 1, 0, s->out, s->in, B, 1.0f, d, s->out, input, s->in, 0.0f, rb->grads + s->w_offset, s->in);
        if (l > 0) {
            float *dx = rb->scratch[l & 1];
            be->ops->gemm(be, 0, 0, B, s->in, s->out, 1.0f, d, s->out, rb->params + s->w_offset, s->in, 0.0f, dx, s->in);
            d = dx;
        }
    }
}

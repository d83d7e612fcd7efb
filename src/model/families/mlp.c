/* mlp.c — the MLP behind the model seam (mlp.h): its tensor table, memory, initial
 * weights, data, and its forward and backward passes on one rank. Shapes: input
 * [B x in] times W^T [in x out] gives [B x out]. */
#include "model/families/mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/synthetic.h"
#include "base/error.h"
#include "model/step.h"

/* The activations of B samples (rb->acts). */
struct mlp_acts {
    void *x;          /* [B x input_dim] */
    int *labels;      /* [B] */
    void **pre;       /* per layer [B x out]: pre-activation (the logits for the last layer) */
    void **act;       /* per layer [B x out]: activation (== pre for the last layer) */
    void *dlogits;    /* [B x classes] */
    void *scratch[2]; /* [B x max_dim]: gradient of the current layer's input */
    int rows;         /* B */
};

static const struct model_ops mlp_ops;

int mlp_describe(const struct config *cfg, struct model *m, char *err, size_t errlen)
{
    struct mlp *p = calloc(1, sizeof *p);
    CHECK_ALLOC(p);
    p->nlayers = cfg->layers;
    p->layers = calloc((size_t)cfg->layers, sizeof *p->layers);
    CHECK_ALLOC(p->layers);
    p->input_dim = cfg->input_dim;
    p->classes = cfg->classes;
    p->max_dim = cfg->input_dim;
    if (cfg->hidden_dim > p->max_dim) p->max_dim = cfg->hidden_dim;
    if (cfg->classes > p->max_dim) p->max_dim = cfg->classes;
    m->impl = p;
    m->ops = &mlp_ops;
    m->nstages = p->nlayers;
    m->unit = UNIT_SAMPLES;
    m->units_per_sample = 1;
    for (int l = 0; l < p->nlayers; l++) {
        struct mlp_layer *s = &p->layers[l];
        s->in = l == 0 ? cfg->input_dim : cfg->hidden_dim;
        s->out = l == p->nlayers - 1 ? cfg->classes : cfg->hidden_dim;
        s->act = l == p->nlayers - 1 ? ACT_NONE : cfg->activation;
    }
    /* Backward order: the last layer's bias and weight come first. */
    for (int l = p->nlayers - 1; l >= 0; l--) {
        struct mlp_layer *s = &p->layers[l];
        char name[TENSOR_NAME_LEN];
        s->b_offset = m->nparams;
        snprintf(name, sizeof name, "layer%d.bias", l);
        if (model_add_tensor(m, name, TENSOR_VECTOR, 1, s->out, l) != 0) goto overflow;
        s->w_offset = m->nparams;
        snprintf(name, sizeof name, "layer%d.weight", l);
        if (model_add_tensor(m, name, TENSOR_MATRIX, s->out, s->in, l) != 0) goto overflow;
    }
    /* GEMM FLOPs: forward 2*in*out per layer, backward twice that (the input gradient of
     * layer 0 is not computed). */
    for (int l = 0; l < p->nlayers; l++) {
        const double mac = (double)p->layers[l].in * (double)p->layers[l].out;
        m->flops_per_sample += (l > 0 ? 6.0 : 4.0) * mac;
    }
    return 0;
overflow:
    snprintf(err, errlen, "the model's parameter count overflows a 64-bit size; lower model.layers or model.hidden_dim");
    return -1;
}

static void mlp_free(struct model *m)
{
    struct mlp *p = m->impl;
    if (p != NULL) free(p->layers);
    free(p);
    m->impl = NULL;
}

static int mlp_plan_activations(const struct model *m, size_t E, int batch, size_t *act_bytes, size_t *data_bytes)
{
    const struct mlp *p = mlp_of(m);
    const size_t B = (size_t)batch;
    int bad = 0;
    /* Per layer: the pre-activation (kept for backward) and the activation. The
     * output layer's pre-activation is the logits; its gradient is dlogits. */
    for (int l = 0; l < p->nlayers; l++) bad |= model_add_bytes(act_bytes, B, (size_t)p->layers[l].out, 2 * E);
    bad |= model_add_bytes(act_bytes, B, (size_t)p->max_dim, 2 * E); /* two gradient scratch buffers */
    bad |= model_add_bytes(data_bytes, B, (size_t)p->input_dim, E);
    bad |= model_add_bytes(data_bytes, B, 1, sizeof(int));
    return bad ? -1 : 0;
}

/* LeCun uniform weights (variance 1/fan_in), zero biases. */
static void mlp_init_params(const struct model *m, uint64_t seed, float *params)
{
    const struct mlp *p = mlp_of(m);
    for (int l = 0; l < p->nlayers; l++) {
        const struct mlp_layer *s = &p->layers[l];
        const float bound = sqrtf(3.0f / (float)s->in);
        const size_t count = (size_t)s->out * (size_t)s->in;
        float *w = params + s->w_offset;
        for (size_t i = 0; i < count; i++) w[i] = bound * synth_uniform(synth_hash3(seed ^ 0x776569676874ULL, (uint64_t)l, i));
        memset(params + s->b_offset, 0, (size_t)s->out * sizeof(float));
    }
}

static void mlp_summary(const struct model *m, char *buf, size_t len)
{
    const struct mlp *p = mlp_of(m);
    const int hidden = p->nlayers > 1 ? p->layers[0].out : p->classes;
    snprintf(buf, len, "%d dense layers, %d -> %d x%d -> %d, %s", p->nlayers, p->input_dim, hidden,
             p->nlayers > 1 ? p->nlayers - 1 : 0, p->classes,
             p->nlayers > 1 && p->layers[0].act == ACT_RELU ? "relu" : "gelu");
}

static void mlp_alloc_acts(struct backend *be, const struct model *m, int B, struct step_buffers *rb)
{
    const struct mlp *p = mlp_of(m);
    const size_t e = rb->elem, b = (size_t)B;
    struct mlp_acts *a = calloc(1, sizeof *a);
    CHECK_ALLOC(a);
    rb->acts = a;
    a->rows = B;
    /* the epilogues fuse GELU (or nothing, for the output layer): a ReLU MLP runs the
     * element-wise kernels */
    if (p->nlayers > 1 && p->layers[0].act != ACT_GELU) rb->fuse_forward = rb->fuse_backward = 0;
    a->x = step_alloc(be, b * (size_t)p->input_dim, e);
    a->labels = step_alloc(be, b, sizeof(int));
    a->pre = calloc((size_t)p->nlayers, sizeof(void *));
    a->act = calloc((size_t)p->nlayers, sizeof(void *));
    CHECK_ALLOC(a->pre);
    CHECK_ALLOC(a->act);
    for (int l = 0; l < p->nlayers; l++) {
        a->pre[l] = step_alloc(be, b * (size_t)p->layers[l].out, e);
        a->act[l] = p->layers[l].act == ACT_NONE ? a->pre[l] : step_alloc(be, b * (size_t)p->layers[l].out, e);
    }
    a->dlogits = step_alloc(be, b * (size_t)p->classes, e);
    a->scratch[0] = step_alloc(be, b * (size_t)p->max_dim, e);
    a->scratch[1] = step_alloc(be, b * (size_t)p->max_dim, e);
    if (be->ops->reserve != NULL) be->ops->reserve(be, B, p->max_dim);
}

static void mlp_free_acts(struct backend *be, const struct model *m, struct step_buffers *rb)
{
    const struct mlp *p = mlp_of(m);
    struct mlp_acts *a = rb->acts;
    void (*f)(struct backend *, void *) = be->ops->free;
    if (a == NULL) return;
    for (int l = 0; l < p->nlayers; l++) {
        if (a->act[l] != a->pre[l]) f(be, a->act[l]);
        f(be, a->pre[l]);
    }
    free(a->pre);
    free(a->act);
    f(be, a->x);
    f(be, a->labels);
    f(be, a->dlogits);
    f(be, a->scratch[0]);
    f(be, a->scratch[1]);
    free(a);
    rb->acts = NULL;
}

static void mlp_data(struct backend *be, const struct model *m, struct step_buffers *rb, uint64_t first_sample, int B,
                     uint64_t seed)
{
    const struct mlp *p = mlp_of(m);
    struct mlp_acts *a = rb->acts;
    be->ops->synth_batch(be, a->x, a->labels, first_sample, B, p->input_dim, p->classes, seed);
}

/* The forward pass; with_elementwise = 0 leaves only its GEMMs (the benchmark's floor). */
static void forward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int with_elementwise,
                         const struct step_hook *hook)
{
    const struct mlp *p = mlp_of(m);
    struct mlp_acts *a = rb->acts;
    const void *input = a->x;
    for (int l = 0; l < p->nlayers; l++) {
        const struct mlp_layer *s = &p->layers[l];
        step_hook_stage_begin(hook, l);
        /* pre[B x out] = input[B x in] * W^T */
        const void *w = step_elem(step_weights(rb), s->w_offset, rb->elem);
        if (with_elementwise && rb->fuse_forward) { /* + bias (its compute copy), then GELU, in the epilogue */
            const struct gemm_fusion f = {s->act == ACT_GELU ? EPI_GELU_BIAS : EPI_BIAS,
                                          step_elem(step_weights(rb), s->b_offset, rb->elem), a->pre[l], NULL, 0};
            be->ops->gemm_fused(be, 0, 1, B, s->out, s->in, input, s->in, w, s->in, a->act[l], s->out, &f);
        } else {
            be->ops->gemm(be, 0, 1, B, s->out, s->in, 1.0f, input, s->in, w, s->in, 0.0f, a->pre[l], 0, s->out);
            if (with_elementwise) /* the bias from the fp32 master, or from the weights when there is none */
                be->ops->bias_act_forward(be, a->act[l], a->pre[l],
                                          rb->master ? (const void *)(rb->params + s->b_offset)
                                                     : step_elem(rb->params_lp, s->b_offset, rb->elem),
                                          rb->master ? DT_F32 : be->act_dtype, B, s->out, s->act);
        }
        input = a->act[l];
    }
}

/* The backward pass from the logits' gradient, last layer first; with_elementwise as above. */
static void backward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int with_elementwise,
                          const struct step_hook *hook)
{
    const struct mlp *p = mlp_of(m);
    struct mlp_acts *a = rb->acts;
    void *d = a->dlogits; /* dL/d(output of layer l) */
    int which = 0;
    for (int l = p->nlayers - 1; l >= 0; l--) {
        const struct mlp_layer *s = &p->layers[l];
        const void *input = l == 0 ? a->x : a->act[l - 1];
        /* fused: layer l's GELU' and bias gradient were done by layer l+1's input-gradient GEMM */
        const int fused_here = with_elementwise && rb->fuse_backward && l < p->nlayers - 1;
        if (with_elementwise && !fused_here) {
            be->ops->act_backward(be, d, a->pre[l], B, s->out, s->act);
            be->ops->bias_grad(be, step_grad_at(rb, s->b_offset), rb->grad_dtype, d, B, s->out);
        }
        /* dW[out x in] = d^T[out x B] * input[B x in], straight into the gradient arena; layer 0,
         * which ends backward, in row blocks whose reduction can start one by one */
        const int rows = l == 0 && rb->last_rows > 0 ? rb->last_rows : s->out;
        for (int r = 0; r < s->out; r += rows) {
            const int n = s->out - r < rows ? s->out - r : rows;
            be->ops->gemm(be, 1, 0, n, s->in, B, 1.0f, step_elem(d, (size_t)r, rb->elem), s->out, input, s->in, 0.0f,
                          step_grad_at(rb, s->w_offset + (size_t)r * s->in), rb->grad_dtype == DT_F32, s->in);
            if (l == 0 && hook != NULL && hook->grads_done != NULL) /* layer 0 has no input gradient to compute */
                hook->grads_done(hook->ctx, s->w_offset + (size_t)(r + n) * s->in);
        }
        if (l > 0) {
            /* dX[B x in] = d[B x out] * W[out x in]; fused, already dL/d(pre) of layer l-1, and its bias gradient */
            void *dx = a->scratch[which];
            const void *w = step_elem(step_weights(rb), s->w_offset, rb->elem);
            if (with_elementwise && rb->fuse_backward) {
                const struct gemm_fusion f = {EPI_DGELU_BGRAD, step_grad_at(rb, p->layers[l - 1].b_offset), a->pre[l - 1],
                                              NULL, 0};
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

static void mlp_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                             float loss_scale, const struct step_hook *hook)
{
    const struct mlp *p = mlp_of(m);
    struct mlp_acts *a = rb->acts;
    forward_pass(be, m, rb, B, 1, hook);
    be->ops->softmax_xent(be, a->dlogits, rb->loss + slot, a->pre[p->nlayers - 1], a->labels, B, p->classes, p->classes,
                          loss_scale / (float)B);
}

static void mlp_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B,
                         const struct step_hook *hook)
{
    backward_pass(be, m, rb, B, 1, hook);
}

static int mlp_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int attention)
{
    (void)attention; /* none here */
    forward_pass(be, m, rb, B, 0, NULL);
    backward_pass(be, m, rb, B, 0, NULL);
    return 0;
}

static int mlp_inputs(const struct model *m, const struct step_buffers *rb, struct model_input *out, int max)
{
    const struct mlp *p = mlp_of(m);
    const struct mlp_acts *a = rb->acts;
    if (max < 2) return 0;
    out[0] = (struct model_input){"x", 0, (size_t)a->rows * (size_t)p->input_dim, a->x, 0};
    out[1] = (struct model_input){"labels", 1, (size_t)a->rows, a->labels, 0};
    return 2;
}

static const struct model_ops mlp_ops = {
    .plan_activations = mlp_plan_activations,
    .init_params = mlp_init_params,
    .summary = mlp_summary,
    .free = mlp_free,
    .splits_last = 1,
    .gradcheck_matrix_scale = 1.0f,
    .alloc_acts = mlp_alloc_acts,
    .free_acts = mlp_free_acts,
    .data = mlp_data,
    .inputs = mlp_inputs,
    .forward_loss = mlp_forward_loss,
    .backward = mlp_backward,
    .gemms_only = mlp_gemms_only,
};

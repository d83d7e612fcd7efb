/* transformer.c — GPT and BERT behind the model seam (transformer.h): the tensor
 * table, memory, initial weights, the synthetic token task, and the forward and
 * backward passes on one rank, built from the backend's GEMMs and its transformer
 * operations. Rows are positions: R = B x T of them, row-major [R x C]. */
#include "model/families/transformer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/synthetic.h"
#include "base/error.h"
#include "model/step.h"


/* The activations of one block, kept for backward. */
struct tf_block_acts {
    void *n1, *n2;              /* LayerNorm outputs [R x C] (GPT: the blocks' inputs to attention and FFN) */
    float *mean1, *rstd1, *mean2, *rstd2;
    void *qkv;                  /* [R x 3C] */
    void *probs;                /* [B*H x T x T]; flash: lse [B*H x T] floats */
    void *atty;                 /* attention output [R x C] */
    void *r1, *r2;              /* the residual sums [R x C] */
    void *fcpre, *fcact;        /* [R x F] */
};

/* Everything of B sequences (rb->acts). */
struct tf_acts {
    int B, R, M;                /* sequences, rows, predicted rows */
    int *tokens, *segments;     /* [R] (segments: BERT) */
    int *targets;               /* [M] */
    int *mask_rows;             /* [M]: the rows BERT predicts */
    void *emb;                  /* BERT: the embeddings' sum before LNe [R x C] */
    float *mean_e, *rstd_e;
    void **x;                   /* [L + 1]: the residual stream entering block l; x[L] leaves the last */
    struct tf_block_acts *blk;  /* [L] */
    void *hf;                   /* GPT: LNf(x[L]); BERT: the gathered rows x[L][masked] [M x C] */
    float *mean_f, *rstd_f;
    void *logits;               /* [M x Vp]: the logits, then (the loss runs in place) their gradient */
    void *dx, *dt1;             /* [R x C] the residual stream's gradient, and scratch */
    void *datty;                /* [R x C] */
    void *dqkv;                 /* [R x 3C] */
    void *dfc;                  /* [R x F] */
};

static const struct model_ops tf_ops;

static int add_tensor(struct model *m, const char *prefix, const char *what, int kind, int rows, int cols, int stage,
                      size_t *offset)
{
    char name[TENSOR_NAME_LEN];
    snprintf(name, sizeof name, "%s%s", prefix, what);
    *offset = m->nparams;
    return model_add_tensor(m, name, kind, rows, cols, stage);
}

int transformer_describe(const struct config *cfg, struct model *m, char *err, size_t errlen)
{
    const int bert = cfg->model_type == MODEL_BERT;
    if (cfg->hidden_dim % cfg->heads != 0) {
        snprintf(err, errlen, "model.hidden_dim = %d is not a multiple of model.heads = %d; make it one",
                 cfg->hidden_dim, cfg->heads);
        return -1;
    }
    struct tf *p = calloc(1, sizeof *p);
    CHECK_ALLOC(p);
    p->bert = bert;
    p->L = cfg->layers;
    p->C = cfg->hidden_dim;
    p->H = cfg->heads;
    p->T = cfg->seq_len;
    p->V = cfg->vocab;
    /* The head's rows padded to a multiple of 64 (GPT-2's 50,257 to 50,304, BERT's 30,522
     * to 30,528, as llm.c and Megatron do): an odd N runs the head's GEMMs at a fifth of
     * the blocks' rate on an H200 (docs/PERFORMANCE.md). The padding rows of wte are zero,
     * their logits masked in the loss (gradient 0), so they are never trained; FLOPs and
     * the loss count the real vocabulary. */
    p->Vp = (p->V + 63) / 64 * 64;
    p->F = 4 * cfg->hidden_dim;
    p->S = bert ? 2 : 0;
    p->attention = cfg->attention;
    p->nmask = bert ? (int)lround(cfg->mask_fraction * p->T) : p->T;
    if (p->nmask < 1) p->nmask = 1;
    p->blk = calloc((size_t)p->L, sizeof *p->blk);
    CHECK_ALLOC(p->blk);
    m->impl = p;
    m->ops = &tf_ops;
    m->nstages = p->L + (bert ? 1 : 2);
    m->unit = UNIT_TOKENS;
    m->units_per_sample = p->T;

    /* Backward order: GPT's final LayerNorm, the blocks from the last, the embeddings. */
    const int C = p->C, F = p->F;
    int bad = 0;
    if (!bert) {
        bad |= add_tensor(m, "lnf.", "gamma", TENSOR_VECTOR, 1, C, p->L + 1, &p->lnf_g);
        bad |= add_tensor(m, "lnf.", "beta", TENSOR_VECTOR, 1, C, p->L + 1, &p->lnf_b);
    }
    for (int l = p->L - 1; l >= 0 && !bad; l--) {
        struct tf_block *k = &p->blk[l];
        char pre[32];
        snprintf(pre, sizeof pre, "block%d.", l);
        const int s = l + 1;
        bad |= add_tensor(m, pre, "ln2.gamma", TENSOR_VECTOR, 1, C, s, &k->ln2_g);
        bad |= add_tensor(m, pre, "ln2.beta", TENSOR_VECTOR, 1, C, s, &k->ln2_b);
        bad |= add_tensor(m, pre, "fc2.bias", TENSOR_VECTOR, 1, C, s, &k->out_b);
        bad |= add_tensor(m, pre, "fc2.weight", TENSOR_MATRIX, C, F, s, &k->out_w);
        bad |= add_tensor(m, pre, "fc1.bias", TENSOR_VECTOR, 1, F, s, &k->fc_b);
        bad |= add_tensor(m, pre, "fc1.weight", TENSOR_MATRIX, F, C, s, &k->fc_w);
        bad |= add_tensor(m, pre, "ln1.gamma", TENSOR_VECTOR, 1, C, s, &k->ln1_g);
        bad |= add_tensor(m, pre, "ln1.beta", TENSOR_VECTOR, 1, C, s, &k->ln1_b);
        bad |= add_tensor(m, pre, "proj.bias", TENSOR_VECTOR, 1, C, s, &k->proj_b);
        bad |= add_tensor(m, pre, "proj.weight", TENSOR_MATRIX, C, C, s, &k->proj_w);
        bad |= add_tensor(m, pre, "qkv.bias", TENSOR_VECTOR, 1, 3 * C, s, &k->qkv_b);
        bad |= add_tensor(m, pre, "qkv.weight", TENSOR_MATRIX, 3 * C, C, s, &k->qkv_w);
    }
    if (bert) {
        bad |= add_tensor(m, "lne.", "gamma", TENSOR_VECTOR, 1, C, 0, &p->lne_g);
        bad |= add_tensor(m, "lne.", "beta", TENSOR_VECTOR, 1, C, 0, &p->lne_b);
        bad |= add_tensor(m, "wse", "", TENSOR_MATRIX, p->S, C, 0, &p->wse);
    }
    bad |= add_tensor(m, "wpe", "", TENSOR_MATRIX, p->T, C, 0, &p->wpe);
    bad |= add_tensor(m, "wte", "", TENSOR_MATRIX, p->Vp, C, 0, &p->wte); /* tied to the head: complete last */
    if (bad) {
        snprintf(err, errlen, "the model's parameter count overflows a 64-bit size; make it smaller");
        return -1;
    }
    /* GEMM FLOPs of a training step per sequence (forward x 3): the blocks' 12 C^2 per
     * token, attention's QK^T and PV (2 x 2 x T x C per token and block, the whole T x T
     * even when causal), and the head's 2 C V per predicted token. */
    const double T = p->T, Cd = C, L = p->L;
    m->flops_per_sample = 3.0 * (T * L * (2.0 * 12.0 * Cd * Cd + 4.0 * T * Cd) + 2.0 * Cd * p->V * p->nmask);
    return 0;
}

static void tf_free(struct model *m)
{
    struct tf *p = m->impl;
    if (p != NULL) free(p->blk);
    free(p);
    m->impl = NULL;
}

static int tf_plan_activations(const struct model *m, size_t E, int batch, size_t *act, size_t *data)
{
    const struct tf *p = tf_of(m);
    const size_t R = (size_t)batch * (size_t)p->T, M = (size_t)batch * (size_t)p->nmask, C = (size_t)p->C;
    const size_t F = (size_t)p->F, V = (size_t)p->Vp, BH = (size_t)batch * (size_t)p->H, T = (size_t)p->T;
    const size_t S = sizeof(float);
    int bad = 0;
    for (int l = 0; l < p->L; l++) { /* what tf_alloc_acts allocates per block (x[l+1] is its r2 or n2) */
        bad |= model_add_bytes(act, R, 5 * C, E);  /* n1, n2, atty, r1, r2 */
        bad |= model_add_bytes(act, R, 3 * C, E);  /* qkv */
        if (p->flash) bad |= model_add_bytes(act, BH, T, S); /* lse */
        else bad |= model_add_bytes(act, BH * T, T, E);      /* probs */
        bad |= model_add_bytes(act, R, 2 * F, E);  /* fcpre, fcact */
        bad |= model_add_bytes(act, R, 4, S);      /* two LayerNorms' mean and rstd */
    }
    bad |= model_add_bytes(act, R, C, E);                  /* x[0] */
    if (p->bert) bad |= model_add_bytes(act, R, C, E);     /* emb */
    bad |= model_add_bytes(act, R, p->bert ? 4 : 2, S);    /* LNf's mean and rstd (BERT: and LNe's) */
    bad |= model_add_bytes(act, p->bert ? M : R, C, E);    /* hf */
    bad |= model_add_bytes(act, M, V, E);                  /* logits, and in place their gradient */
    bad |= model_add_bytes(act, R, 6 * C + F, E);          /* dx, dt1, datty, dqkv, dfc */
    if (p->flash) bad |= model_add_bytes(act, BH, T, S);   /* backward's scratch: rowsum(dO O), or */
    else bad |= model_add_bytes(act, BH * T, T, E);        /* dP of every head (the backend allocates it) */
    bad |= model_add_bytes(data, R, 2, sizeof(int));       /* tokens, segments */
    bad |= model_add_bytes(data, M, 2, sizeof(int));       /* targets, mask rows */
    return bad ? -1 : 0;
}

/* Weights uniform with standard deviation 0.02 (GPT-2's), the output projections'
 * scaled by 1/sqrt(2L); LayerNorm gains 1, biases and shifts 0. */
static void tf_init_params(const struct model *m, uint64_t seed, float *params)
{
    const struct tf *p = tf_of(m);
    memset(params, 0, m->nparams * sizeof(float));
    const float a = 0.02f * sqrtf(3.0f), a_out = a / sqrtf(2.0f * (float)p->L);
    for (int i = 0; i < m->ntensors; i++) {
        const struct param_tensor *t = &m->tensors[i];
        float *w = params + t->offset;
        const int is_gain = t->kind == TENSOR_VECTOR && strstr(t->name, "gamma") != NULL;
        if (is_gain) {
            for (size_t j = 0; j < t->count; j++) w[j] = 1.0f;
        } else if (t->kind == TENSOR_MATRIX) {
            const int is_out = strstr(t->name, "proj.weight") != NULL || strstr(t->name, "fc2.weight") != NULL;
            const float bound = is_out ? a_out : a;
            const size_t used = t->offset == p->wte ? (size_t)p->V * (size_t)p->C : t->count; /* the padding stays 0 */
            for (size_t j = 0; j < used; j++)
                w[j] = bound * synth_uniform(synth_hash3(seed ^ 0x7472616e73ULL, (uint64_t)i, j));
        }
    }
}

static void tf_summary(const struct model *m, char *buf, size_t len)
{
    const struct tf *p = tf_of(m);
    snprintf(buf, len, "%s, %d x %d, %d heads, seq %d, vocab %d (head padded to %d)%s, %s attention",
             p->bert ? "post-LN encoder" : "pre-LN decoder", p->L, p->C, p->H, p->T, p->V, p->Vp,
             p->bert ? "" : ", causal", p->flash ? "flash" : "unfused");
    if (p->bert) {
        const size_t used = strlen(buf);
        snprintf(buf + used, len - used, ", %d of %d positions predicted", p->nmask, p->T);
    }
}

/* The backend has the transformer's operations (tf_ops.h), and settles the attention: fused where it can run. */
static int tf_supported(const struct model *m, const struct backend *be, char *err, size_t errlen)
{
    struct tf *p = m->impl;
    const struct tf_ops *o = be->tf;
    if (!tf_ops_complete(o)) {
        snprintf(err, errlen, "the %s backend has no transformer kernels yet (embeddings, LayerNorm, attention); run "
                 "model.type = gpt or bert with run.backend = cpu", be->ops->name);
        return -1;
    }
    const int D = p->C / p->H;
    const int can = o->flash_attention_ok != NULL && o->flash_attention_forward != NULL &&
                    o->flash_attention_backward != NULL && o->flash_attention_ok(be, D);
    if (p->attention == ATTENTION_FLASH && !can) {
        snprintf(err, errlen, "train.attention = flash needs the cuda backend, train.precision = bf16 or fp16 and a "
                 "head dimension (hidden_dim / heads) of 32 or 64 (here: %s backend, head dimension %d); set "
                 "train.attention = auto or unfused", be->ops->name, D);
        return -1;
    }
    p->flash = p->attention != ATTENTION_UNFUSED && can;
    return 0;
}

static void tf_alloc_acts(struct backend *be, const struct model *m, int B, struct step_buffers *rb)
{
    const struct tf *p = tf_of(m);
    struct tf_acts *a = calloc(1, sizeof *a);
    CHECK_ALLOC(a);
    rb->acts = a;
    a->B = B;
    a->R = B * p->T;
    a->M = B * p->nmask;
    const size_t e = rb->elem, R = (size_t)a->R, M = (size_t)a->M, C = (size_t)p->C, F = (size_t)p->F;
    a->tokens = step_alloc(be, R, sizeof(int));
    a->segments = step_alloc(be, R, sizeof(int));
    a->targets = step_alloc(be, M, sizeof(int));
    a->mask_rows = step_alloc(be, M, sizeof(int));
    a->x = calloc((size_t)p->L + 1, sizeof(void *));
    a->blk = calloc((size_t)p->L, sizeof *a->blk);
    CHECK_ALLOC(a->x);
    CHECK_ALLOC(a->blk);
    a->x[0] = step_alloc(be, R * C, e);
    if (p->bert) {
        a->emb = step_alloc(be, R * C, e);
        a->mean_e = step_alloc(be, R, sizeof(float));
        a->rstd_e = step_alloc(be, R, sizeof(float));
    }
    for (int l = 0; l < p->L; l++) {
        struct tf_block_acts *k = &a->blk[l];
        k->n1 = step_alloc(be, R * C, e);
        k->n2 = step_alloc(be, R * C, e);
        k->mean1 = step_alloc(be, R, sizeof(float));
        k->rstd1 = step_alloc(be, R, sizeof(float));
        k->mean2 = step_alloc(be, R, sizeof(float));
        k->rstd2 = step_alloc(be, R, sizeof(float));
        k->qkv = step_alloc(be, R * 3 * C, e);
        const size_t BHT = (size_t)B * (size_t)p->H * (size_t)p->T;
        k->probs = p->flash ? step_alloc(be, BHT, sizeof(float)) : step_alloc(be, BHT * (size_t)p->T, e);
        k->atty = step_alloc(be, R * C, e);
        k->r1 = step_alloc(be, R * C, e);
        k->r2 = step_alloc(be, R * C, e);
        k->fcpre = step_alloc(be, R * F, e);
        k->fcact = step_alloc(be, R * F, e);
        a->x[l + 1] = p->bert ? k->n2 : k->r2; /* the stream leaving block l */
    }
    a->hf = step_alloc(be, (p->bert ? M : R) * C, e);
    a->mean_f = step_alloc(be, R, sizeof(float));
    a->rstd_f = step_alloc(be, R, sizeof(float));
    a->logits = step_alloc(be, M * (size_t)p->Vp, e);
    a->dx = step_alloc(be, R * C, e);
    a->dt1 = step_alloc(be, R * C, e);
    a->datty = step_alloc(be, R * C, e);
    a->dqkv = step_alloc(be, R * 3 * C, e);
    a->dfc = step_alloc(be, R * F, e);
    if (be->ops->reserve != NULL) be->ops->reserve(be, a->R > a->M ? a->R : a->M, p->Vp > p->F ? p->Vp : p->F);
}

static void tf_free_acts(struct backend *be, const struct model *m, struct step_buffers *rb)
{
    const struct tf *p = tf_of(m);
    struct tf_acts *a = rb->acts;
    if (a == NULL) return;
    void (*f)(struct backend *, void *) = be->ops->free;
    for (int l = 0; l < p->L; l++) {
        struct tf_block_acts *k = &a->blk[l];
        void *bufs[] = {k->n1, k->n2, k->mean1, k->rstd1, k->mean2, k->rstd2, k->qkv, k->probs,
                        k->atty, k->r1, k->r2, k->fcpre, k->fcact};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) f(be, bufs[i]);
    }
    void *bufs[] = {a->tokens, a->segments, a->targets, a->mask_rows, a->x[0], a->hf, a->mean_f, a->rstd_f,
                    a->logits, a->dx, a->dt1, a->datty, a->dqkv, a->dfc};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) f(be, bufs[i]);
    if (p->bert) {
        f(be, a->emb);
        f(be, a->mean_e);
        f(be, a->rstd_e);
    }
    free(a->x);
    free(a->blk);
    free(a);
    rb->acts = NULL;
}

/* The synthetic token task (kernels/synthetic.h), made where the step runs: each
 * sequence repeats a random phrase; GPT predicts every next token, BERT its masked
 * positions (an odd step apart), whose inputs are the mask token V-1; segments split
 * the sequence in halves. */
static void tf_data(struct backend *be, const struct model *m, struct step_buffers *rb, uint64_t first_sample, int B,
                    uint64_t seed)
{
    const struct tf *p = tf_of(m);
    struct tf_acts *a = rb->acts;
    be->tf->synth_tokens(be, a->tokens, a->segments, a->targets, a->mask_rows, first_sample, B, p->T, p->V, p->nmask,
                         p->bert, seed);
}

/* ---- the passes ---------------------------------------------------------------------- */

/* y[R x out] = act(x[R x in] W^T + bias) (+ residual [R x out]; NULL: none), y_pre the
 * pre-activation; with_elementwise = 0: the GEMM alone. With train.gemm_epilogue the
 * bias, GELU and residual are cuBLASLt's epilogue; else our kernels after the GEMM. */
static void linear(struct backend *be, const struct step_buffers *rb, void *y_pre, void *y, const void *x, size_t w,
                   size_t bias, int R, int in, int out, int act, const void *residual, int with_elementwise)
{
    if (with_elementwise && rb->fuse_forward) {
        const struct gemm_fusion f = {act == ACT_GELU ? EPI_GELU_BIAS : EPI_BIAS, (void *)step_weight_at(rb, bias),
                                      y_pre, residual, 0};
        be->ops->gemm_fused(be, 0, 1, R, out, in, x, in, step_weight_at(rb, w), in, y, out, &f);
        return;
    }
    be->ops->gemm(be, 0, 1, R, out, in, 1.0f, x, in, step_weight_at(rb, w), in, 0.0f, y_pre, 0, out);
    if (!with_elementwise) return;
    be->ops->bias_act_forward(be, y, y_pre, step_weight_at(rb, bias), step_weight_dtype(be, rb), R, out, act);
    if (residual != NULL) be->tf->add(be, y, residual, (size_t)R * (size_t)out);
}

/* The bias whose gradient a LayerNorm backward takes as its dx's column sums: the layer
 * after it in the forward reads the LayerNorm's input from the residual stream, so the
 * stream's gradient there is that layer's output gradient (GPT: LNf and LN2 after the
 * FFN's and the projection's adds, LN1 after the previous block's FFN; BERT: LN2 and LN1
 * after the FFN and the projection). NO_BIAS where none is, or where train.bias_grad =
 * epilogue takes every bias gradient in a GEMM. */
#define NO_BIAS ((size_t)-1)

static void *bias_grad_by_layernorm(const struct step_buffers *rb, size_t bias)
{
    return bias == NO_BIAS || rb->fuse_bgrad ? NULL : step_grad_at(rb, bias);
}

/* From d = dL/dy [R x out] of linear(): the weight's and bias's gradients into the
 * arena, and dx = d W [R x in] (dx NULL: not needed; accumulate = 1: dx += d W, a
 * residual branch's gradient joining the stream's in the GEMM, beta = 1). The bias
 * gradient (d's column sums) comes from the weight-gradient GEMM's epilogue where
 * train.bias_grad = epilogue (that GEMM reads d anyway), else from our kernel, or not
 * here (bias_by_ln: the LayerNorm backward that wrote d took it, bias_grad_by_layernorm). */
static void linear_backward(struct backend *be, const struct step_buffers *rb, void *dx, const void *d, const void *x,
                            size_t w, size_t bias, int R, int in, int out, int with_elementwise, int accumulate,
                            int bias_by_ln)
{
    const int grad_f32 = rb->grad_dtype == DT_F32;
    if (with_elementwise && rb->fuse_bgrad) {
        const struct gemm_fusion f = {EPI_BGRADB, step_grad_at(rb, bias), NULL, NULL, grad_f32};
        be->ops->gemm_fused(be, 1, 0, out, in, R, d, out, x, in, step_grad_at(rb, w), in, &f);
    } else {
        if (with_elementwise && !bias_by_ln) be->ops->bias_grad(be, step_grad_at(rb, bias), rb->grad_dtype, d, R, out);
        be->ops->gemm(be, 1, 0, out, in, R, 1.0f, d, out, x, in, 0.0f, step_grad_at(rb, w), grad_f32, in);
    }
    if (dx != NULL)
        be->ops->gemm(be, 0, 0, R, in, out, 1.0f, d, out, step_weight_at(rb, w), in, accumulate ? 1.0f : 0.0f, dx, 0,
                      in);
}

/* The FFN's second linear backward, from d = dL/dr2: fc2's gradients, and dfc =
 * dL/d(fc1's pre-activation) = (d W2) * gelu'(fcpre). With train.gemm_epilogue = on,
 * GELU' runs in the GEMM's epilogue (cuBLASLt DGELU). fc1's bias gradient stays with
 * our kernel: DGELU_BGRAD, which would take it too, made BERT-Large's step 5 ms slower
 * on an H200 (49.2 against 44.3 ms; docs/PERFORMANCE.md). */
static void ffn_backward(struct backend *be, const struct step_buffers *rb, void *dfc, const void *d,
                         const struct tf_block_acts *s, const struct tf_block *k, int R, int C, int F, int wel)
{
    if (!wel || !rb->fuse_dgelu) {
        linear_backward(be, rb, dfc, d, s->fcact, k->out_w, k->out_b, R, F, C, wel, 0, 1);
        if (wel) be->ops->act_backward(be, dfc, s->fcpre, R, F, ACT_GELU);
        return;
    }
    linear_backward(be, rb, NULL, d, s->fcact, k->out_w, k->out_b, R, F, C, wel, 0, 1);
    const struct gemm_fusion f = {EPI_DGELU, NULL, s->fcpre, NULL, 0};
    be->ops->gemm_fused(be, 0, 0, R, F, C, d, C, step_weight_at(rb, k->out_w), F, dfc, F, &f);
}

static void layernorm(struct backend *be, const struct step_buffers *rb, void *y, float *mean, float *rstd,
                      const void *x, size_t g, size_t b, int R, int C, int with_elementwise)
{
    if (with_elementwise)
        be->tf->layernorm_forward(be, y, mean, rstd, x, step_weight_at(rb, g), step_weight_at(rb, b), R, C);
}

/* accumulate = 1: dx += the gradient through the LayerNorm (a pre-LN block's residual).
 * next_bias: the bias whose gradient is dx's column sums (bias_grad_by_layernorm), or NO_BIAS. */
static void layernorm_backward(struct backend *be, const struct step_buffers *rb, void *dx, const void *dy,
                               const void *x, const float *mean, const float *rstd, size_t g, size_t b, int R, int C,
                               int with_elementwise, int accumulate, size_t next_bias)
{
    if (with_elementwise)
        be->tf->layernorm_backward(be, dx, step_grad_at(rb, g), step_grad_at(rb, b), bias_grad_by_layernorm(rb, next_bias),
                                   rb->grad_dtype, dy, x, mean, rstd, step_weight_at(rb, g), R, C, accumulate);
}

/* with_elementwise = 0: the GEMMs alone, and attention's products (backend
 * attention_products) where `products` says so. */
static void forward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int with_elementwise,
                         int products, const struct step_hook *hook)
{
    const struct tf *p = tf_of(m);
    struct tf_acts *a = rb->acts;
    const int R = a->R, C = p->C, F = p->F, wel = with_elementwise;
    step_hook_stage_begin(hook, 0);
    if (wel) {
        void *e = p->bert ? a->emb : a->x[0];
        be->tf->embed_forward(be, e, a->tokens, p->bert ? a->segments : NULL, step_weight_at(rb, p->wte),
                              step_weight_at(rb, p->wpe), p->bert ? step_weight_at(rb, p->wse) : NULL, a->B, p->T, C);
        if (p->bert) layernorm(be, rb, a->x[0], a->mean_e, a->rstd_e, e, p->lne_g, p->lne_b, R, C, wel);
    }
    for (int l = 0; l < p->L; l++) {
        const struct tf_block *k = &p->blk[l];
        struct tf_block_acts *s = &a->blk[l];
        const void *x = a->x[l];
        step_hook_stage_begin(hook, l + 1);
        /* attention: GPT reads LN1(x), BERT x itself */
        if (!p->bert) layernorm(be, rb, s->n1, s->mean1, s->rstd1, x, k->ln1_g, k->ln1_b, R, C, wel);
        linear(be, rb, s->qkv, s->qkv, p->bert ? x : s->n1, k->qkv_w, k->qkv_b, R, C, 3 * C, ACT_NONE, NULL, wel);
        if (wel && p->flash)
            be->tf->flash_attention_forward(be, s->atty, s->probs, s->qkv, a->B, p->T, C, p->H, !p->bert);
        else if (wel)
            be->tf->attention_forward(be, s->atty, s->probs, s->qkv, a->B, p->T, C, p->H, !p->bert);
        else if (products)
            be->tf->attention_products(be, 0, s->atty, NULL, s->qkv, a->B, p->T, C, p->H);
        linear(be, rb, s->r1, s->r1, s->atty, k->proj_w, k->proj_b, R, C, C, ACT_NONE, x, wel); /* r1 = x + attention */
        /* FFN: GPT reads LN2(r1); BERT LN1(r1) */
        const void *h = s->r1;
        if (!p->bert) layernorm(be, rb, s->n2, s->mean2, s->rstd2, s->r1, k->ln2_g, k->ln2_b, R, C, wel), h = s->n2;
        else layernorm(be, rb, s->n1, s->mean1, s->rstd1, s->r1, k->ln1_g, k->ln1_b, R, C, wel), h = s->n1;
        linear(be, rb, s->fcpre, s->fcact, h, k->fc_w, k->fc_b, R, C, F, ACT_GELU, NULL, wel);
        /* r2 = (BERT: LN1's output; GPT: r1) + FFN */
        linear(be, rb, s->r2, s->r2, s->fcact, k->out_w, k->out_b, R, F, C, ACT_NONE, p->bert ? s->n1 : s->r1, wel);
        if (p->bert) layernorm(be, rb, s->n2, s->mean2, s->rstd2, s->r2, k->ln2_g, k->ln2_b, R, C, wel);
    }
    /* the head, tied to wte: GPT on LNf of every row, BERT on the masked rows */
    if (!p->bert) {
        step_hook_stage_begin(hook, p->L + 1);
        layernorm(be, rb, a->hf, a->mean_f, a->rstd_f, a->x[p->L], p->lnf_g, p->lnf_b, R, C, wel);
    } else if (wel) {
        be->tf->gather_rows(be, a->hf, a->x[p->L], a->mask_rows, a->M, C);
    }
    be->ops->gemm(be, 0, 1, a->M, p->Vp, C, 1.0f, a->hf, C, step_weight_at(rb, p->wte), C, 0.0f, a->logits, 0,
                  p->Vp);
}

static void backward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int with_elementwise,
                          int products, const struct step_hook *hook)
{
    const struct tf *p = tf_of(m);
    struct tf_acts *a = rb->acts;
    const int R = a->R, C = p->C, F = p->F, wel = with_elementwise;
    const size_t nel = (size_t)R * (size_t)C;
    /* the head: wte's gradient starts here (overwritten), the embedding adds to it */
    be->ops->gemm(be, 1, 0, p->Vp, C, a->M, 1.0f, a->logits, p->Vp, a->hf, C, 0.0f, step_grad_at(rb, p->wte),
                  rb->grad_dtype == DT_F32, C);
    if (!p->bert) {
        be->ops->gemm(be, 0, 0, R, C, p->Vp, 1.0f, a->logits, p->Vp, step_weight_at(rb, p->wte), C, 0.0f, a->dt1,
                      0, C);
        layernorm_backward(be, rb, a->dx, a->dt1, a->x[p->L], a->mean_f, a->rstd_f, p->lnf_g, p->lnf_b, R, C, wel, 0,
                           p->blk[p->L - 1].out_b);
        step_hook_stage_done(m, hook, p->L + 1);
    } else {
        be->ops->gemm(be, 0, 0, a->M, C, p->Vp, 1.0f, a->logits, p->Vp, step_weight_at(rb, p->wte), C, 0.0f, a->dt1,
                      0, C);
        if (wel) {
            be->ops->zero(be, a->dx, nel * rb->elem);
            be->tf->scatter_rows(be, a->dx, a->dt1, a->mask_rows, a->M, C);
        }
    }
    for (int l = p->L - 1; l >= 0; l--) {
        const struct tf_block *k = &p->blk[l];
        struct tf_block_acts *s = &a->blk[l];
        const void *x = a->x[l];
        /* a->dx: dL/d(the stream leaving block l). BERT first undoes LN2: dx := dL/dr2. */
        if (p->bert) {
            layernorm_backward(be, rb, a->dt1, a->dx, s->r2, s->mean2, s->rstd2, k->ln2_g, k->ln2_b, R, C, wel, 0,
                               k->out_b);
            void *t = a->dx;
            a->dx = a->dt1;
            a->dt1 = t;
        }
        /* r2 = h + FFN(h). The residual adds join the stream's gradient where they meet a
         * GEMM (BERT: dx += the input gradient, beta = 1) or a LayerNorm (GPT: dx += its
         * input gradient), so no add runs on its own. */
        const void *h = p->bert ? s->n1 : s->n2;
        ffn_backward(be, rb, a->dfc, a->dx, s, k, R, C, F, wel);
        if (p->bert) {
            /* dx := dL/dr2 + dL/dh through the FFN = dL/dh; then through LN1: dx := dL/dr1 */
            linear_backward(be, rb, a->dx, a->dfc, h, k->fc_w, k->fc_b, R, C, F, wel, 1, 0);
            layernorm_backward(be, rb, a->dt1, a->dx, s->r1, s->mean1, s->rstd1, k->ln1_g, k->ln1_b, R, C, wel, 0,
                               k->proj_b);
            void *t = a->dx;
            a->dx = a->dt1;
            a->dt1 = t;
        } else {
            /* h = LN2(r1): dx := dL/dr2 + dL/dr1 through LN2 */
            linear_backward(be, rb, a->dt1, a->dfc, h, k->fc_w, k->fc_b, R, C, F, wel, 0, 0);
            layernorm_backward(be, rb, a->dx, a->dt1, s->r1, s->mean2, s->rstd2, k->ln2_g, k->ln2_b, R, C, wel, 1,
                               k->proj_b);
        }
        /* r1 = x + proj(attn(qkv(g))), g = LN1(x) (GPT) or x (BERT) */
        linear_backward(be, rb, a->datty, a->dx, s->atty, k->proj_w, k->proj_b, R, C, C, wel, 0, 1);
        if (wel && p->flash)
            be->tf->flash_attention_backward(be, a->dqkv, a->datty, s->atty, s->qkv, s->probs, a->B, p->T, C, p->H,
                                             !p->bert);
        else if (wel)
            be->tf->attention_backward(be, a->dqkv, a->datty, s->qkv, s->probs, a->B, p->T, C, p->H, !p->bert);
        else if (products)
            be->tf->attention_products(be, 1, a->datty, a->dqkv, s->qkv, a->B, p->T, C, p->H);
        if (p->bert) { /* dL/dx = dL/dr1 + through qkv */
            linear_backward(be, rb, a->dx, a->dqkv, x, k->qkv_w, k->qkv_b, R, C, 3 * C, wel, 1, 0);
        } else {       /* dL/dx = dL/dr1 + through qkv and LN1 */
            linear_backward(be, rb, a->dt1, a->dqkv, s->n1, k->qkv_w, k->qkv_b, R, C, 3 * C, wel, 0, 0);
            layernorm_backward(be, rb, a->dx, a->dt1, x, s->mean1, s->rstd1, k->ln1_g, k->ln1_b, R, C, wel, 1,
                               l > 0 ? p->blk[l - 1].out_b : NO_BIAS);
        }
        step_hook_stage_done(m, hook, l + 1);
    }
    if (wel) {
        const void *de = a->dx;
        if (p->bert) {
            layernorm_backward(be, rb, a->dt1, a->dx, a->emb, a->mean_e, a->rstd_e, p->lne_g, p->lne_b, R, C, wel, 0,
                               NO_BIAS);
            de = a->dt1;
        }
        be->tf->embed_backward(be, step_grad_at(rb, p->wte), step_grad_at(rb, p->wpe),
                               p->bert ? step_grad_at(rb, p->wse) : NULL, rb->grad_dtype, a->tokens,
                               p->bert ? a->segments : NULL, de, a->B, p->T, C, p->V, p->S);
    }
    step_hook_stage_done(m, hook, 0);
}

static void tf_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                            float loss_scale, const struct step_hook *hook)
{
    (void)B;
    const struct tf *p = tf_of(m);
    struct tf_acts *a = rb->acts;
    forward_pass(be, m, rb, 1, 0, hook);
    be->ops->softmax_xent(be, a->logits, rb->loss + slot, a->logits, a->targets, a->M, p->V, p->Vp,
                          loss_scale / (float)a->M);
}

static void tf_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B,
                        const struct step_hook *hook)
{
    (void)B;
    backward_pass(be, m, rb, 1, 0, hook);
}

static int tf_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int attention)
{
    (void)B;
    const int products = attention && be->tf->attention_products != NULL;
    forward_pass(be, m, rb, 0, products, NULL);
    backward_pass(be, m, rb, 0, products, NULL);
    return products;
}

static int tf_inputs(const struct model *m, const struct step_buffers *rb, struct model_input *out, int max)
{
    const struct tf *p = tf_of(m);
    const struct tf_acts *a = rb->acts;
    if (max < 4) return 0;
    out[0] = (struct model_input){"tokens", 1, (size_t)a->R, a->tokens, 0};
    out[1] = (struct model_input){"targets", 1, (size_t)a->M, a->targets, 0};
    if (!p->bert) return 2;
    out[2] = (struct model_input){"segments", 1, (size_t)a->R, a->segments, 0};
    out[3] = (struct model_input){"mask_rows", 1, (size_t)a->M, a->mask_rows, 0};
    return 4;
}

static const struct model_ops tf_ops = {
    .plan_activations = tf_plan_activations,
    .init_params = tf_init_params,
    .summary = tf_summary,
    .free = tf_free,
    .splits_last = 0,
    /* at GPT-2's 0.02 the attention is nearly uniform and the Q, K (and BERT's V)
     * gradients sit below float32 finite differences: gradcheck probes at 8x */
    .gradcheck_matrix_scale = 8.0f,
    .supported = tf_supported,
    .alloc_acts = tf_alloc_acts,
    .free_acts = tf_free_acts,
    .data = tf_data,
    .inputs = tf_inputs,
    .forward_loss = tf_forward_loss,
    .backward = tf_backward,
    .gemms_only = tf_gemms_only,
};

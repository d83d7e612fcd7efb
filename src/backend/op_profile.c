/* op_profile.c — the backend's operations, each call bracketed by two events and
 * summed by kind (op_profile.h). Each of the backend's tables (the core, and the
 * families' it has: tf_ops.h, rn_ops.h) is swapped for a wrapper table, a copy of it
 * with the timed entries replaced; every wrapper records, calls the original, records. */
#include "backend/op_profile.h"

#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static struct {
    struct backend *be;
    const struct backend_ops *orig;
    const struct tf_ops *orig_tf; /* NULL: the backend has none */
    const struct rn_ops *orig_rn;
    struct backend_ops wrapped;
    struct tf_ops wrapped_tf;
    struct rn_ops wrapped_rn;
    struct op_profile *p;
    struct backend_event **ev; /* [2 x capacity]: a pair per call of the current step */
    int *kind;                 /* [capacity] */
    int *shape;                /* [capacity]: the GEMM shape of the call (p->gemm), or -1 */
    int ncalls, capacity;
} g;

/* Every kind of operation timed, with its name: the core's, then each family's. */
#define OP_KINDS(X)                                                                                           \
    X(GEMM, "gemm") X(GEMM_FUSED, "gemm + epilogue") X(BIAS_ACT, "bias + activation")                          \
    X(ACT_BACKWARD, "activation backward") X(BIAS_GRAD, "bias gradient") X(SOFTMAX_XENT, "softmax cross-entropy") \
    X(OPTIMIZER, "optimizer") X(CAST, "cast") X(EMBED_FORWARD, "embedding forward")                            \
    X(EMBED_BACKWARD, "embedding backward") X(LAYERNORM_FORWARD, "layernorm forward")                          \
    X(LAYERNORM_BACKWARD, "layernorm backward") X(ATTENTION_FORWARD, "attention forward")                      \
    X(ATTENTION_BACKWARD, "attention backward") X(FLASH_FORWARD, "flash attention forward")                    \
    X(FLASH_BACKWARD, "flash attention backward") X(ADD, "residual add") X(ROWS, "row gather/scatter")         \
    X(DATA, "synthetic data") X(ZERO, "zero") X(IM2COL, "im2col / col2im") X(COPY_ROWS, "row copy")              \
    X(BATCHNORM_FORWARD, "batchnorm forward") X(BATCHNORM_ADD_RELU, "batchnorm + add + ReLU")                  \
    X(BATCHNORM_BACKWARD, "batchnorm backward") X(POOL, "pooling") X(CONV, "convolution (implicit GEMM)")        \
    X(CONV_STATS, "convolution + batchnorm sums")

enum op_kind {
#define OP_KIND_ENUM(kind, name) OPK_##kind,
    OP_KINDS(OP_KIND_ENUM)
#undef OP_KIND_ENUM
    OPK_COUNT
};
_Static_assert(OPK_COUNT <= OP_KINDS_MAX, "raise OP_KINDS_MAX in op_profile.h");

static const char *const names[OPK_COUNT] = {
#define OP_KIND_NAME(kind, name) name,
    OP_KINDS(OP_KIND_NAME)
#undef OP_KIND_NAME
};

int op_kind_count(void) { return OPK_COUNT; }
const char *op_kind_name(int kind) { return kind >= 0 && kind < OPK_COUNT ? names[kind] : "?"; }
int op_kind_is_gemm(int kind)
{
    return kind == OPK_GEMM || kind == OPK_GEMM_FUSED || kind == OPK_CONV || kind == OPK_CONV_STATS;
}
int op_kind_holds_gemms(int kind) { return kind == OPK_ATTENTION_FORWARD || kind == OPK_ATTENTION_BACKWARD; }

/* The event pair of a new call of `kind` (the pool grows during the first profiled step). */
static int open_call(int kind)
{
    if (g.ncalls == g.capacity) {
        const int cap = g.capacity ? 2 * g.capacity : 256;
        struct backend_event **ev = realloc(g.ev, (size_t)cap * 2 * sizeof *ev);
        int *k = realloc(g.kind, (size_t)cap * sizeof *k), *sh = realloc(g.shape, (size_t)cap * sizeof *sh);
        CHECK_ALLOC(ev);
        CHECK_ALLOC(k);
        CHECK_ALLOC(sh);
        for (int i = 2 * g.capacity; i < 2 * cap; i++) ev[i] = g.orig->event_create(g.be);
        g.ev = ev;
        g.kind = k;
        g.shape = sh;
        g.capacity = cap;
    }
    g.kind[g.ncalls] = kind;
    g.shape[g.ncalls] = -1;
    g.orig->event_record(g.be, g.ev[2 * g.ncalls]);
    return g.ncalls++;
}

static void close_call(int i) { g.orig->event_record(g.be, g.ev[2 * i + 1]); }

/* A wrapper: time the original operation `op` of table g.`table` as kind K. */
#define TIMED(K, table, op, ...)          \
    do {                                  \
        const int call_ = open_call(K);   \
        g.table->op(__VA_ARGS__);         \
        close_call(call_);                \
    } while (0)

/* The index in g.p->gemm of a GEMM's shape (added when new; -1 when the table is full). */
static int gemm_shape(const struct op_gemm_shape *c)
{
    struct op_profile *p = g.p;
    for (int i = 0; i < p->ngemm; i++) {
        const struct op_gemm_shape *q = &p->gemm[i];
        if (q->fused == c->fused && q->ta == c->ta && q->tb == c->tb && q->m == c->m && q->n == c->n &&
            q->k == c->k && q->lda == c->lda && q->ldb == c->ldb && q->ldc == c->ldc && q->c_is_f32 == c->c_is_f32 &&
            q->beta == c->beta && q->f.kind == c->f.kind && (q->f.residual != NULL) == (c->f.residual != NULL))
            return i;
    }
    if (p->ngemm == OP_GEMM_SHAPES_MAX) return -1;
    p->gemm[p->ngemm] = *c;
    return p->ngemm++;
}

/* The core's (struct backend_ops). */
static void w_gemm(struct backend *b, int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda,
                   const void *B, int ldb, float beta, void *C, int c_is_f32, int ldc)
{
    const struct op_gemm_shape c = {0, ta, tb, m, n, k, lda, ldb, ldc, c_is_f32, alpha, beta, A, B, C, {0}, 0.0, 0};
    const int call = open_call(OPK_GEMM);
    g.shape[call] = gemm_shape(&c);
    g.orig->gemm(b, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, c_is_f32, ldc);
    close_call(call);
}
static void w_gemm_fused(struct backend *b, int ta, int tb, int m, int n, int k, const void *A, int lda, const void *B,
                         int ldb, void *C, int ldc, const struct gemm_fusion *f)
{
    const struct op_gemm_shape c = {1, ta, tb, m, n, k, lda, ldb, ldc, f->c_is_f32, 1.0f, 0.0f, A, B, C, *f, 0.0, 0};
    const int call = open_call(OPK_GEMM_FUSED);
    g.shape[call] = gemm_shape(&c);
    g.orig->gemm_fused(b, ta, tb, m, n, k, A, lda, B, ldb, C, ldc, f);
    close_call(call);
}
static void w_bias_act(struct backend *b, void *out, void *pre, const void *bias, int bias_dtype, int rows, int cols,
                       int act)
{
    TIMED(OPK_BIAS_ACT, orig, bias_act_forward, b, out, pre, bias, bias_dtype, rows, cols, act);
}
static void w_act_backward(struct backend *b, void *d, const void *pre, int rows, int cols, int act)
{
    TIMED(OPK_ACT_BACKWARD, orig, act_backward, b, d, pre, rows, cols, act);
}
static void w_bias_grad(struct backend *b, void *dbias, int dt, const void *d, int rows, int cols)
{
    TIMED(OPK_BIAS_GRAD, orig, bias_grad, b, dbias, dt, d, rows, cols);
}
static void w_xent(struct backend *b, void *dlogits, float *loss, const void *logits, const int *labels, int rows,
                   int classes, int ld, float scale)
{
    TIMED(OPK_SOFTMAX_XENT, orig, softmax_xent, b, dlogits, loss, logits, labels, rows, classes, ld, scale);
}
static void w_optimizer(struct backend *b, float *params, const void *grads, int gd, void *s1, void *s2, int sd,
                        void *lp, size_t n, const struct optim_hparams *h)
{
    TIMED(OPK_OPTIMIZER, orig, optimizer_step, b, params, grads, gd, s1, s2, sd, lp, n, h);
}
static void w_cast_from(struct backend *b, void *dst, const float *src, size_t n)
{
    TIMED(OPK_CAST, orig, cast_from_f32, b, dst, src, n);
}
static void w_synth_batch(struct backend *b, void *x, int *labels, uint64_t first, int rows, int dim, int classes,
                          uint64_t seed)
{
    TIMED(OPK_DATA, orig, synth_batch, b, x, labels, first, rows, dim, classes, seed);
}
static void w_zero(struct backend *b, void *ptr, size_t bytes) { TIMED(OPK_ZERO, orig, zero, b, ptr, bytes); }

/* The transformer's (struct tf_ops). */
static void w_embed_fwd(struct backend *b, void *x, const int *t, const int *s, const void *wte, const void *wpe,
                        const void *wse, int B, int T, int C)
{
    TIMED(OPK_EMBED_FORWARD, orig_tf, embed_forward, b, x, t, s, wte, wpe, wse, B, T, C);
}
static void w_embed_bwd(struct backend *b, void *dwte, void *dwpe, void *dwse, int gd, const int *t, const int *s,
                        const void *dx, int B, int T, int C, int V, int S)
{
    TIMED(OPK_EMBED_BACKWARD, orig_tf, embed_backward, b, dwte, dwpe, dwse, gd, t, s, dx, B, T, C, V, S);
}
static void w_ln_fwd(struct backend *b, void *y, float *mean, float *rstd, const void *x, const void *gamma,
                     const void *beta, int rows, int C)
{
    TIMED(OPK_LAYERNORM_FORWARD, orig_tf, layernorm_forward, b, y, mean, rstd, x, gamma, beta, rows, C);
}
static void w_ln_bwd(struct backend *b, void *dx, void *dg, void *db, void *ds, int gd, const void *dy,
                     const void *x, const float *mean, const float *rstd, const void *gamma, int rows, int C, int acc)
{
    TIMED(OPK_LAYERNORM_BACKWARD, orig_tf, layernorm_backward, b, dx, dg, db, ds, gd, dy, x, mean, rstd, gamma, rows,
          C, acc);
}
static void w_attn_fwd(struct backend *b, void *out, void *probs, const void *qkv, int B, int T, int C, int H, int causal)
{
    TIMED(OPK_ATTENTION_FORWARD, orig_tf, attention_forward, b, out, probs, qkv, B, T, C, H, causal);
}
static void w_attn_bwd(struct backend *b, void *dqkv, const void *dout, const void *qkv, const void *probs, int B, int T,
                       int C, int H, int causal)
{
    TIMED(OPK_ATTENTION_BACKWARD, orig_tf, attention_backward, b, dqkv, dout, qkv, probs, B, T, C, H, causal);
}
static void w_flash_fwd(struct backend *b, void *out, float *lse, const void *qkv, int B, int T, int C, int H,
                        int causal)
{
    TIMED(OPK_FLASH_FORWARD, orig_tf, flash_attention_forward, b, out, lse, qkv, B, T, C, H, causal);
}
static void w_flash_bwd(struct backend *b, void *dqkv, const void *dout, const void *out, const void *qkv,
                        const float *lse, int B, int T, int C, int H, int causal)
{
    TIMED(OPK_FLASH_BACKWARD, orig_tf, flash_attention_backward, b, dqkv, dout, out, qkv, lse, B, T, C, H, causal);
}
static void w_add(struct backend *b, void *y, const void *x, size_t n) { TIMED(OPK_ADD, orig_tf, add, b, y, x, n); }
static void w_gather(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    TIMED(OPK_ROWS, orig_tf, gather_rows, b, dst, src, rows, n, C);
}
static void w_scatter(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    TIMED(OPK_ROWS, orig_tf, scatter_rows, b, dst, src, rows, n, C);
}
static void w_synth_tokens(struct backend *b, int *t, int *s, int *targets, int *mask_rows, uint64_t first, int B, int T,
                           int V, int nmask, int bert, uint64_t seed)
{
    TIMED(OPK_DATA, orig_tf, synth_tokens, b, t, s, targets, mask_rows, first, B, T, V, nmask, bert, seed);
}

/* The ResNet's (struct rn_ops). */
static void w_im2col(struct backend *b, void *col, const void *x, const struct conv_shape *s)
{
    TIMED(OPK_IM2COL, orig_rn, im2col, b, col, x, s);
}
static void w_col2im(struct backend *b, void *dx, const void *col, const struct conv_shape *s)
{
    TIMED(OPK_IM2COL, orig_rn, col2im, b, dx, col, s);
}
static void w_copy_rows(struct backend *b, void *dst, int dst_ld, const void *src, int src_ld, int rows, int cols,
                        int elem_bytes)
{
    TIMED(OPK_COPY_ROWS, orig_rn, copy_rows, b, dst, dst_ld, src, src_ld, rows, cols, elem_bytes);
}
static void w_bn_fwd(struct backend *b, void *y, float *mean, float *rstd, float *rm, float *rv, const void *x,
                     const void *gamma, const void *beta, int rows, int C, int training, float momentum, int relu,
                     const struct bn_partials *pre)
{
    TIMED(OPK_BATCHNORM_FORWARD, orig_rn, batchnorm_forward, b, y, mean, rstd, rm, rv, x, gamma, beta, rows, C,
          training, momentum, relu, pre);
}
static void w_bn_add_relu(struct backend *b, void *y, uint8_t *mask, const struct bn_operands *bn,
                          const struct bn_operands *proj, const void *shortcut, int rows, int C, int training,
                          float momentum)
{
    TIMED(OPK_BATCHNORM_ADD_RELU, orig_rn, batchnorm_add_relu_forward, b, y, mask, bn, proj, shortcut, rows, C, training,
          momentum);
}
static void w_bn_bwd(struct backend *b, void *dx, void *dg, void *db, int gd, const void *dy, const void *x,
                     const float *mean, const float *rstd, const void *gamma, const void *beta, int rows, int C,
                     int training, int relu, const uint8_t *mask, void *dy_masked)
{
    TIMED(OPK_BATCHNORM_BACKWARD, orig_rn, batchnorm_backward, b, dx, dg, db, gd, dy, x, mean, rstd, gamma, beta, rows,
          C, training, relu, mask, dy_masked);
}
static void w_maxpool_fwd(struct backend *b, void *y, uint8_t *argmax, const void *x, const struct conv_shape *s)
{
    TIMED(OPK_POOL, orig_rn, maxpool_forward, b, y, argmax, x, s);
}
static void w_maxpool_bwd(struct backend *b, void *dx, const void *dy, const uint8_t *argmax, const struct conv_shape *s)
{
    TIMED(OPK_POOL, orig_rn, maxpool_backward, b, dx, dy, argmax, s);
}
static void w_avgpool_fwd(struct backend *b, void *y, const void *x, int N, int HW, int C)
{
    TIMED(OPK_POOL, orig_rn, avgpool_forward, b, y, x, N, HW, C);
}
static void w_avgpool_bwd(struct backend *b, void *dx, const void *dy, int N, int HW, int C)
{
    TIMED(OPK_POOL, orig_rn, avgpool_backward, b, dx, dy, N, HW, C);
}
static void w_synth_images(struct backend *b, void *x, int *labels, uint64_t first, int B, int H, int W, int C,
                           int classes, uint64_t seed)
{
    TIMED(OPK_DATA, orig_rn, synth_images, b, x, labels, first, B, H, W, C, classes, seed);
}

/* Counted only where it ran: a call it declined (0: the caller takes im2col and a timed
 * gemm instead) launched nothing and is the last one opened, so it is dropped. */
static int w_conv_implicit(struct backend *b, int dgrad, void *out, const void *in, const void *w,
                           const struct conv_shape *s, int K)
{
    const int call = open_call(OPK_CONV);
    const int done = g.orig_rn->conv_implicit(b, dgrad, out, in, w, s, K);
    close_call(call);
    if (!done && call == g.ncalls - 1) g.ncalls--;
    return done;
}

static int w_conv_wgrad_implicit(struct backend *b, void *dw, int grad_dtype, const void *dy, const void *x,
                                 const struct conv_shape *s, int K)
{
    const int call = open_call(OPK_CONV);
    const int done = g.orig_rn->conv_wgrad_implicit(b, dw, grad_dtype, dy, x, s, K);
    close_call(call);
    if (!done && call == g.ncalls - 1) g.ncalls--; /* declined: as w_conv_implicit */
    return done;
}

static int w_conv_forward_stats(struct backend *b, int implicit, void *y, const void *in, const void *w,
                                const struct conv_shape *s, int K, const float *shift, int slot, struct bn_partials *pre)
{
    const int call = open_call(OPK_CONV_STATS);
    const int done = g.orig_rn->conv_forward_stats(b, implicit, y, in, w, s, K, shift, slot, pre);
    close_call(call);
    if (!done && call == g.ncalls - 1) g.ncalls--; /* declined: as w_conv_implicit */
    return done;
}

/* The wrapper tables: the timed entries of a copy replaced, only where the backend
 * has them (a NULL operation stays NULL). */
#define WRAP(field, fn) if (w->field != NULL) w->field = fn
static void wrap_core(struct backend_ops *w)
{
    WRAP(gemm, w_gemm);
    WRAP(gemm_fused, w_gemm_fused);
    WRAP(bias_act_forward, w_bias_act);
    WRAP(act_backward, w_act_backward);
    WRAP(bias_grad, w_bias_grad);
    WRAP(softmax_xent, w_xent);
    WRAP(optimizer_step, w_optimizer);
    WRAP(cast_from_f32, w_cast_from);
    WRAP(synth_batch, w_synth_batch);
    WRAP(zero, w_zero);
}

static void wrap_tf(struct tf_ops *w)
{
    WRAP(embed_forward, w_embed_fwd);
    WRAP(embed_backward, w_embed_bwd);
    WRAP(layernorm_forward, w_ln_fwd);
    WRAP(layernorm_backward, w_ln_bwd);
    WRAP(attention_forward, w_attn_fwd);
    WRAP(attention_backward, w_attn_bwd);
    WRAP(flash_attention_forward, w_flash_fwd);
    WRAP(flash_attention_backward, w_flash_bwd);
    WRAP(add, w_add);
    WRAP(gather_rows, w_gather);
    WRAP(scatter_rows, w_scatter);
    WRAP(synth_tokens, w_synth_tokens);
}

static void wrap_rn(struct rn_ops *w)
{
    WRAP(im2col, w_im2col);
    WRAP(col2im, w_col2im);
    WRAP(copy_rows, w_copy_rows);
    WRAP(batchnorm_forward, w_bn_fwd);
    WRAP(batchnorm_add_relu_forward, w_bn_add_relu);
    WRAP(batchnorm_backward, w_bn_bwd);
    WRAP(maxpool_forward, w_maxpool_fwd);
    WRAP(maxpool_backward, w_maxpool_bwd);
    WRAP(avgpool_forward, w_avgpool_fwd);
    WRAP(avgpool_backward, w_avgpool_bwd);
    WRAP(synth_images, w_synth_images);
    WRAP(conv_implicit, w_conv_implicit);
    WRAP(conv_wgrad_implicit, w_conv_wgrad_implicit);
    WRAP(conv_forward_stats, w_conv_forward_stats);
}
#undef WRAP

void op_profile_begin(struct backend *be, struct op_profile *p)
{
    memset(p, 0, sizeof *p);
    g.be = be;
    g.orig = be->ops;
    g.orig_tf = be->tf;
    g.orig_rn = be->rn;
    g.p = p;
    g.ncalls = 0;
    g.wrapped = *be->ops;
    wrap_core(&g.wrapped);
    be->ops = &g.wrapped;
    if (be->tf != NULL) {
        g.wrapped_tf = *be->tf;
        wrap_tf(&g.wrapped_tf);
        be->tf = &g.wrapped_tf;
    }
    if (be->rn != NULL) {
        g.wrapped_rn = *be->rn;
        wrap_rn(&g.wrapped_rn);
        be->rn = &g.wrapped_rn;
    }
}

void op_profile_step_end(struct backend *be)
{
    g.orig->synchronize(be);
    for (int i = 0; i < g.ncalls; i++) {
        const double t = g.orig->event_elapsed_s(be, g.ev[2 * i], g.ev[2 * i + 1]);
        g.p->seconds[g.kind[i]] += t;
        g.p->calls[g.kind[i]]++;
        if (g.shape[i] >= 0) {
            g.p->gemm[g.shape[i]].seconds += t;
            g.p->gemm[g.shape[i]].calls++;
        }
    }
    g.p->steps++;
    g.ncalls = 0;
}

void op_profile_end(struct backend *be)
{
    be->ops = g.orig;
    be->tf = g.orig_tf;
    be->rn = g.orig_rn;
    for (int i = 0; i < 2 * g.capacity; i++) be->ops->event_destroy(be, g.ev[i]);
    free(g.ev);
    free(g.kind);
    free(g.shape);
    memset(&g, 0, sizeof g);
}

static void run_shape(struct backend *be, const struct op_gemm_shape *c)
{
    if (c->fused)
        be->ops->gemm_fused(be, c->ta, c->tb, c->m, c->n, c->k, c->A, c->lda, c->B, c->ldb, c->C, c->ldc, &c->f);
    else
        be->ops->gemm(be, c->ta, c->tb, c->m, c->n, c->k, c->alpha, c->A, c->lda, c->B, c->ldb, c->beta, c->C,
                      c->c_is_f32, c->ldc);
}

void op_profile_gemm_alone(struct backend *be, const struct op_profile *p, int iters, double *alone_s)
{
    struct backend_event *t0 = be->ops->event_create(be), *t1 = be->ops->event_create(be);
    for (int i = 0; i < p->ngemm; i++) {
        for (int w = 0; w < 3; w++) run_shape(be, &p->gemm[i]);
        be->ops->event_record(be, t0);
        for (int r = 0; r < iters; r++) run_shape(be, &p->gemm[i]);
        be->ops->event_record(be, t1);
        be->ops->synchronize(be);
        alone_s[i] = be->ops->event_elapsed_s(be, t0, t1) / iters;
    }
    be->ops->event_destroy(be, t0);
    be->ops->event_destroy(be, t1);
}

const char *op_gemm_shape_name(const struct op_gemm_shape *c)
{
    if (!c->fused) return c->beta != 0.0f ? "gemm+C" : "gemm";
    switch (c->f.kind) {
    case EPI_BIAS: return c->f.residual != NULL ? "gemm+bias+residual" : "gemm+bias";
    case EPI_GELU_BIAS: return "gemm+bias+GELU";
    case EPI_DGELU_BGRAD: return "gemm*GELU'+bgrad";
    case EPI_DGELU: return "gemm*GELU'";
    case EPI_BGRADB: return "gemm+bias grad";
    default: return "gemm";
    }
}

/* resnet_pass.c — the ResNet's forward and backward passes on one rank (resnet.h):
 * convolutions as GEMMs through the backend: a 1x1 stride-1 one on its input as it
 * lies; a windowed one as the backend's implicit GEMM where it has one for the shape
 * (rn_ops.h's conv_implicit and conv_wgrad_implicit), else through im2col (and
 * col2im); batch norm, pooling and the residual adds through the backend's
 * ResNet operations (backend.h). with_elementwise = 0 runs the GEMMs alone, on the
 * same buffers: the step's GEMM floor for dpscale bench. */
#include <stdio.h>

#include "base/error.h"
#include "model/families/resnet_internal.h"


static struct conv_shape shape_of(const struct rn_conv *c, int N)
{
    return (struct conv_shape){N, c->H, c->H, c->cin, c->k, c->k, c->stride, c->pad, c->P, c->P, c->ld};
}

/* c's weight as its GEMMs on col read it, rows of ld: the weight itself, or (ld > K) its
 * copy in the padded weights, refreshed when refresh (the optimizer moved it since) */
static const void *gemm_weight(struct backend *be, const struct step_buffers *rb, struct rn_acts *a,
                               const struct rn_conv *c, int refresh)
{
    const int K = rn_conv_k(c);
    if (c->ld == K) return step_weight_at(rb, c->w);
    void *w = step_elem(a->wpad, c->wpad_at, rb->elem);
    if (refresh) be->rn->copy_rows(be, w, c->ld, step_weight_at(rb, c->w), K, c->cout, K, (int)rb->elem);
    return w;
}

/* the col buffer of c: its own where forward keeps it for backward */
static void *col_of(struct rn_acts *a, const struct rn_conv *c) { return c->keep_col ? a->stem_col : a->col; }

/* 1x1 stride 1: the input is its own im2col */
static int plain_gemm(const struct rn_conv *c) { return c->k == 1 && c->stride == 1; }

/* c's col padded or kept: written by this file's im2col path, which backward reads, so
 * never an implicit GEMM */
static int own_col(const struct rn_conv *c) { return c->ld != rn_conv_k(c) || c->keep_col; }

/* The backend's implicit GEMM of a windowed convolution (rn_ops.h), where it has one
 * that takes the shape: 1 when done. An implicit GEMM is a GEMM: it runs with or
 * without the element-wise work. */
static int conv_implicit(struct backend *be, const struct rn_conv *c, const struct conv_shape *s, int dgrad, void *out,
                         const void *in, const void *w)
{
    return !plain_gemm(c) && !own_col(c) && be->rn->conv_implicit != NULL && be->rn->conv_implicit(be, dgrad, out, in, w, s, c->cout);
}

/* The training batch norm that reads a convolution's output next, for its partial sums
 * from the convolution's epilogue: the one given, none when frozen (it takes no statistics) */
static const struct rn_bn *stats_for(const struct resnet *p, const struct rn_bn *n) { return p->frozen ? NULL : n; }

/* y [B*P*P x cout] = conv(x); with_elementwise = 0: the GEMM alone (no im2col). bn (NULL:
 * none): the training batch norm that reads y next; where the backend's convolution leaves
 * its partial sums about its running mean (rn_ops.h's conv_forward_stats, into `slot`),
 * *pre says where and 1 is returned, else 0 (bn's own pass then takes them). */
static int conv_forward(struct backend *be, const struct step_buffers *rb, struct rn_acts *a, const struct rn_conv *c,
                        const void *x, void *y, int wel, const struct rn_bn *bn, int slot, struct bn_partials *pre)
{
    const struct conv_shape s = shape_of(c, a->B);
    const int M = a->B * c->P * c->P;
    const int stats = bn != NULL && be->rn->conv_forward_stats != NULL;
    const float *shift = bn != NULL ? a->run_mean + bn->at : NULL;
    const void *col = x;
    if (stats && !plain_gemm(c) && !own_col(c) &&
        be->rn->conv_forward_stats(be, 1, y, x, step_weight_at(rb, c->w), &s, c->cout, shift, slot, pre))
        return 1;
    if (conv_implicit(be, c, &s, 0, y, x, step_weight_at(rb, c->w))) return 0;
    if (!plain_gemm(c)) {
        if (wel) be->rn->im2col(be, col_of(a, c), x, &s);
        col = col_of(a, c);
    }
    const void *w = gemm_weight(be, rb, a, c, wel);
    if (stats && be->rn->conv_forward_stats(be, 0, y, col, w, &s, c->cout, shift, slot, pre)) return 1;
    be->ops->gemm(be, 0, 1, M, c->cout, c->ld, 1.0f, col, c->ld, w, c->ld, 0.0f, y, 0, c->cout);
    return 0;
}

/* The weight's gradient dyᵀ · col into the arena: the backend's implicit GEMM where it
 * takes the shape, else through im2col (a 1x1 stride-1's col is x itself; a kept col is
 * forward's); a padded col's (ld > K) into rows of ld in dwpad, then its K columns into
 * the arena. */
static void weight_gradient(struct backend *be, const struct step_buffers *rb, struct rn_acts *a,
                            const struct rn_conv *c, const struct conv_shape *s, const void *x, const void *dy, int wel)
{
    void *dw = step_grad_at(rb, c->w);
    const int M = a->B * c->P * c->P, K = rn_conv_k(c);
    if (!plain_gemm(c) && !own_col(c) && be->rn->conv_wgrad_implicit != NULL &&
        be->rn->conv_wgrad_implicit(be, dw, rb->grad_dtype, dy, x, s, c->cout))
        return;
    const void *col = x;
    if (!plain_gemm(c)) {
        if (wel && !c->keep_col) be->rn->im2col(be, a->col, x, s);
        col = col_of(a, c);
    }
    const int f32 = rb->grad_dtype == DT_F32;
    if (c->ld == K) {
        be->ops->gemm(be, 1, 0, c->cout, K, M, 1.0f, dy, c->cout, col, K, 0.0f, dw, f32, K);
        return;
    }
    be->ops->gemm(be, 1, 0, c->cout, c->ld, M, 1.0f, dy, c->cout, col, c->ld, 0.0f, a->dwpad, f32, c->ld);
    if (wel) be->rn->copy_rows(be, dw, K, a->dwpad, c->ld, c->cout, K, (int)dtype_size(rb->grad_dtype));
}

/* From dy [B*P*P x cout]: the weight's gradient into the arena, and dx [B*H*H x cin]
 * (NULL: not needed); accumulate = 1 adds to dx (a 1x1 stride-1 convolution only). */
static void conv_backward(struct backend *be, const struct step_buffers *rb, struct rn_acts *a, const struct rn_conv *c,
                          const void *x, const void *dy, void *dx, int accumulate, int wel)
{
    const struct conv_shape s = shape_of(c, a->B);
    const int M = a->B * c->P * c->P, plain = plain_gemm(c);
    weight_gradient(be, rb, a, c, &s, x, dy, wel);
    if (dx == NULL) return;
    if (!plain && accumulate) DP_FATAL(NULL, "resnet: a strided or k x k convolution cannot add into its input's gradient");
    if (c->keep_col) DP_FATAL(NULL, "resnet: a convolution whose col is kept has no input gradient here");
    if (conv_implicit(be, c, &s, 1, dx, dy, step_weight_at(rb, c->w))) return;
    be->ops->gemm(be, 0, 0, M, c->ld, c->cout, 1.0f, dy, c->cout, gemm_weight(be, rb, a, c, 0), c->ld,
                  accumulate && wel ? 1.0f : 0.0f, plain ? dx : a->col, 0, c->ld);
    if (!plain && wel) be->rn->col2im(be, dx, a->col, &s);
}

/* pre (NULL: none): x's partial sums from the convolution that wrote it */
static void bn_forward(struct backend *be, const struct step_buffers *rb, const struct resnet *p, struct rn_acts *a,
                       const struct rn_bn *n, void *y, const void *x, int rows, int relu, const struct bn_partials *pre)
{
    be->rn->batchnorm_forward(be, y, a->mean + n->at, a->rstd + n->at, a->run_mean + n->at, a->run_var + n->at, x,
                              step_weight_at(rb, n->gamma), step_weight_at(rb, n->beta), rows, n->C, !p->frozen,
                              RN_BN_MOMENTUM, relu, pre);
}

/* batch norm n's operands on input x: its gains, its statistics' slots */
static struct bn_operands bn_operands_of(const struct step_buffers *rb, struct rn_acts *a, const struct rn_bn *n,
                                         const void *x, const struct bn_partials *pre)
{
    return (struct bn_operands){x, step_weight_at(rb, n->gamma), step_weight_at(rb, n->beta), a->mean + n->at,
                                a->rstd + n->at, a->run_mean + n->at, a->run_var + n->at, pre};
}

/* A bottleneck's output, out = max(bn3(y3) + the shortcut, 0), in one element-wise pass:
 * the shortcut is the projection's batch norm of yp, computed in that pass (never
 * stored), or the block's input x itself; and the bits of out > 0, for backward. */
static void bn_add_relu_forward(struct backend *be, const struct step_buffers *rb, const struct resnet *p,
                                struct rn_acts *a, const struct rn_block *k, struct rn_block_acts *s, const void *x,
                                int rows, const struct bn_partials *pre3, const struct bn_partials *prep)
{
    const struct bn_operands b3 = bn_operands_of(rb, a, &k->b3, s->y3, pre3);
    const struct bn_operands bp = k->proj ? bn_operands_of(rb, a, &k->bp, s->yp, prep) : (struct bn_operands){0};
    be->rn->batchnorm_add_relu_forward(be, s->out, s->mask, &b3, k->proj ? &bp : NULL, k->proj ? NULL : x, rows, k->b3.C,
                                       !p->frozen, RN_BN_MOMENTUM);
}

/* relu: the forward's batch norm had its ReLU (backward recomputes the mask from x);
 * mask: a block's output ReLU after it (its bits zero dy; dy_masked, if not NULL, gets
 * that gradient: the identity shortcut's) */
static void bn_backward_masked(struct backend *be, const struct step_buffers *rb, const struct resnet *p,
                               struct rn_acts *a, const struct rn_bn *n, void *dx, const void *dy, const void *x,
                               int rows, int relu, const uint8_t *mask, void *dy_masked)
{
    be->rn->batchnorm_backward(be, dx, step_grad_at(rb, n->gamma), step_grad_at(rb, n->beta), rb->grad_dtype, dy, x,
                               a->mean + n->at, a->rstd + n->at, step_weight_at(rb, n->gamma),
                               step_weight_at(rb, n->beta), rows, n->C, !p->frozen, relu, mask, dy_masked);
}

static void bn_backward(struct backend *be, const struct step_buffers *rb, const struct resnet *p, struct rn_acts *a,
                        const struct rn_bn *n, void *dx, const void *dy, const void *x, int rows, int relu)
{
    bn_backward_masked(be, rb, p, a, n, dx, dy, x, rows, relu, NULL, NULL);
}

static struct conv_shape pool_shape(const struct resnet *p, int N)
{
    return (struct conv_shape){N, p->stem.P, p->stem.P, p->width, 3, 3, 2, 1, p->pool, p->pool, 0};
}

/* with_elementwise = 0: the GEMMs alone. */
static void forward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int wel,
                         const struct step_hook *hook)
{
    const struct resnet *p = resnet_of(m);
    struct rn_acts *a = rb->acts;
    const int B = a->B;
    struct bn_partials pre[2]; /* the partial sums the convolutions leave: the main path's, the projection's */
#define PRE(got, i) ((got) ? &pre[i] : NULL)
    step_hook_stage_begin(hook, 0);
    int got = conv_forward(be, rb, a, &p->stem, a->x, a->y0, wel, stats_for(p, &p->stem_bn), 0, &pre[0]);
    if (wel) {
        const struct conv_shape ps = pool_shape(p, B);
        bn_forward(be, rb, p, a, &p->stem_bn, a->a0, a->y0, B * p->stem.P * p->stem.P, 1, PRE(got, 0));
        be->rn->maxpool_forward(be, a->pool, a->argmax, a->a0, &ps);
    }
    const void *x = a->pool;
    for (int i = 0; i < p->nblocks; i++) {
        const struct rn_block *k = &p->blk[i];
        struct rn_block_acts *s = &a->blk[i];
        const int rin = B * k->H * k->H, rout = B * k->P * k->P;
        step_hook_stage_begin(hook, i + 1);
        got = conv_forward(be, rb, a, &k->c1, x, s->y1, wel, stats_for(p, &k->b1), 0, &pre[0]);
        if (wel) bn_forward(be, rb, p, a, &k->b1, s->a1, s->y1, rin, 1, PRE(got, 0));
        got = conv_forward(be, rb, a, &k->c2, s->a1, s->y2, wel, stats_for(p, &k->b2), 0, &pre[0]);
        if (wel) bn_forward(be, rb, p, a, &k->b2, s->a2, s->y2, rout, 1, PRE(got, 0));
        got = conv_forward(be, rb, a, &k->c3, s->a2, s->y3, wel, stats_for(p, &k->b3), 0, &pre[0]);
        const int gotp = k->proj && conv_forward(be, rb, a, &k->cp, x, s->yp, wel, stats_for(p, &k->bp), 1, &pre[1]);
        if (wel) bn_add_relu_forward(be, rb, p, a, k, s, x, rout, PRE(got, 0), PRE(gotp, 1));
        x = s->out;
    }
#undef PRE
    step_hook_stage_begin(hook, p->nblocks + 1);
    if (wel) be->rn->avgpool_forward(be, a->feat, x, B, p->feat_hw, p->feat);
    be->ops->gemm(be, 0, 1, B, p->classes, p->feat, 1.0f, a->feat, p->feat, step_weight_at(rb, p->fc_w), p->feat, 0.0f,
                  a->logits, 0, p->classes);
    if (wel)
        be->ops->bias_act_forward(be, a->logits, a->logits, step_weight_at(rb, p->fc_b), step_weight_dtype(be, rb), B,
                                  p->classes, ACT_NONE);
}

/* From the logits' gradient; with_elementwise as above. The stream's gradient is in
 * g[gi]: an identity shortcut passes it on in place (conv1's input gradient adds to
 * it), a convolution shortcut writes the other one. A block's output ReLU's backward is
 * in its last batch norms' backward: the mask's bits zero g as they read it, and bn3's
 * writes the masked g back where the identity passes it on. */
static void backward_pass(struct backend *be, const struct model *m, struct step_buffers *rb, int wel,
                          const struct step_hook *hook)
{
    const struct resnet *p = resnet_of(m);
    struct rn_acts *a = rb->acts;
    const int B = a->B;
    void *t0 = a->t[0], *t1 = a->t[1];
    if (wel) be->ops->bias_grad(be, step_grad_at(rb, p->fc_b), rb->grad_dtype, a->dlogits, B, p->classes);
    be->ops->gemm(be, 1, 0, p->classes, p->feat, B, 1.0f, a->dlogits, p->classes, a->feat, p->feat, 0.0f,
                  step_grad_at(rb, p->fc_w), rb->grad_dtype == DT_F32, p->feat);
    be->ops->gemm(be, 0, 0, B, p->feat, p->classes, 1.0f, a->dlogits, p->classes, step_weight_at(rb, p->fc_w), p->feat, 0.0f,
                  a->dfeat, 0, p->feat);
    int gi = 0;
    if (wel) be->rn->avgpool_backward(be, a->g[gi], a->dfeat, B, p->feat_hw, p->feat);
    step_hook_stage_done(m, hook, p->nblocks + 1);
    for (int i = p->nblocks - 1; i >= 0; i--) {
        const struct rn_block *k = &p->blk[i];
        struct rn_block_acts *s = &a->blk[i];
        const void *x = i > 0 ? a->blk[i - 1].out : a->pool;
        const int rin = B * k->H * k->H, rout = B * k->P * k->P;
        void *g = a->g[gi], *dx = g;
        if (k->proj) {
            if (wel) bn_backward_masked(be, rb, p, a, &k->bp, t0, g, s->yp, rout, 0, s->mask, NULL);
            gi ^= 1;
            dx = a->g[gi];
            conv_backward(be, rb, a, &k->cp, x, t0, dx, 0, wel);
        }
        if (wel) bn_backward_masked(be, rb, p, a, &k->b3, t0, g, s->y3, rout, 0, s->mask, k->proj ? NULL : g);
        conv_backward(be, rb, a, &k->c3, s->a2, t0, t1, 0, wel);
        if (wel) bn_backward(be, rb, p, a, &k->b2, t1, t1, s->y2, rout, 1);
        conv_backward(be, rb, a, &k->c2, s->a1, t1, t0, 0, wel);
        if (wel) bn_backward(be, rb, p, a, &k->b1, t0, t0, s->y1, rin, 1);
        conv_backward(be, rb, a, &k->c1, x, t0, dx, 1, wel); /* dx: the shortcut's gradient, plus this */
        step_hook_stage_done(m, hook, i + 1);
    }
    if (wel) {
        const struct conv_shape ps = pool_shape(p, B);
        be->rn->maxpool_backward(be, t0, a->g[gi], a->argmax, &ps);
        bn_backward(be, rb, p, a, &p->stem_bn, t0, t0, a->y0, B * p->stem.P * p->stem.P, 1);
    }
    conv_backward(be, rb, a, &p->stem, a->x, t0, NULL, 0, wel);
    step_hook_stage_done(m, hook, 0);
}

void rn_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                     float loss_scale, const struct step_hook *hook)
{
    const struct resnet *p = resnet_of(m);
    struct rn_acts *a = rb->acts;
    forward_pass(be, m, rb, 1, hook);
    be->ops->softmax_xent(be, a->dlogits, rb->loss + slot, a->logits, a->labels, B, p->classes, p->classes,
                          loss_scale / (float)B);
}

void rn_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B, const struct step_hook *hook)
{
    (void)B;
    backward_pass(be, m, rb, 1, hook);
}

int rn_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int attention)
{
    (void)B;
    (void)attention; /* none here */
    forward_pass(be, m, rb, 0, NULL);
    backward_pass(be, m, rb, 0, NULL);
    return 0;
}

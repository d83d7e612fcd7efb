/* resnet.c — ResNet v1.5 behind the model seam (resnet.h): its tensor table, memory,
 * initial weights, the synthetic images and the ops table; the forward and backward
 * passes are resnet_pass.c's.
 *
 * Layout NHWC, because the tensor cores want it: an activation of B images P x P x C
 * is [B*P*P x C] row-major, so a channel is a column. A convolution is a GEMM with
 * M = B*P*Q rows, N = Cout columns and K = R*S*Cin: forward y = col W^T, col the
 * input's im2col [M x K] (a 1x1 stride-1 convolution needs none: col is the input);
 * backward dW = dy^T col (im2col again, into the same scratch), and dx = col2im(dy W)
 * (a 1x1 stride-1 one: dx = dy W, which may add into the shortcut's gradient, beta = 1).
 *
 * Batch norm trains on each rank's own batch (model.batchnorm = batch), as PyTorch's
 * DDP does without SyncBatchNorm: N ranks of batch B are then not 1 rank of batch N*B,
 * whose statistics are over all N*B. Its running statistics (momentum 0.1) are state
 * of the rank's activations, not parameters: no gradient, no allreduce, nothing the
 * optimizer touches; the loss does not read them. model.batchnorm = frozen normalises
 * with them instead, held at mean 0 and variance 1: the loss is a sum over samples, and
 * the data-parallel equivalence of N ranks and one holds (the test mode). */
#include "model/families/resnet.h"
#include "model/families/resnet_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/synthetic.h"
#include "base/error.h"
#include "model/step.h"

#define RN_MAX_STAGES 8
#define RN_MAX_CHANNELS 1048576

static const struct model_ops rn_ops;

static size_t square(int side) { return (size_t)side * (size_t)side; }

static void conv_set(struct rn_conv *c, int cin, int cout, int k, int stride, int H)
{
    c->cin = cin;
    c->cout = cout;
    c->k = k;
    c->stride = stride;
    c->pad = (k - 1) / 2;
    c->H = H;
    c->P = (H + 2 * c->pad - k) / stride + 1;
    const int K = k * k * cin;
    c->ld = k == 1 && stride == 1 ? K : (K + 7) / 8 * 8;
}

/* c's padded weight, where it has one, at the end of the others */
static void pad_weight(struct resnet *p, struct rn_conv *c)
{
    const size_t n = (size_t)c->cout * c->ld;
    if (c->ld == rn_conv_k(c)) return;
    c->wpad_at = p->wpad;
    p->wpad += n;
    if (n > p->max_wpad) p->max_wpad = n;
}

static size_t max_size(size_t a, size_t b) { return a > b ? a : b; }

/* The shapes of every layer, and the largest activation and im2col of one image. */
static void layout(struct resnet *p, const struct config *cfg)
{
    conv_set(&p->stem, RN_CHANNELS, p->width, 7, 2, p->image);
    p->pool = (p->stem.P + 2 - 3) / 2 + 1;
    p->max_act = square(p->stem.P) * (size_t)p->width;
    p->stem_col = square(p->stem.P) * (size_t)p->stem.ld;
    p->stem.keep_col = 1;
    pad_weight(p, &p->stem);
    int H = p->pool, cin = p->width, i = 0;
    for (int s = 0; s < p->nstage; s++)
        for (int b = 0; b < cfg->blocks[s]; b++, i++) {
            struct rn_block *k = &p->blk[i];
            const int stride = s > 0 && b == 0 ? 2 : 1, mid = p->width << s;
            k->stage = s;
            k->proj = b == 0;
            k->cin = cin;
            k->mid = mid;
            k->cout = 4 * mid;
            conv_set(&k->c1, cin, mid, 1, 1, H);
            conv_set(&k->c2, mid, mid, 3, stride, H);
            conv_set(&k->c3, mid, k->cout, 1, 1, k->c2.P);
            if (k->proj) conv_set(&k->cp, cin, k->cout, 1, stride, H);
            k->H = H;
            k->P = k->c2.P;
            p->max_act = max_size(p->max_act, max_size(square(H) * (size_t)mid, square(k->P) * (size_t)k->cout));
            p->max_act = max_size(p->max_act, square(H) * (size_t)cin);
            p->max_col = max_size(p->max_col, square(k->P) * (size_t)k->c2.ld);
            pad_weight(p, &k->c2);
            if (k->proj && stride != 1) {
                p->max_col = max_size(p->max_col, square(k->P) * (size_t)k->cp.ld);
                pad_weight(p, &k->cp);
            }
            H = k->P;
            cin = k->cout;
        }
    p->feat = cin;
    p->feat_hw = H * H;
}

/* Tensor <prefix><what><suffix> of `stage` at the end of the arena, its offset in *offset. */
static int add_tensor(struct model *m, const char *prefix, const char *what, const char *suffix, int kind, int rows,
                      int cols, int stage, size_t *offset)
{
    char name[TENSOR_NAME_LEN];
    if (snprintf(name, sizeof name, "%s%s%s", prefix, what, suffix) >= (int)sizeof name) return -1;
    *offset = m->nparams;
    return model_add_tensor(m, name, kind, rows, cols, stage);
}

static int add_conv(struct model *m, const char *prefix, const char *what, struct rn_conv *c, int stage)
{
    return add_tensor(m, prefix, what, ".weight", TENSOR_MATRIX, c->cout, c->k * c->k * c->cin, stage, &c->w);
}

static int add_bn(struct model *m, struct resnet *p, const char *prefix, const char *what, struct rn_bn *n, int C,
                  int stage)
{
    n->C = C;
    n->at = p->bn_channels;
    p->bn_channels += (size_t)C;
    return add_tensor(m, prefix, what, ".gamma", TENSOR_VECTOR, 1, C, stage, &n->gamma) |
           add_tensor(m, prefix, what, ".beta", TENSOR_VECTOR, 1, C, stage, &n->beta);
}

/* GEMM FLOPs of a training step of one image: forward, the weight's gradient, and the
 * input's unless it is the stem's (the images need none). */
static double conv_flops(const struct rn_conv *c, int with_dx)
{
    return (with_dx ? 6.0 : 4.0) * (double)square(c->P) * c->cout * c->k * c->k * c->cin;
}

int resnet_describe(const struct config *cfg, struct model *m, char *err, size_t errlen)
{
    if (cfg->nblocks < 1 || cfg->nblocks > RN_MAX_STAGES) {
        snprintf(err, errlen, "model.blocks has %d stages; give the bottlenecks of 1 to %d stages, e.g. 3,4,6,3",
                 cfg->nblocks, RN_MAX_STAGES);
        return -1;
    }
    if ((4LL * cfg->width) << (cfg->nblocks - 1) > RN_MAX_CHANNELS) {
        snprintf(err, errlen, "model.width = %d makes the last stage %lld channels wide (at most %d); lower model.width "
                 "or give fewer stages", cfg->width, (4LL * cfg->width) << (cfg->nblocks - 1), RN_MAX_CHANNELS);
        return -1;
    }
    struct resnet *p = calloc(1, sizeof *p);
    CHECK_ALLOC(p);
    p->image = cfg->image_size;
    p->channels = RN_CHANNELS;
    p->width = cfg->width;
    p->classes = cfg->classes;
    p->nstage = cfg->nblocks;
    p->frozen = cfg->batchnorm == BATCHNORM_FROZEN;
    for (int s = 0; s < p->nstage; s++) {
        p->blocks[s] = cfg->blocks[s];
        p->nblocks += cfg->blocks[s];
    }
    p->blk = calloc((size_t)p->nblocks, sizeof *p->blk);
    CHECK_ALLOC(p->blk);
    m->impl = p;
    m->ops = &rn_ops;
    m->nstages = p->nblocks + 2;
    m->unit = UNIT_IMAGES;
    m->units_per_sample = 1;
    m->gemm_share_note = "no target for the resnet: batch norm and im2col / col2im are the rest, below";
    layout(p, cfg);

    /* Backward order: the head, the bottlenecks from the last (each in the order its
     * backward produces them: the shortcut's, then conv3's, conv2's, conv1's), the stem. */
    const int head = p->nblocks + 1;
    int bad = add_tensor(m, "", "fc", ".bias", TENSOR_VECTOR, 1, p->classes, head, &p->fc_b);
    bad |= add_tensor(m, "", "fc", ".weight", TENSOR_MATRIX, p->classes, p->feat, head, &p->fc_w);
    for (int i = p->nblocks - 1; i >= 0 && !bad; i--) {
        struct rn_block *k = &p->blk[i];
        int first = i; /* the block's index within its stage (torchvision's names: layer<stage>.<index>.) */
        while (first > 0 && p->blk[first - 1].stage == k->stage) first--;
        char pre[32];
        snprintf(pre, sizeof pre, "layer%d.%d.", k->stage + 1, i - first);
        if (k->proj) {
            bad |= add_bn(m, p, pre, "downsample.bn", &k->bp, k->cout, i + 1);
            bad |= add_conv(m, pre, "downsample.conv", &k->cp, i + 1);
        }
        bad |= add_bn(m, p, pre, "bn3", &k->b3, k->cout, i + 1);
        bad |= add_conv(m, pre, "conv3", &k->c3, i + 1);
        bad |= add_bn(m, p, pre, "bn2", &k->b2, k->mid, i + 1);
        bad |= add_conv(m, pre, "conv2", &k->c2, i + 1);
        bad |= add_bn(m, p, pre, "bn1", &k->b1, k->mid, i + 1);
        bad |= add_conv(m, pre, "conv1", &k->c1, i + 1);
    }
    bad |= add_bn(m, p, "", "bn1", &p->stem_bn, p->width, 0);
    bad |= add_conv(m, "", "conv1", &p->stem, 0);
    if (bad) {
        snprintf(err, errlen, "the model's parameter count overflows a 64-bit size; lower model.width or model.blocks");
        return -1;
    }
    double flops = conv_flops(&p->stem, 0) + 6.0 * p->feat * p->classes;
    for (int i = 0; i < p->nblocks; i++) {
        const struct rn_block *k = &p->blk[i];
        flops += conv_flops(&k->c1, 1) + conv_flops(&k->c2, 1) + conv_flops(&k->c3, 1);
        if (k->proj) flops += conv_flops(&k->cp, 1);
    }
    m->flops_per_sample = flops;
    return 0;
}

static void rn_free(struct model *m)
{
    struct resnet *p = m->impl;
    if (p != NULL) free(p->blk);
    free(p);
    m->impl = NULL;
}

/* Every buffer rn_alloc_acts allocates, in the same order. */
static int rn_plan_activations(const struct model *m, size_t E, int batch, size_t *act, size_t *data)
{
    const struct resnet *p = resnet_of(m);
    const size_t B = (size_t)batch, F = sizeof(float);
    /* the GEMMs take their rows as int: the largest activation's rows must fit */
    if (B * square(p->stem.P) > (size_t)INT_MAX) return -1;
    int bad = model_add_bytes(data, B, square(p->image) * RN_CHANNELS, E);
    bad |= model_add_bytes(data, B, 1, sizeof(int));
    bad |= model_add_bytes(act, B, 2 * square(p->stem.P) * (size_t)p->width, E); /* y0, a0 */
    bad |= model_add_bytes(act, B, square(p->pool) * (size_t)p->width, E);       /* pool */
    bad |= model_add_bytes(act, B, square(p->pool) * (size_t)p->width, 1); /* argmax: a byte an element */
    for (int i = 0; i < p->nblocks; i++) {
        const struct rn_block *k = &p->blk[i];
        bad |= model_add_bytes(act, B, 2 * square(k->H) * (size_t)k->mid, E);  /* y1, a1 */
        bad |= model_add_bytes(act, B, 2 * square(k->P) * (size_t)k->mid, E);  /* y2, a2 */
        bad |= model_add_bytes(act, B, (k->proj ? 3 : 2) * square(k->P) * (size_t)k->cout, E); /* y3, out (, yp) */
        bad |= model_add_bytes(act, 1, relu_mask_bytes(B * square(k->P) * (size_t)k->cout), 1); /* mask */
    }
    bad |= model_add_bytes(act, B, 2 * (size_t)p->feat, E);    /* feat, dfeat */
    bad |= model_add_bytes(act, B, 2 * (size_t)p->classes, E); /* logits, dlogits */
    bad |= model_add_bytes(act, B, 4 * p->max_act, E);         /* g[2], t[2] */
    bad |= model_add_bytes(act, B, p->max_col, E);             /* col */
    bad |= model_add_bytes(act, B, p->stem_col, E);            /* stem_col */
    bad |= model_add_bytes(act, 1, p->wpad, E);                /* wpad */
    bad |= model_add_bytes(act, 1, p->max_wpad, F);            /* dwpad */
    bad |= model_add_bytes(act, p->bn_channels, 4, F);         /* mean, rstd, run_mean, run_var */
    return bad ? -1 : 0;
}

/* He (Kaiming) uniform by fan-out for the convolutions, as torchvision initialises
 * them (variance 2 / (k^2 Cout)); BN gains 1 and shifts 0; the dense layer uniform
 * with variance 1/(3 feat), its bias 0. */
static void init_conv(const struct rn_conv *c, uint64_t seed, float *params)
{
    const float bound = sqrtf(6.0f / (float)(c->cout * c->k * c->k));
    const size_t n = (size_t)c->cout * c->k * c->k * c->cin;
    for (size_t j = 0; j < n; j++) params[c->w + j] = bound * synth_uniform(synth_hash3(seed ^ 0x7265736e6574ULL, c->w, j));
}

static void init_bn(const struct rn_bn *n, float *params)
{
    for (int j = 0; j < n->C; j++) params[n->gamma + j] = 1.0f;
}

static void rn_init_params(const struct model *m, uint64_t seed, float *params)
{
    const struct resnet *p = resnet_of(m);
    memset(params, 0, m->nparams * sizeof(float));
    init_conv(&p->stem, seed, params);
    init_bn(&p->stem_bn, params);
    for (int i = 0; i < p->nblocks; i++) {
        const struct rn_block *k = &p->blk[i];
        init_conv(&k->c1, seed, params);
        init_conv(&k->c2, seed, params);
        init_conv(&k->c3, seed, params);
        init_bn(&k->b1, params);
        init_bn(&k->b2, params);
        init_bn(&k->b3, params);
        if (k->proj) {
            init_conv(&k->cp, seed, params);
            init_bn(&k->bp, params);
        }
    }
    const float bound = 1.0f / sqrtf((float)p->feat);
    for (size_t j = 0; j < (size_t)p->classes * p->feat; j++)
        params[p->fc_w + j] = bound * synth_uniform(synth_hash3(seed ^ 0x7265736e6574ULL, p->fc_w, j));
}

static void rn_summary(const struct model *m, char *buf, size_t len)
{
    const struct resnet *p = resnet_of(m);
    char blocks[64] = "";
    for (int s = 0; s < p->nstage; s++) {
        const size_t used = strlen(blocks);
        snprintf(blocks + used, sizeof blocks - used, "%s%d", s ? "," : "", p->blocks[s]);
    }
    snprintf(buf, len, "ResNet v1.5, %d x %d x %d images (NHWC), blocks %s, width %d, %d classes, %s", p->image,
             p->image, p->channels, blocks, p->width, p->classes,
             p->frozen ? "frozen batch norm" : "batch norm over each rank's batch");
}

/* The backend has the ResNet's operations, all of them (rn_ops.h). */
static int rn_supported(const struct model *m, const struct backend *be, char *err, size_t errlen)
{
    (void)m;
    if (rn_ops_complete(be->rn)) return 0;
    snprintf(err, errlen, "the %s backend lacks the resnet's operations; use --backend=cpu", be->ops->name);
    return -1;
}

static void rn_alloc_acts(struct backend *be, const struct model *m, int B, struct step_buffers *rb)
{
    const struct resnet *p = resnet_of(m);
    if ((size_t)B * square(p->stem.P) > (size_t)INT_MAX)
        DP_FATAL("lower train.batch_per_gpu or model.image_size", "%d images of %d x %d make more GEMM rows than an int holds",
                 B, p->image, p->image);
    struct rn_acts *a = calloc(1, sizeof *a);
    CHECK_ALLOC(a);
    rb->acts = a;
    rb->fuse_forward = rb->fuse_dgelu = rb->fuse_backward = rb->fuse_bgrad = 0; /* no epilogues here */
    a->B = B;
    if (be->ops->reserve != NULL) be->ops->reserve(be, B, p->classes); /* the loss's rows, the head's bias gradient */
    const size_t e = rb->elem, b = (size_t)B, F = sizeof(float);
    a->x = step_alloc(be, b * square(p->image) * RN_CHANNELS, e);
    a->labels = step_alloc(be, b, sizeof(int));
    a->y0 = step_alloc(be, b * square(p->stem.P) * (size_t)p->width, e);
    a->a0 = step_alloc(be, b * square(p->stem.P) * (size_t)p->width, e);
    a->pool = step_alloc(be, b * square(p->pool) * (size_t)p->width, e);
    a->argmax = step_alloc(be, b * square(p->pool) * (size_t)p->width, 1);
    a->blk = calloc((size_t)p->nblocks, sizeof *a->blk);
    CHECK_ALLOC(a->blk);
    for (int i = 0; i < p->nblocks; i++) {
        const struct rn_block *k = &p->blk[i];
        struct rn_block_acts *s = &a->blk[i];
        const size_t in = b * square(k->H), out = b * square(k->P);
        s->y1 = step_alloc(be, in * (size_t)k->mid, e);
        s->a1 = step_alloc(be, in * (size_t)k->mid, e);
        s->y2 = step_alloc(be, out * (size_t)k->mid, e);
        s->a2 = step_alloc(be, out * (size_t)k->mid, e);
        s->y3 = step_alloc(be, out * (size_t)k->cout, e);
        s->out = step_alloc(be, out * (size_t)k->cout, e);
        if (k->proj) s->yp = step_alloc(be, out * (size_t)k->cout, e);
        s->mask = step_alloc(be, relu_mask_bytes(out * (size_t)k->cout), 1);
    }
    a->feat = step_alloc(be, b * (size_t)p->feat, e);
    a->dfeat = step_alloc(be, b * (size_t)p->feat, e);
    a->logits = step_alloc(be, b * (size_t)p->classes, e);
    a->dlogits = step_alloc(be, b * (size_t)p->classes, e);
    for (int j = 0; j < 2; j++) {
        a->g[j] = step_alloc(be, b * p->max_act, e);
        a->t[j] = step_alloc(be, b * p->max_act, e);
    }
    a->col = step_alloc(be, b * p->max_col, e);
    a->stem_col = step_alloc(be, b * p->stem_col, e);
    a->wpad = step_alloc(be, p->wpad, e); /* zero-filled: the padding stays 0 */
    a->dwpad = step_alloc(be, p->max_wpad, F);
    a->mean = step_alloc(be, p->bn_channels, F);
    a->rstd = step_alloc(be, p->bn_channels, F);
    a->run_mean = step_alloc(be, p->bn_channels, F); /* 0 */
    a->run_var = step_alloc(be, p->bn_channels, F);
    float *ones = malloc(p->bn_channels * F);
    CHECK_ALLOC(ones);
    for (size_t j = 0; j < p->bn_channels; j++) ones[j] = 1.0f;
    be->ops->upload(be, a->run_var, ones, p->bn_channels * F);
    free(ones);
}

static void rn_free_acts(struct backend *be, const struct model *m, struct step_buffers *rb)
{
    const struct resnet *p = resnet_of(m);
    struct rn_acts *a = rb->acts;
    void (*f)(struct backend *, void *) = be->ops->free;
    if (a == NULL) return;
    for (int i = 0; i < p->nblocks; i++) {
        struct rn_block_acts *s = &a->blk[i];
        void *bufs[] = {s->y1, s->a1, s->y2, s->a2, s->y3, s->out, s->yp, s->mask};
        for (size_t j = 0; j < sizeof bufs / sizeof bufs[0]; j++)
            if (bufs[j] != NULL) f(be, bufs[j]);
    }
    void *bufs[] = {a->x, a->labels, a->y0, a->a0, a->pool, a->argmax, a->feat, a->dfeat, a->logits, a->dlogits,
                    a->g[0], a->g[1], a->t[0], a->t[1], a->col, a->stem_col, a->wpad, a->dwpad, a->mean, a->rstd, a->run_mean, a->run_var};
    for (size_t j = 0; j < sizeof bufs / sizeof bufs[0]; j++) f(be, bufs[j]);
    free(a->blk);
    free(a);
    rb->acts = NULL;
}

/* The synthetic images (kernels/synthetic.h), made where the step runs. */
static void rn_data(struct backend *be, const struct model *m, struct step_buffers *rb, uint64_t first_sample, int B,
                    uint64_t seed)
{
    const struct resnet *p = resnet_of(m);
    struct rn_acts *a = rb->acts;
    be->rn->synth_images(be, a->x, a->labels, first_sample, B, p->image, p->image, RN_CHANNELS, p->classes, seed);
}

static int rn_inputs(const struct model *m, const struct step_buffers *rb, struct model_input *out, int max)
{
    const struct resnet *p = resnet_of(m);
    const struct rn_acts *a = rb->acts;
    if (max < 4) return 0;
    out[0] = (struct model_input){"images", 0, (size_t)a->B * square(p->image) * RN_CHANNELS, a->x, 0};
    out[1] = (struct model_input){"labels", 1, (size_t)a->B, a->labels, 0};
    /* after the step: every batch norm's running statistics, in the table's order of
     * their gains (state, not inputs, but what a reference must reproduce too) */
    out[2] = (struct model_input){"bn_running_mean", 0, p->bn_channels, a->run_mean, 1};
    out[3] = (struct model_input){"bn_running_var", 0, p->bn_channels, a->run_var, 1};
    return 4;
}

static const struct model_ops rn_ops = {
    .plan_activations = rn_plan_activations,
    .init_params = rn_init_params,
    .summary = rn_summary,
    .free = rn_free,
    .splits_last = 0,
    .gradcheck_matrix_scale = 1.0f,
    /* float32 differences resolve this loss coarsely. It is only piecewise smooth
     * (ReLUs, max pools: thousands of kinks), and the float64 reference
     * (tests/integration/resnet_reference.py) finds central differences of the exact
     * function off by up to 10% at a step of 1e-3 and by a few % at 1e-4 (at 1e-6 they
     * agree with backward to 1e-4); and its deep float32 forward moves the loss by up to
     * ~5 ulps between nearby points. So gradcheck probes at 1e-4, allows 8 ulps of noise
     * and 5e-2: measured on configs/resnet-tiny.ini, 24 runs (12 seeds, 1 and 2 ranks)
     * at most 2.8e-2, while a dropped term (BN's mean or xhat term, the ReLU mask, a
     * col2im tap, the identity shortcut's gradient) gives 0.36-1.0. Smaller errors (a
     * scale off by 10% gives 4.8e-2) are the float64 reference's to find, at 1e-3
     * (tests/integration/test_resnet.py). */
    .gradcheck_eps = 1e-4f,
    .gradcheck_tolerance = 5e-2,
    .gradcheck_quanta = 8.0,
    .supported = rn_supported,
    .alloc_acts = rn_alloc_acts,
    .free_acts = rn_free_acts,
    .data = rn_data,
    .inputs = rn_inputs,
    .forward_loss = rn_forward_loss,
    .backward = rn_backward,
    .gemms_only = rn_gemms_only,
};

/* resnet.h — ResNet v1.5 (model.type = resnet) behind the model seam (model.h),
 * written by hand: the convolutions are GEMMs through the backend, batch norm,
 * pooling and the residual adds our own operations (backend.h, kernels/resnet/resnet_cpu.h).
 *
 *   stem:   7x7/2 convolution to `width` channels, batch norm, ReLU, 3x3/2 max pool (pad 1);
 *   stages: model.blocks[s] bottlenecks each, m = width x 2^s: 1x1 convolution to m, BN,
 *           ReLU; 3x3 convolution (the stage's stride, 2 from stage 1 on: on the 3x3, as
 *           v1.5 has it), BN, ReLU; 1x1 convolution to 4m, BN; plus the shortcut (a stage's
 *           first block: 1x1 convolution with the stride and BN; the others: the input
 *           itself), ReLU;
 *   head:   global average pool, a dense layer with bias to `classes`, softmax cross-entropy.
 *
 * The convolutions have no bias (the BN after each has its shift). Stages of the table:
 * 0 the stem, 1..nblocks the bottlenecks in order, nblocks + 1 the head. Layout NHWC,
 * weights [Cout x k*k*Cin] in (r, s, c) order (KRSC): kernels/resnet/resnet_cpu.h. */
#ifndef DPSCALE_MODELS_RESNET_H
#define DPSCALE_MODELS_RESNET_H

#include "model/model.h"

/* A square convolution: H x H x cin in, P x P x cout out; its weight's offset. A
 * convolution through im2col has col rows of ld elements, K = k k cin rounded up to 8
 * (16 bytes in 16-bit dtypes: the GEMMs on col want aligned rows; the stem's 147 are
 * not); where ld > K its weight is copied into rows of ld (the model's padded weights,
 * from element wpad_at). A 1x1 stride-1 convolution has no col: ld = K. */
struct rn_conv {
    int cin, cout, k, stride, pad;
    int H, P;
    int ld;
    int keep_col; /* its col kept from forward for the weight gradient (the stem's: no other
                   * convolution runs between, none overwrites it) */
    size_t w;
    size_t wpad_at;
};

/* the columns of c's weight, k k cin */
static inline int rn_conv_k(const struct rn_conv *c) { return c->k * c->k * c->cin; }

/* A batch norm of C channels: its gain and shift, and where its channels' statistics
 * (batch mean, rstd, running mean and variance) start in the model's arrays of them. */
struct rn_bn {
    int C;
    size_t gamma, beta;
    size_t at;
};

struct rn_block {
    int stage;            /* 0-based stage of the network */
    int proj;             /* 1: the shortcut is a convolution (cp, bp) */
    int H, P;             /* image side in and out */
    int cin, mid, cout;
    struct rn_conv c1, c2, c3, cp;
    struct rn_bn b1, b2, b3, bp;
};

struct resnet {
    int image, channels;  /* the input: image x image x channels (3) */
    int width, classes, nstage, nblocks;
    int blocks[8];        /* per stage, as model.blocks */
    int frozen;           /* model.batchnorm = frozen: the running statistics, held fixed */
    struct rn_conv stem;
    struct rn_bn stem_bn;
    int pool;             /* side of the max pool's output */
    struct rn_block *blk; /* [nblocks] */
    int feat, feat_hw;    /* channels and positions entering the average pool */
    size_t fc_w, fc_b;
    size_t max_act;       /* elements of one image's largest activation (the gradient scratch) */
    size_t max_col;       /* elements of one image's largest im2col (rows of ld) but the stem's */
    size_t stem_col;      /* and of the stem's, kept from forward to backward */
    size_t wpad;          /* elements of the padded weights (ld > K) together */
    size_t max_wpad;      /* and of the largest one (its gradient's scratch) */
    size_t bn_channels;   /* channels of every batch norm together */
};

/* The ResNet of cfg into m (model_describe calls it for model.type = resnet). */
model_describe_fn resnet_describe;
static inline const struct resnet *resnet_of(const struct model *m) { return (const struct resnet *)m->impl; }

#endif

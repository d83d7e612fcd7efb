/* resnet_internal.h — what the ResNet's two files share (resnet.c: the table, memory
 * and data; resnet_pass.c: the forward and backward passes): its activations and its
 * passes' entry points for the ops table. Nothing outside src/model/families/resnet*.c reads it. */
#ifndef DPSCALE_MODELS_RESNET_INTERNAL_H
#define DPSCALE_MODELS_RESNET_INTERNAL_H

#include <stdint.h>

#include "kernels/resnet/relu_mask.h"
#include "model/step.h"
#include "model/families/resnet.h"

#define RN_CHANNELS 3         /* the images' */
#define RN_BN_MOMENTUM 0.1f   /* the running statistics' (PyTorch's) */

/* What a bottleneck keeps for backward. */
struct rn_block_acts {
    void *y1, *a1;   /* conv1's output and BN1+ReLU's [B*H*H x mid] */
    void *y2, *a2;   /* conv2's and BN2+ReLU's [B*P*P x mid] */
    void *y3;        /* conv3's [B*P*P x cout] */
    void *yp;        /* the shortcut convolution's (NULL: none) */
    void *out;       /* the block's output, after the add and ReLU */
    uint8_t *mask;   /* the bits of out > 0 (kernels/resnet/relu_mask.h) */
};

/* Everything of B images (rb->acts). */
struct rn_acts {
    int B;
    void *x;                          /* [B*image*image x 3] */
    int *labels;                      /* [B] */
    void *y0, *a0;                    /* the stem's convolution, BN+ReLU [B*P0*P0 x width] */
    void *pool;                       /* the max pool's output [B*pool*pool x width] */
    uint8_t *argmax;                  /* its windows' taps */
    struct rn_block_acts *blk;        /* [nblocks] */
    void *feat, *dfeat;               /* the average pool's output and its gradient [B x feat] */
    void *logits, *dlogits;           /* [B x classes] */
    void *g[2], *t[2];                /* gradient scratch [B x max_act]: the stream's, the branch's */
    void *col;                        /* im2col scratch [B x max_col] */
    void *stem_col;                   /* the stem's im2col [B x stem_col], forward to backward */
    void *wpad;                       /* the padded weights [wpad] (rn_conv.ld), padding zero */
    void *dwpad;                      /* a padded weight's gradient [max_wpad] (fp32 or 16-bit) */
    float *mean, *rstd;               /* every BN's batch statistics [bn_channels] */
    float *run_mean, *run_var;        /* and its running ones */
};

void rn_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                     float loss_scale, const struct step_hook *hook);
void rn_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B, const struct step_hook *hook);
int rn_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int attention);

#endif

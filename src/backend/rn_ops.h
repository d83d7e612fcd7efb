/* rn_ops.h — the ResNet's operations of a backend (kernels/resnet/resnet_cpu.h has their
 * exact semantics), a table beside the core (struct backend_ops, backend.h) that
 * struct backend points at (b->rn) where the backend has them; the ResNet is
 * refused, with a message, where it is NULL. Images are NHWC, [N*H*W x C]
 * row-major; activations and the norms' gains in the compute dtype, gradients in
 * grad_dtype, the statistics fp32. A table has every entry. Pointers are in the
 * backend's memory and calls go to its current stream, as in backend.h. */
#ifndef DPSCALE_RN_OPS_H
#define DPSCALE_RN_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/resnet/bn_operands.h"
#include "kernels/resnet/bn_partials.h"
#include "kernels/resnet/conv_shape.h"

struct backend;

struct rn_ops {
    /* col [N*P*Q x R*S*C] = the windows of x (zeros where they reach into the padding). */
    void (*im2col)(struct backend *b, void *col, const void *x, const struct conv_shape *s);
    /* dx [N*H*W x C] = the adjoint of im2col applied to col (overwritten, not added to). */
    void (*col2im)(struct backend *b, void *dx, const void *col, const struct conv_shape *s);
    /* dst's rows = src's: `rows` rows of `cols` elements of elem_bytes each, dst_ld and
     * src_ld elements apart (a weight copied into, or out of, rows padded to col's pitch;
     * dst's other columns untouched). */
    void (*copy_rows)(struct backend *b, void *dst, int dst_ld, const void *src, int src_ld, int rows, int cols,
                      int elem_bytes);
    /* y = (x - mean) rstd gamma + beta per channel (column), then ReLU when relu; training:
     * mean and rstd of this batch's rows, and the running statistics updated with
     * `momentum`; else the running statistics themselves. mean, rstd [C] kept for backward.
     * pre (NULL: none; bn_operands' pre likewise): x's partial sums, which conv_forward_stats
     * left, so the statistics need no pass over x. */
    void (*batchnorm_forward)(struct backend *b, void *y, float *mean, float *rstd, float *run_mean, float *run_var,
                              const void *x, const void *gamma, const void *beta, int rows, int C, int training,
                              float momentum, int relu, const struct bn_partials *pre);
    /* A bottleneck's output, y = max(bn(bn->x) + r, 0), in one element-wise pass: r is
     * proj's batch norm of its own input where proj is not NULL (a projection shortcut;
     * its output is never stored), else the tensor `shortcut` (the identity). Each batch
     * norm's statistics as batchnorm_forward's; both summands rounded to the compute dtype
     * before the add, as batchnorm_forward and an add with ReLU stored them: their bits.
     * mask (NULL: none): also the bits of y > 0 (kernels/resnet/relu_mask.h), for backward. */
    void (*batchnorm_add_relu_forward)(struct backend *b, void *y, uint8_t *mask, const struct bn_operands *bn,
                                       const struct bn_operands *proj, const void *shortcut, int rows, int C,
                                       int training, float momentum);
    /* dx (may be dy itself), dgamma and dbeta (overwritten) from dy; relu: the forward had
     * its ReLU, whose mask (where its output was not > 0) zeroes dy: recomputed from x,
     * mean, rstd, gamma and beta as the forward computed and stored that output, so the
     * output itself is not read. beta may be NULL when relu = 0. mask (NULL: none; relu = 0
     * then): the bits of a ReLU after this batch norm and an add (batchnorm_add_relu_forward's)
     * zero dy, and dy_masked (NULL: not wanted; it may be dy, not dx) gets that gradient:
     * the ReLU's backward done in this operation's passes. */
    void (*batchnorm_backward)(struct backend *b, void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                               const void *x, const float *mean, const float *rstd, const void *gamma,
                               const void *beta, int rows, int C, int training, int relu, const uint8_t *mask,
                               void *dy_masked);
    /* y = the windows' maxima, argmax their taps (r S + s in the window, a byte: windows of
     * at most MAXPOOL_TAPS taps); backward routes dy to them (dx overwritten). */
    void (*maxpool_forward)(struct backend *b, void *y, uint8_t *argmax, const void *x, const struct conv_shape *s);
    void (*maxpool_backward)(struct backend *b, void *dx, const void *dy, const uint8_t *argmax,
                             const struct conv_shape *s);
    /* y [N x C] = the mean of each image's HW rows of x [N*HW x C]; backward spreads dy evenly. */
    void (*avgpool_forward)(struct backend *b, void *y, const void *x, int N, int HW, int C);
    void (*avgpool_backward)(struct backend *b, void *dx, const void *dy, int N, int HW, int C);
    /* B images H x W x C of the image task from first_sample (kernels/resnet/synthetic_images.h), and their labels. */
    void (*synth_images)(struct backend *b, void *x, int *labels, uint64_t first_sample, int B, int H, int W, int C,
                         int classes, uint64_t seed);
    /* Optional (NULL: none; rn_ops_complete does not ask for it): the convolution with K
     * output channels as one implicit GEMM, no col buffer. dgrad = 0: out = y [N*P*Q x K]
     * = conv(in = x, w [K x R*S*C]); dgrad = 1: out = dx [N*H*W x C], from in = dy, the
     * adjoint (overwritten). Returns 0, having done nothing, where it does not take this
     * shape or these buffers: the caller then runs im2col + gemm (+ col2im). */
    int (*conv_implicit)(struct backend *b, int dgrad, void *out, const void *in, const void *w,
                         const struct conv_shape *s, int K);
    /* Optional likewise: the weight's gradient dw [K x R*S*C] (grad_dtype, overwritten) from
     * dy [N*P*Q x K] and x as an implicit GEMM; 0, having done nothing, where it does not
     * take the call: the caller then runs im2col + gemm. */
    int (*conv_wgrad_implicit)(struct backend *b, void *dw, int grad_dtype, const void *dy, const void *x,
                               const struct conv_shape *s, int K);
    /* Optional likewise: a forward convolution whose output y [N*P*Q x K] a training batch
     * norm reads next, which also leaves that batch norm's partial sums of y about shift [K]
     * (bn_partials.h) in the backend's statistics slot `slot` (0 or 1: two alive at once,
     * each until its next call) and says where in *pre, for batchnorm_forward's pre.
     * implicit = 1: as conv_implicit's forward (in = x); 0: y = in w^T as a GEMM, in [N*P*Q x
     * conv_col_ld(s)] (a 1x1 stride-1's x, or a col) and w [K x conv_col_ld(s)]. */
    int (*conv_forward_stats)(struct backend *b, int implicit, void *y, const void *in, const void *w,
                              const struct conv_shape *s, int K, const float *shift, int slot, struct bn_partials *pre);
};

/* A table the ResNet can run on: every one of its operations is there. */
static inline int rn_ops_complete(const struct rn_ops *o)
{
    return o != NULL && o->im2col && o->col2im && o->copy_rows && o->batchnorm_forward && o->batchnorm_add_relu_forward &&
           o->batchnorm_backward &&
           o->maxpool_forward && o->maxpool_backward && o->avgpool_forward && o->avgpool_backward && o->synth_images;
}

extern const struct rn_ops cpu_rn_ops; /* cpu_resnet.c; the CUDA backend's: cuda/resnet_cuda.h */

#endif

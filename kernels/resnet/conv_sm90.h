/* conv_sm90.h — the ResNet's convolutions as implicit GEMMs on Hopper (conv_sm90.cu, built
 * for sm_90a alone): the forward (y = conv(x, w)), the input's gradient (dx from dy and w)
 * and the weight's gradient (dw from dy and x), without an im2col buffer: CUTLASS 3's
 * kernels, whose TMA loads gather each window (TMA's im2col mode) straight into shared
 * memory.
 *
 * Where they apply (the _takes functions): compute capability 9.0, bf16 activations, a
 * window wider than 1x1, channel counts (C and K) multiples of 8 and buffers 16-byte
 * aligned (TMA's rule), padding under 256; for the input's gradient a stride of 1
 * (CUTLASS's Hopper dgrad has no strided form). A strided 1x1 (a projection shortcut)
 * stays on im2col + cuBLASLt: on an H200 at ResNet-50's shapes that took 0.39 ms against
 * the implicit GEMM's 0.47 (tests/unit/test_conv_sm90_cuda.c times both). Elsewhere the
 * ResNet keeps im2col + cuBLASLt (+ col2im), resnet_pass.c.
 *
 * The weight's gradient reduces over N P Q output pixels (800 k in ResNet-50's first
 * stage) into a K x R S C filter of a few tiles, and CUTLASS's Hopper kernel cannot split
 * that reduction: here the batch is cut into slices of whole images, each slice's
 * gradient goes to its own fp32 partial in a workspace, and a last pass adds the slices
 * in order (the same bits every run). It is right and slow (2.5 x im2col + cuBLASLt on an
 * H200: results/h200x1-resnet-fusion), so it runs only when DPSCALE_CONV_WGRAD=implicit;
 * the ResNet's long weight gradients take CUTLASS 2's split-K kernel instead
 * (conv_wgrad_sm80.h), the others im2col + cuBLASLt.
 *
 * The forward can also leave the next batch norm's partial sums from its epilogue
 * (cuda_conv_sm90_stats; the ResNet takes it only with DPSCALE_BN_STATS=epilogue, since
 * on an H200 that epilogue made the convolutions several times slower than the pass over
 * their output it saves: results/h200x1-bn-stats-epilogue).
 *
 * DPSCALE_CONV=im2col, read once per process, keeps the im2col path everywhere (an A/B of
 * a whole run); "auto" or unset is the rule above. */
#ifndef DPSCALE_CONV_SM90_H
#define DPSCALE_CONV_SM90_H

#include <stddef.h>

#include "kernels/resnet/bn_partials.h"
#include "kernels/resnet/conv_shape.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(DPSCALE_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime.h>

enum conv_sm90_op {
    CONV_SM90_FORWARD = 0, /* y [N*P*Q x K] = conv(x [N*H*W x C], w [K x R*S*C]) */
    CONV_SM90_DGRAD = 1,   /* dx [N*H*W x C] = the adjoint, from dy [N*P*Q x K] and w */
};

/* Whether op takes this convolution (K output channels) and these buffers on the current
 * device, DPSCALE_CONV included. */
int cuda_conv_sm90_takes(enum conv_sm90_op op, const struct conv_shape *s, int K, int dtype, const void *in,
                         const void *w, const void *out);
/* out = op(in, w): the forward (in = x, out = y) or the input's gradient (in = dy, out = dx),
 * overwritten. cudaErrorNotSupported where cuda_conv_sm90_takes says no. */
cudaError_t cuda_conv_sm90(enum conv_sm90_op op, void *out, const void *in, const void *w, const struct conv_shape *s,
                           int K, int dtype, cudaStream_t st);

/* The forward, y = conv(x, w), with the partial sums (bn_partials.h) of y about shift [K]
 * that the training batch norm reading y next takes its statistics from: sum and sumsq of
 * cuda_conv_sm90_stats_shape's layout. Where cuda_conv_sm90_takes takes the forward. */
struct bn_partials_shape cuda_conv_sm90_stats_shape(const struct conv_shape *s, int K);
cudaError_t cuda_conv_sm90_stats(void *out, const void *in, const void *w, const struct conv_shape *s, int K, int dtype,
                                 const float *shift, float *sum, float *sumsq, cudaStream_t st);

/* The weight's gradient dw [K x R*S*C] (grad_dtype: fp32 or bf16, overwritten) from dy and x;
 * workspace: cuda_conv_sm90_wgrad_workspace_floats(s, K) floats. Only with
 * DPSCALE_CONV_WGRAD=implicit (see above). */
int cuda_conv_sm90_wgrad_takes(const struct conv_shape *s, int K, int dtype, int grad_dtype, const void *dy,
                               const void *x, const void *dw);
size_t cuda_conv_sm90_wgrad_workspace_floats(const struct conv_shape *s, int K);
cudaError_t cuda_conv_sm90_wgrad(void *dw, int grad_dtype, const void *dy, const void *x, const struct conv_shape *s,
                                 int K, int dtype, float *workspace, cudaStream_t st);
#endif
#ifdef __cplusplus
}
#endif

#endif

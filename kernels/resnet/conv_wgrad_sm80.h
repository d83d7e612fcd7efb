/* conv_wgrad_sm80.h — the weight's gradient of the ResNet's windowed convolutions as an
 * implicit GEMM with a parallel split of its reduction (conv_wgrad_sm80.cu, built for sm_80
 * and sm_90): CUTLASS 2's wgrad kernel (mma.sync, bf16 in, fp32 accumulation), with no
 * im2col buffer. The GEMM: M = K output channels, N = R S C (the filter's KRSC columns),
 * the reduction over the N P Q output pixels, cut into `splits` interleaved slices whose fp32
 * partial sums go to a workspace; a second kernel adds the slices in slice order into dw.
 * No atomics: the same bits every run (on one kind of GPU; the split count follows the
 * device's SM count).
 *
 * Where it applies (cuda_conv_wgrad_sm80_takes): compute capability 8.0 or later with a
 * kernel image for it (sm_80 and sm_90 are built, no PTX), bf16 activations, an fp32 or
 * bf16 gradient, a window wider than 1x1, C and K multiples of 8 (16-byte loads), dy, x and
 * dw 16-byte aligned, and shapes CUTLASS takes (tensors under 2 GiB). DPSCALE_CONV=im2col,
 * read once per process, turns it off, as it does conv_sm90.h's kernels, and so does
 * DPSCALE_CONV_WGRAD=im2col alone (an A/B of the weight gradients). */
#ifndef DPSCALE_CONV_WGRAD_SM80_H
#define DPSCALE_CONV_WGRAD_SM80_H

#include <stddef.h>

#include "kernels/resnet/conv_shape.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(DPSCALE_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime.h>

/* 1 when the kernel takes this weight gradient (K output channels; act_dtype and grad_dtype:
 * enum dtype, kernel_types.h) with these buffers on the current device, 0 otherwise. s->ldcol
 * is ignored: dw is packed [K x R*S*C]. */
int cuda_conv_wgrad_sm80_takes(const struct conv_shape *s, int K, int act_dtype, int grad_dtype, const void *dy,
                               const void *x, const void *dw);
/* The workspace cuda_conv_wgrad_sm80 needs for this shape on the current device, in floats:
 * splits x K x R*S*C (the split count depends on the shape and the device's SM count). */
size_t cuda_conv_wgrad_sm80_workspace_floats(const struct conv_shape *s, int K);
/* dw [K x R*S*C] (row-major: the weight's own KRSC layout; grad_dtype fp32 or bf16,
 * overwritten) = the gradient from dy [N*P*Q x K] (NHWC: N, P, Q, K) and x [N*H*W x C]
 * (NHWC), both bf16; the split partials in `workspace` (cuda_conv_wgrad_sm80_workspace_floats
 * of it, 16-byte aligned; unread when one split writes an fp32 dw directly). Enqueued on
 * `stream`; cudaErrorNotSupported where cuda_conv_wgrad_sm80_takes says no. */
cudaError_t cuda_conv_wgrad_sm80(void *dw, int grad_dtype, const void *dy, const void *x, const struct conv_shape *s,
                                 int K, int act_dtype, float *workspace, cudaStream_t stream);
#endif
#ifdef __cplusplus
}
#endif

#endif

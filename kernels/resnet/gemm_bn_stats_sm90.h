/* gemm_bn_stats_sm90.h — the ResNet's forward GEMM with batch norm's partial sums in its
 * epilogue, on Hopper (gemm_bn_stats_sm90.cu, built for sm_90a alone):
 *   y [M x N] = A [M x K] W^T, W [N x K]: a 1x1 convolution on its input (A = x), or any
 *   convolution on its im2col (A = col, rows lda apart), W its weight (rows ldw apart);
 * and, for the training batch norm that reads y next, bn_partials.h's sums of y about
 * shift, in place of that batch norm's pass over y.
 *
 * Where it applies (cuda_gemm_bn_stats_takes): compute capability 9.0, bf16, N, lda and
 * ldw multiples of 8, buffers 16-byte aligned (TMA's rules). */
#ifndef DPSCALE_GEMM_BN_STATS_SM90_H
#define DPSCALE_GEMM_BN_STATS_SM90_H

#include "kernels/resnet/bn_partials.h"

#ifdef __cplusplus
extern "C" {
#endif
#if defined(DPSCALE_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime.h>

/* the partials' layout for an M x N output: sum and sumsq hold tiles x ld floats each */
struct bn_partials_shape cuda_gemm_bn_stats_shape(int M, int N);
int cuda_gemm_bn_stats_takes(int M, int N, int K, int dtype, const void *A, int lda, const void *W, int ldw,
                             const void *y);
/* y overwritten, sum and sumsq (cuda_gemm_bn_stats_shape's layout) written; shift [N].
 * cudaErrorNotSupported where cuda_gemm_bn_stats_takes says no. */
cudaError_t cuda_gemm_bn_stats(void *y, const void *A, int lda, const void *W, int ldw, int M, int N, int K, int dtype,
                               const float *shift, float *sum, float *sumsq, cudaStream_t st);
#endif
#ifdef __cplusplus
}
#endif

#endif

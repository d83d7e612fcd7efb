/* resnet_kernels.h — C launchers of the ResNet's CUDA kernels (resnet.cu, batchnorm.cu:
 * the residual add with ReLU is batch norm's, fused). As kernels_cuda.h's: each
 * takes the compute dtype of its activation buffers, enqueues on its stream and returns
 * the launch's cudaError_t; semantics in resnet_cpu.h (the backend's table: rn_ops.h). */
#ifndef DPSCALE_RESNET_KERNELS_H
#define DPSCALE_RESNET_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/resnet/bn_operands.h"
#include "kernels/resnet/bn_partials.h"
#include "kernels/resnet/conv_shape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Images NHWC, [N*H*W x C]. */
cudaError_t cuda_im2col(void *col, const void *x, const struct conv_shape *s, int dtype, cudaStream_t st);
cudaError_t cuda_col2im(void *dx, const void *col, const struct conv_shape *s, int dtype, cudaStream_t st);
/* scratch: cuda_batchnorm_scratch_floats(rows, C) floats, for the forward and the backward.
 * pre (NULL: none; bn_operands' pre likewise): x's partial sums from the GEMM or convolution
 * that wrote it (bn_partials.h), in place of the statistics' pass over x. */
size_t cuda_batchnorm_scratch_floats(int rows, int C);
cudaError_t cuda_batchnorm_forward(void *y, float *mean, float *rstd, float *run_mean, float *run_var, const void *x,
                                   const void *gamma, const void *beta, int rows, int C, int training, float momentum,
                                   int relu, const struct bn_partials *pre, float *scratch, int dtype, cudaStream_t s);
/* mask (NULL: none): the bits of y > 0 (relu_mask.h) */
cudaError_t cuda_batchnorm_add_relu_forward(void *y, uint8_t *mask, const struct bn_operands *bn,
                                            const struct bn_operands *proj, const void *shortcut, int rows, int C,
                                            int training, float momentum, float *scratch, int dtype, cudaStream_t s);
/* mask (NULL: none; relu 0 then): dy zeroed where its bit is not set, and that gradient
 * written into dy_masked too unless it is NULL (it may be dy; not dx) */
cudaError_t cuda_batchnorm_backward(void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy, const void *x,
                                    const float *mean, const float *rstd, const void *gamma, const void *beta, int rows,
                                    int C, int training, int relu, const uint8_t *mask, void *dy_masked, float *scratch,
                                    int dtype, cudaStream_t s);
cudaError_t cuda_maxpool_forward(void *y, uint8_t *argmax, const void *x, const struct conv_shape *s, int dtype,
                                 cudaStream_t st);
cudaError_t cuda_maxpool_backward(void *dx, const void *dy, const uint8_t *argmax, const struct conv_shape *s, int dtype,
                                  cudaStream_t st);
cudaError_t cuda_avgpool_forward(void *y, const void *x, int N, int HW, int C, int dtype, cudaStream_t st);
cudaError_t cuda_avgpool_backward(void *dx, const void *dy, int N, int HW, int C, int dtype, cudaStream_t st);
cudaError_t cuda_synth_images(void *x, int *labels, uint64_t first_sample, int B, int H, int W, int C, int classes,
                              uint64_t seed, int dtype, cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif

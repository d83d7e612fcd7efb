/* resnet_cuda.h — the CUDA backend's ResNet operations (struct backend_ops, backend.h),
 * in resnet_cuda.c: thin calls of the kernels of kernels/resnet.cu and
 * kernels/batchnorm.cu on the current stream, and batch norm's scratch. */
#ifndef DPSCALE_RESNET_CUDA_H
#define DPSCALE_RESNET_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

void cuda_rn_im2col(struct backend *b, void *col, const void *x, const struct conv_shape *s);
void cuda_rn_col2im(struct backend *b, void *dx, const void *col, const struct conv_shape *s);
void cuda_rn_batchnorm_forward(struct backend *b, void *y, float *mean, float *rstd, float *run_mean, float *run_var,
                               const void *x, const void *gamma, const void *beta, int rows, int C, int training,
                               float momentum, int relu);
void cuda_rn_batchnorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                const void *x, const void *y, const float *mean, const float *rstd, const void *gamma,
                                int rows, int C, int training);
void cuda_rn_add_relu(struct backend *b, void *y, const void *x, size_t n);
void cuda_rn_maxpool_forward(struct backend *b, void *y, int *argmax, const void *x, const struct conv_shape *s);
void cuda_rn_maxpool_backward(struct backend *b, void *dx, const void *dy, const int *argmax,
                              const struct conv_shape *s);
void cuda_rn_avgpool_forward(struct backend *b, void *y, const void *x, int N, int HW, int C);
void cuda_rn_avgpool_backward(struct backend *b, void *dx, const void *dy, int N, int HW, int C);
void cuda_rn_synth_images(struct backend *b, void *x, int *labels, uint64_t first, int B, int H, int W, int C,
                          int classes, uint64_t seed);
void cuda_rn_release(struct backend *b);

#endif

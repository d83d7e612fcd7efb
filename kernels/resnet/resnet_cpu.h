/* resnet_cpu.h — the CPU versions of the ResNet's own operations (the reference for
 * the CUDA ones): im2col and col2im, which make a convolution two GEMMs; batch norm in
 * training and frozen mode, with its ReLU fused, or with a bottleneck's residual add
 * and ReLU fused (the shortcut's own batch norm too); the residual add with ReLU alone;
 * max and global average pooling; the synthetic images (resnet_cpu.c, synthetic_images.h).
 * Plain C over fp32 arrays, parallel with OpenMP, and deterministic: every sum has a
 * fixed order whatever the thread count (a channel's sum over rows goes over fixed
 * chunks of rows, added in chunk order; col2im and the pooling backward gather, they
 * never scatter).
 *
 * Layout NHWC: N images of H x W x C are [N*H*W x C] row-major, a channel is a
 * column. Batch norm's statistics are then column sums; a 1x1 stride-1 convolution
 * is a GEMM on the activation itself; any other convolution's windows are
 * col [N*P*Q x R*S*C] (im2col, a row per output pixel, columns in (r, s, c) order),
 * and with its weight W [Cout x R*S*C] (KRSC) y [N*P*Q x Cout] = col W^T.
 * struct conv_shape (conv_shape.h) gives the geometry. */
#ifndef DPSCALE_RESNET_CPU_H
#define DPSCALE_RESNET_CPU_H

#include <stddef.h>
#include <stdint.h>

struct conv_shape;
struct bn_operands; /* bn_operands.h */

#define BATCHNORM_EPS 1e-5f /* PyTorch's */

/* col[(n P + p) Q + q][(r S + s) C + c] = x[n][p stride - pad + r][q stride - pad + s][c],
 * 0 where that is outside the image; rows conv_col_ld(s) apart, zero past R S C. */
void cpu_im2col(float *col, const float *x, const struct conv_shape *s);
/* The adjoint of im2col: dx[n][h][w][c] = the sum of the col entries im2col copied
 * x[n][h][w][c] to, in (r, s) order (overwrites dx; col's padding columns not read). */
void cpu_col2im(float *dx, const float *col, const struct conv_shape *s);

/* Per channel c of x [rows x C]: y = (x - mean) rstd gamma + beta, rstd = 1/sqrt(var +
 * BATCHNORM_EPS), then max(y, 0) when relu. training = 1: mean and var (biased) of
 * the rows, and run_mean = (1 - momentum) run_mean + momentum mean, run_var likewise
 * with the unbiased variance (PyTorch's rule); training = 0: the running statistics,
 * left as they are. mean and rstd [C] are written for backward. y may not alias x. */
void cpu_batchnorm_forward(float *y, float *mean, float *rstd, float *run_mean, float *run_var, const float *x,
                           const float *gamma, const float *beta, int rows, int C, int training, float momentum,
                           int relu);
/* A bottleneck's output: y = max(bn(bn->x) + r, 0) over [rows x C], r the shortcut:
 * proj's batch norm of its own input where proj is not NULL (a projection shortcut), else
 * `shortcut` (the identity). Each batch norm's statistics as batchnorm_forward's. Defined
 * as the operations it replaces, bit for bit: batchnorm_forward without ReLU into y (and
 * proj's into a tensor of its own), then add_relu(y, that tensor or shortcut). So each
 * summand is rounded to the compute dtype before the add, as the unfused operations
 * stored it (a GPU's 16-bit dtype; nothing to round in fp32): the fusion changes no bit
 * of training, for one rounding that an fp32 add would not make. y may not alias an input. */
void cpu_batchnorm_add_relu_forward(float *y, const struct bn_operands *bn, const struct bn_operands *proj,
                                    const float *shortcut, int rows, int C, int training, float momentum);
/* From dy: g = dy, zeroed where the forward's ReLU output was not > 0 when relu (the
 * forward's batchnorm_forward had relu = 1); dbeta = sum g, dgamma = sum g xhat over the
 * rows (overwritten), and
 *   training: dx = gamma rstd (g - dbeta / rows - xhat dgamma / rows)
 *   frozen:   dx = gamma rstd g
 * with xhat = (x - mean) rstd. The ReLU's mask is recomputed from x, mean, rstd, gamma and
 * beta by the forward's own operations in its order, so it is the mask of the forward's
 * y, bit for bit, without reading y (a GPU also rounds the value to its compute dtype
 * first, as the forward stored it: a positive value that rounds to 0 is masked there).
 * beta may be NULL when relu = 0. dx may be dy itself. */
void cpu_batchnorm_backward(float *dx, float *dgamma, float *dbeta, const float *dy, const float *x, const float *mean,
                            const float *rstd, const float *gamma, const float *beta, int rows, int C, int training,
                            int relu);

/* A ReLU's mask as bits (relu_mask.h): of y[i] > 0 over n elements; and g[i] = dy[i] where
 * element i's bit is set, else 0 (g may be dy). */
void cpu_relu_mask(uint8_t *mask, const float *y, size_t n);
void cpu_relu_mask_apply(float *g, const float *dy, const uint8_t *mask, size_t n);

/* y[i] = max(y[i] + x[i], 0) (a NaN sum gives 0): batchnorm_add_relu_forward's add, alone. */
void cpu_add_relu(float *y, const float *x, size_t n);

/* y [N*P*Q x C] = the maximum of each window (positions in the padding take no part);
 * argmax the tap r S + s in its window of the first maximum in (r, s) order, a byte (a
 * quarter of an int's traffic on the GPU): windows of at most MAXPOOL_TAPS taps. */
#define MAXPOOL_TAPS 256
void cpu_maxpool_forward(float *y, uint8_t *argmax, const float *x, const struct conv_shape *s);
/* dx [N*H*W x C] (overwritten) = the sum of dy over the windows whose maximum it was. */
void cpu_maxpool_backward(float *dx, const float *dy, const uint8_t *argmax, const struct conv_shape *s);

/* y [N x C] = the mean over each image's HW rows of x [N*HW x C], summed in row order. */
void cpu_avgpool_forward(float *y, const float *x, int N, int HW, int C);
/* dx [N*HW x C] = dy[n] / HW on every row of image n. */
void cpu_avgpool_backward(float *dx, const float *dy, int N, int HW, int C);

/* B images H x W x C (NHWC) of the image task (synthetic_images.h) and their labels [B]. */
void cpu_synth_images(float *x, int *labels, uint64_t first_sample, int B, int H, int W, int C, int classes,
                      uint64_t seed);

#endif

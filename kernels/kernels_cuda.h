/* kernels_cuda.h — C launchers of the CUDA kernels (one .cu file per operation
 * group). Each takes the compute dtype (enum dtype of kernel_types.h) of its
 * activation buffers, enqueues on `stream`, and returns the launch's cudaError_t,
 * which the CUDA backend checks. Semantics are those of the backend's operations of
 * the same name (src/backend: backend.h, tf_ops.h, rn_ops.h). */
#ifndef DPSCALE_KERNELS_CUDA_H
#define DPSCALE_KERNELS_CUDA_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct optim_hparams;

cudaError_t cuda_bias_act_forward(void *out, void *pre, const void *bias, int bias_dtype, int rows, int cols, int act,
                                  int dtype, cudaStream_t stream);
cudaError_t cuda_act_backward(void *d, const void *pre, int rows, int cols, int act, int dtype, cudaStream_t stream);
/* partial: scratch of at least cuda_bias_grad_scratch_floats(rows, cols) floats */
size_t cuda_bias_grad_scratch_floats(int rows, int cols);
/* dbias in fp32, or (dbias_in_dtype) in the compute dtype */
cudaError_t cuda_bias_grad(void *dbias, int dbias_in_dtype, const void *d, int rows, int cols, int dtype, float *partial,
                           cudaStream_t stream);
/* row_loss: scratch of `rows` floats; rows ld elements apart */
cudaError_t cuda_softmax_xent(void *dlogits, float *loss, const void *logits, const int *labels, int rows, int classes,
                              int ld, float grad_scale, int dtype, float *row_loss, cudaStream_t stream);
cudaError_t cuda_optimizer_step(float *params, const void *grads, int grad_dtype, void *state1, void *state2,
                                int state_dtype, void *params_lp, size_t n, const struct optim_hparams *h, int dtype,
                                cudaStream_t stream);
cudaError_t cuda_cast_from_f32(void *dst, const float *src, size_t n, int dtype, cudaStream_t stream);
cudaError_t cuda_cast_to_f32(float *dst, const void *src, size_t n, int dtype, cudaStream_t stream);
cudaError_t cuda_synth_batch(void *x, int *labels, uint64_t first_sample, int rows, int input_dim, int classes,
                             uint64_t seed, int dtype, cudaStream_t stream);

cudaError_t cuda_synth_tokens(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first_sample, int B,
                              int T, int V, int nmask, int bert, uint64_t seed, cudaStream_t stream);

/* The transformer's kernels (transformer.cu; semantics in transformer_cpu.h). */
cudaError_t cuda_embed_forward(void *x, const int *tokens, const int *segments, const void *wte, const void *wpe,
                               const void *wse, int B, int T, int C, int dtype, cudaStream_t s);
size_t cuda_embed_scratch_bytes(int rows);
cudaError_t cuda_embed_backward(void *dwte, void *dwpe, void *dwse, int grad_dtype, const int *tokens,
                                const int *segments, const void *dx, int B, int T, int C, int S, void *scratch,
                                int dtype, cudaStream_t s);
size_t cuda_layernorm_scratch_floats(int rows, int C);
cudaError_t cuda_layernorm_forward(void *y, float *mean, float *rstd, const void *x, const void *gamma,
                                   const void *beta, int rows, int C, int dtype, cudaStream_t s);
/* accumulate = 1: dx += the gradient (the residual add fused where it meets the LayerNorm). */
cudaError_t cuda_layernorm_backward(void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy, const void *x,
                                    const float *mean, const float *rstd, const void *gamma, int rows, int C,
                                    int accumulate, float *partial, int dtype, cudaStream_t s);
cudaError_t cuda_attention_softmax(void *p, int rows, int T, int causal, int dtype, cudaStream_t s);
cudaError_t cuda_attention_softmax_backward(void *dp, const void *p, int rows, int T, int dtype, cudaStream_t s);
cudaError_t cuda_add(void *y, const void *x, size_t n, int dtype, cudaStream_t s);
cudaError_t cuda_add_relu(void *y, const void *x, size_t n, int dtype, cudaStream_t s); /* y = max(y + x, 0) */
cudaError_t cuda_move_rows(void *dst, const void *src, const int *rows, int n, int C, int scatter, int dtype,
                           cudaStream_t s);

/* The ResNet's kernels (resnet.cu, batchnorm.cu; semantics in resnet_cpu.h; the add with
 * ReLU is cuda_add_relu above). Images NHWC, [N*H*W x C]. */
struct conv_shape;
cudaError_t cuda_im2col(void *col, const void *x, const struct conv_shape *s, int dtype, cudaStream_t st);
cudaError_t cuda_col2im(void *dx, const void *col, const struct conv_shape *s, int dtype, cudaStream_t st);
/* scratch: cuda_batchnorm_scratch_floats(rows, C) floats, for the forward and the backward */
size_t cuda_batchnorm_scratch_floats(int rows, int C);
cudaError_t cuda_batchnorm_forward(void *y, float *mean, float *rstd, float *run_mean, float *run_var, const void *x,
                                   const void *gamma, const void *beta, int rows, int C, int training, float momentum,
                                   int relu, float *scratch, int dtype, cudaStream_t s);
cudaError_t cuda_batchnorm_backward(void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy, const void *x,
                                    const void *y, const float *mean, const float *rstd, const void *gamma, int rows,
                                    int C, int training, float *scratch, int dtype, cudaStream_t s);
cudaError_t cuda_maxpool_forward(void *y, int *argmax, const void *x, const struct conv_shape *s, int dtype,
                                 cudaStream_t st);
cudaError_t cuda_maxpool_backward(void *dx, const void *dy, const int *argmax, const struct conv_shape *s, int dtype,
                                  cudaStream_t st);
cudaError_t cuda_avgpool_forward(void *y, const void *x, int N, int HW, int C, int dtype, cudaStream_t st);
cudaError_t cuda_avgpool_backward(void *dx, const void *dy, int N, int HW, int C, int dtype, cudaStream_t st);
cudaError_t cuda_synth_images(void *x, int *labels, uint64_t first_sample, int B, int H, int W, int C, int classes,
                              uint64_t seed, int dtype, cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif

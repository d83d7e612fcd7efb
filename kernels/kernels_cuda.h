/* kernels_cuda.h — C launchers of the CUDA kernels (one .cu file per operation
 * group). Each takes the compute dtype (enum dtype of kernel_types.h) of its
 * activation buffers, enqueues on `stream`, and returns the launch's cudaError_t,
 * which the CUDA backend checks. Semantics are those of the backend's core operations
 * of the same name (src/backend/backend.h); a model family's own launchers are in a
 * header of its own (resnet_kernels.h and the like). */
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
/* the same with `threads` a block (a multiple of 32 up to 1,024; 0: the default by width), for timings */
cudaError_t cuda_softmax_xent_threads(void *dlogits, float *loss, const void *logits, const int *labels, int rows,
                                      int classes, int ld, float grad_scale, int dtype, float *row_loss, int threads,
                                      cudaStream_t stream);
cudaError_t cuda_optimizer_step(float *params, const void *grads, int grad_dtype, void *state1, void *state2,
                                int state_dtype, void *params_lp, size_t n, const struct optim_hparams *h, int dtype,
                                cudaStream_t stream);
cudaError_t cuda_cast_from_f32(void *dst, const float *src, size_t n, int dtype, cudaStream_t stream);
cudaError_t cuda_cast_to_f32(float *dst, const void *src, size_t n, int dtype, cudaStream_t stream);
cudaError_t cuda_synth_batch(void *x, int *labels, uint64_t first_sample, int rows, int input_dim, int classes,
                             uint64_t seed, int dtype, cudaStream_t stream);
/* The families' residual add (residual_add.cu): y += x. */
cudaError_t cuda_add(void *y, const void *x, size_t n, int dtype, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif

/* transformer_kernels.h — C launchers of the transformer's CUDA kernels (transformer.cu,
 * layernorm.cu, and the token task's in synthetic.cu; the fused attention's are in
 * flash_attention.h). As kernels_cuda.h's: each takes the compute dtype of its
 * activation buffers, enqueues on its stream and returns the launch's cudaError_t;
 * semantics in transformer_cpu.h (the backend's table: tf_ops.h). */
#ifndef DPSCALE_TRANSFORMER_KERNELS_H
#define DPSCALE_TRANSFORMER_KERNELS_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

cudaError_t cuda_synth_tokens(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first_sample, int B,
                              int T, int V, int nmask, int bert, uint64_t seed, cudaStream_t stream);

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
cudaError_t cuda_move_rows(void *dst, const void *src, const int *rows, int n, int C, int scatter, int dtype,
                           cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif

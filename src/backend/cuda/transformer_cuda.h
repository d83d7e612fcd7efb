/* transformer_cuda.h — the CUDA backend's transformer operations (struct backend_ops,
 * backend.h), in transformer_cuda.c: our kernels (kernels/transformer.cu) and the
 * attention's GEMMs as cuBLAS strided-batched calls. What they need of the backend's
 * state is in backend_cuda.h. */
#ifndef DPSCALE_TRANSFORMER_CUDA_H
#define DPSCALE_TRANSFORMER_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

void cuda_tf_embed_forward(struct backend *b, void *x, const int *tokens, const int *segments, const void *wte,
                           const void *wpe, const void *wse, int B, int T, int C);
void cuda_tf_embed_backward(struct backend *b, void *dwte, void *dwpe, void *dwse, int grad_dtype, const int *tokens,
                            const int *segments, const void *dx, int B, int T, int C, int V, int S);
void cuda_tf_layernorm_forward(struct backend *b, void *y, float *mean, float *rstd, const void *x, const void *gamma,
                               const void *beta, int rows, int C);
void cuda_tf_layernorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                const void *x, const float *mean, const float *rstd, const void *gamma, int rows, int C,
                                int accumulate);
void cuda_tf_attention_forward(struct backend *b, void *out, void *probs, const void *qkv, int B, int T, int C, int H,
                               int causal);
void cuda_tf_attention_backward(struct backend *b, void *dqkv, const void *dout, const void *qkv, const void *probs,
                                int B, int T, int C, int H, int causal);
void cuda_tf_attention_products(struct backend *b, int backward, void *io, void *dqkv, const void *qkv, int B, int T,
                                int C, int H);
int cuda_tf_flash_attention_ok(const struct backend *b, int head_dim);
void cuda_tf_flash_attention_forward(struct backend *b, void *out, float *lse, const void *qkv, int B, int T, int C,
                                     int H, int causal);
void cuda_tf_flash_attention_backward(struct backend *b, void *dqkv, const void *dout, const void *out,
                                      const void *qkv, const float *lse, int B, int T, int C, int H, int causal);
void cuda_tf_add(struct backend *b, void *y, const void *x, size_t n);
void cuda_tf_gather_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C);
void cuda_tf_scatter_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C);
void cuda_tf_synth_tokens(struct backend *b, int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first,
                          int B, int T, int V, int nmask, int bert, uint64_t seed);
void cuda_tf_release(struct backend *b);

#endif

/* flash_attention.h — fused multi-head attention on the GPU (flash_attention.cu): which
 * shapes the kernels take, and their launchers. Layout as the unfused path's: q, k, v
 * packed per row in qkv [B*T x 3C] (head h at columns h*D, C + h*D, 2C + h*D), the
 * output [B*T x C]. The forward keeps one float per query row and head, the log2 of its
 * softmax denominator plus the row maximum (lse [B x H x T]), instead of the B*H*T*T
 * probabilities; the backward recomputes them tile by tile. */
#ifndef DPSCALE_FLASH_ATTENTION_H
#define DPSCALE_FLASH_ATTENTION_H

#include "kernels/kernel_types.h"

/* 16-bit activations (bf16, fp16) and a head dimension the kernels are built for. */
static inline int flash_attention_supports(int act_dtype, int head_dim)
{
    return (act_dtype == DT_BF16 || act_dtype == DT_F16) && (head_dim == 32 || head_dim == 64);
}

#ifdef __cplusplus
extern "C" {
#endif
#if defined(DPSCALE_HAVE_CUDA) || defined(__CUDACC__)
#include <cuda_runtime.h>

/* out = softmax(q k^T / sqrt(D)) v per sequence and head (causal: key j <= query i). */
cudaError_t cuda_flash_attention_forward(void *out, float *lse, const void *qkv, int B, int T, int C, int H,
                                         int causal, int dtype, cudaStream_t s);
/* dqkv (every element written) from dout, the forward's out and lse; scratch holds
 * cuda_flash_attention_scratch_floats(B, T, H) floats. */
size_t cuda_flash_attention_scratch_floats(int B, int T, int H);
cudaError_t cuda_flash_attention_backward(void *dqkv, const void *dout, const void *out, const void *qkv,
                                          const float *lse, float *scratch, int B, int T, int C, int H, int causal,
                                          int dtype, cudaStream_t s);
#endif
#ifdef __cplusplus
}
#endif

#endif

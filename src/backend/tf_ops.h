/* tf_ops.h — the transformer's operations of a backend (kernels/transformer/transformer_cpu.h
 * has their exact semantics), a table beside the core (struct backend_ops,
 * backend.h) that struct backend points at (b->tf) where the backend has them; the
 * transformer is refused, with a message, where it is NULL. Activations and weights
 * (embedding tables, LayerNorm gains) are in the compute dtype, gradients in
 * grad_dtype, mean/rstd fp32. A table has every entry but attention_products and
 * the flash attention's, which may be NULL. Pointers are in the backend's memory and
 * calls go to its current stream, as in backend.h. */
#ifndef DPSCALE_TF_OPS_H
#define DPSCALE_TF_OPS_H

#include <stddef.h>
#include <stdint.h>

struct backend;

struct tf_ops {
    void (*embed_forward)(struct backend *b, void *x, const int *tokens, const int *segments, const void *wte,
                          const void *wpe, const void *wse, int B, int T, int C);
    void (*embed_backward)(struct backend *b, void *dwte, void *dwpe, void *dwse, int grad_dtype, const int *tokens,
                           const int *segments, const void *dx, int B, int T, int C, int V, int S);
    void (*layernorm_forward)(struct backend *b, void *y, float *mean, float *rstd, const void *x, const void *gamma,
                              const void *beta, int rows, int C);
    /* accumulate = 1: dx += the gradient (a residual stream's, where it meets the LayerNorm).
     * dxsum (NULL: none): dx's column sums as written, C in grad_dtype: the bias gradient of
     * the linear layer whose output gradient dx is, taken while dx is in hand. */
    void (*layernorm_backward)(struct backend *b, void *dx, void *dgamma, void *dbeta, void *dxsum, int grad_dtype,
                               const void *dy, const void *x, const float *mean, const float *rstd, const void *gamma,
                               int rows, int C, int accumulate);
    void (*attention_forward)(struct backend *b, void *out, void *probs, const void *qkv, int B, int T, int C, int H,
                              int causal);
    void (*attention_backward)(struct backend *b, void *dqkv, const void *dout, const void *qkv, const void *probs,
                               int B, int T, int C, int H, int causal);
    /* attention_forward's products alone (backward = 0: S = Q K^T, then O = P V into
     * io) or attention_backward's (dV, dP, dQ, dK into dqkv, from dO = io), with no
     * softmax between them, the T x T matrices in the backend's scratch: the
     * attention's GEMMs that `dpscale bench` times beside the dense ones. NULL: none. */
    void (*attention_products)(struct backend *b, int backward, void *io, void *dqkv, const void *qkv, int B, int T,
                               int C, int H);
    /* Fused attention (kernels/transformer/flash_attention.h), the same product as attention_forward:
     * it keeps lse [B x H x T] floats for backward instead of the probabilities, and
     * backward reads the forward's output. NULL where a backend has none;
     * flash_attention_ok says whether it takes head dimension D at the compute dtype. */
    int (*flash_attention_ok)(const struct backend *b, int head_dim);
    void (*flash_attention_forward)(struct backend *b, void *out, float *lse, const void *qkv, int B, int T, int C,
                                    int H, int causal);
    void (*flash_attention_backward)(struct backend *b, void *dqkv, const void *dout, const void *out,
                                     const void *qkv, const float *lse, int B, int T, int C, int H, int causal);
    void (*add)(struct backend *b, void *y, const void *x, size_t n); /* y += x */
    void (*gather_rows)(struct backend *b, void *dst, const void *src, const int *rows, int n, int C);
    /* B sequences of the token task from first_sample (kernels/synthetic.h; cpu_synth_tokens). */
    void (*synth_tokens)(struct backend *b, int *tokens, int *segments, int *targets, int *mask_rows,
                         uint64_t first_sample, int B, int T, int V, int nmask, int bert, uint64_t seed);
    void (*scatter_rows)(struct backend *b, void *dst, const void *src, const int *rows, int n, int C);
};

/* A table the transformer can run on: every operation it calls unconditionally is there
 * (attention_products and the flash entries are optional, tested where they are used). */
static inline int tf_ops_complete(const struct tf_ops *o)
{
    return o != NULL && o->embed_forward && o->embed_backward && o->layernorm_forward && o->layernorm_backward &&
           o->attention_forward && o->attention_backward && o->add && o->gather_rows && o->scatter_rows &&
           o->synth_tokens;
}

extern const struct tf_ops cpu_tf_ops; /* cpu_transformer.c; the CUDA backend's: cuda/transformer_cuda.h */

#endif

/* cpu_transformer.c — the CPU backend's transformer operations (struct tf_ops,
 * tf_ops.h): thin wrappers over the loops of kernels/transformer/transformer_cpu.c, and the
 * attention's products alone as cblas_sgemm calls. fp32 throughout. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/tf_ops.h"
#include "base/error.h"
#include "kernels/kernels_cpu.h"
#include "kernels/transformer/transformer_cpu.h"

static void need_f32(int grad_dtype)
{
    if (grad_dtype != DT_F32) DP_FATAL(NULL, "the cpu backend keeps gradients in fp32");
}

static void be_embed_forward(struct backend *b, void *x, const int *tokens, const int *segments, const void *wte,
                             const void *wpe, const void *wse, int B, int T, int C)
{
    (void)b;
    cpu_embed_forward(x, tokens, segments, wte, wpe, wse, B, T, C);
}

static void be_embed_backward(struct backend *b, void *dwte, void *dwpe, void *dwse, int grad_dtype, const int *tokens,
                              const int *segments, const void *dx, int B, int T, int C, int V, int S)
{
    (void)b;
    need_f32(grad_dtype);
    cpu_embed_backward(dwte, dwpe, dwse, tokens, segments, dx, B, T, C, V, S);
}

static void be_layernorm_forward(struct backend *b, void *y, float *mean, float *rstd, const void *x, const void *gamma,
                                 const void *beta, int rows, int C)
{
    (void)b;
    cpu_layernorm_forward(y, mean, rstd, x, gamma, beta, rows, C);
}

static void be_layernorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, void *dxsum, int grad_dtype,
                                  const void *dy, const void *x, const float *mean, const float *rstd,
                                  const void *gamma, int rows, int C, int accumulate)
{
    (void)b;
    need_f32(grad_dtype);
    cpu_layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, C, accumulate);
    if (dxsum != NULL) cpu_bias_grad(dxsum, dx, rows, C);
}

static void be_attention_forward(struct backend *b, void *out, void *probs, const void *qkv, int B, int T, int C, int H,
                                 int causal)
{
    (void)b;
    cpu_attention_forward(out, probs, qkv, B, T, C, H, causal);
}

static void be_attention_backward(struct backend *b, void *dqkv, const void *dout, const void *qkv, const void *probs,
                                  int B, int T, int C, int H, int causal)
{
    (void)b;
    cpu_attention_backward(dqkv, dout, qkv, probs, B, T, C, H, causal);
}

/* attention's products alone (backend.h), each head one cblas_sgemm per product, the
 * T x T matrices in one scratch of the call. Row-major, Q, K, V and dO [T x D]
 * (ld 3C, C): S = s Q K^T; O = P V; dV = P^T dO; dP = dO V^T; dQ = s dS K; dK = s dS^T Q. */
static void be_attention_products(struct backend *b, int backward, void *io, void *dqkv, const void *qkv, int B, int T,
                                  int C, int H)
{
    (void)b;
    const int D = C / H, ld3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)D);
    float *p = calloc((size_t)T * T, sizeof(float));
    CHECK_ALLOC(p);
    for (int s = 0; s < B; s++)
        for (int h = 0; h < H; h++) {
            const float *q = (const float *)qkv + (size_t)s * T * ld3 + (size_t)h * D, *k = q + C, *v = q + 2 * C;
            float *o = (float *)io + (size_t)s * T * C + (size_t)h * D;
            if (!backward) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, scale, q, ld3, k, ld3, 0.0f, p, T);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T, 1.0f, p, T, v, ld3, 0.0f, o, C);
                continue;
            }
            float *dq = (float *)dqkv + (size_t)s * T * ld3 + (size_t)h * D, *dk = dq + C, *dv = dq + 2 * C;
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, 1.0f, p, T, o, C, 0.0f, dv, ld3);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, 1.0f, o, C, v, ld3, 0.0f, p, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T, scale, p, T, k, ld3, 0.0f, dq, ld3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, scale, p, T, q, ld3, 0.0f, dk, ld3);
        }
    free(p);
}

static void be_add(struct backend *b, void *y, const void *x, size_t n)
{
    (void)b;
    cpu_add(y, x, n);
}

static void be_gather_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    (void)b;
    cpu_gather_rows(dst, src, rows, n, C);
}

static void be_synth_tokens(struct backend *b, int *tokens, int *segments, int *targets, int *mask_rows,
                            uint64_t first, int B, int T, int V, int nmask, int bert, uint64_t seed)
{
    (void)b;
    cpu_synth_tokens(tokens, segments, targets, mask_rows, first, B, T, V, nmask, bert, seed);
}

static void be_scatter_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    (void)b;
    cpu_scatter_rows(dst, src, rows, n, C);
}

const struct tf_ops cpu_tf_ops = {
    .embed_forward = be_embed_forward,
    .embed_backward = be_embed_backward,
    .layernorm_forward = be_layernorm_forward,
    .layernorm_backward = be_layernorm_backward,
    .attention_forward = be_attention_forward,
    .attention_backward = be_attention_backward,
    .attention_products = be_attention_products,
    .add = be_add,
    .gather_rows = be_gather_rows,
    .scatter_rows = be_scatter_rows,
    .synth_tokens = be_synth_tokens,
};

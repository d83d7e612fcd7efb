/* transformer_cuda.c — the CUDA backend's transformer operations (cuda_tf_ops,
 * transformer_cuda.h): thin calls of our kernels, and multi-head attention as cuBLAS
 * strided-batched GEMMs around our softmax kernels. The attention of sequence b is H
 * GEMMs of one batched call per product, the heads `D` columns apart in the packed
 * qkv [rows x 3C].
 *
 * Row-major X [r x c] is column-major X^T, so with Q, K, V, O row-major [T x D] (ld 3C
 * or C) and P, dP, dS row-major [T x T]:
 *   S^T = K Q^T      gemm(T, N, T, T, D)    P = softmax(S) (our kernel; S scaled by alpha)
 *   O^T = V^T P^T    gemm(N, N, D, T, T)
 *   dV^T = dO^T P    gemm(N, T, D, T, T)    dP^T = V dO^T   gemm(T, N, T, T, D)
 *   dS = P (dP - rowsum(dP P))  (our kernel)
 *   dQ^T = K^T dS^T  gemm(N, N, D, T, T)    dK^T = Q^T dS   gemm(N, T, D, T, T), both x scale
 * With train.attention = flash the fused kernels of kernels/transformer/flash_attention.cu run instead.
 * Scratch (the embeddings' sort, LayerNorm's partial sums, dP) and the cuBLAS handle
 * live in the transformer's slot of the backend's state (cuda_state.h); the scratch
 * is allocated on first use, during the warm-up steps, and kept. */
#include "backend/cuda/transformer_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_state.h"
#include "base/cuda_check.h"
#include "base/error.h"
#include "kernels/kernels_cuda.h" /* cuda_add, the residual add */
#include "kernels/transformer/flash_attention.h"
#include "kernels/transformer/transformer_kernels.h"

struct tf_cuda {
    cublasHandle_t blas;
    void *embed_scratch;
    size_t embed_bytes;
    float *ln_partial;
    size_t ln_bytes;
    void *dp; /* dP, then dS, of every head of every sequence */
    size_t dp_bytes;
    float *fa_delta; /* flash backward: rowsum(dO O) per row and head */
    size_t fa_delta_bytes;
};

static void tf_release(struct backend *b, void *state)
{
    struct tf_cuda *t = state;
    if (t->embed_scratch) b->ops->free(b, t->embed_scratch);
    if (t->ln_partial) b->ops->free(b, t->ln_partial);
    if (t->dp) b->ops->free(b, t->dp);
    if (t->fa_delta) b->ops->free(b, t->fa_delta);
    cublasDestroy(t->blas);
    free(t);
}

static struct tf_cuda *tf(struct backend *b)
{
    struct cuda_family_slot *slot = cuda_state_family(b, &cuda_tf_ops);
    if (slot->state == NULL) {
        struct tf_cuda *t = calloc(1, sizeof *t);
        CHECK_ALLOC(t);
        CHECK_CUBLAS(cublasCreate(&t->blas));
        CHECK_CUBLAS(cublasSetMathMode(t->blas, CUBLAS_DEFAULT_MATH));
        slot->state = t;
        slot->release = tf_release;
    }
    return slot->state;
}

static cudaStream_t stream(struct backend *b) { return cuda_state_stream(b); }

static void cuda_tf_embed_forward(struct backend *b, void *x, const int *tokens, const int *segments, const void *wte,
                                  const void *wpe, const void *wse, int B, int T, int C)
{
    CHECK_CUDA(cuda_embed_forward(x, tokens, segments, wte, wpe, wse, B, T, C, b->act_dtype, stream(b)));
}

static void cuda_tf_embed_backward(struct backend *b, void *dwte, void *dwpe, void *dwse, int grad_dtype,
                                   const int *tokens, const int *segments, const void *dx, int B, int T, int C, int V,
                                   int S)
{
    (void)V;
    struct tf_cuda *t = tf(b);
    void *scratch = cuda_state_grow(b, &t->embed_scratch, &t->embed_bytes, cuda_embed_scratch_bytes(B * T));
    CHECK_CUDA(cuda_embed_backward(dwte, dwpe, dwse, grad_dtype, tokens, segments, dx, B, T, C, S, scratch,
                                   b->act_dtype, stream(b)));
}

static void cuda_tf_layernorm_forward(struct backend *b, void *y, float *mean, float *rstd, const void *x,
                                      const void *gamma, const void *beta, int rows, int C)
{
    CHECK_CUDA(cuda_layernorm_forward(y, mean, rstd, x, gamma, beta, rows, C, b->act_dtype, stream(b)));
}

static void cuda_tf_layernorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, void *dxsum,
                                       int grad_dtype, const void *dy, const void *x, const float *mean,
                                       const float *rstd, const void *gamma, int rows, int C, int accumulate)
{
    struct tf_cuda *t = tf(b);
    float *partial = cuda_state_grow(b, (void **)&t->ln_partial, &t->ln_bytes,
                                     cuda_layernorm_scratch_floats(rows, C) * sizeof(float));
    CHECK_CUDA(cuda_layernorm_backward(dx, dgamma, dbeta, dxsum, grad_dtype, dy, x, mean, rstd, gamma, rows, C,
                                       accumulate, partial, b->act_dtype, stream(b)));
}

/* H products of one sequence: C_h = alpha op(A_h) op(B_h), the heads' operands
 * strideA / strideB / strideC elements apart. */
static void heads_gemm(struct backend *b, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                       const void *A, int lda, long long sa, const void *B, int ldb, long long sb, void *C, int ldc,
                       long long sc, int H)
{
    struct tf_cuda *t = tf(b);
    const float beta = 0.0f;
    const cudaDataType_t type = cuda_state_ab_type(b);
    CHECK_CUBLAS(cublasSetStream(t->blas, stream(b)));
    CHECK_CUBLAS(cublasGemmStridedBatchedEx(t->blas, ta, tb, m, n, k, &alpha, A, type, lda, sa, B, type, ldb, sb, &beta, C,
                                          type, ldc, sc, H, cuda_state_compute_type(b), CUBLAS_GEMM_DEFAULT));
}

static const char *at(const void *base, size_t index, size_t elem) { return (const char *)base + index * elem; }

/* The four product loops of attention, one batched call of H heads per sequence.
 * scores: S = scale Q K^T into p; output: O = P V from p; grads_of_p: dV = P^T dO
 * from p and dP = dO V^T into dp; grads_of_s: dQ = scale dS K, dK = scale dS^T Q
 * from ds. */
static void scores(struct backend *b, void *p, const void *qkv, int B, int T, int C, int H)
{
    const int D = C / H, ld3 = 3 * C;
    const size_t e = dtype_size(b->act_dtype), TT = (size_t)T * T;
    const float scale = 1.0f / sqrtf((float)D);
    for (int s = 0; s < B; s++) {
        const char *q = at(qkv, (size_t)s * T * ld3, e), *k = q + (size_t)C * e;
        heads_gemm(b, CUBLAS_OP_T, CUBLAS_OP_N, T, T, D, scale, k, ld3, D, q, ld3, D,
                   (void *)at(p, (size_t)s * H * TT, e), T, (long long)TT, H);
    }
}

static void output(struct backend *b, void *out, const void *p, const void *qkv, int B, int T, int C, int H)
{
    const int D = C / H, ld3 = 3 * C;
    const size_t e = dtype_size(b->act_dtype), TT = (size_t)T * T;
    for (int s = 0; s < B; s++) {
        const char *v = at(qkv, (size_t)s * T * ld3 + 2 * (size_t)C, e);
        heads_gemm(b, CUBLAS_OP_N, CUBLAS_OP_N, D, T, T, 1.0f, v, ld3, D, at(p, (size_t)s * H * TT, e), T,
                   (long long)TT, (void *)at(out, (size_t)s * T * C, e), C, D, H);
    }
}

static void grads_of_p(struct backend *b, void *dqkv, void *dp, const void *p, const void *dout, const void *qkv,
                       int B, int T, int C, int H)
{
    const int D = C / H, ld3 = 3 * C;
    const size_t e = dtype_size(b->act_dtype), TT = (size_t)T * T;
    for (int s = 0; s < B; s++) {
        const char *v = at(qkv, (size_t)s * T * ld3 + 2 * (size_t)C, e);
        const char *ps = at(p, (size_t)s * H * TT, e), *dO = at(dout, (size_t)s * T * C, e);
        char *dv = (char *)at(dqkv, (size_t)s * T * ld3 + 2 * (size_t)C, e);
        heads_gemm(b, CUBLAS_OP_N, CUBLAS_OP_T, D, T, T, 1.0f, dO, C, D, ps, T, (long long)TT, dv, ld3, D, H);
        heads_gemm(b, CUBLAS_OP_T, CUBLAS_OP_N, T, T, D, 1.0f, v, ld3, D, dO, C, D, (void *)at(dp, (size_t)s * H * TT, e),
                   T, (long long)TT, H);
    }
}

static void grads_of_s(struct backend *b, void *dqkv, const void *ds, const void *qkv, int B, int T, int C, int H)
{
    const int D = C / H, ld3 = 3 * C;
    const size_t e = dtype_size(b->act_dtype), TT = (size_t)T * T;
    const float scale = 1.0f / sqrtf((float)D);
    for (int s = 0; s < B; s++) {
        const char *q = at(qkv, (size_t)s * T * ld3, e), *k = q + (size_t)C * e, *dss = at(ds, (size_t)s * H * TT, e);
        char *dq = (char *)at(dqkv, (size_t)s * T * ld3, e), *dk = dq + (size_t)C * e;
        heads_gemm(b, CUBLAS_OP_N, CUBLAS_OP_N, D, T, T, scale, k, ld3, D, dss, T, (long long)TT, dq, ld3, D, H);
        heads_gemm(b, CUBLAS_OP_N, CUBLAS_OP_T, D, T, T, scale, q, ld3, D, dss, T, (long long)TT, dk, ld3, D, H);
    }
}

/* The scratch of every head's T x T scores, dP and dS. */
static void *scores_scratch(struct backend *b, int B, int T, int H)
{
    struct tf_cuda *t = tf(b);
    return cuda_state_grow(b, &t->dp, &t->dp_bytes, (size_t)B * H * T * T * dtype_size(b->act_dtype));
}

static void cuda_tf_attention_forward(struct backend *b, void *out, void *probs, const void *qkv, int B, int T, int C,
                                      int H, int causal)
{
    scores(b, probs, qkv, B, T, C, H);
    CHECK_CUDA(cuda_attention_softmax(probs, B * H * T, T, causal, b->act_dtype, stream(b)));
    output(b, out, probs, qkv, B, T, C, H);
}

static void cuda_tf_attention_backward(struct backend *b, void *dqkv, const void *dout, const void *qkv,
                                       const void *probs, int B, int T, int C, int H, int causal)
{
    (void)causal; /* P is 0 above the diagonal: dS is too */
    void *dp = scores_scratch(b, B, T, H);
    grads_of_p(b, dqkv, dp, probs, dout, qkv, B, T, C, H);
    CHECK_CUDA(cuda_attention_softmax_backward(dp, probs, B * H * T, T, b->act_dtype, stream(b)));
    grads_of_s(b, dqkv, dp, qkv, B, T, C, H);
}

/* The same products with no softmax between them: the scores, P, dP and dS all in
 * the one scratch (each product reads real values the one before wrote). */
static void cuda_tf_attention_products(struct backend *b, int backward, void *io, void *dqkv, const void *qkv, int B,
                                       int T, int C, int H)
{
    void *p = scores_scratch(b, B, T, H);
    if (!backward) {
        scores(b, p, qkv, B, T, C, H);
        output(b, io, p, qkv, B, T, C, H);
    } else {
        grads_of_p(b, dqkv, p, p, io, qkv, B, T, C, H);
        grads_of_s(b, dqkv, p, qkv, B, T, C, H);
    }
}

static int cuda_tf_flash_attention_ok(const struct backend *b, int head_dim)
{
    return flash_attention_supports(b->act_dtype, head_dim);
}

static void cuda_tf_flash_attention_forward(struct backend *b, void *out, float *lse, const void *qkv, int B, int T,
                                            int C, int H, int causal)
{
    CHECK_CUDA(cuda_flash_attention_forward(out, lse, qkv, B, T, C, H, causal, b->act_dtype, stream(b)));
}

static void cuda_tf_flash_attention_backward(struct backend *b, void *dqkv, const void *dout, const void *out,
                                             const void *qkv, const float *lse, int B, int T, int C, int H, int causal)
{
    struct tf_cuda *t = tf(b);
    float *delta = cuda_state_grow(b, (void **)&t->fa_delta, &t->fa_delta_bytes,
                                   cuda_flash_attention_scratch_floats(B, T, H) * sizeof(float));
    CHECK_CUDA(cuda_flash_attention_backward(dqkv, dout, out, qkv, lse, delta, B, T, C, H, causal, b->act_dtype,
                                             stream(b)));
}

static void cuda_tf_add(struct backend *b, void *y, const void *x, size_t n)
{
    CHECK_CUDA(cuda_add(y, x, n, b->act_dtype, stream(b)));
}

static void cuda_tf_gather_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    CHECK_CUDA(cuda_move_rows(dst, src, rows, n, C, 0, b->act_dtype, stream(b)));
}

static void cuda_tf_synth_tokens(struct backend *b, int *tokens, int *segments, int *targets, int *mask_rows,
                                 uint64_t first, int B, int T, int V, int nmask, int bert, uint64_t seed)
{
    CHECK_CUDA(cuda_synth_tokens(tokens, segments, targets, mask_rows, first, B, T, V, nmask, bert, seed, stream(b)));
}

static void cuda_tf_scatter_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    CHECK_CUDA(cuda_move_rows(dst, src, rows, n, C, 1, b->act_dtype, stream(b)));
}

const struct tf_ops cuda_tf_ops = {
    .embed_forward = cuda_tf_embed_forward,
    .embed_backward = cuda_tf_embed_backward,
    .layernorm_forward = cuda_tf_layernorm_forward,
    .layernorm_backward = cuda_tf_layernorm_backward,
    .attention_forward = cuda_tf_attention_forward,
    .attention_backward = cuda_tf_attention_backward,
    .attention_products = cuda_tf_attention_products,
    .flash_attention_ok = cuda_tf_flash_attention_ok,
    .flash_attention_forward = cuda_tf_flash_attention_forward,
    .flash_attention_backward = cuda_tf_flash_attention_backward,
    .add = cuda_tf_add,
    .gather_rows = cuda_tf_gather_rows,
    .scatter_rows = cuda_tf_scatter_rows,
    .synth_tokens = cuda_tf_synth_tokens,
};

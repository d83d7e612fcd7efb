/* transformer.cu — the transformer's own kernels on the GPU (the CPU reference is
 * transformer_cpu.c, whose header states the semantics): embeddings and their
 * deterministic backward, LayerNorm, the attention softmax and its backward, residual
 * adds and row gathers. The attention GEMMs themselves are cuBLAS strided-batched
 * calls (src/transformer_cuda.c). T: the compute dtype of activations and weights; G:
 * the gradients' (fp32 or T). Every reduction has a fixed order: no atomics. */
#include <cub/cub.cuh>

#include "dtype_cuda.cuh"
#include "kernels_cuda.h"

#define TF_THREADS 256
#define TF_COLS 256     /* columns a block of the column-sum kernels owns */
#define TF_CHUNK_ROWS 256 /* rows a block of the column-sum kernels adds (LayerNorm's gains) */

/* ---- embeddings ---------------------------------------------------------------------- */

template <typename T>
__global__ void embed_fwd(T *x, const int *tokens, const int *segments, const T *wte, const T *wpe, const T *wse,
                          int T_, int C)
{
    const int row = blockIdx.x, t = row % T_;
    const T *e = wte + (size_t)tokens[row] * C, *p = wpe + (size_t)t * C;
    const T *s = wse != nullptr ? wse + (size_t)segments[row] * C : nullptr;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float v = to_f32(e[c]) + to_f32(p[c]);
        if (s != nullptr) v += to_f32(s[c]);
        x[(size_t)row * C + c] = from_f32<T>(v);
    }
}

/* dwpe[t, c] = sum over b of dx[b, t, c], b in order */
template <typename T, typename G> __global__ void embed_bwd_pos(G *dwpe, const T *dx, int B, int T_, int C)
{
    const int t = blockIdx.y, c = blockIdx.x * TF_COLS + threadIdx.x;
    if (c >= C) return;
    float sum = 0.0f;
    for (int b = 0; b < B; b++) sum += to_f32(dx[((size_t)b * T_ + t) * C + c]);
    dwpe[(size_t)t * C + c] = from_f32<G>(sum);
}

/* dwse[s, c] = sum of dx over the rows of segment s, rows in order */
template <typename T, typename G>
__global__ void embed_bwd_seg(G *dwse, const int *segments, const T *dx, int R, int C)
{
    const int s = blockIdx.y, c = blockIdx.x * TF_COLS + threadIdx.x;
    if (c >= C) return;
    float sum = 0.0f;
    for (int r = 0; r < R; r++)
        if (segments[r] == s) sum += to_f32(dx[(size_t)r * C + c]);
    dwse[(size_t)s * C + c] = from_f32<G>(sum);
}

/* dwte[v] += the rows of token v: the rows sorted by token (stable, so in row order
 * within a token); block i handles run i of equal tokens if it starts at i. */
template <typename T, typename G>
__global__ void embed_bwd_tok(G *dwte, const int *sorted_tokens, const int *sorted_rows, const T *dx, int R, int C)
{
    const int i = blockIdx.x;
    if (i > 0 && sorted_tokens[i] == sorted_tokens[i - 1]) return; /* not the start of a run */
    int end = i + 1;
    while (end < R && sorted_tokens[end] == sorted_tokens[i]) end++;
    G *out = dwte + (size_t)sorted_tokens[i] * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float sum = to_f32(out[c]);
        for (int k = i; k < end; k++) sum += to_f32(dx[(size_t)sorted_rows[k] * C + c]);
        out[c] = from_f32<G>(sum);
    }
}

__global__ void iota(int *rows, int R)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < R) rows[i] = i;
}

extern "C" size_t cuda_embed_scratch_bytes(int R)
{
    size_t sort_bytes = 0;
    cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, (const int *)nullptr, (int *)nullptr, (const int *)nullptr,
                                    (int *)nullptr, R);
    return 3 * (size_t)R * sizeof(int) + sort_bytes + 256;
}

template <typename T>
static cudaError_t launch_embed_fwd(void *x, const int *tokens, const int *segments, const void *wte, const void *wpe,
                                    const void *wse, int B, int T_, int C, cudaStream_t s)
{
    embed_fwd<T><<<B * T_, TF_THREADS, 0, s>>>((T *)x, tokens, segments, (const T *)wte, (const T *)wpe,
                                               (const T *)wse, T_, C);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_embed_forward(void *x, const int *tokens, const int *segments, const void *wte,
                                          const void *wpe, const void *wse, int B, int T_, int C, int dtype,
                                          cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_embed_fwd, x, tokens, segments, wte, wpe, wse, B, T_, C, s);
}

template <typename T, typename G>
static cudaError_t launch_embed_bwd_typed(G *dwte, G *dwpe, G *dwse, const int *tokens, const int *segments,
                                          const T *dx, int B, int T_, int C, int S, void *scratch, cudaStream_t s)
{
    const int R = B * T_;
    dim3 pos_grid((C + TF_COLS - 1) / TF_COLS, T_);
    embed_bwd_pos<T, G><<<pos_grid, TF_COLS, 0, s>>>(dwpe, dx, B, T_, C);
    if (dwse != nullptr && segments != nullptr && S > 0) {
        dim3 seg_grid((C + TF_COLS - 1) / TF_COLS, S);
        embed_bwd_seg<T, G><<<seg_grid, TF_COLS, 0, s>>>(dwse, segments, dx, R, C);
    }
    int *rows = (int *)scratch, *sorted_tokens = rows + R, *sorted_rows = sorted_tokens + R;
    void *sort_tmp = sorted_rows + R;
    size_t sort_bytes = cuda_embed_scratch_bytes(R) - 3 * (size_t)R * sizeof(int);
    iota<<<(R + TF_THREADS - 1) / TF_THREADS, TF_THREADS, 0, s>>>(rows, R);
    cudaError_t rc = cub::DeviceRadixSort::SortPairs(sort_tmp, sort_bytes, tokens, sorted_tokens, rows, sorted_rows, R,
                                                     0, 32, s);
    if (rc != cudaSuccess) return rc;
    embed_bwd_tok<T, G><<<R, TF_THREADS, 0, s>>>(dwte, sorted_tokens, sorted_rows, dx, R, C);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t launch_embed_bwd(void *dwte, void *dwpe, void *dwse, int grads_in_t, const int *tokens,
                                    const int *segments, const void *dx, int B, int T_, int C, int S, void *scratch,
                                    cudaStream_t s)
{
    if (grads_in_t)
        return launch_embed_bwd_typed<T, T>((T *)dwte, (T *)dwpe, (T *)dwse, tokens, segments, (const T *)dx, B, T_, C,
                                            S, scratch, s);
    return launch_embed_bwd_typed<T, float>((float *)dwte, (float *)dwpe, (float *)dwse, tokens, segments,
                                            (const T *)dx, B, T_, C, S, scratch, s);
}

extern "C" cudaError_t cuda_embed_backward(void *dwte, void *dwpe, void *dwse, int grad_dtype, const int *tokens,
                                           const int *segments, const void *dx, int B, int T_, int C, int S,
                                           void *scratch, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_embed_bwd, dwte, dwpe, dwse, grad_dtype != DT_F32, tokens, segments, dx, B, T_,
                          C, S, scratch, s);
}

/* ---- LayerNorm: one warp per row ----------------------------------------------------- */

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

template <typename T>
__global__ void ln_fwd(T *y, float *mean, float *rstd, const T *x, const T *gamma, const T *beta, int R, int C)
{
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= R) return;
    const T *xr = x + (size_t)row * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32) s += to_f32(xr[c]);
    const float m = warp_sum(s) / C;
    float v = 0.0f;
    for (int c = lane; c < C; c += 32) {
        const float d = to_f32(xr[c]) - m;
        v += d * d;
    }
    const float r = rsqrtf(warp_sum(v) / C + 1e-5f);
    for (int c = lane; c < C; c += 32)
        y[(size_t)row * C + c] = from_f32<T>((to_f32(xr[c]) - m) * r * to_f32(gamma[c]) + to_f32(beta[c]));
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

/* dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma */
template <typename T>
__global__ void ln_bwd_dx(T *dx, const T *dy, const T *x, const float *mean, const float *rstd, const T *gamma, int R,
                          int C)
{
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= R) return;
    const T *xr = x + (size_t)row * C, *dyr = dy + (size_t)row * C;
    const float m = mean[row], r = rstd[row];
    float sg = 0.0f, sgx = 0.0f;
    for (int c = lane; c < C; c += 32) {
        const float g = to_f32(dyr[c]) * to_f32(gamma[c]), xh = (to_f32(xr[c]) - m) * r;
        sg += g;
        sgx += g * xh;
    }
    sg = warp_sum(sg) / C;
    sgx = warp_sum(sgx) / C;
    for (int c = lane; c < C; c += 32) {
        const float g = to_f32(dyr[c]) * to_f32(gamma[c]), xh = (to_f32(xr[c]) - m) * r;
        dx[(size_t)row * C + c] = from_f32<T>(r * (g - sg - xh * sgx));
    }
}

/* partial[chunk][0][c] = sum of dy xhat, partial[chunk][1][c] = sum of dy, over the chunk's rows */
template <typename T>
__global__ void ln_bwd_partials(float *partial, const T *dy, const T *x, const float *mean, const float *rstd, int R,
                                int C)
{
    const int c = blockIdx.x * TF_COLS + threadIdx.x;
    if (c >= C) return;
    const int r0 = blockIdx.y * TF_CHUNK_ROWS, r1 = min(R, r0 + TF_CHUNK_ROWS);
    float sg = 0.0f, sb = 0.0f;
    for (int r = r0; r < r1; r++) {
        const float d = to_f32(dy[(size_t)r * C + c]);
        sg += d * (to_f32(x[(size_t)r * C + c]) - mean[r]) * rstd[r];
        sb += d;
    }
    partial[((size_t)blockIdx.y * 2) * C + c] = sg;
    partial[((size_t)blockIdx.y * 2 + 1) * C + c] = sb;
}

template <typename G> __global__ void ln_bwd_sum(G *dgamma, G *dbeta, const float *partial, int chunks, int C)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float sg = 0.0f, sb = 0.0f;
    for (int k = 0; k < chunks; k++) {
        sg += partial[((size_t)k * 2) * C + c];
        sb += partial[((size_t)k * 2 + 1) * C + c];
    }
    dgamma[c] = from_f32<G>(sg);
    dbeta[c] = from_f32<G>(sb);
}

extern "C" size_t cuda_layernorm_scratch_floats(int R, int C)
{
    return (size_t)((R + TF_CHUNK_ROWS - 1) / TF_CHUNK_ROWS) * 2 * (size_t)C;
}

template <typename T>
static cudaError_t launch_ln_fwd(void *y, float *mean, float *rstd, const void *x, const void *gamma, const void *beta,
                                 int R, int C, cudaStream_t s)
{
    const int rows_per_block = TF_THREADS / 32;
    ln_fwd<T><<<(R + rows_per_block - 1) / rows_per_block, TF_THREADS, 0, s>>>(
        (T *)y, mean, rstd, (const T *)x, (const T *)gamma, (const T *)beta, R, C);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_layernorm_forward(void *y, float *mean, float *rstd, const void *x, const void *gamma,
                                              const void *beta, int R, int C, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_ln_fwd, y, mean, rstd, x, gamma, beta, R, C, s);
}

template <typename T>
static cudaError_t launch_ln_bwd(void *dx, void *dgamma, void *dbeta, int grads_in_t, const void *dy, const void *x,
                                 const float *mean, const float *rstd, const void *gamma, int R, int C, float *partial,
                                 cudaStream_t s)
{
    const int rows_per_block = TF_THREADS / 32, chunks = (R + TF_CHUNK_ROWS - 1) / TF_CHUNK_ROWS;
    ln_bwd_dx<T><<<(R + rows_per_block - 1) / rows_per_block, TF_THREADS, 0, s>>>(
        (T *)dx, (const T *)dy, (const T *)x, mean, rstd, (const T *)gamma, R, C);
    dim3 grid((C + TF_COLS - 1) / TF_COLS, chunks);
    ln_bwd_partials<T><<<grid, TF_COLS, 0, s>>>(partial, (const T *)dy, (const T *)x, mean, rstd, R, C);
    if (grads_in_t) ln_bwd_sum<T><<<(C + TF_THREADS - 1) / TF_THREADS, TF_THREADS, 0, s>>>((T *)dgamma, (T *)dbeta, partial, chunks, C);
    else ln_bwd_sum<float><<<(C + TF_THREADS - 1) / TF_THREADS, TF_THREADS, 0, s>>>((float *)dgamma, (float *)dbeta, partial, chunks, C);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_layernorm_backward(void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                               const void *x, const float *mean, const float *rstd, const void *gamma,
                                               int R, int C, float *partial, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_ln_bwd, dx, dgamma, dbeta, grad_dtype != DT_F32, dy, x, mean, rstd, gamma, R,
                          C, partial, s);
}

/* ---- the attention softmax: one warp per row of T scores ------------------------------ */

/* p = softmax(s) over each row in place (s already scaled); causal: row i keeps j <= i, the rest 0. */
template <typename T> __global__ void attn_softmax(T *p, int rows, int T_, int causal)
{
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    T *pr = p + (size_t)row * T_;
    const int i = row % T_, n = causal ? i + 1 : T_;
    float mx = -INFINITY;
    for (int j = lane; j < n; j += 32) mx = fmaxf(mx, to_f32(pr[j]));
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float sum = 0.0f;
    for (int j = lane; j < n; j += 32) sum += __expf(to_f32(pr[j]) - mx);
    const float inv = 1.0f / warp_sum(sum);
    for (int j = lane; j < T_; j += 32) pr[j] = from_f32<T>(j < n ? __expf(to_f32(pr[j]) - mx) * inv : 0.0f);
}

/* ds = p (dp - sum_j dp_j p_j), in place over dp */
template <typename T> __global__ void attn_softmax_bwd(T *dp, const T *p, int rows, int T_)
{
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    T *dr = dp + (size_t)row * T_;
    const T *pr = p + (size_t)row * T_;
    float dot = 0.0f;
    for (int j = lane; j < T_; j += 32) dot += to_f32(dr[j]) * to_f32(pr[j]);
    dot = warp_sum(dot);
    for (int j = lane; j < T_; j += 32) dr[j] = from_f32<T>(to_f32(pr[j]) * (to_f32(dr[j]) - dot));
}

template <typename T> static cudaError_t launch_softmax(void *p, int rows, int T_, int causal, cudaStream_t s)
{
    const int per = TF_THREADS / 32;
    attn_softmax<T><<<(rows + per - 1) / per, TF_THREADS, 0, s>>>((T *)p, rows, T_, causal);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_attention_softmax(void *p, int rows, int T_, int causal, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_softmax, p, rows, T_, causal, s);
}

template <typename T> static cudaError_t launch_softmax_bwd(void *dp, const void *p, int rows, int T_, cudaStream_t s)
{
    const int per = TF_THREADS / 32;
    attn_softmax_bwd<T><<<(rows + per - 1) / per, TF_THREADS, 0, s>>>((T *)dp, (const T *)p, rows, T_);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_attention_softmax_backward(void *dp, const void *p, int rows, int T_, int dtype,
                                                       cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_softmax_bwd, dp, p, rows, T_, s);
}

/* ---- residual adds and row gathers ----------------------------------------------------- */

template <typename T> __global__ void add_kernel(T *y, const T *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_f32<T>(to_f32(y[i]) + to_f32(x[i]));
}

template <typename T> static cudaError_t launch_add(void *y, const void *x, size_t n, cudaStream_t s)
{
    add_kernel<T><<<blocks_for(n, TF_THREADS, 132 * 16), TF_THREADS, 0, s>>>((T *)y, (const T *)x, n);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_add(void *y, const void *x, size_t n, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_add, y, x, n, s);
}

/* dst[i] = src[rows[i]] (gather), or dst[rows[i]] = src[i] (scatter) */
template <typename T> __global__ void move_rows(T *dst, const T *src, const int *rows, int C, int scatter)
{
    const size_t to = scatter ? (size_t)rows[blockIdx.x] : blockIdx.x, from = scatter ? blockIdx.x : (size_t)rows[blockIdx.x];
    for (int c = threadIdx.x; c < C; c += blockDim.x) dst[to * C + c] = src[from * C + c];
}

template <typename T>
static cudaError_t launch_move(void *dst, const void *src, const int *rows, int n, int C, int scatter, cudaStream_t s)
{
    if (n > 0) move_rows<T><<<n, TF_THREADS, 0, s>>>((T *)dst, (const T *)src, rows, C, scatter);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_move_rows(void *dst, const void *src, const int *rows, int n, int C, int scatter, int dtype,
                                      cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_move, dst, src, rows, n, C, scatter, s);
}

/* transformer.cu — the transformer's own kernels on the GPU (the CPU reference is
 * transformer_cpu.c, whose header states the semantics): embeddings and their
 * deterministic backward, the unfused attention's softmax and its backward, residual
 * adds (and the ResNet's add with ReLU) and row gathers (LayerNorm: layernorm.cu; fused
 * attention: flash_attention.cu).
 * The unfused attention's GEMMs are cuBLAS strided-batched calls
 * (src/backend/cuda/transformer_cuda.c). T: the compute dtype of activations and weights; G: the
 * gradients' (fp32 or T). Every reduction has a fixed order: no atomics.
 *
 * These kernels are memory-bound, so each moves 16 bytes a load (V = 16 / sizeof(T)
 * elements) when the row length is a multiple of V and the pointers are 16-byte
 * aligned; otherwise the same kernel runs with V = 1, or the plain one-element kernel. */
#include <cub/cub.cuh>
#include <stdint.h>

#include "kernels/dtype_cuda.cuh"
#include "kernels/transformer/transformer_kernels.h"
#include "kernels/vector_cuda.cuh"

#define TF_THREADS 256
#define EMB_LONG 32       /* runs of one token longer than this are split over a block's threads */
#define EMB_MIN_BLOCKS 264 /* blocks wanted of the position sums (2 an SM of an H100) */
#define EMB_MAXS 2        /* segments summed per read of dx (more take another pass) */
#define EMB_THREADS 512   /* a block of the position and segment sums */

static_assert(EMB_LONG <= 32, "a short run is found with one warp ballot");

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

/* dwpe[t, :] = sum over b of dx[b, t, :], b in order (when dwpe is not null), and
 * dwse[s0 + s, :] = the sum of dx over the rows of segment s0 + s, s < ns <= EMB_MAXS.
 * One read of dx serves both, and nothing is stored but the results: a block owns L
 * vectors of V columns for all rows; its thread (g, l) takes the positions g, g + NG, ...
 * and keeps its segment sums in registers; the threads' sums are added in a fixed order
 * (a shuffle butterfly within a warp, then the warps in turn). */
template <typename T, typename G, int V, int L>
__global__ void __launch_bounds__(EMB_THREADS)
    embed_bwd_pos_seg(G *dwpe, G *dwse, const int *segments, const T *dx, int B, int T_, int C, int s0, int ns)
{
    constexpr int NG = EMB_THREADS / L, NWARP = EMB_THREADS / 32;
    static_assert(L <= 32 && 32 % L == 0, "a warp holds whole groups of L lanes");
    __shared__ float red[NWARP][EMB_MAXS][L * V];
    const int l = threadIdx.x % L, g = threadIdx.x / L, j = blockIdx.x * L + l;
    float seg[EMB_MAXS][V] = {};
    if (j < C / V) {
        for (int t = blockIdx.y * NG + g; t < T_; t += NG * gridDim.y) {
            float pos[V] = {};
#pragma unroll 4
            for (int b = 0; b < B; b++) {
                const size_t row = (size_t)b * T_ + t;
                float v[V];
                load_f32<V>(v, dx + row * C + (size_t)j * V);
                const int sg = segments != nullptr ? segments[row] - s0 : -1;
                add_to<V>(pos, v);
#pragma unroll
                for (int s = 0; s < EMB_MAXS; s++)
                    if (sg == s) add_to<V>(seg[s], v);
            }
            if (dwpe != nullptr) store_f32<V>(dwpe + (size_t)t * C + (size_t)j * V, pos);
        }
    }
    if (ns <= 0) return;
#pragma unroll
    for (int s = 0; s < EMB_MAXS; s++)
#pragma unroll
        for (int i = 0; i < V; i++)
            for (int o = 16; o >= L; o >>= 1) seg[s][i] += __shfl_xor_sync(0xffffffffu, seg[s][i], o);
    if (threadIdx.x % 32 < L)
#pragma unroll
        for (int s = 0; s < EMB_MAXS; s++)
#pragma unroll
            for (int i = 0; i < V; i++) red[threadIdx.x / 32][s][l * V + i] = seg[s][i];
    __syncthreads();
    for (int k = threadIdx.x; k < ns * L * V; k += EMB_THREADS) {
        const int s = k / (L * V), c = k % (L * V), col = blockIdx.x * L * V + c;
        if (col >= C) continue;
        float sum = 0.0f;
        for (int w = 0; w < NWARP; w++) sum += red[w][s][c];
        dwse[(size_t)(s0 + s) * C + col] = from_f32<G>(sum);
    }
}

/* dwte[v, :] += the rows of token v, through the rows sorted by token (stable, so in
 * row order within a token). A run of at most EMB_LONG equal tokens is one warp's: the
 * warp at its first position adds its rows in order, V columns a lane. */
template <typename T, typename G, int V>
__global__ void embed_bwd_tok_short(G *dwte, const int *sorted_tokens, const int *sorted_rows, const T *dx, int R,
                                    int C)
{
    const int p = blockIdx.x * (TF_THREADS / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (p >= R) return;
    const int tok = sorted_tokens[p];
    if ((p > 0 && sorted_tokens[p - 1] == tok) || (p + EMB_LONG < R && sorted_tokens[p + EMB_LONG] == tok))
        return; /* not a run's start, or a long run */
    const int n = __popc(__ballot_sync(0xffffffffu, p + lane < R && sorted_tokens[p + lane] == tok));
    G *out = dwte + (size_t)tok * C;
    for (int j = lane; j < C / V; j += 32) {
        float acc[V];
        load_f32<V>(acc, out + (size_t)j * V);
#pragma unroll 4
        for (int k = 0; k < n; k++) {
            float v[V];
            load_f32<V>(v, dx + (size_t)sorted_rows[p + k] * C + (size_t)j * V);
            add_to<V>(acc, v);
        }
        store_f32<V>(out + (size_t)j * V, acc);
    }
}

/* A run longer than EMB_LONG: block (x, y) takes the run in which position x * EMB_LONG
 * is the first multiple of EMB_LONG (so exactly one x per long run) and VS vectors of V
 * columns (y); its NG = TF_THREADS / VS row groups add every NG-th row of the run, and
 * the groups' sums are added in a fixed tree. */
template <typename T, typename G, int V, int VS>
__global__ void __launch_bounds__(TF_THREADS)
    embed_bwd_tok_long(G *dwte, const int *sorted_tokens, const int *sorted_rows, const T *dx, int R, int C)
{
    constexpr int NG = TF_THREADS / VS, BATCH = 4;
    static_assert((NG & (NG - 1)) == 0, "a tree over the row groups");
    __shared__ float red[NG][VS * V];
    const int p = blockIdx.x * EMB_LONG, tok = sorted_tokens[p], tid = threadIdx.x;
    if (p >= EMB_LONG && sorted_tokens[p - EMB_LONG] == tok) return; /* begun before p - EMB_LONG */
    /* the run's first position: the tokens before it in (p - EMB_LONG, p] are smaller */
    const int lo = max(0, p - EMB_LONG + 1);
    const int start = lo + __syncthreads_count(lo + tid <= p && sorted_tokens[lo + tid] != tok);
    if (start + EMB_LONG >= R || sorted_tokens[start + EMB_LONG] != tok) return; /* short: a warp's */
    int end = start + EMB_LONG + 1;
    for (;;) { /* the equal tokens at end, end + 1, ... are a prefix of the window */
        const int n = __syncthreads_count(end + tid < R && sorted_tokens[end + tid] == tok);
        end += n;
        if (n < TF_THREADS) break;
    }
    const int l = tid % VS, g = tid / VS, j = blockIdx.y * VS + l;
    float acc[V] = {};
    if (j < C / V) {
        for (int k0 = start + g; k0 < end; k0 += BATCH * NG) { /* the batch's row numbers first, then its rows */
            int rows[BATCH];
#pragma unroll
            for (int u = 0; u < BATCH; u++) rows[u] = k0 + u * NG < end ? sorted_rows[k0 + u * NG] : -1;
#pragma unroll
            for (int u = 0; u < BATCH; u++)
                if (rows[u] >= 0) {
                    float v[V];
                    load_f32<V>(v, dx + (size_t)rows[u] * C + (size_t)j * V);
                    add_to<V>(acc, v);
                }
        }
    }
#pragma unroll
    for (int i = 0; i < V; i++) red[g][l * V + i] = acc[i];
    for (int stride = NG / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (g < stride)
#pragma unroll
            for (int i = 0; i < V; i++) red[g][l * V + i] += red[g + stride][l * V + i];
    }
    if (g == 0 && j < C / V) { /* row group 0 made the last addition to its own slots */
        G *out = dwte + (size_t)tok * C + (size_t)j * V;
        float o[V];
        load_f32<V>(o, out);
#pragma unroll
        for (int i = 0; i < V; i++) o[i] += red[0][l * V + i];
        store_f32<V>(out, o);
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

/* V: elements a thread moves at once; L: vectors of V columns a block of the position and
 * segment sums owns (L = 1: a warp reads 16 bytes of 32 positions); VS: those a block of a
 * long run owns. */
template <typename T, typename G, int V, int L, int VS>
static void launch_embed_bwd_kernels(G *dwte, G *dwpe, G *dwse, const int *segments, const T *dx, int B, int T_,
                                     int C, int S, const int *sorted_tokens, const int *sorted_rows, cudaStream_t s)
{
    const int R = B * T_, nvec = C / V;
    const bool seg = dwse != nullptr && S > 0; /* without segments, dwse is zero */
    /* without segment sums, the positions are split over more blocks (grid.y) too */
    const int blocks = (nvec + L - 1) / L, split = seg ? 1 : min((EMB_MIN_BLOCKS + blocks - 1) / blocks,
                                                                   (T_ + EMB_THREADS / L - 1) / (EMB_THREADS / L));
    for (int s0 = 0; s0 == 0 || (seg && s0 < S); s0 += EMB_MAXS) /* dwpe on the first pass only */
        embed_bwd_pos_seg<T, G, V, L><<<dim3(blocks, max(split, 1)), EMB_THREADS, 0, s>>>(
            s0 == 0 ? dwpe : nullptr, dwse, seg ? segments : nullptr, dx, B, T_, C, s0, seg ? min(EMB_MAXS, S - s0) : 0);
    if (R <= 0) return;
    embed_bwd_tok_short<T, G, V><<<(R + TF_THREADS / 32 - 1) / (TF_THREADS / 32), TF_THREADS, 0, s>>>(
        dwte, sorted_tokens, sorted_rows, dx, R, C);
    const dim3 long_grid((R + EMB_LONG - 1) / EMB_LONG, (nvec + VS - 1) / VS);
    embed_bwd_tok_long<T, G, V, VS><<<long_grid, TF_THREADS, 0, s>>>(dwte, sorted_tokens, sorted_rows, dx, R, C);
}

template <typename T, typename G>
static cudaError_t launch_embed_bwd_typed(G *dwte, G *dwpe, G *dwse, const int *tokens, const int *segments,
                                          const T *dx, int B, int T_, int C, int S, void *scratch, cudaStream_t s)
{
    const int R = B * T_;
    if (C <= 0) return cudaSuccess;
    int *sorted_tokens = nullptr, *sorted_rows = nullptr;
    if (R > 0) {
        int *rows = (int *)scratch;
        sorted_tokens = rows + R;
        sorted_rows = sorted_tokens + R;
        size_t sort_bytes = cuda_embed_scratch_bytes(R) - 3 * (size_t)R * sizeof(int);
        iota<<<(R + TF_THREADS - 1) / TF_THREADS, TF_THREADS, 0, s>>>(rows, R);
        cudaError_t rc = cub::DeviceRadixSort::SortPairs(sorted_rows + R, sort_bytes, tokens, sorted_tokens, rows,
                                                         sorted_rows, R, 0, 32, s);
        if (rc != cudaSuccess) return rc;
    }
    constexpr int V = pack16<T>::N;
    if (C % V == 0 && aligned16(dx) && aligned16(dwte) && aligned16(dwpe))
        launch_embed_bwd_kernels<T, G, V, 1, 8>(dwte, dwpe, dwse, segments, dx, B, T_, C, S, sorted_tokens,
                                                sorted_rows, s);
    else
        launch_embed_bwd_kernels<T, G, 1, 32, 32>(dwte, dwpe, dwse, segments, dx, B, T_, C, S, sorted_tokens,
                                                  sorted_rows, s);
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

/* ---- row gathers ---------------------------------------------------------------------- */

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

/* layernorm.cu — LayerNorm forward and backward on the GPU (semantics: the CPU reference
 * in transformer_cpu.h): a warp per row, the row in registers with 16-byte loads where
 * the width and alignment allow, and the gains' gradients as fixed-order partial sums
 * per block (no atomics: the same bits on every run); a one-element path for any other
 * width or alignment. T: the compute dtype; G: the gradients' (fp32 or T). */
#include <stdint.h>

#include "kernels/dtype_cuda.cuh"
#include "kernels/transformer/transformer_kernels.h"
#include "kernels/vector_cuda.cuh"

#define TF_THREADS 256
#define TF_COLS 256       /* columns a block of the one-element column-sum kernels owns */
#define TF_CHUNK_ROWS 256 /* rows a block of the one-element LayerNorm gain partials adds */
#define TF_SUM_WARPS 32   /* warps of a sum over partial rows: warp w adds rows w, w + 32, ... */
#define LN_BLOCKS 264     /* blocks wanted of the fused LayerNorm backward: 2 an SM of an H100 */
#define LN_FWD_MAX_E 64   /* elements of a row one lane keeps in registers: forward, */
#define LN_BWD_MAX_E 32   /* backward (the row and its gain sums: C <= 1024) */

/* ---- LayerNorm: one warp per row ----------------------------------------------------- */

/* The forward with the row of C = NV * 32 * V elements at most in registers (read once),
 * 16-byte vectors: lane l holds vectors l, l + 32, ... */
template <typename T, int NV>
__global__ void __launch_bounds__(TF_THREADS)
    ln_fwd_vec(T *y, float *mean, float *rstd, const T *x, const T *gamma, const T *beta, int R, int C)
{
    constexpr int V = pack16<T>::N;
    const int row = blockIdx.x * (TF_THREADS / 32) + threadIdx.x / 32, lane = threadIdx.x % 32, nvec = C / V;
    if (row >= R) return;
    const pack16<T> *xr = reinterpret_cast<const pack16<T> *>(x + (size_t)row * C);
    pack16<T> xv[NV];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        if (lane + 32 * k < nvec) {
            xv[k] = xr[lane + 32 * k];
#pragma unroll
            for (int i = 0; i < V; i++) s += to_f32(xv[k].v[i]);
        }
    const float m = warp_sum(s) / C;
    float v = 0.0f;
#pragma unroll
    for (int k = 0; k < NV; k++)
        if (lane + 32 * k < nvec)
#pragma unroll
            for (int i = 0; i < V; i++) {
                const float d = to_f32(xv[k].v[i]) - m;
                v += d * d;
            }
    const float r = rsqrtf(warp_sum(v) / C + 1e-5f);
    T *yr = y + (size_t)row * C;
#pragma unroll
    for (int k = 0; k < NV; k++) {
        const int j = lane + 32 * k;
        if (j < nvec) {
            float gm[V], bt[V], o[V];
            load_f32<V>(gm, gamma + (size_t)j * V);
            load_f32<V>(bt, beta + (size_t)j * V);
#pragma unroll
            for (int i = 0; i < V; i++) o[i] = (to_f32(xv[k].v[i]) - m) * r * gm[i] + bt[i];
            store_f32<V>(yr + (size_t)j * V, o);
        }
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

/* The forward for any C and alignment, one element at a time. */
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

/* The fused backward: dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma, one warp a
 * row held in registers (16-byte vectors, lane l: vectors l, l + 32, ...); and the block's
 * partial row of the gains, partial[block][0][c] = sum of dy xhat and partial[block][1][c]
 * = sum of dy over its rows_per_block rows. Each lane adds its columns' sums of dy in
 * registers and of dy xhat in its warp's row of shared memory [warps x C]: both in
 * registers would leave room for one block an SM, too few rows in flight to keep the
 * memory busy (measured on an H200, GPT-2 small: 32 us against 40 us). The warps' sums
 * are then added in warp order. */
template <typename T, int NV>
__global__ void __launch_bounds__(TF_THREADS, sizeof(T) == 4 && NV > 4 ? 1 : 2)
    ln_bwd_fused(T *dx, float *partial, const T *dy, const T *x, const float *mean, const float *rstd, const T *gamma,
                 int R, int C, int rows_per_block, int accumulate)
{
    constexpr int V = pack16<T>::N, NW = TF_THREADS / 32;
    extern __shared__ float red[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nvec = C / V;
    const int r0 = blockIdx.x * rows_per_block, r1 = min(R, r0 + rows_per_block);
    const pack16<T> *gv = reinterpret_cast<const pack16<T> *>(gamma);
    float *mine = red + (size_t)warp * C; /* this warp's sums of dy xhat */
    for (int c = lane; c < C; c += 32) mine[c] = 0.0f;
    __syncwarp();
    float sdy[NV][V] = {};
    for (int r = r0 + warp; r < r1; r += NW) {
        const pack16<T> *dyr = reinterpret_cast<const pack16<T> *>(dy + (size_t)r * C);
        const pack16<T> *xr = reinterpret_cast<const pack16<T> *>(x + (size_t)r * C);
        pack16<T> d[NV], xv[NV];
#pragma unroll
        for (int k = 0; k < NV; k++)
            if (lane + 32 * k < nvec) {
                d[k] = dyr[lane + 32 * k];
                xv[k] = xr[lane + 32 * k];
            }
        const float m = mean[r], rs = rstd[r];
        float sg[NV], sgx[NV];
#pragma unroll
        for (int k = 0; k < NV; k++) {
            sg[k] = sgx[k] = 0.0f;
            const int j = lane + 32 * k;
            if (j < nvec) {
                const pack16<T> gm = gv[j];
                float4 *acc = reinterpret_cast<float4 *>(mine + (size_t)j * V);
#pragma unroll
                for (int q = 0; q < V / 4; q++) {
                    float4 a = acc[q];
                    float *af = reinterpret_cast<float *>(&a);
#pragma unroll
                    for (int u = 0; u < 4; u++) {
                        const int i = q * 4 + u;
                        const float dyi = to_f32(d[k].v[i]), g = dyi * to_f32(gm.v[i]);
                        const float xh = (to_f32(xv[k].v[i]) - m) * rs;
                        sg[k] += g;
                        sgx[k] = fmaf(g, xh, sgx[k]);
                        af[u] = fmaf(dyi, xh, af[u]);
                        sdy[k][i] += dyi;
                    }
                    acc[q] = a;
                }
            }
        }
#pragma unroll
        for (int k = 1; k < NV; k++) {
            sg[0] += sg[k];
            sgx[0] += sgx[k];
        }
        /* dx = rs g - rs mean(g) - rs mean(g xhat) xhat */
        const float b = -rs * (warp_sum(sg[0]) / C), c = -rs * (warp_sum(sgx[0]) / C);
        pack16<T> *dxr = reinterpret_cast<pack16<T> *>(dx + (size_t)r * C);
#pragma unroll
        for (int k = 0; k < NV; k++) {
            const int j = lane + 32 * k;
            if (j < nvec) {
                const pack16<T> gm = gv[j];
                pack16<T> o;
                if (accumulate) o = dxr[j];
#pragma unroll
                for (int i = 0; i < V; i++) {
                    const float g = to_f32(d[k].v[i]) * to_f32(gm.v[i]);
                    const float xh = (to_f32(xv[k].v[i]) - m) * rs;
                    const float v = fmaf(rs, g, fmaf(c, xh, b));
                    o.v[i] = from_f32<T>(accumulate ? to_f32(o.v[i]) + v : v);
                }
                dxr[j] = o;
            }
        }
    }
    __syncthreads();
#pragma unroll
    for (int q = 0; q < 2; q++) {
        if (q == 1) { /* the sums of dy, from registers into the same rows */
            __syncthreads();
#pragma unroll
            for (int k = 0; k < NV; k++)
                if (lane + 32 * k < nvec)
#pragma unroll
                    for (int i = 0; i < V; i++) mine[(lane + 32 * k) * V + i] = sdy[k][i];
            __syncthreads();
        }
        for (int c = threadIdx.x; c < C; c += TF_THREADS) {
            float sum = 0.0f;
            for (int w = 0; w < NW; w++) sum += red[w * C + c];
            partial[((size_t)blockIdx.x * 2 + q) * C + c] = sum;
        }
    }
}

/* The backward's dx for any C and alignment, one element at a time (ln_bwd_partials adds the gains). */
template <typename T>
__global__ void ln_bwd_dx(T *dx, const T *dy, const T *x, const float *mean, const float *rstd, const T *gamma, int R,
                          int C, int accumulate)
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
        const float v = r * (g - sg - xh * sgx);
        dx[(size_t)row * C + c] = from_f32<T>(accumulate ? to_f32(dx[(size_t)row * C + c]) + v : v);
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

/* dgamma[c] = sum over chunks k of partial[k][0][c], dbeta[c] of partial[k][1][c], in a
 * fixed order: warp w of a block of 32 columns adds chunks w, w + TF_SUM_WARPS, ..., then
 * the warps' sums are added in warp order. */
template <typename G>
__global__ void __launch_bounds__(TF_SUM_WARPS * 32) ln_bwd_sum(G *dgamma, G *dbeta, const float *partial, int chunks,
                                                                int C)
{
    __shared__ float red[2][TF_SUM_WARPS][32];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, c = blockIdx.x * 32 + lane;
    float sg = 0.0f, sb = 0.0f;
    if (c < C)
#pragma unroll 4
        for (int k = w; k < chunks; k += TF_SUM_WARPS) {
            sg += partial[(size_t)k * 2 * C + c];
            sb += partial[((size_t)k * 2 + 1) * C + c];
        }
    red[0][w][lane] = sg;
    red[1][w][lane] = sb;
    __syncthreads();
    if (w == 0 && c < C) {
        float g = 0.0f, b = 0.0f;
        for (int i = 0; i < TF_SUM_WARPS; i++) {
            g += red[0][i][lane];
            b += red[1][i][lane];
        }
        dgamma[c] = from_f32<G>(g);
        dbeta[c] = from_f32<G>(b);
    }
}

/* Vectors of 16 bytes a lane takes so that one warp holds a row of C (1, 2, 3, 4, 6 or 8,
 * at most max_e elements), or 0 when C is not a whole number of vectors or too long. */
template <typename T> static int ln_vectors_per_lane(int C, int max_e)
{
    constexpr int V = pack16<T>::N;
    static const int choices[] = {1, 2, 3, 4, 6, 8};
    if (C <= 0 || C % V != 0) return 0;
    for (int nv : choices)
        if (32 * nv * V >= C) return nv * V <= max_e ? nv : 0;
    return 0;
}

/* Rows of one block of the fused backward, a multiple of its 8 warps: about LN_BLOCKS
 * blocks in all, so that the rows in flight fill the GPU while the partial rows stay few. */
static int ln_bwd_rows_per_block(int R)
{
    const int warps = TF_THREADS / 32, rows = (R + LN_BLOCKS - 1) / LN_BLOCKS;
    return rows <= warps ? warps : (rows + warps - 1) / warps * warps;
}

static int ln_fused_blocks(int R)
{
    return R <= 0 ? 0 : (R + ln_bwd_rows_per_block(R) - 1) / ln_bwd_rows_per_block(R);
}

extern "C" size_t cuda_layernorm_scratch_floats(int R, int C)
{
    const size_t fused = (size_t)ln_fused_blocks(R), chunks = (size_t)((R + TF_CHUNK_ROWS - 1) / TF_CHUNK_ROWS);
    return (fused > chunks ? fused : chunks) * 2 * (size_t)C;
}

template <typename T, int NV>
static void launch_ln_fwd_nv(T *y, float *mean, float *rstd, const T *x, const T *gamma, const T *beta, int R, int C,
                             cudaStream_t s)
{
    if constexpr (NV * pack16<T>::N <= LN_FWD_MAX_E) {
        const int rows_per_block = TF_THREADS / 32;
        ln_fwd_vec<T, NV><<<(R + rows_per_block - 1) / rows_per_block, TF_THREADS, 0, s>>>(y, mean, rstd, x, gamma,
                                                                                          beta, R, C);
    }
}

template <typename T>
static cudaError_t launch_ln_fwd(void *y_, float *mean, float *rstd, const void *x_, const void *gamma_,
                                 const void *beta_, int R, int C, cudaStream_t s)
{
    T *y = (T *)y_;
    const T *x = (const T *)x_, *gamma = (const T *)gamma_, *beta = (const T *)beta_;
    if (R <= 0) return cudaSuccess;
    const int nv = aligned16(y) && aligned16(x) && aligned16(gamma) && aligned16(beta)
                       ? ln_vectors_per_lane<T>(C, LN_FWD_MAX_E)
                       : 0;
    switch (nv) {
    case 1: launch_ln_fwd_nv<T, 1>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 2: launch_ln_fwd_nv<T, 2>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 3: launch_ln_fwd_nv<T, 3>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 4: launch_ln_fwd_nv<T, 4>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 6: launch_ln_fwd_nv<T, 6>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 8: launch_ln_fwd_nv<T, 8>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    default: {
        const int rows_per_block = TF_THREADS / 32;
        ln_fwd<T><<<(R + rows_per_block - 1) / rows_per_block, TF_THREADS, 0, s>>>(y, mean, rstd, x, gamma, beta, R,
                                                                                   C);
    }
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_layernorm_forward(void *y, float *mean, float *rstd, const void *x, const void *gamma,
                                              const void *beta, int R, int C, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_ln_fwd, y, mean, rstd, x, gamma, beta, R, C, s);
}

template <typename T, int NV>
static void launch_ln_bwd_nv(T *dx, float *partial, const T *dy, const T *x, const float *mean, const float *rstd,
                             const T *gamma, int R, int C, int accumulate, cudaStream_t s)
{
    if constexpr (NV * pack16<T>::N <= LN_BWD_MAX_E) {
        const size_t smem = (size_t)(TF_THREADS / 32) * C * sizeof(float); /* <= 32 KiB: C <= 1024 */
        ln_bwd_fused<T, NV><<<ln_fused_blocks(R), TF_THREADS, smem, s>>>(dx, partial, dy, x, mean, rstd, gamma, R, C,
                                                                         ln_bwd_rows_per_block(R), accumulate);
    }
}

template <typename T>
static cudaError_t launch_ln_bwd(void *dx_, void *dgamma, void *dbeta, int grads_in_t, const void *dy_,
                                 const void *x_, const float *mean, const float *rstd, const void *gamma_, int R, int C,
                                 int accumulate, float *partial, cudaStream_t s)
{
    T *dx = (T *)dx_;
    const T *dy = (const T *)dy_, *x = (const T *)x_, *gamma = (const T *)gamma_;
    if (C <= 0) return cudaSuccess;
    const int nv = R > 0 && aligned16(dx) && aligned16(dy) && aligned16(x) && aligned16(gamma)
                       ? ln_vectors_per_lane<T>(C, LN_BWD_MAX_E)
                       : 0;
    int chunks = ln_fused_blocks(R);
    switch (nv) {
    case 1: launch_ln_bwd_nv<T, 1>(dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate, s); break;
    case 2: launch_ln_bwd_nv<T, 2>(dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate, s); break;
    case 3: launch_ln_bwd_nv<T, 3>(dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate, s); break;
    case 4: launch_ln_bwd_nv<T, 4>(dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate, s); break;
    case 6: launch_ln_bwd_nv<T, 6>(dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate, s); break;
    case 8: launch_ln_bwd_nv<T, 8>(dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate, s); break;
    default: {
        const int rows_per_block = TF_THREADS / 32;
        chunks = (R + TF_CHUNK_ROWS - 1) / TF_CHUNK_ROWS;
        if (R > 0) {
            ln_bwd_dx<T><<<(R + rows_per_block - 1) / rows_per_block, TF_THREADS, 0, s>>>(dx, dy, x, mean, rstd, gamma,
                                                                                         R, C, accumulate);
            ln_bwd_partials<T><<<dim3((C + TF_COLS - 1) / TF_COLS, chunks), TF_COLS, 0, s>>>(partial, dy, x, mean,
                                                                                           rstd, R, C);
        }
    }
    }
    const int sum_blocks = (C + 31) / 32;
    if (grads_in_t)
        ln_bwd_sum<T><<<sum_blocks, TF_SUM_WARPS * 32, 0, s>>>((T *)dgamma, (T *)dbeta, partial, chunks, C);
    else
        ln_bwd_sum<float><<<sum_blocks, TF_SUM_WARPS * 32, 0, s>>>((float *)dgamma, (float *)dbeta, partial, chunks, C);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_layernorm_backward(void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                               const void *x, const float *mean, const float *rstd, const void *gamma,
                                               int R, int C, int accumulate, float *partial, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_ln_bwd, dx, dgamma, dbeta, grad_dtype != DT_F32, dy, x, mean, rstd, gamma, R,
                          C, accumulate, partial, s);
}

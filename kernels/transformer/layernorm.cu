/* layernorm.cu — LayerNorm forward and backward on the GPU (semantics: the CPU reference
 * in transformer_cpu.h), at memory speed for rows of any width.
 *
 * Forward: a warp per row; the row in registers (16-byte loads) up to 2,048 elements of
 * 16 bits or 1,024 of fp32, wider rows read three times (the second and third reads hit
 * the cache); one element at a time where the width or a pointer does not allow vectors.
 *
 * Backward: two kernels, chosen by DPSCALE_LN_BACKWARD (staged | tiled; staged when unset) or
 * by name (cuda_layernorm_backward_using), each followed by ln_bwd_sum, which adds the blocks'
 * partial rows of the gains in a fixed order. Every sum of either has one order whatever the
 * timing: the gradients are the same bits on every run, without atomics.
 *
 * Tiled (ln_bwd_tiled): a persistent grid (LN_BWD_BLOCKS_PER_SM blocks an SM) walks tiles of
 * a few rows (64 KiB of dy and x). A tile is read twice: first a warp (or a few warps) per row
 * adds the row's two sums, then each thread, owning a fixed set of columns for the whole
 * kernel, reads the tile's rows again (from the L1 or L2, where the first read left them),
 * writes dx and adds its columns' gain sums. HBM sees each element once where the second read
 * hits, but the kernel measured 2.7 times the memory floor (44.6 us at 8192 x 1600 bf16 on an
 * H200, floor 16.4): likely the second trip through the L2 and loads that each wait their
 * latency with few bytes in flight a thread. Its one-element form takes any width and
 * alignment, and is the staged kernel's fallback.
 *
 * Staged (ln_bwd_staged, compute capability 9.0 or later, 16-byte vectors): a block an SM
 * (1,024 threads) takes a contiguous run of ~R / SMs rows in tiles of up to ~64 KB (a row,
 * where one is larger). The copy engine brings each tile's dy and x (and dx when accumulating)
 * into shared memory as one bulk copy a tensor (cp.async.bulk, counted on an mbarrier), up to
 * 8 tiles ahead (~190 KB an SM staged or in flight) while the block works on the oldest, so
 * that the memory always has work queued; the row step adds each row's two sums from shared
 * memory, the column step writes dx from shared memory and keeps its columns' gain sums in
 * registers for the whole kernel. L2 and HBM see each element once: dy and x read, dx written
 * (and read first when accumulating), plus (mean, rstd) and one partial row of the gains a
 * block (132 on an H200, half the tiled kernel's 264). No thread waits on a global load in the
 * loop, and the bytes in flight do not depend on the threads' registers. Where it does not
 * apply (an older GPU, widths or pointers without 16-byte vectors, rows too wide for two
 * tiles of one row and gamma in shared memory or for 2 vectors a thread: over 16,384 wide in 16
 * bits, ~14,000 when accumulating, 8,192 in fp32, 4,096 when adding to dx), the tiled kernel runs. After the staged
 * kernel, ln_bwd_sum is launched as its programmatic dependent (dependent_launch.cuh), its
 * blocks starting as the staged kernel's finish: 41.2 -> 39.9 us at 8192 x 1600 bf16 on an
 * H200 (results/h200x1-attention-mask), where a fifth of the staged kernel's samples are its
 * per-tile __syncthreads (results/h200x1-kernel-profile); then one __syncthreads a tile where
 * 2 to 8 warps take a row (results/h200x1-ln-one-barrier) and tiles of 64 KB, not 48
 * (results/h200x1-ln-tile-sweep): 34.2 us. Where asked (dxsum), the staged kernel also adds dx's
 * column sums as written, the bias gradient of the linear layer dx feeds: +1 to +3 us a call,
 * the bias gradient's 7-9 us kernel saved. T: the compute dtype; G: the gradients' (fp32 or T). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <type_traits>

#include "kernels/dependent_launch.cuh"
#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"
#include "kernels/transformer/transformer_kernels.h"
#include "kernels/vector_cuda.cuh"
#include "kernels/env_switch.h"

#define TF_THREADS 256  /* the forward's blocks: a row a warp */
#define LN_FWD_MAX_E 64 /* elements of a row one lane of the forward keeps in registers */

#define LN_BWD_THREADS 512 /* the backward's blocks (16 warps) */
#define LN_BWD_WARPS (LN_BWD_THREADS / 32)
#define LN_BWD_BLOCKS_PER_SM 2 /* 1,024 threads an SM: at most 64 registers a thread */
/* dy and x of one tile: the tiles of the whole grid (264 blocks on an H100/H200: 17 MB) stay
 * in the L2 between their two reads, and a tile of rows up to 1,024 wide is 16 rows or more */
#define LN_BWD_TILE_BYTES (64 << 10)
#define LN_BWD_MAX_TILE_ROWS 32
/* 16-byte vectors of dy and x a lane loads before it adds any, in the row step: 8 loads, 128
 * bytes a lane in flight. Under 64 registers this spills a few values that do not change in
 * a row's loop (read back from the L1 once a row or a chunk); 2 spills none, with half the
 * bytes in flight. */
#define LN_BWD_ROW_BATCH 4
#define LN_MAX_GPUS 64
#define TF_SUM_WARPS 32 /* warps of a sum over partial rows: warp w adds rows w, w + 32, ... */

/* ---- the GPU's shape, asked once a device ----------------------------------------------- */

struct ln_gpu {
    int sms;           /* multiprocessors */
    int major;         /* compute capability's */
    size_t smem_optin; /* shared memory a block may have (static and dynamic) */
};

static cudaError_t ln_gpu_current(ln_gpu *g, int *device)
{
    static ln_gpu known[LN_MAX_GPUS]; /* sms == 0: not asked yet */
    int dev = 0, sms = 0, major = 0, optin = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    *device = dev;
    if (dev >= 0 && dev < LN_MAX_GPUS && known[dev].sms > 0) {
        *g = known[dev];
        return cudaSuccess;
    }
    if ((e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev)) != cudaSuccess ||
        (e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev)) != cudaSuccess)
        return e;
    g->sms = sms > 0 ? sms : 1;
    g->major = major;
    g->smem_optin = (size_t)optin;
    if (dev >= 0 && dev < LN_MAX_GPUS) known[dev] = *g;
    return cudaSuccess;
}

/* ---- LayerNorm forward: one warp per row ------------------------------------------------ */

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

/* The forward of a row too wide for registers (V: 16-byte vectors) or of any width and
 * alignment (V = 1): the row read three times, for its mean, its variance and y. */
template <typename T, int V>
__global__ void __launch_bounds__(TF_THREADS)
    ln_fwd(T *y, float *mean, float *rstd, const T *x, const T *gamma, const T *beta, int R, int C)
{
    const int row = blockIdx.x * (TF_THREADS / 32) + threadIdx.x / 32, lane = threadIdx.x % 32, nvec = C / V;
    if (row >= R) return;
    const T *xr = x + (size_t)row * C;
    float s = 0.0f;
#pragma unroll 4
    for (int j = lane; j < nvec; j += 32) {
        float v[V];
        load_f32<V>(v, xr + (size_t)j * V);
#pragma unroll
        for (int i = 0; i < V; i++) s += v[i];
    }
    const float m = warp_sum(s) / C;
    float var = 0.0f;
#pragma unroll 4
    for (int j = lane; j < nvec; j += 32) {
        float v[V];
        load_f32<V>(v, xr + (size_t)j * V);
#pragma unroll
        for (int i = 0; i < V; i++) var += (v[i] - m) * (v[i] - m);
    }
    const float r = rsqrtf(warp_sum(var) / C + 1e-5f);
    T *yr = y + (size_t)row * C;
#pragma unroll 2
    for (int j = lane; j < nvec; j += 32) {
        float v[V], gm[V], bt[V];
        load_f32<V>(v, xr + (size_t)j * V);
        load_f32<V>(gm, gamma + (size_t)j * V);
        load_f32<V>(bt, beta + (size_t)j * V);
#pragma unroll
        for (int i = 0; i < V; i++) v[i] = (v[i] - m) * r * gm[i] + bt[i];
        store_f32<V>(yr + (size_t)j * V, v);
    }
    if (lane == 0) {
        mean[row] = m;
        rstd[row] = r;
    }
}

/* ---- LayerNorm backward ----------------------------------------------------------------- */

/* V elements of T as one load or store: 16 or 8 bytes as 32-bit words (two 16-bit elements
 * a word, unpacked with integer operations as they are used: a vector in flight takes a
 * register a word, not one an element), or one element (V = 1). */
template <typename T, int V> struct ln_vec {
    static constexpr int WORDS = V * sizeof(T) / 4;
    typename std::conditional<V * sizeof(T) == 16, uint4,
                              typename std::conditional<V * sizeof(T) == 8, uint2, T>::type>::type raw;
};

template <typename T, int V> __device__ __forceinline__ float ln_get(const ln_vec<T, V> &a, int i)
{
    if constexpr (V == 1) {
        return to_f32(a.raw);
    } else {
        const uint32_t *w = reinterpret_cast<const uint32_t *>(&a.raw);
        if constexpr (sizeof(T) == 4) return __uint_as_float(w[i]);
        else if constexpr (std::is_same<T, __nv_bfloat16>::value)
            return __uint_as_float(i % 2 ? w[i / 2] & 0xffff0000u : w[i / 2] << 16);
        else return __half2float(__ushort_as_half((unsigned short)(w[i / 2] >> (16 * (i % 2)))));
    }
}

template <typename T, int V> __device__ __forceinline__ void ln_set(ln_vec<T, V> &a, const float (&f)[V])
{
    if constexpr (V == 1) {
        a.raw = from_f32<T>(f[0]);
    } else {
        uint32_t *w = reinterpret_cast<uint32_t *>(&a.raw);
#pragma unroll
        for (int k = 0; k < ln_vec<T, V>::WORDS; k++) {
            if constexpr (sizeof(T) == 4) {
                w[k] = __float_as_uint(f[k]);
            } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
                const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * k], f[2 * k + 1]);
                w[k] = *reinterpret_cast<const uint32_t *>(&h);
            } else {
                const __half2 h = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
                w[k] = *reinterpret_cast<const uint32_t *>(&h);
            }
        }
    }
}

/* Asks the L2 for the line of p, ahead of a load of it (no register waits for it). */
__device__ __forceinline__ void ln_prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }

/* acc[0..V) += v: as float4s or float2s where V fills them (acc then aligned to them) */
template <int V> __device__ __forceinline__ void ln_acc_add(float *acc, const float (&v)[V])
{
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int q = 0; q < V / 4; q++) {
            float4 a = reinterpret_cast<float4 *>(acc)[q];
            a.x += v[4 * q], a.y += v[4 * q + 1], a.z += v[4 * q + 2], a.w += v[4 * q + 3];
            reinterpret_cast<float4 *>(acc)[q] = a;
        }
    } else if constexpr (V == 2) {
        float2 a = *reinterpret_cast<float2 *>(acc);
        a.x += v[0], a.y += v[1];
        *reinterpret_cast<float2 *>(acc) = a;
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) acc[i] += v[i];
    }
}

/* acc[0..V) = v, as float4s where V fills them (acc then 16-byte aligned) */
template <int V> __device__ __forceinline__ void ln_acc_store(float *acc, const float (&v)[V])
{
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int q = 0; q < V / 4; q++)
            reinterpret_cast<float4 *>(acc)[q] = make_float4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) acc[i] = v[i];
    }
}

/* Elements a thread of the backward's column step takes at a time: half the row step's
 * 16-byte vector (8 bytes: its gain sums then take 4 or 2 registers a row, not 8 or 4),
 * or one element. */
__host__ __device__ constexpr int ln_col_width(int V) { return V > 1 ? V / 2 : 1; }

/* dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma; and the block's partial row of
 * the gains, partial[block][0][c] = sum of dy xhat and partial[block][1][c] = sum of dy over
 * the rows of its tiles (tiles blockIdx.x, blockIdx.x + gridDim.x, ... of tile_rows rows).
 * V: elements of the row step's vectors (16 bytes, or 1 for any width and alignment), VB
 * the column step's (8 bytes, or 1); chunk j of a row is its elements j * VB .. j * VB + VB - 1.
 *
 * A tile goes in two steps, one __syncthreads apart:
 *   rows:    wpr warps a row (wpr = 16 / tile_rows, or 1 for tiles of 16 rows or more; warp q
 *            of a row its q-th contiguous part) add sum g and sum g xhat over the row, and the row's factors (mean, rstd, b, c) go
 *            to stat[] (b = -rstd mean(g), c = -rstd mean(g xhat): dx = rstd g + c xhat + b);
 *            with several warps a row, their sums go to part[] and, after a second
 *            __syncthreads, one thread a row adds them in warp order;
 *   columns: thread (s, j0) owns chunks j0, j0 + 512, ... of rows s, s + slices, ... of
 *            each tile (slices > 1 where a row has at most 256 chunks: slice s is threads
 *            s * nchunk .. s * nchunk + nchunk - 1); it reads those rows' dy and x again,
 *            writes dx, and adds dy xhat and dy over them into its own columns of acc, slice
 *            s's gain sums: in shared memory [slices][2][C], or the block's partial row
 *            itself (acc_in_shared = 0: a width whose sums do not fit, slices = 1).
 * stat[] has two buffers (tile parity): a warp may start the next tile's rows while others
 * still read this tile's factors; part[] is read before the second __syncthreads, so one.
 * The row step loads LN_BWD_ROW_BATCH vectors of dy and x before it uses any, so that they
 * are in flight together, and asks the L2 for dx's lines when accumulating (the column step
 * reads them). At the end the slices of acc are added in slice order into the partial row. */
template <typename T, int V>
__global__ void __launch_bounds__(LN_BWD_THREADS, LN_BWD_BLOCKS_PER_SM)
    ln_bwd_tiled(T *__restrict__ dx, float *__restrict__ partial, const T *__restrict__ dy,
                 const T *__restrict__ x, const float *__restrict__ mean, const float *__restrict__ rstd,
                 const T *__restrict__ gamma, int R, int C, int tile_rows, int slices, int acc_in_shared,
                 int accumulate)
{
    constexpr int NT = LN_BWD_THREADS, NW = LN_BWD_WARPS, VB = ln_col_width(V);
    constexpr int BA = LN_BWD_ROW_BATCH;
    typedef ln_vec<T, V> vrow;
    typedef ln_vec<T, VB> vcol;
    extern __shared__ float4 ln_dynamic[]; /* acc, when acc_in_shared */
    __shared__ float4 stat[2][LN_BWD_MAX_TILE_ROWS];
    __shared__ float2 part[NW];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, nvec = C / V, nchunk = C / VB;
    const int wpr = tile_rows < NW ? NW / tile_rows : 1, q = warp % wpr;
    /* part q of a row: vectors q * seg .. seg_end - 1 (seg a multiple of 32: lane offsets fixed) */
    const int seg = (nvec + 32 * wpr - 1) / (32 * wpr) * 32, seg_end = min(nvec, q * seg + seg);
    const int tiles = (R - 1) / tile_rows + 1;
    const int span = slices > 1 ? nchunk : NT, s = threadIdx.x / span, j0 = threadIdx.x % span;
    float *const acc = acc_in_shared ? reinterpret_cast<float *>(ln_dynamic) + (size_t)s * 2 * C
                                     : partial + (size_t)blockIdx.x * 2 * C;
    if (s < slices) /* this thread's columns of acc, which no other thread touches until the end */
#pragma unroll 1
        for (int j = j0; j < nchunk; j += NT)
#pragma unroll
            for (int i = 0; i < VB; i++) acc[j * VB + i] = acc[C + j * VB + i] = 0.0f;

#pragma unroll 1
    for (int tile = blockIdx.x, it = 0; tile < tiles; tile += gridDim.x, it++) {
        const int buf = it & 1, r0 = tile * tile_rows, nrows = min(tile_rows, R - r0);
        /* rows: warp w adds part q = w % wpr of row w / wpr (and of row w + 16 where a tile has
         * 32 rows), lane l vectors q * seg + l, q * seg + l + 32, ... */
#pragma unroll 1
        for (int lr = warp / wpr; lr < nrows; lr += NW / wpr) {
            const int r = r0 + lr;
            const float m = mean[r], rs = rstd[r];
            const vrow *dyv = reinterpret_cast<const vrow *>(dy + (size_t)r * C);
            const vrow *xrv = reinterpret_cast<const vrow *>(x + (size_t)r * C);
            const vrow *gv = reinterpret_cast<const vrow *>(gamma);
            const vrow *dxv = reinterpret_cast<const vrow *>(dx + (size_t)r * C); /* read back in the column step */
            float sg = 0.0f, sgx = 0.0f;
#pragma unroll 1
            for (int j = q * seg + lane; j < seg_end; j += 32 * BA) {
                vrow d[BA], xv[BA];
#pragma unroll
                for (int u = 0; u < BA; u++)
                    if (j + 32 * u < seg_end) {
                        d[u] = dyv[j + 32 * u], xv[u] = xrv[j + 32 * u];
                        if (V > 1 && accumulate) ln_prefetch_l2(dxv + j + 32 * u);
                    }
#pragma unroll
                for (int u = 0; u < BA; u++)
                    if (j + 32 * u < seg_end) {
                        const vrow gm = gv[j + 32 * u];
#pragma unroll
                        for (int i = 0; i < V; i++) {
                            const float g = ln_get(d[u], i) * ln_get(gm, i);
                            sg += g;
                            sgx = fmaf(g, (ln_get(xv[u], i) - m) * rs, sgx);
                        }
                    }
            }
            sg = warp_sum(sg);
            sgx = warp_sum(sgx);
            if (lane == 0) {
                if (wpr == 1) stat[buf][lr] = make_float4(m, rs, -rs * (sg / C), -rs * (sgx / C));
                else part[lr * wpr + q] = make_float2(sg, sgx);
            }
        }
        __syncthreads();
        if (wpr > 1) { /* uniform: the same for every thread of the grid */
            if ((int)threadIdx.x < nrows) {
                const int lr = threadIdx.x, r = r0 + lr;
                float sg = 0.0f, sgx = 0.0f;
#pragma unroll 1
                for (int k = 0; k < wpr; k++) {
                    const float2 p = part[lr * wpr + k];
                    sg += p.x;
                    sgx += p.y;
                }
                const float rs = rstd[r];
                stat[buf][lr] = make_float4(mean[r], rs, -rs * (sg / C), -rs * (sgx / C));
            }
            __syncthreads();
        }
        /* columns */
        if (s < slices)
#pragma unroll 1
            for (int j = j0; j < nchunk; j += NT) {
                const vcol gm = reinterpret_cast<const vcol *>(gamma)[j];
                const size_t first = (size_t)r0 * C + (size_t)j * VB; /* the chunk in the tile's first row */
                float ag[VB] = {}, ab[VB] = {};
#pragma unroll 1
                for (int lr = s; lr < nrows; lr += slices) {
                    const size_t at = first + (size_t)lr * C;
                    const vcol d = *reinterpret_cast<const vcol *>(dy + at);
                    const vcol xv = *reinterpret_cast<const vcol *>(x + at);
                    vcol o;
                    if (accumulate) o = *reinterpret_cast<const vcol *>(dx + at);
                    const float4 st = stat[buf][lr]; /* mean, rstd, b, c */
                    float out[VB];
#pragma unroll
                    for (int i = 0; i < VB; i++) {
                        const float di = ln_get(d, i), xh = (ln_get(xv, i) - st.x) * st.y;
                        const float v = fmaf(st.y, di * ln_get(gm, i), fmaf(st.w, xh, st.z));
                        out[i] = accumulate ? ln_get(o, i) + v : v;
                        ag[i] = fmaf(di, xh, ag[i]);
                        ab[i] += di;
                    }
                    ln_set(o, out);
                    *reinterpret_cast<vcol *>(dx + at) = o;
                }
                ln_acc_add<VB>(acc + (size_t)j * VB, ag);
                ln_acc_add<VB>(acc + C + (size_t)j * VB, ab);
            }
    }

    if (acc_in_shared) { /* the slices' sums, in slice order, into the block's partial row */
        __syncthreads();
        const float *all = reinterpret_cast<const float *>(ln_dynamic);
        float *out = partial + (size_t)blockIdx.x * 2 * C;
        for (int c = threadIdx.x; c < 2 * C; c += NT) {
            float v = all[c];
#pragma unroll 1
            for (int k = 1; k < slices; k++) v += all[(size_t)k * 2 * C + c];
            out[c] = v;
        }
    }
}

/* ---- LayerNorm backward, staged: each element read from HBM once -------------------------- */

#define LN_STG_THREADS 1024 /* one block an SM: at most 64 registers a thread */
#define LN_STG_WARPS (LN_STG_THREADS / 32)
#define LN_STG_MAX_STAGES 8
#define LN_STG_MAX_TILE_ROWS 64
/* A tile's dy and x (and dx when accumulating), at most about: small enough that the last
 * tile's work, which no load overlaps, is short, and that a block's tiles are several (its
 * rows are ~R / SMs); large enough that a tile's one or two __syncthreads are few against its
 * bytes. The stages that fit in the rest of shared memory (3 to 7 in 16 bits up to 8,192
 * wide, 2 or 3 for fp32 rows of 8,192) keep ~190 KB an SM staged or in flight, several times
 * what the memory's latency needs (~36 GB/s an SM for ~1 us). Swept on an H200
 * (results/h200x1-ln-tile-sweep, DPSCALE_LN_TILE_KB): 64 KB against 48, the rows a tile doubled
 * where dx is overwritten, 8192 x 1600 40.9 -> 34.2 us, 16384 x 768 38.3 -> 35.0, 8192 x 1024
 * 26.7 -> 24.9, BERT-Large's 49 calls a step 1.50 -> 1.34 ms; when accumulating the same tiles
 * (a row of 5 or 10 rounded to whole slices), 96 KB lost at 768 wide (42.9 -> 44.8 us). */
#define LN_STG_TILE_BYTES (64 << 10)

/* LN_STG_TILE_BYTES, or DPSCALE_LN_TILE_KB (8 to 200; read once) for a sweep of the tile size
 * in one process's timings */
static size_t ln_stg_tile_bytes(void)
{
    static size_t v = 0;
    if (v == 0) {
        const char *e = getenv("DPSCALE_LN_TILE_KB");
        const long kb = e != NULL ? strtol(e, NULL, 10) : 0;
        v = kb >= 8 && kb <= 200 ? (size_t)kb << 10 : (size_t)LN_STG_TILE_BYTES;
    }
    return v;
}
/* 16-byte vectors of a row a thread owns in the column step: 1 (bf16 / fp16 up to 8,192
 * wide, fp32 up to 4,096: its gains' sums and gamma in 24 registers) or 2 (twice as wide;
 * gamma then read from shared memory each row, to stay under 64 registers) */
#define LN_STG_MAX_K 2

/* The Hopper primitives the staged kernel waits with: an mbarrier a stage, armed by one
 * thread with the bytes its bulk copies bring, completed by the copies themselves. */
__device__ __forceinline__ uint32_t ln_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void ln_mbar_init(uint32_t bar, uint32_t count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

/* the barriers' initialisation visible to the copy engine (the async proxy) */
__device__ __forceinline__ void ln_fence_mbar_init()
{
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

/* this thread's arrival, announcing `bytes` more to come by complete_tx */
__device__ __forceinline__ void ln_mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}

/* waits for the phase of parity `parity` to complete; its bytes are then visible here */
__device__ __forceinline__ void ln_mbar_wait(uint32_t bar, uint32_t parity)
{
    uint32_t done;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
    } while (!done);
}

/* `bytes` (a multiple of 16, both ends 16-byte aligned) from global to shared memory by the
 * copy engine, counted on the barrier */
__device__ __forceinline__ void ln_bulk_load(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(src), "r"(bytes), "r"(bar)
                 : "memory");
}

/* this thread's reads of shared memory ordered before the copy engine's next writes there */
__device__ __forceinline__ void ln_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/* A row's factors from its (mean, rstd) and two sums: (-mean rstd, rstd, b, c), so that xhat =
 * x rstd - mean rstd and dx = rstd g + c xhat + b; sgd = sum g (x - mean), sum g xhat = rstd sgd. */
__device__ __forceinline__ float4 ln_row_factors(float2 mr, float sg, float sgd, int C)
{
    return make_float4(-mr.x * mr.y, mr.y, -mr.y * (sg / C), -mr.y * (mr.y * sgd / C));
}

/* f[0..V) = p[0..V), p 16-byte aligned (V a multiple of 4) */
template <int V> __device__ __forceinline__ void ln_load_floats(float (&f)[V], const float *p)
{
#pragma unroll
    for (int q = 0; q < V / 4; q++) {
        const float4 a = reinterpret_cast<const float4 *>(p)[q];
        f[4 * q] = a.x, f[4 * q + 1] = a.y, f[4 * q + 2] = a.z, f[4 * q + 3] = a.w;
    }
}

/* The staged kernel's static shared memory, one type so that the plan counts what the kernel
 * declares (ln_stg_static_smem): each row's factors (mean rstd, rstd, b, c) and the row step's
 * pairs, both by tile parity (a warp may write the next tile's while others read this one's;
 * the pairs are read in the column step where 2 to 8 warps take a row). */
struct ln_stg_static {
    float4 stat[2][LN_STG_MAX_TILE_ROWS];
    float2 part[2][LN_STG_WARPS];
};

/* Bytes ahead of the stages in the staged kernel's dynamic shared memory: a barrier a stage,
 * (mean, rstd) of the block's rows, gamma in fp32 (C of them: none to unpack in the row step). */
__host__ __device__ constexpr size_t ln_stg_head_bytes(int block_rows, int C)
{
    return 8 * LN_STG_MAX_STAGES + ((size_t)8 * block_rows + 15) / 16 * 16 + (size_t)4 * C;
}

/* The backward of block b's rows r_begin .. r_end - 1 (about R / gridDim.x: whole rows, the
 * blocks' counts within one of each other) in tiles of tile_rows rows, 16-byte vectors of V
 * elements only. K: the column step's vectors a thread (above); ACC: dx += the gradient;
 * SUM: dx's column sums too (the third partial row).
 *
 *   staging: one thread has the copy engine bring a tile's dy, x (and dx) as two (three) bulk
 *            copies, each one run of whole rows, into a stage of shared memory; `stages` tiles
 *            are asked for at the start, and the next as soon as a stage is free, so that the
 *            loads of the next tiles overlap the work on this one;
 *   rows:    wpr = 32 / tile_rows warps a row (1 for tiles of 32 rows or more, warps then
 *            taking rows in turn); the row's wpr * 32 lanes take its vectors in turn and add
 *            sum g and sum g (x - mean) from shared memory; with one warp a row it writes the
 *            row's factors (stat[]), with several each its pair (part[]); both have two buffers
 *            by tile parity, as a warp may write the next tile's while others read this one's;
 *            with 2 to 8 warps a row every column thread adds its rows' pairs itself, in warp
 *            order, after the tile's one __syncthreads; with more (tiles of 1 to 3 rows) warp r
 *            adds row r's pairs (a fixed tree) into stat[] behind a second __syncthreads;
 *   columns: thread (s, j) takes vector j (and j + 1024 where K = 2) of rows s, s + slices, ...
 *            of the tile from shared memory, writes dx to global memory and adds dy xhat and dy
 *            (and dx) in its registers, which hold its columns' sums for the whole kernel
 *            (slices = 1024 / (C / V) where a row has 512 vectors or fewer, else 1).
 * At the end the slices' sums are added in slice order (in the stages' memory) into the
 * block's partial row. Each sum has one order whatever the timing: the same bits on every run.
 *
 * Shared memory: the head (ln_stg_head_bytes), then the stages, each [dy | x | dx] of tile_rows
 * rows. Tile t is the (t / stages)-th use of stage t % stages: its barrier's phase of parity
 * (t / stages) & 1. Tile t + stages - 1 goes into tile t - 1's stage after tile t's first
 * __syncthreads, which a thread reaches only once done with tile t - 1. */
template <typename T, bool ACC, int K, bool SUM>
__global__ void __launch_bounds__(LN_STG_THREADS, 1)
    ln_bwd_staged(T *__restrict__ dx, float *__restrict__ partial, const T *__restrict__ dy,
                  const T *__restrict__ x, const float *__restrict__ mean, const float *__restrict__ rstd,
                  const T *__restrict__ gamma, int R, int C, int tile_rows, int stages, int slices, int block_rows)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int NT = LN_STG_THREADS, NW = LN_STG_WARPS, V = pack16<T>::N, NA = ACC ? 3 : 2, NS = SUM ? 3 : 2;
    /* gamma in registers for the whole kernel where they are free: not with two vectors a
     * thread, nor beside the dx sums (a 64-register thread then spills) */
    constexpr bool GAMMA_IN_REGS = K == 1 && !SUM;
    static_assert(!SUM || K == 1, "the dx sums take the registers of one vector a thread");
    typedef ln_vec<T, V> vec;
    extern __shared__ float4 ln_stg_smem[];
    __shared__ ln_stg_static shared_static;
    float4 (&stat)[2][LN_STG_MAX_TILE_ROWS] = shared_static.stat;
    float2 (&part)[2][NW] = shared_static.part;
    unsigned char *const smem = reinterpret_cast<unsigned char *>(ln_stg_smem);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, nvec = C / V;
    const int r_begin = (int)((long long)blockIdx.x * R / gridDim.x);
    const int r_end = (int)((long long)(blockIdx.x + 1) * R / gridDim.x);
    const int ntiles = (r_end - r_begin + tile_rows - 1) / tile_rows, plane = tile_rows * nvec;
    const uint32_t bar0 = ln_smem_addr(smem);
    float2 *const mr = reinterpret_cast<float2 *>(smem + 8 * LN_STG_MAX_STAGES);
    float *const gf = reinterpret_cast<float *>(smem + ln_stg_head_bytes(block_rows, 0));
    unsigned char *const stage0 = smem + ln_stg_head_bytes(block_rows, C);
    const size_t plane_bytes = (size_t)plane * sizeof(vec), stage_bytes = NA * plane_bytes;

    /* tile t of the block into stage k, by the producer: lane 0 of the last warp, which adds
     * no row's pairs after the row step (a tile of fewer than 32 rows) */
    const int producer = NT - 32;
    auto issue = [&](int t, int k) {
        const int r0 = r_begin + t * tile_rows, n = min(tile_rows, r_end - r0);
        const uint32_t bar = bar0 + 8 * k, bytes = (uint32_t)((size_t)n * C * sizeof(T));
        const uint32_t dst = ln_smem_addr(stage0 + (size_t)k * stage_bytes);
        ln_mbar_expect_tx(bar, NA * bytes);
        ln_bulk_load(dst, dy + (size_t)r0 * C, bytes, bar);
        ln_bulk_load(dst + (uint32_t)plane_bytes, x + (size_t)r0 * C, bytes, bar);
        if (ACC) ln_bulk_load(dst + 2 * (uint32_t)plane_bytes, dx + (size_t)r0 * C, bytes, bar);
    };
    if (tid == producer) {
#pragma unroll 1
        for (int k = 0; k < stages; k++) ln_mbar_init(bar0 + 8 * k, 1);
        ln_fence_mbar_init();
#pragma unroll 1
        for (int t = 0; t < min(stages, ntiles); t++) issue(t, t);
    }
    /* gamma and the rows' (mean, rstd), while the first tiles come */
#pragma unroll 1
    for (int j = tid; j < nvec; j += NT) {
        float g[V];
        load_f32<V>(g, gamma + (size_t)j * V);
        ln_acc_store<V>(gf + (size_t)j * V, g);
    }
#pragma unroll 1
    for (int i = tid; i < r_end - r_begin; i += NT) mr[i] = make_float2(mean[r_begin + i], rstd[r_begin + i]);
    __syncthreads();

    /* the column step's thread: slice s, vector j0 (and j0 + NT) of each of its rows */
    const int span = slices > 1 ? nvec : NT, s = tid / span, j0 = tid % span;
    const bool cols = s < slices;
    float ag[K][V], ab[K][V], as[V], gk[V]; /* as: dx's sums (SUM, one vector a thread) */
#pragma unroll
    for (int k = 0; k < K; k++)
#pragma unroll
        for (int i = 0; i < V; i++) ag[k][i] = ab[k][i] = 0.0f;
    if constexpr (SUM)
#pragma unroll
        for (int i = 0; i < V; i++) as[i] = 0.0f;
    if constexpr (GAMMA_IN_REGS)
        if (cols && j0 < nvec) ln_load_floats<V>(gk, gf + (size_t)j0 * V);
    /* the row step's warp: part q of row rw of each pass over NW / wpr rows */
    const int wpr = tile_rows < NW ? NW / tile_rows : 1, per_pass = NW / wpr, q = warp % wpr, rw = warp / wpr;
    /* 2 to 8 warps a row (tiles of 4 to 16 rows): each column thread adds its rows' pairs
     * itself (in warp order), so that a tile takes one __syncthreads, not two; more warps a row
     * (tiles of 1 to 3 rows, 16-bit rows of ~8 KB or more): a warp a row adds them, after the
     * first __syncthreads, and a second one publishes them */
    const bool own_factors = wpr > 1 && wpr <= 8;

    int buf = 0; /* tile t's stage, t % stages, and its barrier's parity */
    uint32_t parity = 0;
#pragma unroll 1
    for (int t = 0; t < ntiles; t++) {
        const int l0 = t * tile_rows, nrows = min(tile_rows, r_end - r_begin - l0);
        const vec *const sdy = reinterpret_cast<const vec *>(stage0 + (size_t)buf * stage_bytes);
        float4 *const st = stat[t & 1];
        ln_mbar_wait(bar0 + 8 * buf, parity);

        /* rows */
        if (rw < per_pass)
#pragma unroll 1
            for (int lr = rw; lr < nrows; lr += per_pass) {
                const float m = mr[l0 + lr].x;
                const vec *const d_row = sdy + (size_t)lr * nvec, *const x_row = d_row + plane;
                float sg = 0.0f, sgd = 0.0f;
#pragma unroll 2
                for (int j = q * 32 + lane; j < nvec; j += 32 * wpr) {
                    const vec d = d_row[j], xv = x_row[j];
                    float gm[V];
                    ln_load_floats<V>(gm, gf + (size_t)j * V);
#pragma unroll
                    for (int i = 0; i < V; i++) {
                        const float g = ln_get(d, i) * gm[i];
                        sg += g;
                        sgd = fmaf(g, ln_get(xv, i) - m, sgd);
                    }
                }
                sg = warp_sum(sg);
                sgd = warp_sum(sgd);
                if (lane == 0) {
                    if (wpr == 1) st[lr] = ln_row_factors(mr[l0 + lr], sg, sgd, C);
                    else part[t & 1][lr * wpr + q] = make_float2(sg, sgd);
                }
            }
        __syncthreads();
        /* every thread is done with tile t - 1: its stage takes tile t + stages - 1 */
        if (tid == producer && t >= 1 && t + stages - 1 < ntiles) {
            ln_fence_proxy_async();
            issue(t + stages - 1, buf == 0 ? stages - 1 : buf - 1);
        }
        if (wpr > 1 && !own_factors) { /* uniform; warp lr adds row lr's wpr pairs (lane k the k-th) in its fixed tree */
            if (warp < nrows) {
                const float2 p = lane < wpr ? part[t & 1][warp * wpr + lane] : make_float2(0.0f, 0.0f);
                const float sg = warp_sum(p.x), sgd = warp_sum(p.y);
                if (lane == 0) st[warp] = ln_row_factors(mr[l0 + warp], sg, sgd, C);
            }
            __syncthreads();
        }

        /* columns: pointers at vector j0 of row s, stepping `slices` rows */
        if (cols) {
            const size_t step = (size_t)slices * nvec;
            const vec *in = sdy + (size_t)s * nvec + j0;
            vec *out = reinterpret_cast<vec *>(dx + (size_t)(r_begin + l0 + s) * C) + j0;
#pragma unroll 1
            for (int lr = s; lr < nrows; lr += slices, in += step, out += step) {
                float4 f; /* -mean rstd, rstd, b, c */
                if (own_factors) {
                    const float2 *const pr = part[t & 1] + lr * wpr;
                    float2 p = pr[0];
#pragma unroll 1
                    for (int k = 1; k < wpr; k++) p.x += pr[k].x, p.y += pr[k].y;
                    f = ln_row_factors(mr[l0 + lr], p.x, p.y, C);
                } else {
                    f = st[lr];
                }
#pragma unroll
                for (int k = 0; k < K; k++)
                    if (j0 + k * NT < nvec) {
                        const vec d = in[k * NT], xv = in[plane + k * NT];
                        vec o;
                        if (ACC) o = in[2 * plane + k * NT];
                        float gm[V], v[V];
                        if constexpr (GAMMA_IN_REGS) {
#pragma unroll
                            for (int i = 0; i < V; i++) gm[i] = gk[i];
                        } else {
                            ln_load_floats<V>(gm, gf + (size_t)(j0 + k * NT) * V);
                        }
#pragma unroll
                        for (int i = 0; i < V; i++) {
                            const float di = ln_get(d, i), xh = fmaf(ln_get(xv, i), f.y, f.x);
                            v[i] = fmaf(f.y, di * gm[i], fmaf(f.w, xh, f.z));
                            if (ACC) v[i] += ln_get(o, i);
                            ag[k][i] = fmaf(di, xh, ag[k][i]);
                            ab[k][i] += di;
                        }
                        ln_set(o, v);
                        out[k * NT] = o;
                        if constexpr (SUM) /* dx as written: the sums of what the next GEMM reads */
#pragma unroll
                            for (int i = 0; i < V; i++) as[i] += ln_get(o, i);
                    }
            }
        }
        if (++buf == stages) buf = 0, parity ^= 1;
    }

    /* ln_bwd_sum, launched as this kernel's programmatic dependent, may start its blocks
     * now: they wait (griddepcontrol.wait) for this whole grid and its stores before reading
     * the partial rows, so its launch no longer follows the last block's exit */
    dependents_may_start();
    /* the block's partial row: [0][c] sum dy xhat, [1][c] sum dy (and [2][c] sum dx) */
    float *const row = partial + (size_t)blockIdx.x * NS * C;
    if (slices == 1) { /* uniform */
        if (cols)
#pragma unroll
            for (int k = 0; k < K; k++) {
                const int j = j0 + k * NT;
                if (j < nvec) {
                    ln_acc_store<V>(row + (size_t)j * V, ag[k]);
                    ln_acc_store<V>(row + C + (size_t)j * V, ab[k]);
                    if constexpr (SUM) ln_acc_store<V>(row + 2 * C + (size_t)j * V, as);
                }
            }
    } else {
        /* the slices' sums into the stages' memory (every copy waited for, every read of it
         * done after this __syncthreads), then added in slice order */
        float *const all = reinterpret_cast<float *>(stage0);
        __syncthreads();
        if (cols) {
            ln_acc_store<V>(all + (size_t)s * NS * C + (size_t)j0 * V, ag[0]);
            ln_acc_store<V>(all + (size_t)s * NS * C + C + (size_t)j0 * V, ab[0]);
            if constexpr (SUM) ln_acc_store<V>(all + (size_t)s * NS * C + 2 * C + (size_t)j0 * V, as);
        }
        __syncthreads();
#pragma unroll 1
        for (int c = tid; c < NS * C; c += NT) {
            float v = all[c];
#pragma unroll 1
            for (int k = 1; k < slices; k++) v += all[(size_t)k * NS * C + c];
            row[c] = v;
        }
    }
#else
    __trap(); /* launched on compute capability 9.0 or later only */
#endif
}

/* out[n][c] = sum over chunks k of partial[k][n][c] for n < NS: dgamma (n = 0), dbeta (1)
 * and, where NS = 3, the column sums of dx (2); in a fixed order: warp w of a block of 32
 * columns adds chunks w, w + TF_SUM_WARPS, ..., then the warps' sums are added in warp order. */
template <typename G, int NS>
__global__ void __launch_bounds__(TF_SUM_WARPS * 32) ln_bwd_sum(G *dgamma, G *dbeta, G *dxsum, const float *partial,
                                                                int chunks, int C)
{
    __shared__ float red[NS][TF_SUM_WARPS][32];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, c = blockIdx.x * 32 + lane;
    float sum[NS] = {};
    wait_for_predecessor(); /* after the staged kernel: its partial rows complete and visible */
    if (c < C)
#pragma unroll 4
        for (int k = w; k < chunks; k += TF_SUM_WARPS)
#pragma unroll
            for (int n = 0; n < NS; n++) sum[n] += partial[((size_t)k * NS + n) * C + c];
#pragma unroll
    for (int n = 0; n < NS; n++) red[n][w][lane] = sum[n];
    __syncthreads();
    if (w == 0 && c < C) {
        G *const out[3] = {dgamma, dbeta, dxsum};
#pragma unroll
        for (int n = 0; n < NS; n++) {
            float v = 0.0f;
            for (int i = 0; i < TF_SUM_WARPS; i++) v += red[n][i][lane];
            out[n][c] = from_f32<G>(v);
        }
    }
}

/* ---- launches --------------------------------------------------------------------------- */

/* Vectors of 16 bytes a lane of the forward takes so that one warp holds a row of C (1, 2,
 * 3, 4, 6 or 8, at most LN_FWD_MAX_E elements), or 0 when C is not a whole number of
 * vectors or too long. */
template <typename T> static int ln_fwd_vectors_per_lane(int C)
{
    constexpr int V = pack16<T>::N;
    static const int choices[] = {1, 2, 3, 4, 6, 8};
    if (C <= 0 || C % V != 0) return 0;
    for (int nv : choices)
        if (32 * nv * V >= C) return nv * V <= LN_FWD_MAX_E ? nv : 0;
    return 0;
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
    const bool vectors = vectors_fit<T>(C, y, x, gamma, beta);
    const int rows_per_block = TF_THREADS / 32, blocks = (R + rows_per_block - 1) / rows_per_block;
    switch (vectors ? ln_fwd_vectors_per_lane<T>(C) : 0) {
    case 1: launch_ln_fwd_nv<T, 1>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 2: launch_ln_fwd_nv<T, 2>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 3: launch_ln_fwd_nv<T, 3>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 4: launch_ln_fwd_nv<T, 4>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 6: launch_ln_fwd_nv<T, 6>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    case 8: launch_ln_fwd_nv<T, 8>(y, mean, rstd, x, gamma, beta, R, C, s); break;
    default:
        with_vector_width<T>(vectors, [&](auto v) {
            ln_fwd<T, decltype(v)::value><<<blocks, TF_THREADS, 0, s>>>(y, mean, rstd, x, gamma, beta, R, C);
        });
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_layernorm_forward(void *y, float *mean, float *rstd, const void *x, const void *gamma,
                                              const void *beta, int R, int C, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_ln_fwd, y, mean, rstd, x, gamma, beta, R, C, s);
}

/* Rows of a backward tile: the most (a power of two, at most 32) whose dy and x fit in
 * LN_BWD_TILE_BYTES, at least 1. A power of two divides the 16 warps when smaller. */
static int ln_bwd_tile_rows(int C, size_t elem)
{
    const size_t row_bytes = 2 * elem * (size_t)C;
    int rows = 1;
    while (rows < LN_BWD_MAX_TILE_ROWS && 2 * (size_t)rows * row_bytes <= LN_BWD_TILE_BYTES) rows *= 2;
    return rows;
}

/* Blocks of the backward, each a partial row of the gains: LN_BWD_BLOCKS_PER_SM an SM, at
 * most one a tile. The same on every call for a given GPU, R and C: the sums' order too.
 * (Rows over about 14,000 wide have gain sums too large for 2 blocks' shared memory an SM:
 * the grid then runs in two waves.) */
static int ln_bwd_blocks(int tiles, int sms)
{
    const long long most = (long long)LN_BWD_BLOCKS_PER_SM * sms;
    return (int)(tiles < most ? tiles : most);
}

extern "C" size_t cuda_layernorm_scratch_floats(int R, int C)
{
    ln_gpu g;
    int dev;
    if (R <= 0 || C <= 0) return 0;
    /* a row a tile bounds the blocks of every dtype; 1024 SMs where the GPU cannot be asked
     * (its launch then fails too). Three partial rows a block (the gains' and dx's sums), or
     * the bias gradient's scratch where dx's sums are taken after the kernel. */
    const int sms = ln_gpu_current(&g, &dev) == cudaSuccess ? g.sms : 1024;
    const size_t ln = (size_t)ln_bwd_blocks(R, sms) * 3 * (size_t)C, bias = cuda_bias_grad_scratch_floats(R, C);
    return ln > bias ? ln : bias;
}

/* Dynamic shared memory over 48 KiB needs the kernel's leave, once a device. */
template <auto Kernel> static cudaError_t ln_allow_smem(int dev, size_t bytes)
{
    static size_t allowed[LN_MAX_GPUS];
    if (bytes <= (48u << 10) || (dev >= 0 && dev < LN_MAX_GPUS && allowed[dev] >= bytes)) return cudaSuccess;
    const cudaError_t e = cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
    if (e == cudaSuccess && dev >= 0 && dev < LN_MAX_GPUS) allowed[dev] = bytes;
    return e;
}

/* ln_bwd_tiled over R >= 1 rows; *blocks: the partial rows it writes. */
template <typename T, int V>
static cudaError_t launch_ln_bwd_tiled(T *dx, float *partial, const T *dy, const T *x, const float *mean,
                                       const float *rstd, const T *gamma, int R, int C, int accumulate, int *blocks,
                                       cudaStream_t s)
{
    ln_gpu g;
    int dev;
    cudaError_t e = ln_gpu_current(&g, &dev);
    if (e != cudaSuccess) return e;
    const int nchunk = C / ln_col_width(V), tile_rows = ln_bwd_tile_rows(C, sizeof(T)), tiles = (R - 1) / tile_rows + 1;
    const size_t static_smem = sizeof(float4) * 2 * LN_BWD_MAX_TILE_ROWS + sizeof(float2) * LN_BWD_WARPS;
    int slices = LN_BWD_THREADS / nchunk;
    slices = slices < 1 ? 1 : slices > tile_rows ? tile_rows : slices;
    if ((size_t)slices * 2 * C * sizeof(float) + static_smem > g.smem_optin) slices = 1;
    size_t smem = (size_t)slices * 2 * C * sizeof(float);
    const int in_shared = smem + static_smem <= g.smem_optin;
    if (!in_shared) smem = 0; /* the sums in the partial rows themselves */
    if ((e = ln_allow_smem<ln_bwd_tiled<T, V>>(dev, smem)) != cudaSuccess) return e;
    *blocks = ln_bwd_blocks(tiles, g.sms);
    ln_bwd_tiled<T, V><<<*blocks, LN_BWD_THREADS, smem, s>>>(dx, partial, dy, x, mean, rstd, gamma, R, C, tile_rows,
                                                             slices, in_shared, accumulate);
    return cudaGetLastError();
}

/* How ln_bwd_staged takes R rows of C: a block an SM (at most one a row), block_rows rows a
 * block at most, tiles of tile_rows rows (a multiple of slices where a tile has that many),
 * `stages` tiles in flight, k vectors a thread of the column step; smem: its dynamic shared
 * memory (the head, then the stages, or the slices' gain sums at the end where larger). */
struct ln_stg_plan {
    int blocks, block_rows, tile_rows, stages, slices, k;
    bool sum_dx; /* the kernel adds dx's column sums too (a third partial row a block) */
    size_t smem;
};

static const size_t ln_stg_static_smem = sizeof(ln_stg_static);

/* false where the staged kernel does not apply: before compute capability 9.0 (no bulk
 * copies), rows of more than 2 vectors a thread (16 bits over 16,384 wide, fp32 over 8,192;
 * 1 vector with dx's sums, sum_dx: 8,192 and 4,096), or where two tiles of one row do not fit
 * beside the head (16 bits over ~14,000 wide when accumulating; over ~2 million rows on 132
 * SMs, whose (mean, rstd) take the room). */
template <typename T>
static bool ln_stg_plan_for(ln_stg_plan *p, const ln_gpu &g, int R, int C, int accumulate, bool sum_dx)
{
    constexpr int V = pack16<T>::N, NT = LN_STG_THREADS;
    if (g.major < 9 || R <= 0 || C <= 0 || C % V != 0) return false;
    const int nvec = C / V;
    p->k = (nvec + NT - 1) / NT;
    if (p->k > (sum_dx ? 1 : LN_STG_MAX_K)) return false;
    p->blocks = R < g.sms ? R : g.sms;
    p->block_rows = (R + p->blocks - 1) / p->blocks;
    const size_t row_bytes = (size_t)(accumulate ? 3 : 2) * C * sizeof(T);
    const size_t head = ln_stg_head_bytes(p->block_rows, C);
    if (head + ln_stg_static_smem + 2 * row_bytes > g.smem_optin) return false;
    const size_t room = g.smem_optin - ln_stg_static_smem - head; /* for the stages */
    size_t rows = ln_stg_tile_bytes() / row_bytes;
    const size_t most = room / (2 * row_bytes); /* two stages at least: one loads while one is used */
    rows = rows < 1 ? 1 : rows;
    rows = rows > most ? most : rows;
    rows = rows > LN_STG_MAX_TILE_ROWS ? LN_STG_MAX_TILE_ROWS : rows;
    rows = rows > (size_t)p->block_rows ? (size_t)p->block_rows : rows;
    /* slices of a row of 512 vectors or fewer, each taking a tile's rows in turn: whole turns */
    int slices = nvec <= NT / 2 ? NT / nvec : 1;
    if ((size_t)slices >= rows) slices = (int)rows;
    else rows = rows / slices * slices;
    const int tiles = (int)((p->block_rows + rows - 1) / rows);
    size_t stages = room / (rows * row_bytes);
    stages = stages > LN_STG_MAX_STAGES ? LN_STG_MAX_STAGES : stages;
    stages = stages > (size_t)tiles ? (size_t)tiles : stages;
    size_t body = stages * rows * row_bytes;
    const size_t sums = slices > 1 ? (size_t)slices * (sum_dx ? 3 : 2) * C * sizeof(float) : 0;
    body = sums > body ? sums : body;
    if (head + body + ln_stg_static_smem > g.smem_optin) return false;
    p->tile_rows = (int)rows;
    p->stages = (int)stages;
    p->slices = slices;
    p->smem = head + body;
    p->sum_dx = sum_dx;
    return true;
}

/* The staged kernel's plan for these arguments on the current device (*dev), with dx's
 * sums where sum_dx and the width allows them, else without (plan.sum_dx says which); or false */
template <typename T>
static bool ln_stg_takes(ln_stg_plan *p, int *dev, const T *dx, const T *dy, const T *x, const T *gamma,
                         const float *partial, int R, int C, int accumulate, bool sum_dx)
{
    ln_gpu g;
    return vectors_fit<T>(C, dx, dy, x, gamma) && aligned16(partial) && ln_gpu_current(&g, dev) == cudaSuccess &&
           ((sum_dx && ln_stg_plan_for<T>(p, g, R, C, accumulate, true)) ||
            ln_stg_plan_for<T>(p, g, R, C, accumulate, false));
}

template <typename T, bool ACC, int K, bool SUM>
static cudaError_t launch_ln_bwd_staged_as(const ln_stg_plan &p, int dev, T *dx, float *partial, const T *dy,
                                          const T *x, const float *mean, const float *rstd, const T *gamma, int R,
                                          int C, cudaStream_t s)
{
    const cudaError_t e = ln_allow_smem<ln_bwd_staged<T, ACC, K, SUM>>(dev, p.smem);
    if (e != cudaSuccess) return e;
    ln_bwd_staged<T, ACC, K, SUM><<<p.blocks, LN_STG_THREADS, p.smem, s>>>(
        dx, partial, dy, x, mean, rstd, gamma, R, C, p.tile_rows, p.stages, p.slices, p.block_rows);
    return cudaGetLastError();
}

template <typename T, bool ACC>
static cudaError_t launch_ln_bwd_staged_acc(const ln_stg_plan &p, int dev, T *dx, float *partial, const T *dy,
                                           const T *x, const float *mean, const float *rstd, const T *gamma, int R,
                                           int C, cudaStream_t s)
{
    if (p.sum_dx) return launch_ln_bwd_staged_as<T, ACC, 1, true>(p, dev, dx, partial, dy, x, mean, rstd, gamma, R, C, s);
    return p.k == 1 ? launch_ln_bwd_staged_as<T, ACC, 1, false>(p, dev, dx, partial, dy, x, mean, rstd, gamma, R, C, s)
                    : launch_ln_bwd_staged_as<T, ACC, 2, false>(p, dev, dx, partial, dy, x, mean, rstd, gamma, R, C, s);
}

template <typename T>
static cudaError_t launch_ln_bwd_staged(const ln_stg_plan &p, int dev, T *dx, float *partial, const T *dy, const T *x,
                                        const float *mean, const float *rstd, const T *gamma, int R, int C,
                                        int accumulate, cudaStream_t s)
{
    if (accumulate) return launch_ln_bwd_staged_acc<T, true>(p, dev, dx, partial, dy, x, mean, rstd, gamma, R, C, s);
    return launch_ln_bwd_staged_acc<T, false>(p, dev, dx, partial, dy, x, mean, rstd, gamma, R, C, s);
}

/* DPSCALE_LN_BACKWARD=tiled (staged) makes LN_BACKWARD_AUTO the tiled (staged) kernel; read
 * once; unset or anything else: staged, which measured faster at every shape timed on an H200
 * (41.8 against 44.8 us at 8192 x 1600, 27.4 against 31.2 at 8192 x 1024, 76.6 against 109.8
 * at 4096 x 8192; results/h200x1-resnet-fusion) */
static enum ln_backward_kernel ln_bwd_env_kernel(void)
{
    static int tiled = -1;
    return env_switch(&tiled, "DPSCALE_LN_BACKWARD", "tiled") ? LN_BACKWARD_TILED : LN_BACKWARD_STAGED;
}

/* ln_bwd_sum over `chunks` partial rows of NS sums (after the staged kernel, as its
 * dependent: see ln_bwd_sum), into gradients of type G */
template <typename G>
static cudaError_t launch_ln_bwd_sum(bool dependent, void *dgamma, void *dbeta, void *dxsum, int ns,
                                     const float *partial, int chunks, int C, cudaStream_t s)
{
    const dim3 grid((C + 31) / 32), block(TF_SUM_WARPS * 32);
    if (ns == 3)
        return launch_maybe_dependent(dependent, ln_bwd_sum<G, 3>, grid, block, 0, s, (G *)dgamma, (G *)dbeta,
                                      (G *)dxsum, partial, chunks, C);
    return launch_maybe_dependent(dependent, ln_bwd_sum<G, 2>, grid, block, 0, s, (G *)dgamma, (G *)dbeta,
                                  (G *)NULL, partial, chunks, C);
}

template <typename T>
static cudaError_t launch_ln_bwd(enum ln_backward_kernel which, void *dx_, void *dgamma, void *dbeta, void *dxsum,
                                 int grads_in_t, const void *dy_, const void *x_, const float *mean,
                                 const float *rstd, const void *gamma_, int R, int C, int accumulate, float *partial,
                                 cudaStream_t s)
{
    T *dx = (T *)dx_;
    const T *dy = (const T *)dy_, *x = (const T *)x_, *gamma = (const T *)gamma_;
    if (C <= 0) return cudaSuccess;
    if (which == LN_BACKWARD_AUTO) which = ln_bwd_env_kernel();
    int chunks = 0; /* R = 0: no rows, gains (and dx's sums) of zero */
    int ns = dxsum != NULL && R == 0 ? 3 : 2; /* sums a partial row holds */
    cudaError_t e = cudaSuccess;
    ln_stg_plan plan;
    int dev;
    bool staged = false;
    if (R > 0 && which == LN_BACKWARD_STAGED &&
        ln_stg_takes<T>(&plan, &dev, dx, dy, x, gamma, partial, R, C, accumulate, dxsum != NULL)) {
        e = launch_ln_bwd_staged<T>(plan, dev, dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate, s);
        chunks = plan.blocks;
        ns = plan.sum_dx ? 3 : 2;
        staged = true;
    } else if (R > 0) {
        with_vector_width<T>(vectors_fit<T>(C, dx, dy, x, gamma), [&](auto v) {
            e = launch_ln_bwd_tiled<T, decltype(v)::value>(dx, partial, dy, x, mean, rstd, gamma, R, C, accumulate,
                                                           &chunks, s);
        });
    }
    if (e != cudaSuccess) return e;
    e = grads_in_t ? launch_ln_bwd_sum<T>(staged, dgamma, dbeta, dxsum, ns, partial, chunks, C, s)
                   : launch_ln_bwd_sum<float>(staged, dgamma, dbeta, dxsum, ns, partial, chunks, C, s);
    if (e != cudaSuccess || dxsum == NULL || ns == 3) return e;
    /* dx's sums where the kernel that ran does not take them: the bias gradient's kernel on dx,
     * in the same scratch (ln_bwd_sum, before it on the stream, is done with it) */
    return cuda_bias_grad(dxsum, grads_in_t, dx, R, C, dtype_of<T>(), partial, s);
}

extern "C" cudaError_t cuda_layernorm_backward_using(enum ln_backward_kernel which, void *dx, void *dgamma,
                                                     void *dbeta, void *dxsum, int grad_dtype, const void *dy,
                                                     const void *x, const float *mean, const float *rstd,
                                                     const void *gamma, int R, int C, int accumulate, float *partial,
                                                     int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_ln_bwd, which, dx, dgamma, dbeta, dxsum, grad_dtype != DT_F32, dy, x, mean,
                          rstd, gamma, R, C, accumulate, partial, s);
}

extern "C" cudaError_t cuda_layernorm_backward(void *dx, void *dgamma, void *dbeta, void *dxsum, int grad_dtype,
                                               const void *dy, const void *x, const float *mean, const float *rstd,
                                               const void *gamma, int R, int C, int accumulate, float *partial,
                                               int dtype, cudaStream_t s)
{
    return cuda_layernorm_backward_using(LN_BACKWARD_AUTO, dx, dgamma, dbeta, dxsum, grad_dtype, dy, x, mean, rstd,
                                         gamma, R, C, accumulate, partial, dtype, s);
}

template <typename T>
static int ln_stg_takes_typed(struct ln_staged_shape *shape, const void *dx, const void *dy, const void *x,
                              const void *gamma, const float *partial, int R, int C, int accumulate, int sum_dx)
{
    ln_stg_plan plan;
    int dev;
    if (!ln_stg_takes<T>(&plan, &dev, (const T *)dx, (const T *)dy, (const T *)x, (const T *)gamma, partial, R, C,
                         accumulate, sum_dx != 0))
        return 0;
    if (shape != NULL) *shape = ln_staged_shape{plan.blocks, plan.tile_rows, plan.stages, plan.slices, plan.sum_dx};
    return 1;
}

extern "C" int cuda_layernorm_backward_staged_takes(struct ln_staged_shape *shape, const void *dx, const void *dy,
                                                    const void *x, const void *gamma, const float *partial, int R,
                                                    int C, int accumulate, int sum_dx, int dtype)
{
    return DISPATCH_DTYPE(dtype, ln_stg_takes_typed, shape, dx, dy, x, gamma, partial, R, C, accumulate, sum_dx);
}

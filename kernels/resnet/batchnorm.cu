/* batchnorm.cu — the ResNet's batch norm on the GPU, forward (training: this batch's
 * statistics and the running ones updated; frozen: the running ones) with its fused
 * ReLU, or fused with a bottleneck's residual add and ReLU (and its projection shortcut's
 * batch norm), and backward (dgamma, dbeta, dx, the ReLU's mask recomputed from x).
 * Semantics: the CPU reference, resnet_cpu.h. T: the compute dtype of x, y, gamma and
 * beta; G: the gradients' (fp32 or T); the statistics fp32.
 *
 * NHWC puts a channel in a column of [rows x C], so a channel's sums run down a column:
 *   1. partial pass: block (tile, chunk) owns L vector columns (V channels each, 16-byte
 *      loads; L a power of two up to 32, so that a warp reads whole rows of a narrow C)
 *      and a chunk of rows; thread (g, l) adds rows g, g + G, ... of its column in fp32,
 *      then the G threads of a column are added in g order (shared memory) into
 *      partial[chunk][2][C];
 *   2. a small pass adds the chunks of each channel in a fixed order, in double, and
 *      finishes the statistics (or the gradients of gamma and beta); where there are many
 *      chunks, a first pass over the whole GPU adds them in splits of contiguous chunks
 *      and the finish adds the splits;
 *   3. an element-wise pass applies them (y, or dx).
 * No atomics: the same bits on every run. The chunk size depends on rows, C and the GPU
 * (its SMs; the statistics' pass: what an SM holds of it), never on the run; every
 * backward variant (ReLU recomputed, the mask's bits, neither) cuts the same chunks, so
 * that they add in the same order and their bit-for-bit claims hold at every size.
 *
 * The forward's sums are one pass over x: the sums of d = x - x[0][c] and of d^2 (x[0][c],
 * the first row's value, is a shift close to the mean, so the variance
 * sum(d^2)/rows - (sum(d)/rows)^2 does not cancel the way raw sums of squares would),
 * where the CPU reads x twice (the mean, then the squares about it).
 *
 * Fewer passes over memory (rows x C elements each), for the element-wise work that is
 * most of a ResNet step outside its GEMMs:
 * - A bottleneck's output relu(bn3(y3) + r) is one element-wise pass after the partial
 *   passes of bn3 (and of the projection's bn, whose r = bnp(yp) is made in that same
 *   pass and never stored; the identity's r is the block's input): y3, yp, r read once
 *   there and y written, where bn3's pass wrote y and the add read it back (and bnp's
 *   wrote r for the add to read). Each summand is rounded to T before the add, as the
 *   unfused passes stored it, so y has their bits (resnet_cpu.h says why).
 * - Backward recomputes the ReLU's mask, v = bn_value(x) rounded to T > 0, from x (which
 *   it reads anyway), the statistics, gamma and beta, with the forward's own operations
 *   (bn_value: one explicit fused multiply-add), so the mask is the stored y's bit for bit,
 *   values that round to 0 included, and y is not read by either of its passes.
 * - A bottleneck's output ReLU's mask as bits (relu_mask.h: one bit an element, 1/16 of a
 *   16-bit tensor's bytes), written by the fused forward pass, read by bn3's and the
 *   projection's backward in place of the block's ReLU backward (which read the gradient
 *   and the output and wrote the gradient back: three passes); bn3's backward writes the
 *   masked gradient where the identity shortcut passes it on. Those kernels take 8
 *   channels a thread (a byte of bits): 16 bytes of bf16, two 16-byte vectors of fp32;
 *   where C % 8 or an alignment rules that out, the bits are made and applied by passes
 *   of their own (the same values).
 * Performance notes (next steps): resnet.cu's header. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype_cuda.cuh"
#include "kernels/resnet/bn_operands.h"
#include "kernels/resnet/relu_mask.h"
#include "kernels/resnet/resnet_cpu.h" /* BATCHNORM_EPS */
#include "kernels/resnet/resnet_kernels.h"
#include "kernels/vector_cuda.cuh"
#include "kernels/dependent_launch.cuh"
#include "kernels/env_switch.h"

#define BN_THREADS 256
#define BN_TARGET_BLOCKS 1024 /* blocks wanted of a partial pass, rounded to whole waves */
#define BN_TILE_CHANNELS 256  /* channels of a partial pass's column tile at 16-bit width (32 lanes x 8) */
#define BN_MIN_CHUNK_ROWS 64
/* An SM holds 3 blocks of the dx pass at least: its registers capped at 80 (from 86-101 in
 * 16-bit dtypes, 2 blocks an SM), at a few spilled bytes with the ReLU's terms; on an H200 batch
 * norm's backward in ResNet-50's step went 10.82 -> 10.65 ms (results/h200x1-bn-occupancy) */
#define BN_BACKWARD_MIN_BLOCKS 3
#define BN_SUM_WARPS 32       /* a block of the chunk sum: warp w adds chunks w, w + 32, ... of 32 channels */
/* Where a finish would add more chunks than BN_SPLIT_MIN_CHUNKS, a first pass adds them in
 * splits of contiguous chunks, about BN_SPLIT_BLOCKS blocks of BN_SPLIT_WARPS warps over the
 * GPU (the finish's one block of 32 channels took 12 us on an H200 for ResNet-50's first
 * stage, 1,320 chunks, on 2 SMs), at most BN_SPLITS_MAX of them, and the finish adds the splits */
#define BN_SPLIT_MIN_CHUNKS 256
#define BN_SPLIT_BLOCKS 256
#define BN_SPLIT_WARPS 8
#define BN_SPLITS_MAX 128

/* Every pass is launched as the programmatic dependent of what the stream ran before it
 * (dependent_launch.cuh): its blocks start as that grid drains, not after the launch that
 * follows its end, and wait for it, whole and its memory, before anything else
 * (wait_for_predecessor at the top of each kernel), so the order is the stream's.
 * DPSCALE_BN_PDL=off launches them the ordinary way (an A/B). Errors: cudaGetLastError. */
static bool bn_dependent(void)
{
    static int off = -1;
    return !env_switch(&off, "DPSCALE_BN_PDL", "off");
}

template <typename... P, typename... A>
static void bn_launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t s, A... args)
{
    (void)launch_maybe_dependent(bn_dependent(), kernel, grid, block, 0, s, args...);
}

/* Rows of one chunk: enough chunks for the whole waves of partial blocks nearest
 * BN_TARGET_BLOCKS (`wave`: the blocks the GPU holds at once, its SMs times what one SM
 * holds of that kernel; 1,024 blocks at 5 an SM were 1.55 waves on an H200, the second one
 * half empty), each chunk of at least BN_MIN_CHUNK_ROWS rows. So a chunk depends on rows,
 * C and the GPU, never on the run: the same bits every run on one kind of GPU. */
static int bn_chunk_rows(int rows, int C, int wave)
{
    const long long tiles = (C + BN_TILE_CHANNELS - 1) / BN_TILE_CHANNELS;
    const long long waves = (BN_TARGET_BLOCKS + wave / 2) / wave, target = (waves > 0 ? waves : 1) * (long long)wave;
    const long long chunk = ((long long)rows * tiles + target - 1) / target;
    return chunk < BN_MIN_CHUNK_ROWS ? BN_MIN_CHUNK_ROWS : (int)chunk;
}

static int bn_chunks(int rows, int chunk_rows) { return rows <= 0 ? 0 : (rows + chunk_rows - 1) / chunk_rows; }

/* the backward's per-channel coefficients [3][C], then the partial sums [chunks][2][C] of at
 * most a chunk of BN_MIN_CHUNK_ROWS rows each, then the splits' sums [splits][2][C] in double
 * (BN_SPLITS_MAX at most, after the chunks the call used) */
extern "C" size_t cuda_batchnorm_scratch_floats(int rows, int C)
{
    const size_t c = (size_t)(C > 0 ? C : 0), splits_floats = BN_SPLITS_MAX * 2 * c * (sizeof(double) / sizeof(float));
    return ((size_t)bn_chunks(rows, BN_MIN_CHUNK_ROWS) * 2 + 3) * c + splits_floats + 2; /* + 2: the doubles' alignment */
}

/* ---- the forward's value, shared with backward's ReLU mask --------------------------------- */

/* A channel's value before its ReLU, x normalised: (x - mean) sc + beta, sc = rstd gamma,
 * as one fused multiply-add written out, so that backward's recomputed ReLU mask sees the
 * forward's bits whatever the compiler would contract. */
__device__ __forceinline__ float bn_value(float x, float m, float sc, float b) { return __fmaf_rn(x - m, sc, b); }

/* v as T stores it */
template <typename T> __device__ __forceinline__ float stored(float v) { return to_f32(from_f32<T>(v)); }

/* The terms of bn_value for V channels from c0, in registers. */
template <int V> struct affine_terms {
    float m[V], sc[V], b[V];
    template <typename T>
    __device__ __forceinline__ void load(const float *mean, const float *rstd, const T *gamma, const T *beta, int c0)
    {
#pragma unroll
        for (int k = 0; k < V; k++) {
            m[k] = mean[c0 + k];
            sc[k] = rstd[c0 + k] * to_f32(gamma[c0 + k]);
            b[k] = to_f32(beta[c0 + k]);
        }
    }
    __device__ __forceinline__ float value(float x, int k) const { return bn_value(x, m[k], sc[k], b[k]); }
};

/* ---- 1. the partial pass ---------------------------------------------------------------- */

/* The forward's terms of a row: a += d, b += d^2, d = x - shift, shift = x[0][c]. */
template <typename T, int V> struct stats_terms {
    const T *x;
    int C;
    float shift[V];
    __device__ __forceinline__ void begin(int j) { load_f32<V>(shift, x + (size_t)j * V); }
    __device__ __forceinline__ void add(float (&a)[V], float (&b)[V], int r, int j) const
    {
        float v[V];
        load_f32<V>(v, x + (size_t)r * C + (size_t)j * V);
#pragma unroll
        for (int k = 0; k < V; k++) {
            const float d = v[k] - shift[k];
            a[k] += d;
            b[k] = fmaf(d, d, b[k]);
        }
    }
};

/* V elements of dy and x at o; g = dy, zero where RELU and the forward's output was not
 * > 0. That output is T's rounding of max(v, 0), v = f.value(x), which is > 0 exactly where
 * T's rounding of v is: a NaN is neither, and neither is a positive v that rounds to 0. */
template <typename T, int V, bool RELU, bool BITS>
__device__ __forceinline__ void masked_grad(float (&g)[V], float (&xv)[V], const T *dy, const T *x,
                                            const affine_terms<V> &f, const uint8_t *bits, size_t o)
{
    load_f32<V>(g, dy + o);
    load_f32<V>(xv, x + o);
    if constexpr (RELU) {
#pragma unroll
        for (int k = 0; k < V; k++)
            if (!(stored<T>(f.value(xv[k], k)) > 0.0f)) g[k] = 0.0f;
    }
    if constexpr (BITS) { /* V = 8 from an element o that is a multiple of 8: one byte */
        static_assert(V == RELU_MASK_ELEMS, "a byte of bits a thread");
        const unsigned m = bits[o / RELU_MASK_ELEMS];
#pragma unroll
        for (int k = 0; k < V; k++) g[k] *= (m >> k) & 1u ? 1.0f : 0.0f; /* act_backward's product: its -0s */
    }
}

/* The backward's: a += g (dbeta), b += g xhat (dgamma), xhat = (x - mean) rstd; f.m is the
 * mean, f's other terms are loaded only for the ReLU's mask (RELU; BITS: the mask's bits). */
template <typename T, int V, bool RELU, bool BITS> struct grad_terms {
    const T *dy, *x, *gamma, *beta;
    const float *mean, *rstd;
    const uint8_t *bits;
    int C;
    affine_terms<V> f;
    float rs[V];
    __device__ __forceinline__ void begin(int j)
    {
        if constexpr (RELU) f.load(mean, rstd, gamma, beta, j * V);
#pragma unroll
        for (int k = 0; k < V; k++) {
            if constexpr (!RELU) f.m[k] = mean[j * V + k];
            rs[k] = rstd[j * V + k];
        }
    }
    __device__ __forceinline__ void add(float (&a)[V], float (&b)[V], int r, int j) const
    {
        float g[V], xv[V];
        masked_grad<T, V, RELU, BITS>(g, xv, dy, x, f, bits, (size_t)r * C + (size_t)j * V);
#pragma unroll
        for (int k = 0; k < V; k++) {
            a[k] += g[k];
            b[k] = fmaf(g[k], (xv[k] - f.m[k]) * rs[k], b[k]);
        }
    }
};

/* partial[chunk][0][c] = the sum of a, partial[chunk][1][c] of b, over the chunk's rows.
 * Thread t = g L + l: vector column tile L + l, rows r0 + g, r0 + g + G, ...; its sums
 * land in red[.][t V ..], which is red[.][g][l V + k], and are added in g order.
 * descending: the blocks take the chunks from the last one down (the GPU starts blocks in
 * blockIdx order), so that the pass begins on the rows the GEMM before it wrote last, still
 * in the L2, and ends on the first rows, where the element-wise pass after it begins. The
 * sums are the same bits either way: a chunk's rows and their order do not change. */
template <int V, typename Terms>
__global__ void __launch_bounds__(BN_THREADS) bn_partials(float *partial, Terms terms, int rows, int C, int L,
                                                          int chunk_rows, int descending)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    __shared__ float red[2][BN_THREADS * V];
    const int G = BN_THREADS / L, l = threadIdx.x % L, g = threadIdx.x / L, j = blockIdx.x * L + l;
    const int chunk = descending ? (int)gridDim.y - 1 - (int)blockIdx.y : (int)blockIdx.y;
    const int r0 = chunk * chunk_rows, r1 = min(rows, r0 + chunk_rows);
    float a[V] = {}, b[V] = {};
    if (j < C / V) {
        terms.begin(j);
#pragma unroll 4
        for (int r = r0 + g; r < r1; r += G) terms.add(a, b, r, j);
    }
#pragma unroll
    for (int k = 0; k < V; k++) {
        red[0][threadIdx.x * V + k] = a[k];
        red[1][threadIdx.x * V + k] = b[k];
    }
    __syncthreads();
    const int width = L * V; /* channels of the tile */
    for (int o = threadIdx.x; o < 2 * width; o += BN_THREADS) {
        const int which = o / width, lc = o % width, c = blockIdx.x * width + lc;
        if (c >= C) continue;
        float s = 0.0f;
        for (int k = 0; k < G; k++) s += red[which][k * width + lc];
        partial[((size_t)chunk * 2 + which) * C + c] = s;
    }
}

/* Lanes of a partial block across the vector columns: a power of two, at most 32. */
static int bn_lanes(int CV)
{
    int L = 1;
    while (L < CV && L < 32) L *= 2;
    return L;
}

/* Blocks of a backward partial pass taken as one SM's share of a wave, whatever the variant:
 * they hold 3 (the ReLU's terms) or 4 blocks an SM on an H200 in 16-bit dtypes */
#define BN_GRAD_BLOCKS_PER_SM 4

/* A wave of this partial kernel's blocks (asked once a process: one kind of GPU a process):
 * the SMs times what an SM holds of it, or (per_sm_fixed > 0) that many an SM. Where the
 * runtime cannot say, BN_TARGET_BLOCKS, kept for the process, the error cleared. */
template <int V, typename Terms> static int partial_wave(int per_sm_fixed)
{
    static int wave = 0;
    if (wave == 0) {
        int dev = 0, sms = 0, per_sm = per_sm_fixed;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
            (per_sm_fixed <= 0 &&
             cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bn_partials<V, Terms>, BN_THREADS, 0) != cudaSuccess) ||
            sms * per_sm <= 0) {
            (void)cudaGetLastError();
            wave = BN_TARGET_BLOCKS;
        } else {
            wave = sms * per_sm;
        }
    }
    return wave;
}

/* DPSCALE_BN_ORDER=ascending: the partial passes take their chunks first to last (an A/B of
 * the descending order; the same bits either way) */
static int bn_descending(void)
{
    static int ascending = -1;
    return !env_switch(&ascending, "DPSCALE_BN_ORDER", "ascending");
}

/* the partial pass into partial [chunks][2][C]; returns chunks. The wave: what an SM holds of
 * this kernel (per_sm_fixed = 0), or per_sm_fixed blocks an SM. */
template <int V, typename Terms>
static int launch_partials(float *partial, Terms terms, int rows, int C, int per_sm_fixed, cudaStream_t s)
{
    const int CV = C / V, L = bn_lanes(CV), chunk_rows = bn_chunk_rows(rows, C, partial_wave<V, Terms>(per_sm_fixed));
    const dim3 grid((CV + L - 1) / L, bn_chunks(rows, chunk_rows));
    if (grid.y > 0)
        bn_launch(bn_partials<V, Terms>, grid, BN_THREADS, s, partial, terms, rows, C, L, chunk_rows, bn_descending());
    return (int)grid.y;
}

/* ---- 2. the chunks' sums ---------------------------------------------------------------- */

/* The two partial sums of every chunk: chunk k's of channel c at a[k ld + c] and
 * b[k ld + c]; the partial pass's: a = partial, b = partial + C, ld = 2 C. E: float (the
 * partial pass's, an epilogue's) or double (the splits'). */
template <typename E> struct chunk_layout_of {
    using element = E;
    const E *a, *b;
    size_t ld;
    int chunks;
};
using chunk_layout = chunk_layout_of<float>;

__host__ __device__ inline chunk_layout pass_chunks(const float *partial, int chunks, int C)
{
    return {partial, partial + C, 2 * (size_t)C, chunks};
}

/* For channel c = 32 blockIdx.x + lane: the sums over chunks of a (*s0) and b (*s1) in
 * double, warp w adding chunks w, w + BN_SUM_WARPS, ..., then warp 0 the warps' sums in
 * order: valid in warp 0. */
template <typename E>
__device__ __forceinline__ void chunk_sums(const chunk_layout_of<E> p, int C, double *s0, double *s1)
{
    __shared__ double red[2][BN_SUM_WARPS][32];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, c = blockIdx.x * 32 + lane;
    double a = 0.0, b = 0.0;
    if (c < C)
        for (int k = w; k < p.chunks; k += BN_SUM_WARPS) {
            a += p.a[(size_t)k * p.ld + c];
            b += p.b[(size_t)k * p.ld + c];
        }
    red[0][w][lane] = a;
    red[1][w][lane] = b;
    __syncthreads();
    *s0 = *s1 = 0.0;
    if (w == 0)
        for (int i = 0; i < BN_SUM_WARPS; i++) {
            *s0 += red[0][i][lane];
            *s1 += red[1][i][lane];
        }
}

/* The first of the two passes: block (x, s) adds chunks [s per, (s + 1) per) of channels
 * 32 x .. 32 x + 31 in double, warp w chunks w, w + BN_SPLIT_WARPS, ... of them, then the
 * warps in order; split s's sums at out[s 2 C + c] and out[s 2 C + C + c]. */
__global__ void __launch_bounds__(BN_SPLIT_WARPS * 32)
    bn_chunk_splits(double *out, const chunk_layout p, int C, int per)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    __shared__ double red[2][BN_SPLIT_WARPS][32];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, c = blockIdx.x * 32 + lane;
    const int k0 = blockIdx.y * per, k1 = k0 + per < p.chunks ? k0 + per : p.chunks;
    double a = 0.0, b = 0.0;
    if (c < C)
        for (int k = k0 + w; k < k1; k += BN_SPLIT_WARPS) {
            a += p.a[(size_t)k * p.ld + c];
            b += p.b[(size_t)k * p.ld + c];
        }
    red[0][w][lane] = a;
    red[1][w][lane] = b;
    __syncthreads();
    if (w != 0 || c >= C) return;
    double s0 = 0.0, s1 = 0.0;
    for (int i = 0; i < BN_SPLIT_WARPS; i++) {
        s0 += red[0][i][lane];
        s1 += red[1][i][lane];
    }
    out[(size_t)blockIdx.y * 2 * C + c] = s0;
    out[(size_t)blockIdx.y * 2 * C + C + c] = s1;
}

/* Runs finish(layout) on the chunks' sums: on p itself, or where p has many chunks and
 * `room` (BN_SPLITS_MAX 2 C doubles) is given, on the splits' sums of a first pass. The
 * splits depend on the chunks and C alone: the same bits every run. */
template <class Finish>
static void finish_chunks(const chunk_layout p, int C, float *room, cudaStream_t s, Finish finish)
{
    static int off = -1; /* DPSCALE_BN_SPLITS=off: the finish on the chunks alone (an A/B) */
    const int groups = (C + 31) / 32;
    int splits = p.chunks >= BN_SPLIT_MIN_CHUNKS && room != nullptr && !env_switch(&off, "DPSCALE_BN_SPLITS", "off")
                     ? (BN_SPLIT_BLOCKS + groups - 1) / groups
                     : 1;
    if (splits > BN_SPLITS_MAX) splits = BN_SPLITS_MAX;
    const int most = p.chunks / (2 * BN_SPLIT_WARPS); /* two chunks a warp at least */
    if (splits > most) splits = most;
    if (splits <= 1) {
        finish(p);
        return;
    }
    const int per = (p.chunks + splits - 1) / splits;
    splits = (p.chunks + per - 1) / per;
    double *out = reinterpret_cast<double *>(((uintptr_t)room + 7) & ~(uintptr_t)7);
    bn_launch(bn_chunk_splits, dim3(groups, splits), BN_SPLIT_WARPS * 32, s, out, p, C, per);
    finish(chunk_layout_of<double>{out, out + C, 2 * (size_t)C, splits});
}

/* mean, rstd of the batch from the sums of d = x - shift and d^2; the running statistics
 * updated as the CPU does, rounding for rounding (no fused multiply-add), with the
 * unbiased variance. The shift: shift[c] where given (the running mean, read before it is
 * updated), else x's first row (the partial pass's). */
template <typename T, typename E>
__global__ void __launch_bounds__(BN_SUM_WARPS * 32)
    bn_stats_finish(float *mean, float *rstd, float *run_mean, float *run_var, const chunk_layout_of<E> partial,
                    const T *x, const float *shift, int rows, int C, float momentum)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    double sd, sdd;
    chunk_sums(partial, C, &sd, &sdd);
    const int c = blockIdx.x * 32 + threadIdx.x;
    if (threadIdx.x >= 32 || c >= C) return;
    const double d = sd / rows, m = (double)(shift != nullptr ? shift[c] : to_f32(x[c])) + d;
    const double var = fmax(sdd / rows - d * d, 0.0), unbias = rows > 1 ? (double)rows / (rows - 1) : 1.0;
    mean[c] = (float)m;
    rstd[c] = (float)(1.0 / sqrt(var + (double)BATCHNORM_EPS));
    run_mean[c] = __fadd_rn(__fmul_rn(1.0f - momentum, run_mean[c]), __fmul_rn(momentum, (float)m));
    run_var[c] = __fadd_rn(__fmul_rn(1.0f - momentum, run_var[c]), __fmul_rn(momentum, (float)(var * unbias)));
}

/* frozen: the running statistics themselves */
__global__ void bn_frozen_stats(float *mean, float *rstd, const float *run_mean, const float *run_var, int C)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    mean[c] = run_mean[c];
    rstd[c] = 1.0f / sqrtf(run_var[c] + BATCHNORM_EPS);
}

/* dbeta = sum g, dgamma = sum g xhat, in G; and, in fp32, the coefficients of the dx pass
 * (coef [3][C]: dx = A g + B (x - mean) + D), from the fp32 sums, so that a 16-bit gradient
 * arena does not round what dx uses:
 *   dx = gamma rstd (g - (dbeta + xhat dgamma) inv_rows), xhat = (x - mean) rstd
 *      = A g + B (x - mean) + D,  A = gamma rstd, B = -A rstd dgamma inv_rows, D = -A dbeta inv_rows.
 * inv_rows = 0 when frozen (the statistics are constants). */
template <typename T, typename G, typename E>
__global__ void __launch_bounds__(BN_SUM_WARPS * 32)
    bn_grads_finish(G *dgamma, G *dbeta, float *coef, const chunk_layout_of<E> partial, const float *rstd,
                    const T *gamma, int C, float inv_rows)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    double sg, sgx;
    chunk_sums(partial, C, &sg, &sgx);
    const int c = blockIdx.x * 32 + threadIdx.x;
    if (threadIdx.x >= 32 || c >= C) return;
    const float a = to_f32(gamma[c]) * rstd[c];
    coef[c] = a;
    coef[C + c] = -a * rstd[c] * (float)sgx * inv_rows;
    coef[2 * C + c] = -a * (float)sg * inv_rows;
    dbeta[c] = from_f32<G>((float)sg);
    dgamma[c] = from_f32<G>((float)sgx);
}

/* ---- 3. the element-wise passes --------------------------------------------------------- */

/* A thread of an element-wise pass keeps one vector column (V channels) for the whole pass,
 * its per-channel terms in registers, loaded once, and walks rows: TW threads of a block
 * cover TW vector columns (a tile; blockIdx.y picks it), BN_THREADS / TW rows at a time,
 * grid-striding over rows from blockIdx.x. Two rows are loaded before either is used, so
 * that each thread has two 16-byte loads of every input in flight. */
#define BN_APPLY_BLOCKS 2048 /* blocks of an element-wise pass: about 16 an SM of an H200 */

struct column_walk {
    int cv, r, step, active;
    __device__ __forceinline__ column_walk(int CV, int TW)
    {
        const int rows_at_once = BN_THREADS / TW, t = threadIdx.x;
        cv = blockIdx.y * TW + t % TW;
        r = blockIdx.x * rows_at_once + t / TW;
        step = gridDim.x * rows_at_once;
        active = t < rows_at_once * TW && cv < CV;
    }
};

/* the launch shape of an element-wise pass over rows x CV vector columns */
struct column_grid {
    int TW;
    dim3 grid;
    column_grid(int rows, int CV)
    {
        TW = CV < BN_THREADS ? CV : BN_THREADS;
        const int tiles = (CV + TW - 1) / TW, rows_at_once = BN_THREADS / TW;
        long long bx = ((long long)rows + rows_at_once - 1) / rows_at_once, cap = BN_APPLY_BLOCKS / tiles;
        if (cap < 1) cap = 1;
        grid = dim3((unsigned)(bx < cap ? bx : cap), (unsigned)tiles);
    }
};

/* y = bn_value(x), then max(y, 0) when relu (a NaN stays, as on the CPU). */
template <typename T, int V>
__global__ void __launch_bounds__(BN_THREADS) bn_apply(T *y, const T *x, const float *mean, const float *rstd,
                                                       const T *gamma, const T *beta, int rows, int C, int relu, int TW)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    const column_walk w(C / V, TW);
    if (!w.active) return;
    affine_terms<V> f;
    f.load(mean, rstd, gamma, beta, w.cv * V);
    for (int r = w.r; r < rows; r += 2 * w.step) {
        const int r2 = r + w.step;
        const size_t o = (size_t)r * C + (size_t)w.cv * V, o2 = (size_t)r2 * C + (size_t)w.cv * V;
        float v[V], v2[V] = {};
        load_f32<V>(v, x + o);
        if (r2 < rows) load_f32<V>(v2, x + o2);
#pragma unroll
        for (int k = 0; k < V; k++) {
            const float t = f.value(v[k], k), t2 = f.value(v2[k], k);
            v[k] = relu && t < 0.0f ? 0.0f : t;
            v2[k] = relu && t2 < 0.0f ? 0.0f : t2;
        }
        store_f32<V>(y + o, v);
        if (r2 < rows) store_f32<V>(y + o2, v2);
    }
}

/* One batch norm's tensors of an element-wise pass (the shortcut's: x alone where it has
 * no batch norm). */
template <typename T> struct bn_input {
    const T *x, *gamma, *beta;
    const float *mean, *rstd;
};

/* max(a + b, 0), as the residual add with ReLU computes it: a NaN sum gives 0 */
__device__ __forceinline__ float add_relu_value(float a, float b)
{
    const float v = a + b;
    return v > 0.0f ? v : 0.0f;
}

/* The bits of v > 0 as T stores v (relu_mask.h), for V = 8 elements: their byte */
template <typename T, int V> __device__ __forceinline__ uint8_t positive_bits(const float (&v)[V])
{
    static_assert(V == RELU_MASK_ELEMS, "a byte of bits a thread");
    unsigned m = 0;
#pragma unroll
    for (int k = 0; k < V; k++) m |= (stored<T>(v[k]) > 0.0f ? 1u : 0u) << k;
    return (uint8_t)m;
}

/* y = max(bn(x) + r, 0): r = bns(xs) when PROJ (the projection shortcut's batch norm), else
 * xs itself (the identity); both summands rounded to T as the unfused passes stored them
 * (batchnorm_forward's y, the shortcut's batch norm output), so that y has their bits.
 * BITS: also the bits of y > 0 into mask (V = 8). */
template <typename T, int V, bool PROJ, bool BITS>
__global__ void __launch_bounds__(BN_THREADS)
    bn_add_relu_apply(T *y, uint8_t *mask, bn_input<T> bn, bn_input<T> sc, int rows, int C, int TW)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    const column_walk w(C / V, TW);
    if (!w.active) return;
    affine_terms<V> f, fs;
    f.load(bn.mean, bn.rstd, bn.gamma, bn.beta, w.cv * V);
    if constexpr (PROJ) fs.load(sc.mean, sc.rstd, sc.gamma, sc.beta, w.cv * V);
    for (int r = w.r; r < rows; r += 2 * w.step) {
        const int r2 = r + w.step;
        const size_t o = (size_t)r * C + (size_t)w.cv * V, o2 = (size_t)r2 * C + (size_t)w.cv * V;
        float v[V], s[V], v2[V] = {}, s2[V] = {};
        load_f32<V>(v, bn.x + o);
        load_f32<V>(s, sc.x + o);
        if (r2 < rows) {
            load_f32<V>(v2, bn.x + o2);
            load_f32<V>(s2, sc.x + o2);
        }
#pragma unroll
        for (int k = 0; k < V; k++) {
            const float t = stored<T>(f.value(v[k], k)), t2 = stored<T>(f.value(v2[k], k));
            const float u = PROJ ? stored<T>(fs.value(s[k], k)) : s[k];
            const float u2 = PROJ ? stored<T>(fs.value(s2[k], k)) : s2[k];
            v[k] = add_relu_value(t, u);
            v2[k] = add_relu_value(t2, u2);
        }
        store_f32<V>(y + o, v);
        if (r2 < rows) store_f32<V>(y + o2, v2);
        if constexpr (BITS) {
            mask[o / RELU_MASK_ELEMS] = positive_bits<T, V>(v);
            if (r2 < rows) mask[o2 / RELU_MASK_ELEMS] = positive_bits<T, V>(v2);
        }
    }
}

/* The passes of their own where the 8-channel kernels do not apply: the bits of y > 0,
 * a byte a thread; and g = dy where the bit is set, else 0 (g may be dy). */
template <typename T> __global__ void relu_mask_bits(uint8_t *mask, const T *y, size_t n)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    const size_t bytes = relu_mask_bytes(n);
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < bytes; i += (size_t)gridDim.x * blockDim.x) {
        unsigned m = 0;
        for (size_t k = 0; k < RELU_MASK_ELEMS && i * RELU_MASK_ELEMS + k < n; k++)
            m |= (to_f32(y[i * RELU_MASK_ELEMS + k]) > 0.0f ? 1u : 0u) << k;
        mask[i] = (uint8_t)m;
    }
}

template <typename T> __global__ void relu_mask_apply(T *g, const T *dy, const uint8_t *mask, size_t n)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        g[i] = from_f32<T>(to_f32(dy[i]) * (relu_mask_bit(mask, i) ? 1.0f : 0.0f)); /* as act_backward */
}

#define MASK_PASS_BLOCKS 4096 /* blocks at most of those passes (grid-striding) */

/* The 8-channel kernels take rows of whole bytes of bits and 16-byte vectors of T */
template <typename T, typename... P> static inline bool mask_vectors_fit(int C, P... ptrs)
{
    return C % RELU_MASK_ELEMS == 0 && vectors_fit<T>(C, ptrs...);
}

/* dx = A g + B (x - mean) + D (bn_grads_finish's coef), g masked as in masked_grad (the
 * ReLU's terms f loaded only when RELU; BITS: the mask's bits, and g itself into gout
 * unless it is null). dx may be dy itself, and so may gout, but not both. */
template <typename T, int V, bool RELU, bool BITS>
__global__ void __launch_bounds__(BN_THREADS, BN_BACKWARD_MIN_BLOCKS)
    bn_apply_backward(T *dx, T *gout, const T *dy, const T *x, const uint8_t *bits, const float *mean,
                      const float *rstd, const T *gamma, const T *beta, const float *coef, int rows, int C, int TW)
{
    wait_for_predecessor(); /* launched as the dependent of what the stream ran before (bn_launch) */
    const column_walk w(C / V, TW);
    if (!w.active) return;
    affine_terms<V> f;
    float A[V], B[V], D[V];
    if constexpr (RELU) f.load(mean, rstd, gamma, beta, w.cv * V);
#pragma unroll
    for (int k = 0; k < V; k++) {
        const int c = w.cv * V + k;
        if constexpr (!RELU) f.m[k] = mean[c];
        A[k] = coef[c];
        B[k] = coef[C + c];
        D[k] = coef[2 * C + c];
    }
    for (int r = w.r; r < rows; r += 2 * w.step) {
        const int r2 = r + w.step;
        const size_t o = (size_t)r * C + (size_t)w.cv * V, o2 = (size_t)r2 * C + (size_t)w.cv * V;
        float g[V], xv[V], g2[V] = {}, xv2[V] = {};
        masked_grad<T, V, RELU, BITS>(g, xv, dy, x, f, bits, o);
        if (r2 < rows) masked_grad<T, V, RELU, BITS>(g2, xv2, dy, x, f, bits, o2);
        if (BITS && gout != nullptr) {
            store_f32<V>(gout + o, g);
            if (r2 < rows) store_f32<V>(gout + o2, g2);
        }
#pragma unroll
        for (int k = 0; k < V; k++) {
            g[k] = A[k] * g[k] + (B[k] * (xv[k] - f.m[k]) + D[k]);
            g2[k] = A[k] * g2[k] + (B[k] * (xv2[k] - f.m[k]) + D[k]);
        }
        store_f32<V>(dx + o, g);
        if (r2 < rows) store_f32<V>(dx + o2, g2);
    }
}

/* ---- launchers ------------------------------------------------------------------------ */

/* mean and rstd of x [rows x C]: training, this batch's (the partial pass, then the
 * finish, which updates the running statistics); frozen, the running ones. The partial
 * pass's vector width is x's own, so that the statistics of an x are the same bits
 * whatever the element-wise pass after them writes to. */
template <typename T>
static void launch_bn_statistics(float *mean, float *rstd, float *run_mean, float *run_var, const T *x, int rows, int C,
                                 int training, float momentum, float *scratch, const struct bn_partials *pre,
                                 cudaStream_t s)
{
    if (!training) {
        bn_launch(bn_frozen_stats, (C + 255) / 256, 256, s, mean, rstd, run_mean, run_var, C);
        return;
    }
    if (rows <= 0) return;
    const int blocks = (C + 31) / 32;
    const float *shift = nullptr;
    chunk_layout p;
    float *room;
    if (pre != nullptr) { /* the producer's epilogue left the partial sums */
        p = chunk_layout{pre->sum, pre->sumsq, (size_t)pre->shape.ld, pre->shape.tiles};
        shift = pre->shift;
        room = scratch;
    } else {
        int chunks = 0;
        with_vector_width<T>(vectors_fit<T>(C, x), [&](auto v) {
            constexpr int V = decltype(v)::value;
            chunks = launch_partials<V>(scratch, stats_terms<T, V>{x, C, {}}, rows, C, 0, s);
        });
        p = pass_chunks(scratch, chunks, C);
        room = scratch + 2 * (size_t)C * chunks;
    }
    finish_chunks(p, C, room, s, [&](auto layout) {
        bn_launch(bn_stats_finish<T, typename decltype(layout)::element>, blocks, BN_SUM_WARPS * 32, s, mean, rstd, run_mean, run_var, layout, x, shift, rows, C,
                                                               momentum);
    });
}

template <typename T>
static cudaError_t launch_bn_forward(void *y, float *mean, float *rstd, float *run_mean, float *run_var, const void *x_,
                                     const void *gamma, const void *beta, int rows, int C, int training, float momentum,
                                     int relu, const struct bn_partials *pre, float *scratch, cudaStream_t s)
{
    if (C <= 0) return cudaSuccess;
    const T *x = (const T *)x_;
    launch_bn_statistics<T>(mean, rstd, run_mean, run_var, x, rows, C, training, momentum, scratch, pre, s);
    if (rows <= 0) return cudaGetLastError();
    with_vector_width<T>(vectors_fit<T>(C, x, y), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const column_grid g(rows, C / V);
        bn_launch(bn_apply<T, V>, g.grid, BN_THREADS, s, (T *)y, x, mean, rstd, (const T *)gamma, (const T *)beta, rows, C,
                                                    relu, g.TW);
    });
    return cudaGetLastError();
}

template <typename T> static bn_input<T> input_of(const struct bn_operands *o)
{
    return {(const T *)o->x, (const T *)o->gamma, (const T *)o->beta, o->mean, o->rstd};
}

/* Both batch norms' statistics one after the other in the same scratch (the stream orders
 * them), then the one element-wise pass. */
template <typename T>
static cudaError_t launch_bn_add_relu_forward(void *y, uint8_t *mask, const struct bn_operands *bn,
                                              const struct bn_operands *proj, const void *shortcut, int rows, int C,
                                              int training, float momentum, float *scratch, cudaStream_t s)
{
    if (C <= 0) return cudaSuccess;
    const bn_input<T> in = input_of<T>(bn);
    const bn_input<T> sc = proj != nullptr ? input_of<T>(proj) : bn_input<T>{(const T *)shortcut, nullptr, nullptr,
                                                                            nullptr, nullptr};
    launch_bn_statistics<T>(bn->mean, bn->rstd, bn->run_mean, bn->run_var, in.x, rows, C, training, momentum, scratch,
                            bn->pre, s);
    if (proj != nullptr)
        launch_bn_statistics<T>(proj->mean, proj->rstd, proj->run_mean, proj->run_var, sc.x, rows, C, training, momentum,
                                scratch, proj->pre, s);
    if (rows <= 0) return cudaGetLastError();
    if (mask != nullptr && mask_vectors_fit<T>(C, y, in.x, sc.x)) { /* the bits in the same pass */
        constexpr int V = RELU_MASK_ELEMS;
        const column_grid g(rows, C / V);
        if (proj != nullptr)
            bn_launch(bn_add_relu_apply<T, V, true, true>, g.grid, BN_THREADS, s, (T *)y, mask, in, sc, rows, C, g.TW);
        else bn_launch(bn_add_relu_apply<T, V, false, true>, g.grid, BN_THREADS, s, (T *)y, mask, in, sc, rows, C, g.TW);
        return cudaGetLastError();
    }
    with_vector_width<T>(vectors_fit<T>(C, y, in.x, sc.x), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const column_grid g(rows, C / V);
        if (proj != nullptr)
            bn_launch(bn_add_relu_apply<T, V, true, false>, g.grid, BN_THREADS, s, (T *)y, nullptr, in, sc, rows, C, g.TW);
        else bn_launch(bn_add_relu_apply<T, V, false, false>, g.grid, BN_THREADS, s, (T *)y, nullptr, in, sc, rows, C, g.TW);
    });
    if (mask != nullptr) {
        const size_t n = (size_t)rows * C;
        const int blocks = blocks_for(relu_mask_bytes(n), BN_THREADS, MASK_PASS_BLOCKS);
        bn_launch(relu_mask_bits<T>, blocks, BN_THREADS, s, mask, (const T *)y, n);
    }
    return cudaGetLastError();
}

/* the partial pass of g and g xhat, the finish (dgamma, dbeta, the dx coefficients), the
 * dx pass; RELU: dy masked by the forward's ReLU, recomputed */
template <typename T, int V, bool RELU, bool BITS = false>
static void launch_bn_backward_passes(T *dx, void *dgamma, void *dbeta, int grads_in_t, const T *dy, const T *x,
                                      const float *mean, const float *rstd, const T *gamma, const T *beta, int rows,
                                      int C, int training, float *scratch, cudaStream_t s, const uint8_t *bits = nullptr,
                                      T *gout = nullptr)
{
    float *coef = scratch, *partial = scratch + 3 * (size_t)C;
    const float inv_rows = training ? 1.0f / (float)rows : 0.0f;
    const int chunks = launch_partials<V>(partial, grad_terms<T, V, RELU, BITS>{dy, x, gamma, beta, mean, rstd, bits, C,
                                                                                {}, {}},
                                          rows, C, BN_GRAD_BLOCKS_PER_SM, s);
    const int blocks = (C + 31) / 32;
    finish_chunks(pass_chunks(partial, chunks, C), C, partial + 2 * (size_t)C * chunks, s, [&](auto layout) {
        if (grads_in_t)
            bn_launch(bn_grads_finish<T, T, typename decltype(layout)::element>, blocks, BN_SUM_WARPS * 32, s, (T *)dgamma, (T *)dbeta, coef, layout, rstd, gamma,
                                                                      C, inv_rows);
        else
            bn_launch(bn_grads_finish<T, float, typename decltype(layout)::element>, blocks, BN_SUM_WARPS * 32, s, (float *)dgamma, (float *)dbeta, coef, layout,
                                                                          rstd, gamma, C, inv_rows);
    });
    const column_grid cg(rows, C / V);
    if (rows > 0)
        bn_launch(bn_apply_backward<T, V, RELU, BITS>, cg.grid, BN_THREADS, s, dx, gout, dy, x, bits, mean, rstd, gamma,
                                                                          beta, coef, rows, C, cg.TW);
}

template <typename T>
static cudaError_t launch_bn_backward(void *dx, void *dgamma, void *dbeta, int grads_in_t, const void *dy,
                                      const void *x, const float *mean, const float *rstd, const void *gamma,
                                      const void *beta, int rows, int C, int training, int relu, const uint8_t *mask,
                                      void *dy_masked, float *scratch, cudaStream_t s)
{
    if (mask != nullptr && relu) return cudaErrorInvalidValue; /* one ReLU's mask or the other */
    if (C <= 0) return cudaSuccess;
    if (mask != nullptr && mask_vectors_fit<T>(C, dx, dy, x, dy_masked)) { /* the bits read by both passes */
        launch_bn_backward_passes<T, RELU_MASK_ELEMS, false, true>((T *)dx, dgamma, dbeta, grads_in_t, (const T *)dy,
                                                                   (const T *)x, mean, rstd, (const T *)gamma, nullptr,
                                                                   rows, C, training, scratch, s, mask, (T *)dy_masked);
        return cudaGetLastError();
    }
    if (mask != nullptr) { /* a pass of its own: dy masked into dy_masked, else into dx, read from there */
        const size_t n = (size_t)rows * C;
        void *g = dy_masked != nullptr ? dy_masked : dx;
        if (n > 0)
            bn_launch(relu_mask_apply<T>, blocks_for(n, BN_THREADS, MASK_PASS_BLOCKS), BN_THREADS, s, (T *)g, (const T *)dy,
                                                                                               mask, n);
        dy = g;
    }
    with_vector_width<T>(vectors_fit<T>(C, dx, dy, x), [&](auto v) {
        constexpr int V = decltype(v)::value;
        if (relu)
            launch_bn_backward_passes<T, V, true>((T *)dx, dgamma, dbeta, grads_in_t, (const T *)dy, (const T *)x, mean,
                                                  rstd, (const T *)gamma, (const T *)beta, rows, C, training, scratch, s);
        else
            launch_bn_backward_passes<T, V, false>((T *)dx, dgamma, dbeta, grads_in_t, (const T *)dy, (const T *)x, mean,
                                                   rstd, (const T *)gamma, nullptr, rows, C, training, scratch, s);
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_batchnorm_forward(void *y, float *mean, float *rstd, float *run_mean, float *run_var,
                                              const void *x, const void *gamma, const void *beta, int rows, int C,
                                              int training, float momentum, int relu, const struct bn_partials *pre,
                                              float *scratch, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_bn_forward, y, mean, rstd, run_mean, run_var, x, gamma, beta, rows, C, training,
                          momentum, relu, pre, scratch, s);
}

extern "C" cudaError_t cuda_batchnorm_add_relu_forward(void *y, uint8_t *mask, const struct bn_operands *bn,
                                                       const struct bn_operands *proj, const void *shortcut, int rows,
                                                       int C, int training, float momentum, float *scratch, int dtype,
                                                       cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_bn_add_relu_forward, y, mask, bn, proj, shortcut, rows, C, training, momentum,
                          scratch, s);
}

extern "C" cudaError_t cuda_batchnorm_backward(void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                               const void *x, const float *mean, const float *rstd, const void *gamma,
                                               const void *beta, int rows, int C, int training, int relu,
                                               const uint8_t *mask, void *dy_masked, float *scratch, int dtype,
                                               cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_bn_backward, dx, dgamma, dbeta, grad_dtype != DT_F32, dy, x, mean, rstd, gamma,
                          beta, rows, C, training, relu, mask, dy_masked, scratch, s);
}

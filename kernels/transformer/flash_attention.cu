/* flash_attention.cu — fused attention, forward and backward (FlashAttention-2's
 * tiling), written for bf16 / fp16 tensor cores through mma.sync m16n8k16, ldmatrix and
 * cp.async (sm_80 and later). The probabilities never reach memory: the forward runs an
 * online softmax over tiles of 64 keys and keeps lse (log2 domain) per query row; the
 * backward recomputes them.
 *
 * A block has 4 warps and owns 64 rows of one (sequence, head): 16 rows a warp. The
 * backward is two kernels, so that nothing is accumulated by atomics and every run gives
 * the same bits: dK and dV per block of 64 keys (looping over the query tiles), dQ per
 * block of 64 queries (looping over the key tiles). That recomputes QK^T and dO V^T
 * once more than FlashAttention-2's atomic dQ, in exchange for determinism.
 *
 * Fragments (PTX ISA, mma.m16n8k16): lane = 4 g + t; an accumulator holds rows g and
 * g + 8, columns 2t and 2t + 1 of its 16 x 8 tile; two neighbouring accumulator tiles,
 * rounded to 16 bits, are the A operand of the next product (P, dS) as they lie.
 *
 * On Hopper (compute capability 9.0, head dimension 64) the forward and the backward's two
 * kernels are flash_attention_sm90.cu's instead (wgmma, TMA); the launchers below choose
 * (flash_attention_sm90.h says how), the backward after the same delta kernel. */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/dtype_cuda.cuh"
#include "kernels/transformer/flash_attention.h"
#include "kernels/transformer/attention_math.cuh"
#include "kernels/transformer/flash_attention_sm90.h"
#include "kernels/env_switch.h"

#define FA_ROWS 64   /* query rows of a forward / dQ block; key rows of a dK dV block */
#define FA_TILE 64   /* rows of the tiles a block loops over */
#define FA_THREADS 128
#define FA_PAD 8     /* row padding (elements): ldmatrix rows 16 bytes apart in banks */
/* Blocks an SM must hold (__launch_bounds__' second argument, so the register budget per
 * thread): 1 lets ptxas take what it likes (forward 135 registers: 3 blocks an SM; dK dV
 * 240: 2). Built with -DFA_MIN_BLOCKS_FWD=4 etc. for the A/B in tests/gpu. */
#ifndef FA_MIN_BLOCKS_FWD
#define FA_MIN_BLOCKS_FWD 1
#endif
#ifndef FA_MIN_BLOCKS_DKDV
#define FA_MIN_BLOCKS_DKDV 1
#endif
#ifndef FA_MIN_BLOCKS_DQ
#define FA_MIN_BLOCKS_DQ 1
#endif

/* ---- the instructions ------------------------------------------------------------------ */

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

/* 16 bytes global -> shared, bypassing L1; zero-filled when !valid (src is not read) */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src),
                 "r"(valid ? 16 : 0));
}
/* 4 bytes global -> shared; zero when !valid */
__device__ __forceinline__ void cp_async4(void *dst, const void *src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(valid ? 4 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
/* wait until at most N of the committed groups are still in flight */
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ void ldsm_x4(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

template <typename T> __device__ __forceinline__ void mma(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1);
template <> __device__ __forceinline__ void mma<__nv_bfloat16>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <> __device__ __forceinline__ void mma<__half>(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
                 "{%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* two floats as two 16-bit values in one register, lo in the low half */
template <typename T> __device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <> __device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi)
{
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
template <> __device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi)
{
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}

/* ---- tiles and fragments ----------------------------------------------------------------- */

template <typename T, int D> using tile_t = T[FA_TILE][D + FA_PAD];

/* rows row0 .. row0+63 of a [T_ x ld] matrix (columns 0 .. D-1 from g) into s; rows >= T_ zero */
template <typename T, int D>
__device__ __forceinline__ void load_tile(tile_t<T, D> &s, const T *g, int ld, int row0, int T_)
{
    constexpr int chunks = D * (int)sizeof(T) / 16;
    for (int i = threadIdx.x; i < FA_TILE * chunks; i += FA_THREADS) {
        const int r = i / chunks, c = (i % chunks) * (16 / (int)sizeof(T));
        const bool ok = row0 + r < T_;
        cp_async16(&s[r][c], ok ? g + (size_t)(row0 + r) * ld + c : g, ok);
    }
}

/* A operand: rows r0..r0+15, columns c0..c0+15 of a row-major tile */
template <typename T, int D>
__device__ __forceinline__ void frag_a(uint32_t a[4], const tile_t<T, D> &s, int r0, int c0)
{
    const int lane = threadIdx.x % 32;
    ldsm_x4(a, &s[r0 + lane % 16][c0 + 8 * (lane / 16)]);
}

/* B operands of two n-tiles when B[k][n] = s[n][k] (B = s^T): n = r0..r0+15, k = c0..c0+15.
 * b[0], b[1]: n-tile r0..r0+7; b[2], b[3]: r0+8..r0+15. */
template <typename T, int D>
__device__ __forceinline__ void frag_bt(uint32_t b[4], const tile_t<T, D> &s, int r0, int c0)
{
    const int lane = threadIdx.x % 32, mi = lane / 8;
    ldsm_x4(b, &s[r0 + lane % 8 + 8 * (mi / 2)][c0 + 8 * (mi % 2)]);
}

/* B operands of two n-tiles when B[k][n] = s[k][n]: k = r0..r0+15, n = c0..c0+15.
 * b[0], b[1]: n-tile c0..c0+7; b[2], b[3]: c0+8..c0+15. */
template <typename T, int D>
__device__ __forceinline__ void frag_b(uint32_t b[4], const tile_t<T, D> &s, int r0, int c0)
{
    const int lane = threadIdx.x % 32, mi = lane / 8;
    ldsm_x4_trans(b, &s[r0 + lane % 8 + 8 * (mi % 2)][c0 + 8 * (mi / 2)]);
}

/* acc[N/8][4] (+)= A (16 x K, from a tile) B^T-or-B ... the three product shapes:
 *   rows_times_tile_t: acc[16 x 64] = a_frags[16 x D] s^T  (s: 64 rows x D)
 *   p_times_tile:      acc[16 x D] += p_frags[16 x 64] s   (s: 64 rows x D) */
template <typename T, int D>
__device__ __forceinline__ void rows_times_tile_t(float acc[FA_TILE / 8][4], const uint32_t a[D / 16][4],
                                                  const tile_t<T, D> &s)
{
#pragma unroll
    for (int n = 0; n < FA_TILE / 8; n++) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
        for (int np = 0; np < FA_TILE / 16; np++) {
            uint32_t b[4];
            frag_bt<T, D>(b, s, np * 16, kk * 16);
            mma<T>(acc[2 * np], a[kk], b[0], b[1]);
            mma<T>(acc[2 * np + 1], a[kk], b[2], b[3]);
        }
}

template <typename T, int D>
__device__ __forceinline__ void p_times_tile(float acc[D / 8][4], const uint32_t p[FA_TILE / 16][4],
                                             const tile_t<T, D> &s)
{
#pragma unroll
    for (int kc = 0; kc < FA_TILE / 16; kc++)
#pragma unroll
        for (int dp = 0; dp < D / 16; dp++) {
            uint32_t b[4];
            frag_b<T, D>(b, s, kc * 16, dp * 16);
            mma<T>(acc[2 * dp], p[kc], b[0], b[1]);
            mma<T>(acc[2 * dp + 1], p[kc], b[2], b[3]);
        }
}

/* accumulators [16 x 64] -> A operands [16 x 64] of the next product */
template <typename T>
__device__ __forceinline__ void to_a_frags(uint32_t a[FA_TILE / 16][4], const float acc[FA_TILE / 8][4])
{
#pragma unroll
    for (int kc = 0; kc < FA_TILE / 16; kc++) {
        a[kc][0] = pack2<T>(acc[2 * kc][0], acc[2 * kc][1]);
        a[kc][1] = pack2<T>(acc[2 * kc][2], acc[2 * kc][3]);
        a[kc][2] = pack2<T>(acc[2 * kc + 1][0], acc[2 * kc + 1][1]);
        a[kc][3] = pack2<T>(acc[2 * kc + 1][2], acc[2 * kc + 1][3]);
    }
}

/* acc [16 x D] (rows row0 + g, + 8) times `scale` into a row-major matrix at column col0 */
template <typename T, int D>
__device__ __forceinline__ void store_rows(T *m, int ld, int col0, int row0, int T_, const float acc[D / 8][4],
                                           float scale0, float scale1)
{
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
    for (int half = 0; half < 2; half++) {
        const int row = row0 + g + 8 * half;
        if (row >= T_) continue;
        const float sc = half ? scale1 : scale0;
        T *dst = m + (size_t)row * ld + col0 + 2 * t;
#pragma unroll
        for (int n = 0; n < D / 8; n++)
            *reinterpret_cast<uint32_t *>(dst + n * 8) = pack2<T>(acc[n][2 * half] * sc, acc[n][2 * half + 1] * sc);
    }
}

static __host__ __device__ __forceinline__ int tiles(int n) { return (n + FA_TILE - 1) / FA_TILE; }

/* ---- forward ------------------------------------------------------------------------------ */

/* grid (query tiles, B*H). sl2 = log2(e) / sqrt(D): scores in the log2 domain. Four
 * tiles of shared memory: Q's, once its fragments are in registers, holds every other
 * K, V pair, so that the next pair loads while this one is used. */
template <typename T, int D>
__global__ void __launch_bounds__(FA_THREADS, FA_MIN_BLOCKS_FWD) fa_forward(T *out, float *lse, const T *qkv, int T_, int H, int C,
                                                         int causal, float sl2)
{
    __shared__ __align__(16) tile_t<T, D> sm[4];
    const int qt = blockIdx.x, bh = blockIdx.y, b = bh / H, h = bh % H;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int ld = 3 * C, q0 = qt * FA_ROWS, wrow = q0 + warp * 16;
    const T *base = qkv + (size_t)b * T_ * ld + (size_t)h * D;
    load_tile<T, D>(sm[0], base, ld, q0, T_);
    load_tile<T, D>(sm[2], base + C, ld, 0, T_);
    load_tile<T, D>(sm[3], base + 2 * C, ld, 0, T_);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) frag_a<T, D>(qf[kk], sm[0], warp * 16, kk * 16);
    __syncthreads(); /* sm[0] is free */

    float o[D / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
#pragma unroll
    for (int n = 0; n < D / 8; n++) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.0f;
    const int nkt = causal ? min(qt + 1, tiles(T_)) : tiles(T_);
    for (int kt = 0; kt < nkt; kt++) {
        const int cur = kt & 1 ? 0 : 2;
        if (kt + 1 < nkt) {
            load_tile<T, D>(sm[cur ^ 2], base + C, ld, (kt + 1) * FA_TILE, T_);
            load_tile<T, D>(sm[(cur ^ 2) + 1], base + 2 * C, ld, (kt + 1) * FA_TILE, T_);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        float s[FA_TILE / 8][4];
        rows_times_tile_t<T, D>(s, qf, sm[cur]);
        const int k0 = kt * FA_TILE;
        const bool mask = k0 + FA_TILE > T_ || (causal && k0 + FA_TILE > wrow);
        float mx[2] = {m[0], m[1]};
#pragma unroll
        for (int n = 0; n < FA_TILE / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                float v = s[n][e] * sl2;
                if (mask) {
                    const int col = k0 + n * 8 + 2 * t + (e & 1), row = wrow + g + 8 * (e >> 1);
                    if (col >= T_ || (causal && col > row)) v = -INFINITY;
                }
                s[n][e] = v;
                mx[e >> 1] = fmaxf(mx[e >> 1], v);
            }
        float base_m[2];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            mx[r] = quad_max(mx[r]);
            base_m[r] = mx[r] == -INFINITY ? 0.0f : mx[r]; /* a row with no key yet */
            const float corr = fast_exp2(m[r] - base_m[r]);
            m[r] = mx[r];
            l[r] *= corr;
#pragma unroll
            for (int n = 0; n < D / 8; n++) o[n][2 * r] *= corr, o[n][2 * r + 1] *= corr;
        }
#pragma unroll
        for (int n = 0; n < FA_TILE / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float p = fast_exp2(s[n][e] - base_m[e >> 1]);
                s[n][e] = p;
                l[e >> 1] += p;
            }
        uint32_t pa[FA_TILE / 16][4];
        to_a_frags<T>(pa, s);
        p_times_tile<T, D>(o, pa, sm[cur + 1]);
        __syncthreads(); /* sm[cur] is loaded again two tiles on */
    }
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        l[r] = quad_sum(l[r]);
        inv[r] = 1.0f / l[r];
        const int row = wrow + g + 8 * r;
        if (t == 0 && row < T_) lse[(size_t)bh * T_ + row] = m[r] + __log2f(l[r]);
    }
    store_rows<T, D>(out + (size_t)b * T_ * C, C, h * D, wrow, T_, o, inv[0], inv[1]);
}

/* ---- backward ----------------------------------------------------------------------------- */

/* delta[b, h, i] = sum over d of dout[b, i, h, d] out[b, i, h, d]: one warp per row and head */
template <typename T, int D>
__global__ void fa_delta(float *delta, const T *out, const T *dout, int B, int T_, int H, int C)
{
    const size_t w = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    const int lane = threadIdx.x % 32;
    if (w >= (size_t)B * T_ * H) return;
    const int h = (int)(w % H);
    const size_t r = w / H;
    const T *o = out + r * C + (size_t)h * D, *d = dout + r * C + (size_t)h * D;
    float s = 0.0f;
#pragma unroll
    for (int c = lane; c < D; c += 32) s += to_f32(o[c]) * to_f32(d[c]);
    for (int k = 16; k > 0; k >>= 1) s += __shfl_xor_sync(0xffffffffu, s, k);
    const int b = (int)(r / T_), i = (int)(r % T_);
    if (lane == 0) delta[((size_t)b * H + h) * T_ + i] = s;
}

/* lse and delta of query rows row0 .. row0+63 into shared memory (cp.async; rows >= T_ read 0) */
__device__ __forceinline__ void load_row_stats(float *sL, float *sD, const float *lse, const float *delta, int row0,
                                               int T_)
{
    const int i = threadIdx.x % FA_TILE, row = row0 + i;
    const float *src = threadIdx.x < FA_TILE ? lse : delta;
    float *dst = threadIdx.x < FA_TILE ? sL : sD;
    if (threadIdx.x < 2 * FA_TILE) cp_async4(&dst[i], row < T_ ? src + row : src, row < T_);
}

/* dK, dV of 64 keys: grid (key tiles, B*H). Per query tile: S^T = K Q^T, P^T, dV += P^T dO,
 * dP^T = V dO^T, dS^T = P^T (dP^T - delta), dK += dS^T Q. K and V live in registers after
 * the first load, and the (Q, dO) tiles of the next query tile load while this one is used. */
template <typename T, int D>
__global__ void __launch_bounds__(FA_THREADS, FA_MIN_BLOCKS_DKDV) fa_backward_dkdv(T *dqkv, const T *qkv, const T *dout, const float *lse,
                                                               const float *delta, int T_, int H, int C, int causal,
                                                               float sl2, float scale)
{
    __shared__ __align__(16) tile_t<T, D> sm[4];
    __shared__ float sL[2][FA_TILE], sD[2][FA_TILE];
    const int kt = blockIdx.x, bh = blockIdx.y, b = bh / H, h = bh % H;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int ld = 3 * C, k0 = kt * FA_ROWS, wkey = k0 + warp * 16;
    const T *base = qkv + (size_t)b * T_ * ld + (size_t)h * D, *dob = dout + (size_t)b * T_ * C + (size_t)h * D;
    const float *lse_bh = lse + (size_t)bh * T_, *delta_bh = delta + (size_t)bh * T_;
    const int qfirst = causal ? kt : 0, nqt = tiles(T_);
    load_tile<T, D>(sm[0], base + C, ld, k0, T_);
    load_tile<T, D>(sm[1], base + 2 * C, ld, k0, T_);
    load_tile<T, D>(sm[2], base, ld, qfirst * FA_TILE, T_);
    load_tile<T, D>(sm[3], dob, C, qfirst * FA_TILE, T_);
    load_row_stats(sL[0], sD[0], lse_bh, delta_bh, qfirst * FA_TILE, T_);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t kf[D / 16][4], vf[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        frag_a<T, D>(kf[kk], sm[0], warp * 16, kk * 16);
        frag_a<T, D>(vf[kk], sm[1], warp * 16, kk * 16);
    }
    __syncthreads(); /* sm[0], sm[1] are free */
    float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++)
#pragma unroll
        for (int e = 0; e < 4; e++) dk[n][e] = dv[n][e] = 0.0f;

    for (int qt = qfirst, i = 0; qt < nqt; qt++, i++) {
        const int cur = i & 1 ? 0 : 2, st = i & 1, q0 = qt * FA_TILE;
        if (qt + 1 < nqt) {
            load_tile<T, D>(sm[cur ^ 2], base, ld, q0 + FA_TILE, T_);
            load_tile<T, D>(sm[(cur ^ 2) + 1], dob, C, q0 + FA_TILE, T_);
            load_row_stats(sL[st ^ 1], sD[st ^ 1], lse_bh, delta_bh, q0 + FA_TILE, T_);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const tile_t<T, D> &sQ = sm[cur], &sO = sm[cur + 1];
        float p[FA_TILE / 8][4], dp[FA_TILE / 8][4];
        rows_times_tile_t<T, D>(p, kf, sQ);  /* S^T: rows keys, columns queries */
        rows_times_tile_t<T, D>(dp, vf, sO); /* dP^T */
        const bool mask = (causal && q0 < wkey + 16) || q0 + FA_TILE > T_;
#pragma unroll
        for (int n = 0; n < FA_TILE / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int qi = n * 8 + 2 * t + (e & 1), key = wkey + g + 8 * (e >> 1);
                float pv = fast_exp2(p[n][e] * sl2 - sL[st][qi]);
                if (mask && (q0 + qi >= T_ || (causal && key > q0 + qi))) pv = 0.0f;
                p[n][e] = pv;
                dp[n][e] = pv * (dp[n][e] - sD[st][qi]); /* dS^T */
            }
        uint32_t a[FA_TILE / 16][4];
        to_a_frags<T>(a, p);
        p_times_tile<T, D>(dv, a, sO);
        to_a_frags<T>(a, dp);
        p_times_tile<T, D>(dk, a, sQ);
        __syncthreads(); /* sm[cur] and the stats are loaded again two tiles on */
    }
    store_rows<T, D>(dqkv + (size_t)b * T_ * ld, ld, C + h * D, wkey, T_, dk, scale, scale);
    store_rows<T, D>(dqkv + (size_t)b * T_ * ld, ld, 2 * C + h * D, wkey, T_, dv, 1.0f, 1.0f);
}

/* dQ of 64 queries: grid (query tiles, B*H). Per key tile: S = Q K^T, P, dP = dO V^T,
 * dS = P (dP - delta), dQ += dS K. Q and dO live in registers after the first load; the
 * next K, V pair loads while this one is used, as in the forward. */
template <typename T, int D>
__global__ void __launch_bounds__(FA_THREADS, FA_MIN_BLOCKS_DQ) fa_backward_dq(T *dqkv, const T *qkv, const T *dout, const float *lse,
                                                             const float *delta, int T_, int H, int C, int causal,
                                                             float sl2, float scale)
{
    __shared__ __align__(16) tile_t<T, D> sm[4];
    const int qt = blockIdx.x, bh = blockIdx.y, b = bh / H, h = bh % H;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int ld = 3 * C, q0 = qt * FA_ROWS, wrow = q0 + warp * 16;
    const T *base = qkv + (size_t)b * T_ * ld + (size_t)h * D, *dob = dout + (size_t)b * T_ * C + (size_t)h * D;
    load_tile<T, D>(sm[0], base, ld, q0, T_);
    load_tile<T, D>(sm[1], dob, C, q0, T_);
    load_tile<T, D>(sm[2], base + C, ld, 0, T_);
    load_tile<T, D>(sm[3], base + 2 * C, ld, 0, T_);
    cp_async_commit();
    cp_async_wait<0>();
    __syncthreads();
    uint32_t qf[D / 16][4], of[D / 16][4];
#pragma unroll
    for (int kk = 0; kk < D / 16; kk++) {
        frag_a<T, D>(qf[kk], sm[0], warp * 16, kk * 16);
        frag_a<T, D>(of[kk], sm[1], warp * 16, kk * 16);
    }
    __syncthreads(); /* sm[0], sm[1] are free */
    float L[2], Dl[2];
#pragma unroll
    for (int r = 0; r < 2; r++) {
        const int row = wrow + g + 8 * r;
        L[r] = row < T_ ? lse[(size_t)bh * T_ + row] : INFINITY;
        Dl[r] = row < T_ ? delta[(size_t)bh * T_ + row] : 0.0f;
    }
    float dq[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; n++) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.0f;
    const int nkt = causal ? min(qt + 1, tiles(T_)) : tiles(T_);
    for (int kt = 0; kt < nkt; kt++) {
        const int cur = kt & 1 ? 0 : 2, k0 = kt * FA_TILE;
        if (kt + 1 < nkt) {
            load_tile<T, D>(sm[cur ^ 2], base + C, ld, k0 + FA_TILE, T_);
            load_tile<T, D>(sm[(cur ^ 2) + 1], base + 2 * C, ld, k0 + FA_TILE, T_);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const tile_t<T, D> &sK = sm[cur], &sV = sm[cur + 1];
        float p[FA_TILE / 8][4], dp[FA_TILE / 8][4];
        rows_times_tile_t<T, D>(p, qf, sK);
        rows_times_tile_t<T, D>(dp, of, sV);
        const bool mask = k0 + FA_TILE > T_ || (causal && k0 + FA_TILE > wrow);
#pragma unroll
        for (int n = 0; n < FA_TILE / 8; n++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = e >> 1, col = k0 + n * 8 + 2 * t + (e & 1), row = wrow + g + 8 * r;
                float pv = fast_exp2(p[n][e] * sl2 - L[r]);
                if (mask && (col >= T_ || (causal && col > row))) pv = 0.0f;
                dp[n][e] = pv * (dp[n][e] - Dl[r]);
            }
        uint32_t a[FA_TILE / 16][4];
        to_a_frags<T>(a, dp);
        p_times_tile<T, D>(dq, a, sK);
        __syncthreads(); /* sm[cur] is loaded again two tiles on */
    }
    store_rows<T, D>(dqkv + (size_t)b * T_ * ld, ld, h * D, wrow, T_, dq, scale, scale);
}

/* ---- launchers ------------------------------------------------------------------------------ */

/* Sequences per launch: gridDim.y (sequences x heads) is at most 65535. */
static int seqs_per_launch(int H) { return 65535 / H; }

template <typename T, int D>
static cudaError_t forward_typed(void *out, float *lse, const void *qkv, int B, int T_, int C, int H, int causal,
                                 cudaStream_t s)
{
    const float sl2 = 1.4426950408889634f / sqrtf((float)D);
    for (int b0 = 0; b0 < B; b0 += seqs_per_launch(H)) {
        const int nb = min(seqs_per_launch(H), B - b0);
        fa_forward<T, D><<<dim3(tiles(T_), nb * H), FA_THREADS, 0, s>>>(
            (T *)out + (size_t)b0 * T_ * C, lse + (size_t)b0 * H * T_, (const T *)qkv + (size_t)b0 * T_ * 3 * C, T_, H,
            C, causal, sl2);
    }
    return cudaGetLastError();
}

/* The scratch: delta (B T H floats), then from the next 128-byte boundary the Hopper
 * one-kernel scheme's dq_accum (B H T 64 floats) and its semaphores (B H ceil(T / 64) ints). */
static size_t dq_accum_offset(int B, int T_, int H) { return ((size_t)B * T_ * H + 31) / 32 * 32; }
static size_t dq_accum_floats(int B, int T_, int H) { return (size_t)B * H * T_ * 64; }
extern "C" size_t cuda_flash_attention_scratch_floats(int B, int T_, int H)
{
    return dq_accum_offset(B, T_, H) + dq_accum_floats(B, T_, H) + (size_t)B * H * ((T_ + 63) / 64);
}

/* delta, then dK dV and dQ: the FA2 kernels, or the Hopper ones where `sm90` (2: the
 * one-kernel scheme) */
template <typename T, int D>
static cudaError_t backward_typed(void *dqkv, const void *dout, const void *out, const void *qkv, const float *lse,
                                  float *delta, int B, int T_, int C, int H, int causal, int sm90, cudaStream_t s)
{
    const float scale = 1.0f / sqrtf((float)D), sl2 = 1.4426950408889634f * scale;
    const size_t warps = (size_t)B * T_ * H;
    fa_delta<T, D><<<(unsigned)((warps * 32 + 255) / 256), 256, 0, s>>>(delta, (const T *)out, (const T *)dout, B, T_,
                                                                      H, C);
    if (sm90) {
        float *dq_accum = delta + dq_accum_offset(B, T_, H);
        int *dq_sem = (int *)(dq_accum + dq_accum_floats(B, T_, H));
        return fa_sm90_backward(dqkv, dout, qkv, lse, delta, dq_accum, dq_sem, B, T_, C, H, causal, sm90 == 2,
                                dtype_of<T>(), s);
    }
    for (int b0 = 0; b0 < B; b0 += seqs_per_launch(H)) {
        const int nb = min(seqs_per_launch(H), B - b0);
        const size_t x3 = (size_t)b0 * T_ * 3 * C, x1 = (size_t)b0 * T_ * C, r = (size_t)b0 * H * T_;
        const dim3 grid(tiles(T_), nb * H);
        fa_backward_dkdv<T, D><<<grid, FA_THREADS, 0, s>>>((T *)dqkv + x3, (const T *)qkv + x3, (const T *)dout + x1,
                                                           lse + r, delta + r, T_, H, C, causal, sl2, scale);
        fa_backward_dq<T, D><<<grid, FA_THREADS, 0, s>>>((T *)dqkv + x3, (const T *)qkv + x3, (const T *)dout + x1,
                                                         lse + r, delta + r, T_, H, C, causal, sl2, scale);
    }
    return cudaGetLastError();
}

/* the head dimension and 16-bit type known only at run time */
#define FA_DISPATCH(dtype, D, F, ...)                                                              \
    ((dtype) == DT_BF16 ? ((D) == 32 ? F<__nv_bfloat16, 32>(__VA_ARGS__) : F<__nv_bfloat16, 64>(__VA_ARGS__)) \
                        : ((D) == 32 ? F<__half, 32>(__VA_ARGS__) : F<__half, 64>(__VA_ARGS__)))


/* ---- which backward ------------------------------------------------------------------------ */

/* Whether the current device has compute capability 9.0 (the sm_90a kernels' one target),
 * asked once per device. */
static int device_is_sm90(void)
{
    static int known[64]; /* per device ordinal: 0 not asked yet, 1 no, 2 yes */
    int dev = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return 0;
    if (dev >= 0 && dev < 64 && known[dev]) return known[dev] == 2;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess)
        return 0;
    const int yes = major == 9 && minor == 0;
    if (dev >= 0 && dev < 64) known[dev] = yes ? 2 : 1;
    return yes;
}

/* DPSCALE_FLASH_FORWARD=fa2 (DPSCALE_FLASH_BACKWARD=fa2) keeps the FA2 kernels everywhere
 * for that direction; each read once */
static int env_wants_fa2(int backward)
{
    static int v[2] = {-1, -1};
    return env_switch(&v[backward], backward ? "DPSCALE_FLASH_BACKWARD" : "DPSCALE_FLASH_FORWARD", "fa2");
}

extern "C" int cuda_flash_attention_sm90_applies(const void *dqkv, const void *dout, const void *qkv,
                                                 const float *lse, const float *scratch, int B, int T_, int C, int H,
                                                 int dtype)
{
    return H > 0 && C % H == 0 && fa_sm90_backward_takes(dtype, C / H, dqkv, dout, qkv, lse, scratch, B, T_, C, H) &&
           device_is_sm90();
}

/* DPSCALE_FLASH_DQ=accumulate picks the Hopper backward's one-kernel scheme; read once */
static int env_wants_dq_accumulate(void)
{
    static int v = -1;
    return env_switch(&v, "DPSCALE_FLASH_DQ", "accumulate");
}

/* whether the kernels named (AUTO: by the rule and the environment) are the Hopper ones:
 * 0 no, 1 yes, 2 the backward's one-kernel scheme; -1 where SM90 is asked for and they do
 * not apply */
static int use_sm90(enum flash_kernels which, int applies, int backward)
{
    if (which == FLASH_KERNELS_SM90 || which == FLASH_KERNELS_SM90_ACCUMULATE)
        return !applies ? -1 : backward && which == FLASH_KERNELS_SM90_ACCUMULATE ? 2 : 1;
    if (which != FLASH_KERNELS_AUTO || !applies || env_wants_fa2(backward)) return 0;
    return backward && env_wants_dq_accumulate() ? 2 : 1;
}

extern "C" cudaError_t cuda_flash_attention_forward_using(enum flash_kernels which, void *out, float *lse,
                                                          const void *qkv, int B, int T_, int C, int H, int causal,
                                                          int dtype, cudaStream_t s)
{
    if (H <= 0 || C % H != 0 || !flash_attention_supports(dtype, C / H)) return cudaErrorInvalidValue;
    const int D = C / H;
    const int sm90 = use_sm90(which, fa_sm90_forward_takes(dtype, D, out, lse, qkv, B, T_, C, H) && device_is_sm90(), 0);
    if (sm90 < 0) return cudaErrorNotSupported;
    if (sm90) return fa_sm90_forward(out, lse, qkv, B, T_, C, H, causal, dtype, s);
    return FA_DISPATCH(dtype, D, forward_typed, out, lse, qkv, B, T_, C, H, causal, s);
}

extern "C" cudaError_t cuda_flash_attention_forward(void *out, float *lse, const void *qkv, int B, int T_, int C,
                                                    int H, int causal, int dtype, cudaStream_t s)
{
    return cuda_flash_attention_forward_using(FLASH_KERNELS_AUTO, out, lse, qkv, B, T_, C, H, causal, dtype, s);
}

extern "C" cudaError_t cuda_flash_attention_backward_using(enum flash_kernels which, void *dqkv, const void *dout,
                                                           const void *out, const void *qkv, const float *lse,
                                                           float *scratch, int B, int T_, int C, int H, int causal,
                                                           int dtype, cudaStream_t s)
{
    if (H <= 0 || C % H != 0 || !flash_attention_supports(dtype, C / H)) return cudaErrorInvalidValue;
    const int D = C / H;
    const int sm90 = use_sm90(which, cuda_flash_attention_sm90_applies(dqkv, dout, qkv, lse, scratch, B, T_, C, H, dtype), 1);
    if (sm90 < 0) return cudaErrorNotSupported;
    return FA_DISPATCH(dtype, D, backward_typed, dqkv, dout, out, qkv, lse, scratch, B, T_, C, H, causal, sm90, s);
}

extern "C" cudaError_t cuda_flash_attention_backward(void *dqkv, const void *dout, const void *out, const void *qkv,
                                                     const float *lse, float *scratch, int B, int T_, int C, int H,
                                                     int causal, int dtype, cudaStream_t s)
{
    return cuda_flash_attention_backward_using(FLASH_KERNELS_AUTO, dqkv, dout, out, qkv, lse, scratch, B, T_, C, H,
                                               causal, dtype, s);
}

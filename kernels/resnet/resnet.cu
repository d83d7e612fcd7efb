/* resnet.cu — the ResNet's window operations on the GPU (semantics: the CPU reference,
 * resnet_cpu.h): im2col and its adjoint col2im, max pooling with its argmax and
 * backward, global average pooling and its backward, and the synthetic images
 * (synthetic_images.h, the same pure function of (seed, sample) as the CPU's, so both
 * backends see the same bits). Batch norm is batchnorm.cu's, and so is the residual add
 * with ReLU, fused into a bottleneck's last batch norm.
 *
 * NHWC: a pixel's C channels are contiguous, so a thread moves 16 bytes of one pixel
 * (V = 16 / sizeof(T) channels) where C is a multiple of V and the pointers are 16-byte
 * aligned, else one channel (V = 1); im2col, a pure copy, moves the widest unit of
 * bytes that divides a pixel (and the pointers), a warp's lanes along a col row, each
 * lane walking the window's taps by additions; where that unit would be under 8 bytes
 * (the stem's C = 3, odd C, a pointer off alignment) it writes the flat col array in
 * 16-byte chunks instead, gathering their elements one by one. Every backward is a
 * gather: an input element adds the entries that read it in the CPU's order (col2im:
 * taps r, then s; max pool: windows p, then q), in fp32, and writes once. No atomics:
 * the same bits on every run, and in fp32 the same bits as the CPU.
 *
 * Performance, next steps (correctness first here; the GEMMs are cuBLASLt's):
 * - A 1x1 stride-1 convolution already needs no im2col (its input is its col). Done: the
 *   3x3s' forwards and input gradients as CUTLASS implicit GEMMs (conv_sm90.h), their
 *   weight gradients too where the reduction is long (conv_wgrad_sm80.h: the first two
 *   stages). What still goes through col: the stem (col rows padded to 152 elements, 16-byte
 *   aligned for its GEMMs, and kept from forward for its weight gradient), the strided 1x1
 *   shortcuts, the later stages' weight gradients (cuBLASLt on their small col won) and
 *   the strided 3x3s' input gradients (CUTLASS's Hopper dgrad has no strided form).
 * - Fuse batch norm's statistics into the convolution GEMM's epilogue (per-column sums
 *   and sums of squares of the output tile, fp32 partials per tile row: batchnorm.cu's
 *   partial pass for free), and its normalisation + ReLU into the next GEMM's prologue
 *   or an epilogue of the same kernel once the statistics are known.
 * - Backward: dgamma / dbeta's sums from the dgrad GEMM's epilogue. Done: the block's
 *   ReLU backward joined to bn3's and the projection's backward passes (its mask as bits,
 *   batchnorm.cu).
 * - Done: a bottleneck's last batch norm, its projection shortcut's and the residual add
 *   with ReLU in one element-wise pass (batchnorm.cu: the output written once, not
 *   written and read back by the add; the projection's output never stored), and batch
 *   norm's backward recomputing its ReLU's mask from x and the statistics, bit for bit
 *   the stored output's, instead of reading that output in both of its passes.
 * - Done: im2col and col2im find a thread's window once, by multiply-high divisions
 *   (fast_div: the divisors are run-time shape values, and a true division is ~20
 *   instructions; the first versions did ~10 per 16 bytes copied and ran at a third of
 *   an H200's bandwidth, taken to be instruction-bound), then walk taps and channels by
 *   additions; im2col keeps IM2COL_TAPS loads in flight per thread, col2im counts its
 *   taps up front (no per-tap modulo), COL2IM_TAPS loads in flight, in the CPU's order.
 *   The stem (C = 3: 6-byte pixels, once copied 2 bytes at a time) writes whole 16-byte
 *   chunks of col (im2col_flat_kernel).
 * - Left: the stem's gathers are still 2-byte loads (L1 hits mostly); padding the images
 *   to 4 channels (an 8-byte pixel) would make them 8-byte, at 33 % more col.
 * - CUDA graphs for the step: ResNet-50 launches ~300 small kernels a step. */
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "kernels/dtype_cuda.cuh"
#include "kernels/resnet/resnet_cpu.h" /* MAXPOOL_TAPS */
#include "kernels/resnet/resnet_kernels.h"
#include "kernels/resnet/synthetic_images.h"
#include "kernels/vector_cuda.cuh"

#define RN_THREADS 256

/* ---- im2col and col2im ---------------------------------------------------------------- */

/* n / d for 0 <= n < 2^31 and 1 <= d < 2^31 by a multiply-high, an add and a shift, for
 * divisors known only at run time (the GPU has no integer divide: n / d is a ~20-instruction
 * sequence): the round-up method of PyTorch's IntDivider. With s = ceil(log2 d) and
 * m = floor(2^32 (2^s - d) / d) + 1, n / d = (umulhi(n, m) + n) >> s, exact for every
 * n < 2^31 (the sum then fits 32 bits). */
struct fast_div {
    unsigned m, s;
    __device__ __forceinline__ int div(int n) const
    {
        return (int)((__umulhi((unsigned)n, m) + (unsigned)n) >> s);
    }
};

static fast_div make_fast_div(int d)
{
    fast_div f;
    if (d < 1) d = 1; /* a degenerate shape's, never divided by */
    f.s = 0;
    while ((1ull << f.s) < (unsigned long long)d) f.s++;
    f.m = (unsigned)(((1ull << 32) * ((1ull << f.s) - (unsigned long long)d)) / (unsigned long long)d + 1);
    return f;
}

/* col[(n P + p) Q + q][(r S + s) C + c] = x[n][p stride - pad + r][q stride - pad + s][c], or
 * zero bits (0.0 in every dtype) in the padding; U: the unit of bytes a thread copies, a
 * pixel CU units, a col row LU units apart (zeros past its R S CU). A block holds `rows`
 * output rows (256 / CU of them, or one when CU > 256): thread t copies unit t % CU of
 * row t / CU (and every 256th unit after it) for every tap, so a warp's stores are whole
 * runs of CU units of a col row per tap, its loads whole runs of a pixel. The window's
 * position is found once per thread; the taps advance by additions, IM2COL_TAPS loads in
 * flight before their stores. */
#define IM2COL_TAPS 3

template <typename U>
__global__ void __launch_bounds__(RN_THREADS) im2col_rows_kernel(U *__restrict__ col, const U *__restrict__ x,
                                                                 struct conv_shape s, int CU, int LU, int rows,
                                                                 fast_div cu_div, fast_div q_div, fast_div p_div)
{
    const int t = (int)threadIdx.x, lr = CU <= RN_THREADS ? cu_div.div(t) : 0;
    const int m = (int)blockIdx.x * rows + lr, RS = s.R * s.S;
    if (lr >= rows || m >= s.N * s.P * s.Q) return;
    const int np = q_div.div(m), q = m - np * s.Q, n = p_div.div(np), p = np - n * s.P;
    const int h0 = p * s.stride - s.pad, w0 = q * s.stride - s.pad;
    const U *xn = x + (size_t)n * s.H * s.W * CU;
    U *cm = col + (size_t)m * LU;
    for (int u = RS * CU + t - lr * CU; u < LU; u += min(CU, RN_THREADS)) cm[u] = U{}; /* the row's padding */
    for (int cu = t - lr * CU; cu < CU; cu += RN_THREADS) {
        int r = 0, ts = 0; /* the tap (r, ts) of slot b of each group */
        for (int tap0 = 0; tap0 < RS; tap0 += IM2COL_TAPS) {
            U v[IM2COL_TAPS];
#pragma unroll
            for (int b = 0; b < IM2COL_TAPS; b++) {
                const int h = h0 + r, w = w0 + ts;
                v[b] = U{};
                if (tap0 + b < RS && (unsigned)h < (unsigned)s.H && (unsigned)w < (unsigned)s.W)
                    v[b] = xn[(size_t)(h * s.W + w) * CU + cu];
                if (++ts == s.S) ts = 0, r++;
            }
#pragma unroll
            for (int b = 0; b < IM2COL_TAPS; b++)
                if (tap0 + b < RS) cm[(size_t)(tap0 + b) * CU + cu] = v[b];
        }
    }
}

template <typename U>
static void launch_im2col_rows(void *col, const void *x, const struct conv_shape *s, int CU, int LU, cudaStream_t st)
{
    const int M = s->N * s->P * s->Q, rows = CU <= RN_THREADS ? RN_THREADS / CU : 1;
    const int blocks = (M + rows - 1) / rows;
    const fast_div cu_div = make_fast_div(CU), q_div = make_fast_div(s->Q), p_div = make_fast_div(s->P);
    if (M > 0)
        im2col_rows_kernel<U><<<blocks, RN_THREADS, 0, st>>>((U *)col, (const U *)x, *s, CU, LU, rows, cu_div,
                                                             q_div, p_div);
}

/* The same copy for pixels of no whole 8-byte unit (the stem's 3 channels, odd C, a
 * pointer off alignment): the col array, flat (total = M LD elements, LD its row pitch,
 * < 2^31), in chunks W of E = sizeof(W) / sizeof(T) elements (16 bytes where col is
 * 16-byte aligned), a chunk per thread: the (m, k) of its first element found once, then
 * k stepped element by element (c, then the tap's s and r; at LD the row's q, p and n),
 * each element a gather of one T from x or zero (the padding, and k >= K); the last
 * chunk, partial, stored element by element. */
template <typename T, typename W>
__global__ void __launch_bounds__(RN_THREADS) im2col_flat_kernel(W *__restrict__ col, const T *__restrict__ x,
                                                                 struct conv_shape s, int total, fast_div k_div,
                                                                 fast_div c_div, fast_div s_div, fast_div q_div,
                                                                 fast_div p_div)
{
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "2- or 4-byte elements");
    constexpr int E = sizeof(W) / sizeof(T);
    const int g = (int)(blockIdx.x * RN_THREADS + threadIdx.x), e0 = g * E;
    if (e0 >= total) return;
    const int K = s.R * s.S * s.C, LD = conv_col_ld(&s);
    const int m = k_div.div(e0);
    int k = e0 - m * LD;
    const int tap = c_div.div(k);
    int c = k - tap * s.C, r = s_div.div(tap), ts = tap - r * s.S;
    const int np = q_div.div(m);
    int q = m - np * s.Q, n = p_div.div(np), p = np - n * s.P;
    int h0 = p * s.stride - s.pad, w0 = q * s.stride - s.pad;
    const size_t image = (size_t)s.H * s.W * s.C;
    const T *xn = x + (size_t)n * image;
    unsigned wd[(sizeof(W) + 3) / 4] = {}; /* the chunk's bits, element i at bits 8 sizeof(T) i on */
#pragma unroll
    for (int i = 0; i < E; i++) {
        const int h = h0 + r, w = w0 + ts;
        T v{};
        if (e0 + i < total && k < K && (unsigned)h < (unsigned)s.H && (unsigned)w < (unsigned)s.W)
            v = xn[(size_t)(h * s.W + w) * s.C + c];
        if constexpr (sizeof(T) == 2) wd[i / 2] |= (unsigned)v << (16 * (i % 2));
        else wd[i] = (unsigned)v;
        if (++k == LD) { /* the next row: its first tap */
            k = c = ts = r = 0;
            if (++q == s.Q) {
                q = 0;
                if (++p == s.P) p = 0, xn += image;
                h0 = p * s.stride - s.pad;
            }
            w0 = q * s.stride - s.pad;
        } else if (++c == s.C) { /* past K (the padding), r runs on: k < K fails first */
            c = 0;
            if (++ts == s.S) ts = 0, r++;
        }
    }
    if (e0 + E <= total) {
        if constexpr (sizeof(W) == 16) col[g] = make_uint4(wd[0], wd[1], wd[2], wd[3]);
        else if constexpr (sizeof(W) == 8) col[g] = make_uint2(wd[0], wd[1]);
        else col[g] = (W)wd[0];
    } else {
#pragma unroll
        for (int i = 0; i < E; i++)
            if (e0 + i < total) {
                if constexpr (sizeof(T) == 2) reinterpret_cast<T *>(col)[e0 + i] = (T)(wd[i / 2] >> (16 * (i % 2)));
                else reinterpret_cast<T *>(col)[e0 + i] = (T)wd[i];
            }
    }
}

template <typename T, typename W>
static void launch_im2col_flat_as(void *col, const void *x, const struct conv_shape *s, int total, cudaStream_t st)
{
    constexpr int E = sizeof(W) / sizeof(T);
    const int chunks = (total + E - 1) / E, blocks = (chunks + RN_THREADS - 1) / RN_THREADS;
    const fast_div k_div = make_fast_div(conv_col_ld(s)), c_div = make_fast_div(s->C), s_div = make_fast_div(s->S);
    const fast_div q_div = make_fast_div(s->Q), p_div = make_fast_div(s->P);
    if (total > 0)
        im2col_flat_kernel<T, W><<<blocks, RN_THREADS, 0, st>>>((W *)col, (const T *)x, *s, total, k_div, c_div, s_div,
                                                                q_div, p_div);
}

/* T: the element's bits (2 or 4 bytes); the chunk as wide as col's alignment allows */
template <typename T>
static void launch_im2col_flat(void *col, const void *x, const struct conv_shape *s, int total, cudaStream_t st)
{
    const uintptr_t a = (uintptr_t)col;
    if (a % 16 == 0) launch_im2col_flat_as<T, uint4>(col, x, s, total, st);
    else if (a % 8 == 0) launch_im2col_flat_as<T, uint2>(col, x, s, total, st);
    else launch_im2col_flat_as<T, T>(col, x, s, total, st);
}

extern "C" cudaError_t cuda_im2col(void *col, const void *x, const struct conv_shape *s, int dtype, cudaStream_t st)
{
    const size_t es = dtype_size(dtype), pixel = (size_t)s->C * es, row = (size_t)conv_col_ld(s) * es;
    const size_t total = (size_t)s->N * s->P * s->Q * conv_col_ld(s);
    /* the widest unit dividing all four */
    const uintptr_t a = (uintptr_t)col | (uintptr_t)x | (uintptr_t)pixel | (uintptr_t)row;
    if (a % 8 != 0 && (es == 2 || es == 4) && total <= (size_t)INT32_MAX - 16) {
        if (es == 2) launch_im2col_flat<uint16_t>(col, x, s, (int)total, st);
        else launch_im2col_flat<uint32_t>(col, x, s, (int)total, st);
    } else if (a % 16 == 0) launch_im2col_rows<uint4>(col, x, s, (int)(pixel / 16), (int)(row / 16), st);
    else if (a % 8 == 0) launch_im2col_rows<uint2>(col, x, s, (int)(pixel / 8), (int)(row / 8), st);
    else if (a % 4 == 0) launch_im2col_rows<uint32_t>(col, x, s, (int)(pixel / 4), (int)(row / 4), st);
    else launch_im2col_rows<uint16_t>(col, x, s, (int)(pixel / 2), (int)(row / 2), st);
    return cudaGetLastError();
}

/* dx[n][h][w][c] = the sum of the col entries that im2col copied x[n][h][w][c] to: the
 * windows (p, q) that cover (h, w) at tap (r, t), r then t ascending, as the CPU adds them.
 * h + pad = p stride + r: the taps r = r0, r0 + stride, ... (r0 = (h + pad) mod stride)
 * meet the windows p = (h + pad) / stride, one fewer each, those with 0 <= p < P and r <
 * R counted up front (the CPU's loop skips the rest); the same along w. */
#define COL2IM_TAPS 3
template <typename T, int V>
__global__ void __launch_bounds__(RN_THREADS) col2im_kernel(T *__restrict__ dx, const T *__restrict__ col,
                                                            struct conv_shape s, int rpb, fast_div cv_div,
                                                            fast_div w_div, fast_div h_div, fast_div stride_div)
{
    const int CV = s.C / V, NHW = s.N * s.H * s.W;
    const size_t K = (size_t)conv_col_ld(&s); /* a col row's pitch */
    /* col's step to the next tap of the window one before: t + stride at q - 1, r + stride at p - 1 */
    const ptrdiff_t dq = (ptrdiff_t)s.stride * s.C - (ptrdiff_t)K;
    const ptrdiff_t dp = (ptrdiff_t)s.stride * s.S * s.C - (ptrdiff_t)s.Q * K;
    const block_items b(NHW, CV, rpb);
    for (int i = threadIdx.x; i < b.count; i += RN_THREADS) {
        const int di = cv_div.div(i), pix = b.first + di, cv = i - di * CV;
        const int nh = w_div.div(pix), w = pix - nh * s.W, n = h_div.div(nh), h = nh - n * s.H;
        int p = stride_div.div(h + s.pad), r = h + s.pad - p * s.stride;
        int q = stride_div.div(w + s.pad), t = w + s.pad - q * s.stride;
        if (p >= s.P) r += (p - s.P + 1) * s.stride, p = s.P - 1;
        if (q >= s.Q) t += (q - s.Q + 1) * s.stride, q = s.Q - 1;
        const int nr = r < s.R ? min(p + 1, stride_div.div(s.R - r + s.stride - 1)) : 0;
        const int nt = t < s.S ? min(q + 1, stride_div.div(s.S - t + s.stride - 1)) : 0;
        float acc[V] = {};
        if (nr > 0 && nt > 0) {
            const T *cr = col + (((size_t)n * s.P + p) * s.Q + q) * K + ((size_t)r * s.S + t) * s.C + (size_t)cv * V;
            for (int ir = 0; ir < nr; ir++, cr += dp)
                for (int it0 = 0; it0 < nt; it0 += COL2IM_TAPS) {
                    /* COL2IM_TAPS loads issued before the first add (a slot past the last
                     * tap reloads the last one and adds nothing) */
                    float v[COL2IM_TAPS][V];
#pragma unroll
                    for (int j = 0; j < COL2IM_TAPS; j++) load_f32<V>(v[j], cr + min(it0 + j, nt - 1) * dq);
#pragma unroll
                    for (int j = 0; j < COL2IM_TAPS; j++)
                        if (it0 + j < nt) add_to<V>(acc, v[j]);
                }
        }
        store_f32<V>(dx + (size_t)pix * s.C + (size_t)cv * V, acc);
    }
}

template <typename T> static cudaError_t launch_col2im(void *dx, const void *col, const struct conv_shape *s, cudaStream_t st)
{
    /* V channels at once where C and col's row pitch hold whole vectors */
    with_vector_width<T>(conv_col_ld(s) % pack16<T>::N == 0 && vectors_fit<T>(s->C, dx, col), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const row_items g(s->N * s->H * s->W, s->C / V);
        const fast_div cv_div = make_fast_div(s->C / V), w_div = make_fast_div(s->W), h_div = make_fast_div(s->H);
        const fast_div stride_div = make_fast_div(s->stride);
        if (g.blocks > 0)
            col2im_kernel<T, V><<<g.blocks, RN_THREADS, 0, st>>>((T *)dx, (const T *)col, *s, g.rows_per_block, cv_div,
                                                                 w_div, h_div, stride_div);
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_col2im(void *dx, const void *col, const struct conv_shape *s, int dtype, cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_col2im, dx, col, s, st);
}

/* ---- max pooling ---------------------------------------------------------------------- */

/* The taps [*lo, *hi) of a window at output position o that fall inside [0, size). */
__device__ __forceinline__ void window_taps(int o, int stride, int pad, int R, int size, int *lo, int *hi)
{
    const int start = o * stride - pad;
    *lo = start < 0 ? -start : 0;
    *hi = start + R > size ? size - start : R;
}

/* V bytes (a window tap per channel): one 4- or 8-byte access when V fills it. */
template <int V> __device__ __forceinline__ void load_bytes(uint8_t (&a)[V], const uint8_t *p)
{
    if constexpr (V == 8 || V == 4) {
        using W = typename std::conditional<V == 8, uint2, unsigned>::type;
        const W w = *reinterpret_cast<const W *>(p);
        memcpy(a, &w, V);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) a[k] = p[k];
    }
}

template <int V> __device__ __forceinline__ void store_bytes(uint8_t *p, const uint8_t (&a)[V])
{
    if constexpr (V == 8 || V == 4) {
        using W = typename std::conditional<V == 8, uint2, unsigned>::type;
        W w;
        memcpy(&w, a, V);
        *reinterpret_cast<W *>(p) = w;
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) p[k] = a[k];
    }
}

/* y = the maximum of each window, argmax = the tap r S + t of its first maximum in (r, t)
 * order (a later tap must be strictly greater; a byte: a quarter of an int's traffic, in
 * the forward's stores and in every one of the backward's loads), the padding taking no part. */
template <typename T, int V>
__global__ void __launch_bounds__(RN_THREADS)
    maxpool_fwd_kernel(T *y, uint8_t *argmax, const T *x, struct conv_shape s, int rpb)
{
    const int CV = s.C / V, M = s.N * s.P * s.Q;
    const block_items b(M, CV, rpb);
    for (int i = threadIdx.x; i < b.count; i += RN_THREADS) {
        const int m = b.first + i / CV, cv = i % CV;
        const int q = m % s.Q, np = m / s.Q, p = np % s.P, n = np / s.P;
        int r0, r1, t0, t1;
        window_taps(p, s.stride, s.pad, s.R, s.H, &r0, &r1);
        window_taps(q, s.stride, s.pad, s.S, s.W, &t0, &t1);
        float best[V] = {};
        uint8_t at[V] = {};
        for (int r = r0; r < r1; r++)
            for (int t = t0; t < t1; t++) {
                const int h = p * s.stride - s.pad + r, w = q * s.stride - s.pad + t;
                float v[V];
                load_f32<V>(v, x + (((size_t)n * s.H + h) * s.W + w) * s.C + (size_t)cv * V);
#pragma unroll
                for (int k = 0; k < V; k++)
                    if ((r == r0 && t == t0) || v[k] > best[k]) {
                        best[k] = v[k];
                        at[k] = (uint8_t)(r * s.S + t);
                    }
            }
        const size_t o = (size_t)m * s.C + (size_t)cv * V;
        store_f32<V>(y + o, best);
        store_bytes<V>(argmax + o, at);
    }
}

/* dx[n][h][w][c] = the sum of dy over the windows (p, then q ascending) whose maximum
 * x[n][h][w][c] was: a gather over the windows that hold (h, w). */
template <typename T, int V>
__global__ void __launch_bounds__(RN_THREADS)
    maxpool_bwd_kernel(T *dx, const T *dy, const uint8_t *argmax, struct conv_shape s, int rpb)
{
    const int CV = s.C / V, NHW = s.N * s.H * s.W;
    const block_items b(NHW, CV, rpb);
    for (int i = threadIdx.x; i < b.count; i += RN_THREADS) {
        const int pix = b.first + i / CV, cv = i % CV;
        const int w = pix % s.W, nh = pix / s.W, h = nh % s.H, n = nh / s.H;
        /* the output rows p whose windows hold row h: p stride - pad <= h <= p stride - pad + R - 1 */
        const int above = h + s.pad - s.R + 1, left = w + s.pad - s.S + 1;
        const int p0 = above <= 0 ? 0 : (above + s.stride - 1) / s.stride, p1 = min((h + s.pad) / s.stride, s.P - 1);
        const int q0 = left <= 0 ? 0 : (left + s.stride - 1) / s.stride, q1 = min((w + s.pad) / s.stride, s.Q - 1);
        float acc[V] = {};
        for (int p = p0; p <= p1; p++)
            for (int q = q0; q <= q1; q++) {
                const int at = (h - (p * s.stride - s.pad)) * s.S + (w - (q * s.stride - s.pad)); /* (h, w)'s tap */
                const size_t o = (((size_t)n * s.P + p) * s.Q + q) * s.C + (size_t)cv * V;
                float d[V];
                uint8_t am[V];
                load_f32<V>(d, dy + o);
                load_bytes<V>(am, argmax + o);
#pragma unroll
                for (int k = 0; k < V; k++)
                    if (am[k] == at) acc[k] += d[k];
            }
        store_f32<V>(dx + (size_t)pix * s.C + (size_t)cv * V, acc);
    }
}

template <typename T>
static cudaError_t launch_maxpool_fwd(void *y, uint8_t *argmax, const void *x, const struct conv_shape *s,
                                      cudaStream_t st)
{
    if ((long)s->R * s->S > MAXPOOL_TAPS) return cudaErrorInvalidValue; /* a tap per byte */
    with_vector_width<T>(vectors_fit<T>(s->C, y, x, argmax), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const row_items g(s->N * s->P * s->Q, s->C / V);
        if (g.blocks > 0)
            maxpool_fwd_kernel<T, V><<<g.blocks, RN_THREADS, 0, st>>>((T *)y, argmax, (const T *)x, *s, g.rows_per_block);
    });
    return cudaGetLastError();
}

template <typename T>
static cudaError_t launch_maxpool_bwd(void *dx, const void *dy, const uint8_t *argmax, const struct conv_shape *s,
                                      cudaStream_t st)
{
    if ((long)s->R * s->S > MAXPOOL_TAPS) return cudaErrorInvalidValue;
    with_vector_width<T>(vectors_fit<T>(s->C, dx, dy, argmax), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const row_items g(s->N * s->H * s->W, s->C / V);
        if (g.blocks > 0)
            maxpool_bwd_kernel<T, V><<<g.blocks, RN_THREADS, 0, st>>>((T *)dx, (const T *)dy, argmax, *s,
                                                                      g.rows_per_block);
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_maxpool_forward(void *y, uint8_t *argmax, const void *x, const struct conv_shape *s, int dtype,
                                            cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_maxpool_fwd, y, argmax, x, s, st);
}

extern "C" cudaError_t cuda_maxpool_backward(void *dx, const void *dy, const uint8_t *argmax, const struct conv_shape *s,
                                             int dtype, cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_maxpool_bwd, dx, dy, argmax, s, st);
}

/* ---- global average pooling ----------------------------------------------------------- */

/* y[n][c] = (the sum of x[n HW + i][c] over i in order) / HW: a thread per image and
 * channel vector; neighbouring threads read neighbouring channels of the same row. */
template <typename T, int V> __global__ void avgpool_fwd_kernel(T *y, const T *x, int N, int HW, int C, float inv)
{
    const int CV = C / V, item = blockIdx.x * blockDim.x + threadIdx.x;
    if (item >= N * CV) return;
    const int n = item / CV, cv = item % CV;
    const T *xn = x + (size_t)n * HW * C + (size_t)cv * V;
    float acc[V] = {};
    for (int i = 0; i < HW; i++) {
        float v[V];
        load_f32<V>(v, xn + (size_t)i * C);
        add_to<V>(acc, v);
    }
#pragma unroll
    for (int k = 0; k < V; k++) acc[k] *= inv;
    store_f32<V>(y + (size_t)n * C + (size_t)cv * V, acc);
}

/* dx[n HW + i][c] = dy[n][c] / HW */
template <typename T, int V> __global__ void avgpool_bwd_kernel(T *dx, const T *dy, int N, int HW, int C, float inv, int rpb)
{
    const int CV = C / V;
    const block_items b(N * HW, CV, rpb);
    for (int i = threadIdx.x; i < b.count; i += RN_THREADS) {
        const int row = b.first + i / CV, cv = i % CV;
        float v[V];
        load_f32<V>(v, dy + (size_t)(row / HW) * C + (size_t)cv * V);
#pragma unroll
        for (int k = 0; k < V; k++) v[k] *= inv;
        store_f32<V>(dx + (size_t)row * C + (size_t)cv * V, v);
    }
}

template <typename T> static cudaError_t launch_avgpool_fwd(void *y, const void *x, int N, int HW, int C, cudaStream_t st)
{
    const float inv = 1.0f / (float)HW;
    with_vector_width<T>(vectors_fit<T>(C, y, x), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const int items = N * (C / V);
        if (items > 0)
            avgpool_fwd_kernel<T, V><<<(items + RN_THREADS - 1) / RN_THREADS, RN_THREADS, 0, st>>>((T *)y, (const T *)x,
                                                                                                N, HW, C, inv);
    });
    return cudaGetLastError();
}

template <typename T> static cudaError_t launch_avgpool_bwd(void *dx, const void *dy, int N, int HW, int C, cudaStream_t st)
{
    const float inv = 1.0f / (float)HW;
    with_vector_width<T>(vectors_fit<T>(C, dx, dy), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const row_items g(N * HW, C / V);
        if (g.blocks > 0)
            avgpool_bwd_kernel<T, V><<<g.blocks, RN_THREADS, 0, st>>>((T *)dx, (const T *)dy, N, HW, C, inv,
                                                                      g.rows_per_block);
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_avgpool_forward(void *y, const void *x, int N, int HW, int C, int dtype, cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_avgpool_fwd, y, x, N, HW, C, st);
}

extern "C" cudaError_t cuda_avgpool_backward(void *dx, const void *dy, int N, int HW, int C, int dtype, cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_avgpool_bwd, dx, dy, N, HW, C, st);
}

/* ---- the synthetic images ------------------------------------------------------------- */

/* x[b][h][w][c] = synth_pixel(...) of sample first + b, rounded once to T; labels[b] by
 * the image's first block. Images along the grid's y, a block's threads V elements each
 * (16-byte stores where the image is whole vectors). A block makes its image's two keys
 * once and its class's colours into shared memory (SYNTH_TILES^2 C of them, when they fit
 * in SYNTH_COLOURS), so an element costs one mix, not nine and two 64-bit divisions: the
 * pass was 0.6 ms of ResNet-50's step at batch 256, compute-bound on the hash. */
#define SYNTH_COLOURS 4096

template <typename T, int V>
__global__ void __launch_bounds__(RN_THREADS)
    synth_images_kernel(T *x, int *labels, uint64_t first, int B, int H, int W, int C, int classes, uint64_t seed)
{
    __shared__ float colours[SYNTH_COLOURS];
    const int ncolours = SYNTH_TILES * SYNTH_TILES * C;
    const bool table = ncolours <= SYNTH_COLOURS;
    const size_t image = (size_t)H * W * C;
    for (int b = blockIdx.y; b < B; b += gridDim.y) {
        const uint64_t sample = first + (uint64_t)b;
        const int label = synth_label(seed, sample, classes);
        if (blockIdx.x == 0 && threadIdx.x == 0) labels[b] = label;
        const uint64_t ck = synth_colour_key(seed, label), nk = synth_noise_key(seed, sample);
        __syncthreads(); /* the last image's colours read */
        if (table)
            for (int i = threadIdx.x; i < ncolours; i += blockDim.x)
                colours[i] = synth_uniform(synth_mix(ck + (uint64_t)i)); /* synth_colour of tile i / C, channel i % C */
        __syncthreads();
        T *xb = x + (size_t)b * image;
        for (size_t e0 = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) * V; e0 < image;
             e0 += (size_t)gridDim.x * blockDim.x * V) {
            int c = (int)(e0 % C);
            const int hw = (int)(e0 / C);
            int w = hw % W, h = hw / W, tile = synth_tile(h, w, H, W);
            float v[V];
#pragma unroll
            for (int k = 0; k < V; k++) {
                v[k] = (table ? colours[tile * C + c] : synth_colour(ck, tile, c, C)) + synth_noise(nk, e0 + k);
                if (++c == C) {
                    c = 0;
                    if (++w == W) w = 0, h++;
                    tile = synth_tile(h, w, H, W);
                }
            }
            store_f32<V>(xb + e0, v);
        }
    }
}

template <typename T>
static cudaError_t launch_synth_images(void *x, int *labels, uint64_t first, int B, int H, int W, int C, int classes,
                                       uint64_t seed, cudaStream_t st)
{
    const size_t image = (size_t)H * W * C;
    if (B <= 0 || image == 0) return cudaSuccess;
    if (image > (size_t)INT32_MAX) return cudaErrorInvalidValue; /* the pixel index is an int */
    with_vector_width<T>(aligned16(x) && image % pack16<T>::N == 0,
                         [&](auto v) {
                             constexpr int V = decltype(v)::value;
                             const dim3 grid(blocks_for((image + V - 1) / V, RN_THREADS, 1024), B < 65535 ? B : 65535);
                             synth_images_kernel<T, V>
                                 <<<grid, RN_THREADS, 0, st>>>((T *)x, labels, first, B, H, W, C, classes, seed);
                         });
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_synth_images(void *x, int *labels, uint64_t first_sample, int B, int H, int W, int C,
                                         int classes, uint64_t seed, int dtype, cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_synth_images, x, labels, first_sample, B, H, W, C, classes, seed, st);
}

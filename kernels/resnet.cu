/* resnet.cu — the ResNet's window operations on the GPU (semantics: the CPU reference,
 * resnet_cpu.h): im2col and its adjoint col2im, max pooling with its argmax and
 * backward, global average pooling and its backward, and the synthetic images
 * (synthetic.h, the same pure function of (seed, sample) as the CPU's, so both backends
 * see the same bits). Batch norm is batchnorm.cu's; the residual add with ReLU is
 * transformer.cu's add kernel with a ReLU (cuda_add_relu).
 *
 * NHWC: a pixel's C channels are contiguous, so a thread moves 16 bytes of one pixel
 * (V = 16 / sizeof(T) channels) where C is a multiple of V and the pointers are 16-byte
 * aligned, else one channel (V = 1); im2col, a pure copy, moves the widest unit of
 * bytes that divides a pixel. Every backward is a gather: an input element adds the
 * entries that read it in the CPU's order (col2im: taps r, then s; max pool: windows p,
 * then q), in fp32, and writes once. No atomics: the same bits on every run, and in fp32
 * the same bits as the CPU.
 *
 * Performance, next steps (correctness first here; the GEMMs are cuBLASLt's):
 * - A 1x1 stride-1 convolution already needs no im2col (its input is its col). The
 *   3x3s (and the strided 1x1 shortcuts, and the stem) materialise col: 9x the
 *   activation written, then read by the GEMM. An implicit GEMM (CUTLASS's or cuDNN's
 *   NHWC convolutions, or our own with the window gathered into shared memory by
 *   cp.async / TMA im2col mode) removes that traffic, forward and for dgrad / wgrad.
 * - Fuse batch norm's statistics into the convolution GEMM's epilogue (per-column sums
 *   and sums of squares of the output tile, fp32 partials per tile row: batchnorm.cu's
 *   partial pass for free), and its normalisation + ReLU into the next GEMM's prologue
 *   or an epilogue of the same kernel once the statistics are known.
 * - Backward: dgamma / dbeta's sums from the dgrad GEMM's epilogue, and the ReLU mask,
 *   BN backward and residual add in one element-wise pass.
 * - The stem (C = 3) copies 2-byte units in im2col: pad the images to 4 or 8 channels,
 *   or a dedicated 7x7/2 kernel.
 * - CUDA graphs for the step: ResNet-50 launches ~300 small kernels a step. */
#include <stdint.h>

#include "dtype_cuda.cuh"
#include "kernels_cuda.h"
#include "synthetic.h"
#include "vector_cuda.cuh"

#define RN_THREADS 256

/* V ints (an argmax per channel): 16-byte loads and stores when V fills them. */
template <int V> __device__ __forceinline__ void load_ints(int (&a)[V], const int *p)
{
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int k = 0; k < V / 4; k++) {
            const int4 q = reinterpret_cast<const int4 *>(p)[k];
            a[4 * k] = q.x;
            a[4 * k + 1] = q.y;
            a[4 * k + 2] = q.z;
            a[4 * k + 3] = q.w;
        }
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) a[k] = p[k];
    }
}

template <int V> __device__ __forceinline__ void store_ints(int *p, const int (&a)[V])
{
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int k = 0; k < V / 4; k++)
            reinterpret_cast<int4 *>(p)[k] = make_int4(a[4 * k], a[4 * k + 1], a[4 * k + 2], a[4 * k + 3]);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++) p[k] = a[k];
    }
}

/* ---- im2col and col2im ---------------------------------------------------------------- */

/* col[(n P + p) Q + q][(r S + s) C + c] = x[n][p stride - pad + r][q stride - pad + s][c], or
 * zero bits (0.0 in every dtype) in the padding. U: the unit of bytes a thread copies; a
 * pixel is CU units. Item j of output row m is unit j of its K / CU: tap j / CU, unit j % CU. */
template <typename U>
__global__ void __launch_bounds__(RN_THREADS) im2col_kernel(U *col, const U *x, struct conv_shape s, int CU, int rpb)
{
    const int KU = s.R * s.S * CU, M = s.N * s.P * s.Q;
    const block_items b(M, KU, rpb);
    for (int i = threadIdx.x; i < b.count; i += RN_THREADS) {
        const int m = b.first + i / KU, j = i % KU, tap = j / CU, cu = j % CU;
        const int q = m % s.Q, np = m / s.Q, p = np % s.P, n = np / s.P;
        const int h = p * s.stride - s.pad + tap / s.S, w = q * s.stride - s.pad + tap % s.S;
        U v{};
        if (h >= 0 && h < s.H && w >= 0 && w < s.W) v = x[(((size_t)n * s.H + h) * s.W + w) * CU + cu];
        col[(size_t)m * KU + j] = v;
    }
}

template <typename U> static void launch_im2col(void *col, const void *x, const struct conv_shape *s, int CU, cudaStream_t st)
{
    const row_items g(s->N * s->P * s->Q, s->R * s->S * CU);
    if (g.blocks > 0) im2col_kernel<U><<<g.blocks, RN_THREADS, 0, st>>>((U *)col, (const U *)x, *s, CU, g.rows_per_block);
}

extern "C" cudaError_t cuda_im2col(void *col, const void *x, const struct conv_shape *s, int dtype, cudaStream_t st)
{
    const size_t pixel = (size_t)s->C * dtype_size(dtype);
    const uintptr_t a = (uintptr_t)col | (uintptr_t)x | (uintptr_t)pixel; /* the widest unit dividing all three */
    if (a % 16 == 0) launch_im2col<uint4>(col, x, s, (int)(pixel / 16), st);
    else if (a % 8 == 0) launch_im2col<uint2>(col, x, s, (int)(pixel / 8), st);
    else if (a % 4 == 0) launch_im2col<uint32_t>(col, x, s, (int)(pixel / 4), st);
    else launch_im2col<uint16_t>(col, x, s, (int)(pixel / 2), st);
    return cudaGetLastError();
}

/* dx[n][h][w][c] = the sum of the col entries that im2col copied x[n][h][w][c] to: the
 * windows (p, q) that cover (h, w) at tap (r, t), r then t ascending, as the CPU adds them. */
template <typename T, int V>
__global__ void __launch_bounds__(RN_THREADS) col2im_kernel(T *dx, const T *col, struct conv_shape s, int rpb)
{
    const int CV = s.C / V, NHW = s.N * s.H * s.W;
    const size_t K = (size_t)s.R * s.S * s.C;
    const block_items b(NHW, CV, rpb);
    for (int i = threadIdx.x; i < b.count; i += RN_THREADS) {
        const int pix = b.first + i / CV, cv = i % CV;
        const int w = pix % s.W, nh = pix / s.W, h = nh % s.H, n = nh / s.H;
        float acc[V] = {};
        for (int r = 0; r < s.R; r++) {
            const int hp = h + s.pad - r;
            if (hp < 0 || hp % s.stride != 0 || hp / s.stride >= s.P) continue;
            const int p = hp / s.stride;
            for (int t = 0; t < s.S; t++) {
                const int wq = w + s.pad - t;
                if (wq < 0 || wq % s.stride != 0 || wq / s.stride >= s.Q) continue;
                const int q = wq / s.stride;
                float v[V];
                load_f32<V>(v, col + (((size_t)n * s.P + p) * s.Q + q) * K + ((size_t)r * s.S + t) * s.C + (size_t)cv * V);
                add_to<V>(acc, v);
            }
        }
        store_f32<V>(dx + (size_t)pix * s.C + (size_t)cv * V, acc);
    }
}

template <typename T> static cudaError_t launch_col2im(void *dx, const void *col, const struct conv_shape *s, cudaStream_t st)
{
    with_vector_width<T>(vectors_fit<T>(s->C, dx, col), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const row_items g(s->N * s->H * s->W, s->C / V);
        if (g.blocks > 0) col2im_kernel<T, V><<<g.blocks, RN_THREADS, 0, st>>>((T *)dx, (const T *)col, *s, g.rows_per_block);
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

/* y = the maximum of each window, argmax = h W + w of its first maximum in (r, s) order
 * (a later tap must be strictly greater), the padding taking no part. */
template <typename T, int V>
__global__ void __launch_bounds__(RN_THREADS) maxpool_fwd_kernel(T *y, int *argmax, const T *x, struct conv_shape s, int rpb)
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
        int at[V] = {};
        for (int r = r0; r < r1; r++)
            for (int t = t0; t < t1; t++) {
                const int h = p * s.stride - s.pad + r, w = q * s.stride - s.pad + t;
                float v[V];
                load_f32<V>(v, x + (((size_t)n * s.H + h) * s.W + w) * s.C + (size_t)cv * V);
#pragma unroll
                for (int k = 0; k < V; k++)
                    if ((r == r0 && t == t0) || v[k] > best[k]) {
                        best[k] = v[k];
                        at[k] = h * s.W + w;
                    }
            }
        const size_t o = (size_t)m * s.C + (size_t)cv * V;
        store_f32<V>(y + o, best);
        store_ints<V>(argmax + o, at);
    }
}

/* dx[n][h][w][c] = the sum of dy over the windows (p, then q ascending) whose maximum
 * x[n][h][w][c] was: a gather over the windows that hold (h, w). */
template <typename T, int V>
__global__ void __launch_bounds__(RN_THREADS)
    maxpool_bwd_kernel(T *dx, const T *dy, const int *argmax, struct conv_shape s, int rpb)
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
        const int at = h * s.W + w;
        float acc[V] = {};
        for (int p = p0; p <= p1; p++)
            for (int q = q0; q <= q1; q++) {
                const size_t o = (((size_t)n * s.P + p) * s.Q + q) * s.C + (size_t)cv * V;
                float d[V];
                int am[V];
                load_f32<V>(d, dy + o);
                load_ints<V>(am, argmax + o);
#pragma unroll
                for (int k = 0; k < V; k++)
                    if (am[k] == at) acc[k] += d[k];
            }
        store_f32<V>(dx + (size_t)pix * s.C + (size_t)cv * V, acc);
    }
}

template <typename T>
static cudaError_t launch_maxpool_fwd(void *y, int *argmax, const void *x, const struct conv_shape *s, cudaStream_t st)
{
    with_vector_width<T>(vectors_fit<T>(s->C, y, x, argmax), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const row_items g(s->N * s->P * s->Q, s->C / V);
        if (g.blocks > 0)
            maxpool_fwd_kernel<T, V><<<g.blocks, RN_THREADS, 0, st>>>((T *)y, argmax, (const T *)x, *s, g.rows_per_block);
    });
    return cudaGetLastError();
}

template <typename T>
static cudaError_t launch_maxpool_bwd(void *dx, const void *dy, const int *argmax, const struct conv_shape *s,
                                      cudaStream_t st)
{
    with_vector_width<T>(vectors_fit<T>(s->C, dx, dy, argmax), [&](auto v) {
        constexpr int V = decltype(v)::value;
        const row_items g(s->N * s->H * s->W, s->C / V);
        if (g.blocks > 0)
            maxpool_bwd_kernel<T, V><<<g.blocks, RN_THREADS, 0, st>>>((T *)dx, (const T *)dy, argmax, *s,
                                                                      g.rows_per_block);
    });
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_maxpool_forward(void *y, int *argmax, const void *x, const struct conv_shape *s, int dtype,
                                            cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_maxpool_fwd, y, argmax, x, s, st);
}

extern "C" cudaError_t cuda_maxpool_backward(void *dx, const void *dy, const int *argmax, const struct conv_shape *s,
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
 * the thread of the image's first element. */
template <typename T>
__global__ void synth_images_kernel(T *x, int *labels, uint64_t first, int B, int H, int W, int C, int classes,
                                    uint64_t seed)
{
    const size_t image = (size_t)H * W * C, n = (size_t)B * image;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const int b = (int)(i / image), e = (int)(i % image);
        const int c = e % C, w = (e / C) % W, h = e / C / W;
        const uint64_t sample = first + (uint64_t)b;
        const int label = synth_label(seed, sample, classes);
        if (e == 0) labels[b] = label;
        x[i] = from_f32<T>(synth_pixel(seed, sample, label, h, w, c, H, W, C));
    }
}

template <typename T>
static cudaError_t launch_synth_images(void *x, int *labels, uint64_t first, int B, int H, int W, int C, int classes,
                                       uint64_t seed, cudaStream_t st)
{
    const size_t n = (size_t)B * H * W * C;
    if (n > 0)
        synth_images_kernel<T><<<blocks_for(n, RN_THREADS, 132 * 32), RN_THREADS, 0, st>>>((T *)x, labels, first, B, H, W,
                                                                                         C, classes, seed);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_synth_images(void *x, int *labels, uint64_t first_sample, int B, int H, int W, int C,
                                         int classes, uint64_t seed, int dtype, cudaStream_t st)
{
    return DISPATCH_DTYPE(dtype, launch_synth_images, x, labels, first_sample, B, H, W, C, classes, seed, st);
}

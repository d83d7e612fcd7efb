/* bias_grad.cu — the bias gradient, a column sum of dL/d(pre) [rows x cols], in
 * two deterministic passes: blocks sum a chunk of rows for 32 vectors of columns each
 * into partial[chunk][col], then one pass adds the chunks in a fixed order. No atomics,
 * so the result is the same on every run. A thread reads 16 bytes of a row at once
 * (V = 16 / sizeof(T) columns) when cols is a multiple of V and d is 16-byte aligned,
 * else one column (V = 1). The second pass is launched as the first's programmatic
 * dependent (dependent_launch.cuh): its blocks start as the first's finish. */
#include <stdint.h>

#include "kernels/dependent_launch.cuh"
#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"

#define BG_WARPS 8             /* a block of the partial pass: warp w adds rows w, w + 8, ... of its chunk */
#define BG_ROWS_PER_CHUNK 128
#define BG_SUM_WARPS 32        /* a block of the chunk sum: warp w adds chunks w, w + 32, ... */

static int chunks_for(int rows) { return (rows + BG_ROWS_PER_CHUNK - 1) / BG_ROWS_PER_CHUNK; }

extern "C" size_t cuda_bias_grad_scratch_floats(int rows, int cols) { return (size_t)chunks_for(rows) * cols; }

/* partial[chunk][col] = sum of d[r][col] over the chunk's rows. Block (x, chunk) owns the
 * 32 * V columns from x * 32 * V: lane l of every warp the V columns l * V.., so a warp
 * reads 32 * 16 contiguous bytes of a row; the warps' sums are added in warp order. */
template <typename T, int V> __global__ void __launch_bounds__(BG_WARPS * 32)
    column_partials(float *partial, const T *d, int rows, int cols)
{
    __shared__ float red[BG_WARPS][32 * V];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, j = blockIdx.x * 32 + lane;
    const int r0 = blockIdx.y * BG_ROWS_PER_CHUNK, r1 = min(rows, r0 + BG_ROWS_PER_CHUNK);
    float acc[V] = {};
    if (j < cols / V) {
        const T *p = d + (size_t)(r0 + w) * cols + (size_t)j * V;
#pragma unroll 8
        for (int r = r0 + w; r < r1; r += BG_WARPS, p += (size_t)BG_WARPS * cols) {
            if constexpr (V * sizeof(T) == 16) {
                const pack16<T> q = *reinterpret_cast<const pack16<T> *>(p);
#pragma unroll
                for (int i = 0; i < V; i++) acc[i] += to_f32(q.v[i]);
            } else {
                static_assert(V == 1, "16-byte vectors or single elements");
                acc[0] += to_f32(*p);
            }
        }
    }
    dependents_may_start(); /* sum_chunks may take the SMs as this grid's blocks finish */
#pragma unroll
    for (int i = 0; i < V; i++) red[w][lane * V + i] = acc[i];
    __syncthreads();
    for (int c = threadIdx.x; c < 32 * V; c += BG_WARPS * 32) {
        const int col = blockIdx.x * 32 * V + c;
        if (col >= cols) break;
        float sum = 0.0f;
        for (int k = 0; k < BG_WARPS; k++) sum += red[k][c];
        partial[(size_t)blockIdx.y * cols + col] = sum;
    }
}

/* dbias[col] = sum over chunks of partial[chunk][col]: warp w of a block of 32 columns
 * adds chunks w, w + BG_SUM_WARPS, ..., then the warps' sums are added in warp order.
 * O: the bias gradient's type (fp32, or the compute dtype of a 16-bit gradient arena). */
template <typename O> __global__ void __launch_bounds__(BG_SUM_WARPS * 32)
    sum_chunks(O *dbias, const float *partial, int chunks, int cols)
{
    __shared__ float red[BG_SUM_WARPS][32];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, col = blockIdx.x * 32 + lane;
    float sum = 0.0f;
    wait_for_predecessor(); /* launched as column_partials' dependent: its partials complete */
    if (col < cols)
#pragma unroll 4
        for (int c = w; c < chunks; c += BG_SUM_WARPS) sum += partial[(size_t)c * cols + col];
    red[w][lane] = sum;
    __syncthreads();
    if (w == 0 && col < cols) {
        float total = 0.0f;
        for (int k = 0; k < BG_SUM_WARPS; k++) total += red[k][lane];
        dbias[col] = from_f32<O>(total);
    }
}

template <typename T>
static cudaError_t launch(void *dbias, int dbias_in_dtype, const void *d, int rows, int cols, float *partial, cudaStream_t s)
{
    constexpr int V = pack16<T>::N;
    if (cols <= 0) return cudaSuccess;
    const int chunks = rows > 0 ? chunks_for(rows) : 0;
    if (chunks > 0) {
        if (cols % V == 0 && ((uintptr_t)d & 15) == 0) {
            const dim3 grid((cols / V + 31) / 32, chunks);
            column_partials<T, V><<<grid, BG_WARPS * 32, 0, s>>>(partial, (const T *)d, rows, cols);
        } else {
            const dim3 grid((cols + 31) / 32, chunks);
            column_partials<T, 1><<<grid, BG_WARPS * 32, 0, s>>>(partial, (const T *)d, rows, cols);
        }
        const cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess) return e;
    }
    const int blocks = (cols + 31) / 32;
    const bool after = chunks > 0; /* as column_partials' dependent */
    if (dbias_in_dtype)
        return launch_maybe_dependent(after, sum_chunks<T>, dim3(blocks), dim3(BG_SUM_WARPS * 32), 0, s, (T *)dbias,
                                      (const float *)partial, chunks, cols);
    return launch_maybe_dependent(after, sum_chunks<float>, dim3(blocks), dim3(BG_SUM_WARPS * 32), 0, s,
                                  (float *)dbias, (const float *)partial, chunks, cols);
}

extern "C" cudaError_t cuda_bias_grad(void *dbias, int dbias_in_dtype, const void *d, int rows, int cols, int dtype,
                                      float *partial, cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch, dbias, dbias_in_dtype, d, rows, cols, partial, stream);
}

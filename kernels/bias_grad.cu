/* bias_grad.cu — the bias gradient, a column sum of dL/d(pre) [rows x cols], in
 * two deterministic passes: blocks sum a chunk of rows for 256 columns each into
 * partial[chunk][col], then one pass adds the chunks in order. No atomics, so the
 * result is the same on every run. */
#include "dtype_cuda.cuh"
#include "kernels_cuda.h"

#define BG_THREADS 256
#define BG_ROWS_PER_CHUNK 256

static int chunks_for(int rows) { return (rows + BG_ROWS_PER_CHUNK - 1) / BG_ROWS_PER_CHUNK; }

extern "C" size_t cuda_bias_grad_scratch_floats(int rows, int cols) { return (size_t)chunks_for(rows) * cols; }

template <typename T> __global__ void column_partials(float *partial, const T *d, int rows, int cols)
{
    const int col = blockIdx.x * BG_THREADS + threadIdx.x;
    if (col >= cols) return;
    const int r0 = blockIdx.y * BG_ROWS_PER_CHUNK, r1 = min(rows, r0 + BG_ROWS_PER_CHUNK);
    float sum = 0.0f;
    for (int r = r0; r < r1; r++) sum += to_f32(d[(size_t)r * cols + col]);
    partial[(size_t)blockIdx.y * cols + col] = sum;
}

/* O: the bias gradient's type (fp32, or the compute dtype of a 16-bit gradient arena) */
template <typename O> __global__ void sum_chunks(O *dbias, const float *partial, int chunks, int cols)
{
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (col >= cols) return;
    float sum = 0.0f;
    for (int c = 0; c < chunks; c++) sum += partial[(size_t)c * cols + col];
    dbias[col] = from_f32<O>(sum);
}

template <typename T>
static cudaError_t launch(void *dbias, int dbias_in_dtype, const void *d, int rows, int cols, float *partial, cudaStream_t s)
{
    const int chunks = chunks_for(rows);
    dim3 grid((cols + BG_THREADS - 1) / BG_THREADS, chunks);
    column_partials<T><<<grid, BG_THREADS, 0, s>>>(partial, (const T *)d, rows, cols);
    if (dbias_in_dtype) sum_chunks<T><<<(cols + 255) / 256, 256, 0, s>>>((T *)dbias, partial, chunks, cols);
    else sum_chunks<float><<<(cols + 255) / 256, 256, 0, s>>>((float *)dbias, partial, chunks, cols);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_bias_grad(void *dbias, int dbias_in_dtype, const void *d, int rows, int cols, int dtype,
                                      float *partial, cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch, dbias, dbias_in_dtype, d, rows, cols, partial, stream);
}

/* loss.cu — softmax cross-entropy and its gradient: one block per row (max, sum
 * of exponentials, then the gradient), the row losses into a scratch array, and
 * their mean summed in a fixed order by one block, so the loss is deterministic. */
#include <cfloat>

#include "dtype_cuda.cuh"
#include "kernels_cuda.h"

#define XENT_THREADS 128

__device__ float block_reduce(float v, bool is_max)
{
    __shared__ float shared[32];
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    __syncthreads(); /* shared[] may still be read by a previous reduction */
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < nwarps ? shared[lane] : (is_max ? -FLT_MAX : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
        float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, other) : v + other;
    }
    return v; /* every thread holds the result */
}

template <typename T>
__global__ void softmax_xent_rows(T *dlogits, float *row_loss, const T *logits, const int *labels, int classes,
                                  float grad_scale)
{
    const size_t base = (size_t)blockIdx.x * classes;
    float m = -FLT_MAX;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) m = fmaxf(m, to_f32(logits[base + j]));
    m = block_reduce(m, true);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) sum += expf(to_f32(logits[base + j]) - m);
    sum = block_reduce(sum, false);
    const int label = labels[blockIdx.x];
    const float inv = 1.0f / sum;
    for (int j = threadIdx.x; j < classes; j += blockDim.x) {
        float p = expf(to_f32(logits[base + j]) - m) * inv;
        dlogits[base + j] = from_f32<T>((p - (j == label ? 1.0f : 0.0f)) * grad_scale);
    }
    if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(sum) + m - to_f32(logits[base + label]);
}

__global__ void mean_of(float *out, const float *values, int n)
{
    float sum = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) sum += values[i];
    sum = block_reduce(sum, false);
    if (threadIdx.x == 0) *out = sum / n;
}

template <typename T>
static cudaError_t launch(void *dlogits, float *loss, const void *logits, const int *labels, int rows, int classes,
                          float grad_scale, float *row_loss, cudaStream_t s)
{
    softmax_xent_rows<T><<<rows, XENT_THREADS, 0, s>>>((T *)dlogits, row_loss, (const T *)logits, labels, classes,
                                                       grad_scale);
    mean_of<<<1, 1024, 0, s>>>(loss, row_loss, rows);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_softmax_xent(void *dlogits, float *loss, const void *logits, const int *labels, int rows,
                                         int classes, float grad_scale, int dtype, float *row_loss,
                                         cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch, dlogits, loss, logits, labels, rows, classes, grad_scale, row_loss, stream);
}

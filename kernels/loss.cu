/* loss.cu — softmax cross-entropy and its gradient, the classifier's loss: one block
 * per row, read twice (the online maximum and sum in one read, then the gradient; a
 * vocabulary's row of 100 KB is read again from the L2). A version holding the row in
 * registers (1,024 threads, 8 vectors each) took 2.5 ms on GPT-2 small's 16,384 x
 * 50,304 on an H200 against this one's 1.25 (docs/PERFORMANCE.md). The gradient may overwrite the
 * logits (the transformers' head does so: one [rows x vocabulary] buffer, not two).
 * The row losses go to a scratch array and their mean is summed in a fixed order by
 * one block, so the loss is deterministic. */
#include <cfloat>

#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"

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

/* (m, s): a running maximum and the sum of exp(x - m) of the values seen; merged so that
 * the logits are read once for both (the online softmax). */
__device__ __forceinline__ void online_add(float &m, float &s, float x)
{
    if (x > m) {
        s = s * __expf(m - x) + 1.0f;
        m = x;
    } else {
        s += __expf(x - m);
    }
}
__device__ __forceinline__ void online_merge(float &m, float &s, float m2, float s2)
{
    const float M = fmaxf(m, m2);
    s = (m == -FLT_MAX ? 0.0f : s * __expf(m - M)) + (m2 == -FLT_MAX ? 0.0f : s2 * __expf(m2 - M));
    m = M;
}

/* One block per row of `classes` logits, rows `ld` apart: one read for the maximum and
 * the denominator together, one more to write the gradient. 16-byte loads and stores
 * where the row is aligned (ld a multiple of the vector width). dlogits may be logits:
 * each element is read and then written by the same thread, the label's logit is read
 * first. The padding columns [classes, ld) get a zero gradient. */
template <typename T>
__global__ void softmax_xent_rows(T *dlogits, float *row_loss, const T *logits, const int *labels, int classes, int ld,
                                  float grad_scale)
{
    constexpr int N = pack16<T>::N;
    const size_t base = (size_t)blockIdx.x * ld;
    const T *z = logits + base;
    T *dz = dlogits + base;
    const int nvec = ld % N == 0 ? classes / N : 0;
    float m = -FLT_MAX, s = 0.0f;
    for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
        const pack16<T> x = reinterpret_cast<const pack16<T> *>(z)[v];
#pragma unroll
        for (int k = 0; k < N; k++) online_add(m, s, to_f32(x.v[k]));
    }
    for (int j = nvec * N + threadIdx.x; j < classes; j += blockDim.x) online_add(m, s, to_f32(z[j]));
    /* the block's (m, s): the maximum first, then every thread's sum rescaled to it */
    const float M = block_reduce(m, true);
    const float S = block_reduce(m == -FLT_MAX ? 0.0f : s * __expf(m - M), false);
    const int label = labels[blockIdx.x];
    const float zlabel = to_f32(z[label]), inv = 1.0f / S;
    __syncthreads(); /* every thread has read z[label] before any writes over it */
    for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
        const pack16<T> x = reinterpret_cast<const pack16<T> *>(z)[v];
        pack16<T> d;
#pragma unroll
        for (int k = 0; k < N; k++) {
            const int j = v * N + k;
            d.v[k] = from_f32<T>((__expf(to_f32(x.v[k]) - M) * inv - (j == label ? 1.0f : 0.0f)) * grad_scale);
        }
        reinterpret_cast<pack16<T> *>(dz)[v] = d;
    }
    for (int j = nvec * N + threadIdx.x; j < classes; j += blockDim.x)
        dz[j] = from_f32<T>((__expf(to_f32(z[j]) - M) * inv - (j == label ? 1.0f : 0.0f)) * grad_scale);
    for (int j = classes + threadIdx.x; j < ld; j += blockDim.x) dz[j] = from_f32<T>(0.0f);
    if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(S) + M - zlabel;
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
                          int ld, float grad_scale, float *row_loss, cudaStream_t s)
{
    const int threads = classes >= 8192 ? 512 : XENT_THREADS;
    softmax_xent_rows<T><<<rows, threads, 0, s>>>((T *)dlogits, row_loss, (const T *)logits, labels, classes, ld,
                                                  grad_scale);
    mean_of<<<1, 1024, 0, s>>>(loss, row_loss, rows);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_softmax_xent(void *dlogits, float *loss, const void *logits, const int *labels, int rows,
                                         int classes, int ld, float grad_scale, int dtype, float *row_loss,
                                         cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch, dlogits, loss, logits, labels, rows, classes, ld, grad_scale, row_loss,
                          stream);
}

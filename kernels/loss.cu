/* loss.cu — softmax cross-entropy and its gradient, the classifier's loss: one block
 * per row, read twice (the online maximum and sum in one read, then the gradient; a
 * vocabulary's row of 100 KB is read again from the L2, so the rows in flight must fit
 * it: 1,024 threads a block, two rows an SM, 26 MB on an H200 at GPT-2's head, where 512
 * threads kept 53 MB in flight). The second read and the gradient's stores stream
 * (evict-first), so they do not push the other rows out of the L2. On an H200 at GPT-2
 * small's 16,384 x 50,304 (bf16, in place) it takes 1.00 ms, 1.46 x the floor of one read
 * and one write (with 512 threads 1.02, 256 1.17; the kernel before, 512 threads and a
 * branch an element, 1.21: results/h200x1-attention-dq). A version holding the row in
 * registers (1,024 threads, 8 vectors each) took 2.5 ms (docs/PERFORMANCE.md). The gradient may
 * overwrite the logits (the transformers' head does so: one [rows x vocabulary] buffer,
 * not two). The row losses go to a scratch array and their mean is summed in a fixed
 * order by one block, so the loss is deterministic. */
#include <cfloat>

#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"

#define XENT_THREADS 128       /* a row of fewer than 8,192 classes */
#define XENT_THREADS_WIDE 1024 /* a vocabulary's */

/* a 16-byte vector read or written for the last time: streamed, evict-first in the L2 */
template <typename T> __device__ __forceinline__ pack16<T> ldcs16(const pack16<T> *p)
{
    const float4 f = __ldcs(reinterpret_cast<const float4 *>(p));
    return *reinterpret_cast<const pack16<T> *>(&f);
}
template <typename T> __device__ __forceinline__ void stcs16(pack16<T> *p, const pack16<T> &v)
{
    __stcs(reinterpret_cast<float4 *>(p), *reinterpret_cast<const float4 *>(&v));
}

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

/* (m, s): a running maximum and the sum of 2^(x log2 e - m) of the values seen, m in the
 * log2 domain; merged so that the logits are read once for both (the online softmax). A
 * vector of values at a time: its maximum first, one rescale of s, then its exponentials,
 * one FFMA and one ex2 each, no branch. */
constexpr float kLog2e = 1.4426950408889634f;
template <int N> __device__ __forceinline__ void online_add(float &m, float &s, const float (&x)[N])
{
    float vmax = x[0];
#pragma unroll
    for (int k = 1; k < N; k++) vmax = fmaxf(vmax, x[k]);
    const float M = fmaxf(m, vmax * kLog2e);
    float t = m == -FLT_MAX ? 0.0f : s * exp2f(m - M);
#pragma unroll
    for (int k = 0; k < N; k++) t += exp2f(fmaf(x[k], kLog2e, -M));
    s = t;
    m = M;
}

/* One block per row of `classes` logits, rows `ld` apart: one read for the maximum and
 * the denominator together, one more to write the gradient. 16-byte loads and stores
 * where the row is aligned (ld a multiple of the vector width), two vectors in flight a
 * thread. dlogits may be logits: each element is read and then written by the same
 * thread, the label's logit is read first. The padding columns [classes, ld) get a zero
 * gradient. */
template <typename T>
__global__ void softmax_xent_rows(T *dlogits, float *row_loss, const T *logits, const int *labels, int classes, int ld,
                                  float grad_scale)
{
    constexpr int N = pack16<T>::N;
    const size_t base = (size_t)blockIdx.x * ld;
    const T *z = logits + base;
    T *dz = dlogits + base;
    const pack16<T> *zv = reinterpret_cast<const pack16<T> *>(z);
    const int nvec = ld % N == 0 ? classes / N : 0;
    float m = -FLT_MAX, s = 0.0f; /* m in the log2 domain */
    int v = threadIdx.x;
    for (; v + (int)blockDim.x < nvec; v += 2 * blockDim.x) {
        const pack16<T> a = zv[v], b = zv[v + blockDim.x];
        float x[2 * N];
#pragma unroll
        for (int k = 0; k < N; k++) x[k] = to_f32(a.v[k]), x[N + k] = to_f32(b.v[k]);
        online_add(m, s, x);
    }
    if (v < nvec) {
        const pack16<T> a = zv[v];
        float x[N];
#pragma unroll
        for (int k = 0; k < N; k++) x[k] = to_f32(a.v[k]);
        online_add(m, s, x);
    }
    for (int j = nvec * N + threadIdx.x; j < classes; j += blockDim.x) {
        const float x[1] = {to_f32(z[j])};
        online_add(m, s, x);
    }
    /* the block's (m, s): the maximum first, then every thread's sum rescaled to it */
    const float M = block_reduce(m, true);
    const float S = block_reduce(m == -FLT_MAX ? 0.0f : s * exp2f(m - M), false);
    const int label = labels[blockIdx.x];
    const float zlabel = to_f32(z[label]), inv = 1.0f / S;
    __syncthreads(); /* every thread has read z[label] before any writes over it */
    for (int v = threadIdx.x; v < nvec; v += blockDim.x) {
        const pack16<T> x = ldcs16(zv + v);
        pack16<T> d;
#pragma unroll
        for (int k = 0; k < N; k++) {
            const int j = v * N + k;
            d.v[k] = from_f32<T>((exp2f(fmaf(to_f32(x.v[k]), kLog2e, -M)) * inv - (j == label ? 1.0f : 0.0f)) * grad_scale);
        }
        stcs16(reinterpret_cast<pack16<T> *>(dz) + v, d);
    }
    for (int j = nvec * N + threadIdx.x; j < classes; j += blockDim.x)
        dz[j] = from_f32<T>((exp2f(fmaf(to_f32(z[j]), kLog2e, -M)) * inv - (j == label ? 1.0f : 0.0f)) * grad_scale);
    for (int j = classes + threadIdx.x; j < ld; j += blockDim.x) dz[j] = from_f32<T>(0.0f);
    /* log of the sum: ln S' + M ln 2, S' the sum in units of 2^M */
    if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(S) + M / kLog2e - zlabel;
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
                          int ld, float grad_scale, float *row_loss, int threads, cudaStream_t s)
{
    if (threads == 0) threads = classes >= 8192 ? XENT_THREADS_WIDE : XENT_THREADS;
    softmax_xent_rows<T><<<rows, threads, 0, s>>>((T *)dlogits, row_loss, (const T *)logits, labels, classes, ld,
                                                  grad_scale);
    mean_of<<<1, 1024, 0, s>>>(loss, row_loss, rows);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_softmax_xent_threads(void *dlogits, float *loss, const void *logits, const int *labels,
                                                 int rows, int classes, int ld, float grad_scale, int dtype,
                                                 float *row_loss, int threads, cudaStream_t stream)
{
    if (threads != 0 && (threads % 32 != 0 || threads < 32 || threads > 1024)) return cudaErrorInvalidValue;
    return DISPATCH_DTYPE(dtype, launch, dlogits, loss, logits, labels, rows, classes, ld, grad_scale, row_loss,
                          threads, stream);
}

extern "C" cudaError_t cuda_softmax_xent(void *dlogits, float *loss, const void *logits, const int *labels, int rows,
                                         int classes, int ld, float grad_scale, int dtype, float *row_loss,
                                         cudaStream_t stream)
{
    return cuda_softmax_xent_threads(dlogits, loss, logits, labels, rows, classes, ld, grad_scale, dtype, row_loss, 0,
                                     stream);
}

/* loss.cu — softmax cross-entropy and its gradient, the classifier's loss: one block
 * per row. A vocabulary-wide row is read once into the block's registers (maximum, sum
 * of exponentials and gradient from there); a narrower one is read twice (the online
 * maximum and sum in one read, then the gradient). The gradient may overwrite the
 * logits (the transformers' head does so: one [rows x vocabulary] buffer, not two).
 * The row losses go to a scratch array and their mean is summed in a fixed order by
 * one block, so the loss is deterministic. */
#include <cfloat>
#include <cstdint>

#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"

#define XENT_THREADS 128
#define XENT_WIDE_THREADS 1024 /* a block of the register-resident kernel */
#define XENT_WIDE_MAX_K 8      /* its 16-byte vectors a thread: 65,536 bf16 classes, 32,768 fp32 */
#define XENT_WIDE_MIN 8192     /* classes from which a row is read once (narrower rows: L1 and L2 serve the re-read) */

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

/* The same for a wide row (a vocabulary) that fits in the block's registers: K 16-byte
 * vectors a thread, the row read once from memory, then its maximum, its sum of
 * exponentials and the gradient from the registers, written over the row's place (in
 * place or not). ld is a multiple of the vector width and the rows 16-byte aligned;
 * the padding vectors are read and masked, and written 0. */
template <typename T, int K>
__global__ void __launch_bounds__(XENT_WIDE_THREADS)
    softmax_xent_wide(T *dlogits, float *row_loss, const T *logits, const int *labels, int classes, int ld,
                      float grad_scale)
{
    constexpr int N = pack16<T>::N;
    const size_t base = (size_t)blockIdx.x * ld;
    const pack16<T> *z = reinterpret_cast<const pack16<T> *>(logits + base);
    pack16<T> *dz = reinterpret_cast<pack16<T> *>(dlogits + base);
    const int nvec = ld / N, label = labels[blockIdx.x];
    pack16<T> x[K];
    float m = -FLT_MAX;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int v = threadIdx.x + k * XENT_WIDE_THREADS;
        if (v < nvec) {
            x[k] = z[v];
#pragma unroll
            for (int i = 0; i < N; i++)
                if (v * N + i < classes) m = fmaxf(m, to_f32(x[k].v[i]));
        }
    }
    const float zlabel = to_f32(logits[base + label]); /* before any thread writes over the row */
    const float M = block_reduce(m, true);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int v = threadIdx.x + k * XENT_WIDE_THREADS;
        if (v < nvec)
#pragma unroll
            for (int i = 0; i < N; i++)
                if (v * N + i < classes) s += __expf(to_f32(x[k].v[i]) - M);
    }
    const float S = block_reduce(s, false), inv = 1.0f / S; /* block_reduce's barriers: z[label] is read */
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int v = threadIdx.x + k * XENT_WIDE_THREADS;
        if (v < nvec) {
            pack16<T> d;
#pragma unroll
            for (int i = 0; i < N; i++) {
                const int j = v * N + i;
                const float g = j < classes ? __expf(to_f32(x[k].v[i]) - M) * inv - (j == label ? 1.0f : 0.0f) : 0.0f;
                d.v[i] = from_f32<T>(g * grad_scale);
            }
            dz[v] = d;
        }
    }
    if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(S) + M - zlabel;
}

__global__ void mean_of(float *out, const float *values, int n)
{
    float sum = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) sum += values[i];
    sum = block_reduce(sum, false);
    if (threadIdx.x == 0) *out = sum / n;
}

template <typename T, int K>
static void launch_wide(void *dlogits, float *row_loss, const void *logits, const int *labels, int rows, int classes,
                        int ld, float grad_scale, cudaStream_t s)
{
    softmax_xent_wide<T, K><<<rows, XENT_WIDE_THREADS, 0, s>>>((T *)dlogits, row_loss, (const T *)logits, labels,
                                                               classes, ld, grad_scale);
}

template <typename T>
static cudaError_t launch(void *dlogits, float *loss, const void *logits, const int *labels, int rows, int classes,
                          int ld, float grad_scale, float *row_loss, cudaStream_t s)
{
    constexpr int N = pack16<T>::N;
    const int k = (ld / N + XENT_WIDE_THREADS - 1) / XENT_WIDE_THREADS;
    const int wide = classes >= XENT_WIDE_MIN && ld % N == 0 && k <= XENT_WIDE_MAX_K &&
                     ((uintptr_t)logits | (uintptr_t)dlogits) % 16 == 0;
    if (!wide) {
        const int threads = classes >= 8192 ? 512 : XENT_THREADS;
        softmax_xent_rows<T><<<rows, threads, 0, s>>>((T *)dlogits, row_loss, (const T *)logits, labels, classes, ld,
                                                      grad_scale);
    } else {
        switch (k) {
        case 1: case 2: launch_wide<T, 2>(dlogits, row_loss, logits, labels, rows, classes, ld, grad_scale, s); break;
        case 3: case 4: launch_wide<T, 4>(dlogits, row_loss, logits, labels, rows, classes, ld, grad_scale, s); break;
        case 5: case 6: launch_wide<T, 6>(dlogits, row_loss, logits, labels, rows, classes, ld, grad_scale, s); break;
        default: launch_wide<T, 8>(dlogits, row_loss, logits, labels, rows, classes, ld, grad_scale, s); break;
        }
    }
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

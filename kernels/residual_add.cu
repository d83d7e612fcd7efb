/* residual_add.cu — the residual adds of the families: y += x (the transformer's
 * residual stream), and y = max(y + x, 0) (the ResNet's bottleneck output), in every
 * dtype, vectorised where y and x are aligned (kernels_cuda.h). */
#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"
#include "kernels/vector_cuda.cuh"

#define ADD_THREADS 256

/* y + x, and with RELU (the ResNet's bottleneck output) max(y + x, 0), as the CPU writes it:
 * a NaN sum gives 0. */
template <bool RELU> __device__ __forceinline__ float add_value(float y, float x)
{
    const float v = y + x;
    return RELU ? (v > 0.0f ? v : 0.0f) : v;
}

template <typename T, bool RELU> __global__ void add_kernel(T *y, const T *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_f32<T>(add_value<RELU>(to_f32(y[i]), to_f32(x[i])));
}

/* y += x over nvec 16-byte vectors, then the n - nvec * V elements left one each */
template <typename T, bool RELU> __global__ void add_vec(T *y, const T *x, size_t nvec, size_t n)
{
    constexpr int V = pack16<T>::N;
    const size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    pack16<T> *yv = reinterpret_cast<pack16<T> *>(y);
    const pack16<T> *xv = reinterpret_cast<const pack16<T> *>(x);
    for (size_t i = first; i < nvec; i += (size_t)gridDim.x * blockDim.x) {
        pack16<T> a = yv[i];
        const pack16<T> b = xv[i];
#pragma unroll
        for (int k = 0; k < V; k++) a.v[k] = from_f32<T>(add_value<RELU>(to_f32(a.v[k]), to_f32(b.v[k])));
        yv[i] = a;
    }
    const size_t i = nvec * V + first;
    if (i < n) y[i] = from_f32<T>(add_value<RELU>(to_f32(y[i]), to_f32(x[i])));
}

template <typename T, bool RELU> static cudaError_t launch_add_op(void *y, const void *x, size_t n, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    if (aligned16(y) && aligned16(x)) {
        const size_t nvec = n / pack16<T>::N;
        add_vec<T, RELU><<<blocks_for(nvec, ADD_THREADS, 132 * 16), ADD_THREADS, 0, s>>>((T *)y, (const T *)x, nvec, n);
    } else {
        add_kernel<T, RELU><<<blocks_for(n, ADD_THREADS, 132 * 16), ADD_THREADS, 0, s>>>((T *)y, (const T *)x, n);
    }
    return cudaGetLastError();
}

template <typename T> static cudaError_t launch_add(void *y, const void *x, size_t n, cudaStream_t s)
{
    return launch_add_op<T, false>(y, x, n, s);
}

template <typename T> static cudaError_t launch_add_relu(void *y, const void *x, size_t n, cudaStream_t s)
{
    return launch_add_op<T, true>(y, x, n, s);
}

extern "C" cudaError_t cuda_add(void *y, const void *x, size_t n, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_add, y, x, n, s);
}

extern "C" cudaError_t cuda_add_relu(void *y, const void *x, size_t n, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_add_relu, y, x, n, s);
}


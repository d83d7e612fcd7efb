/* residual_add.cu — the families' residual add, y += x (the transformer's residual
 * stream), in every dtype, vectorised where y and x are aligned (kernels_cuda.h). The
 * ResNet's add with ReLU is fused into its batch norm (kernels/resnet/batchnorm.cu). */
#include "kernels/dtype_cuda.cuh"
#include "kernels/kernels_cuda.h"
#include "kernels/vector_cuda.cuh"

#define ADD_THREADS 256

template <typename T> __global__ void add_kernel(T *y, const T *x, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = from_f32<T>(to_f32(y[i]) + to_f32(x[i]));
}

/* y += x over nvec 16-byte vectors, then the n - nvec * V elements left one each */
template <typename T> __global__ void add_vec(T *y, const T *x, size_t nvec, size_t n)
{
    constexpr int V = pack16<T>::N;
    const size_t first = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    pack16<T> *yv = reinterpret_cast<pack16<T> *>(y);
    const pack16<T> *xv = reinterpret_cast<const pack16<T> *>(x);
    for (size_t i = first; i < nvec; i += (size_t)gridDim.x * blockDim.x) {
        pack16<T> a = yv[i];
        const pack16<T> b = xv[i];
#pragma unroll
        for (int k = 0; k < V; k++) a.v[k] = from_f32<T>(to_f32(a.v[k]) + to_f32(b.v[k]));
        yv[i] = a;
    }
    const size_t i = nvec * V + first;
    if (i < n) y[i] = from_f32<T>(to_f32(y[i]) + to_f32(x[i]));
}

template <typename T> static cudaError_t launch_add(void *y, const void *x, size_t n, cudaStream_t s)
{
    if (n == 0) return cudaSuccess;
    if (aligned16(y) && aligned16(x)) {
        const size_t nvec = n / pack16<T>::N;
        add_vec<T><<<blocks_for(nvec, ADD_THREADS, 132 * 16), ADD_THREADS, 0, s>>>((T *)y, (const T *)x, nvec, n);
    } else {
        add_kernel<T><<<blocks_for(n, ADD_THREADS, 132 * 16), ADD_THREADS, 0, s>>>((T *)y, (const T *)x, n);
    }
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_add(void *y, const void *x, size_t n, int dtype, cudaStream_t s)
{
    return DISPATCH_DTYPE(dtype, launch_add, y, x, n, s);
}

/* activation.cu — bias + activation forward and the activation backward, fused
 * element-wise passes over [rows x cols], 16 bytes per thread per iteration when
 * the row length and the pointers allow (every width that is a multiple of 8, on
 * 16-byte-aligned buffers). */
#include <stdint.h>

#include "kernels/activation.h"
#include "kernels/dtype_cuda.cuh"
#include "kernels/kernel_types.h"
#include "kernels/kernels_cuda.h"

__device__ __forceinline__ float act_fwd(float p, int act)
{
    return act == ACT_GELU ? gelu_forward(p) : act == ACT_RELU ? fmaxf(p, 0.0f) : p;
}

__device__ __forceinline__ float act_grad(float p, int act)
{
    return act == ACT_GELU ? gelu_derivative(p) : act == ACT_RELU ? (p > 0.0f ? 1.0f : 0.0f) : 1.0f;
}

/* T: the activations' dtype; B: the bias's (fp32, or T when there is no fp32 master copy). */
template <typename T, typename B>
__global__ void bias_act_forward_vec(T *out, T *pre, const B *bias, size_t npacks, int cols, int act)
{
    using P = pack16<T>;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < npacks; i += (size_t)gridDim.x * blockDim.x) {
        P p = reinterpret_cast<const P *>(pre)[i], o;
        const int col0 = (int)((i * P::N) % (size_t)cols);
#pragma unroll
        for (int j = 0; j < P::N; j++) {
            float v = to_f32(p.v[j]) + to_f32(bias[col0 + j]);
            p.v[j] = from_f32<T>(v);
            o.v[j] = from_f32<T>(act_fwd(v, act));
        }
        reinterpret_cast<P *>(pre)[i] = p;
        if (out != pre) reinterpret_cast<P *>(out)[i] = o;
    }
}

template <typename T, typename B>
__global__ void bias_act_forward_scalar(T *out, T *pre, const B *bias, size_t n, int cols, int act)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float v = to_f32(pre[i]) + to_f32(bias[i % (size_t)cols]);
        pre[i] = from_f32<T>(v);
        if (out != pre) out[i] = from_f32<T>(act_fwd(v, act));
    }
}

template <typename T, typename B>
static cudaError_t launch_forward_typed(void *out, void *pre, const B *bias, int rows, int cols, int act, cudaStream_t s)
{
    const size_t n = (size_t)rows * cols;
    const int N = pack16<T>::N;
    if (cols % N == 0)
        bias_act_forward_vec<T, B><<<blocks_for(n / N, 256, 65535), 256, 0, s>>>((T *)out, (T *)pre, bias, n / N, cols, act);
    else
        bias_act_forward_scalar<T, B><<<blocks_for(n, 256, 65535), 256, 0, s>>>((T *)out, (T *)pre, bias, n, cols, act);
    return cudaGetLastError();
}

template <typename T>
static cudaError_t launch_forward(void *out, void *pre, const void *bias, int bias_in_t, int rows, int cols, int act,
                                  cudaStream_t s)
{
    return bias_in_t ? launch_forward_typed<T, T>(out, pre, (const T *)bias, rows, cols, act, s)
                     : launch_forward_typed<T, float>(out, pre, (const float *)bias, rows, cols, act, s);
}

extern "C" cudaError_t cuda_bias_act_forward(void *out, void *pre, const void *bias, int bias_dtype, int rows, int cols,
                                             int act, int dtype, cudaStream_t stream)
{
    if (bias_dtype != DT_F32 && bias_dtype != dtype) return cudaErrorInvalidValue;
    return DISPATCH_DTYPE(dtype, launch_forward, out, pre, bias, bias_dtype != DT_F32, rows, cols, act, stream);
}

template <typename T> __global__ void act_backward_vec(T *d, const T *pre, size_t npacks, int act)
{
    using P = pack16<T>;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < npacks; i += (size_t)gridDim.x * blockDim.x) {
        P g = reinterpret_cast<const P *>(d)[i];
        const P p = reinterpret_cast<const P *>(pre)[i];
#pragma unroll
        for (int j = 0; j < P::N; j++) g.v[j] = from_f32<T>(to_f32(g.v[j]) * act_grad(to_f32(p.v[j]), act));
        reinterpret_cast<P *>(d)[i] = g;
    }
}

template <typename T> __global__ void act_backward_scalar(T *d, const T *pre, size_t n, int act)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        d[i] = from_f32<T>(to_f32(d[i]) * act_grad(to_f32(pre[i]), act));
}

template <typename T>
static cudaError_t launch_backward(void *d, const void *pre, int rows, int cols, int act, cudaStream_t s)
{
    if (act == ACT_NONE) return cudaSuccess;
    const size_t n = (size_t)rows * cols;
    const int N = pack16<T>::N;
    if (n % N == 0 && ((uintptr_t)d & 15) == 0 && ((uintptr_t)pre & 15) == 0)
        act_backward_vec<T><<<blocks_for(n / N, 256, 65535), 256, 0, s>>>((T *)d, (const T *)pre, n / N, act);
    else
        act_backward_scalar<T><<<blocks_for(n, 256, 65535), 256, 0, s>>>((T *)d, (const T *)pre, n, act);
    return cudaGetLastError();
}

extern "C" cudaError_t cuda_act_backward(void *d, const void *pre, int rows, int cols, int act, int dtype,
                                         cudaStream_t stream)
{
    return DISPATCH_DTYPE(dtype, launch_backward, d, pre, rows, cols, act, stream);
}

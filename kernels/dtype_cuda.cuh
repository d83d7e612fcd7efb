/* dtype_cuda.cuh — loads and stores of fp32 / bf16 / fp16 through float, and the
 * dispatch from the run-time dtype (enum dtype) to a template instance. */
#ifndef DPSCALE_DTYPE_CUDA_CUH
#define DPSCALE_DTYPE_CUDA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/kernel_types.h"

__device__ __forceinline__ float to_f32(float v) { return v; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_f32(__half v) { return __half2float(v); }

template <typename T> __device__ __forceinline__ T from_f32(float v);
template <> __device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half(v); }

/* The run-time dtype (enum dtype) of T: the inverse of DISPATCH_DTYPE. */
template <typename T> constexpr int dtype_of();
template <> constexpr int dtype_of<float>() { return DT_F32; }
template <> constexpr int dtype_of<__nv_bfloat16>() { return DT_BF16; }
template <> constexpr int dtype_of<__half>() { return DT_F16; }

/* Sixteen bytes of T: one vector load or store. */
template <typename T> struct alignas(16) pack16 {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

/* Call F<T>(args...) for the dtype known only at run time. */
#define DISPATCH_DTYPE(dtype, F, ...)                                    \
    ((dtype) == DT_BF16 ? F<__nv_bfloat16>(__VA_ARGS__)                  \
     : (dtype) == DT_F16 ? F<__half>(__VA_ARGS__)                        \
                         : F<float>(__VA_ARGS__))

static inline int blocks_for(size_t n, int threads, int cap)
{
    size_t b = (n + threads - 1) / threads;
    return (int)(b > (size_t)cap ? cap : (b == 0 ? 1 : b));
}

#endif

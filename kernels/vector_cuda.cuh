/* vector_cuda.cuh — what the memory-bound kernels share: 16-byte loads and stores of
 * V elements as floats (one element at a time when V elements do not fill whole packs),
 * an alignment test and a warp's sum. */
#ifndef DPSCALE_VECTOR_CUDA_CUH
#define DPSCALE_VECTOR_CUDA_CUH

#include <stdint.h>

#include "dtype_cuda.cuh"

static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* V consecutive elements as floats: 16-byte loads when V elements fill whole 16-byte
 * packs (p then 16-byte aligned), else one element at a time (V = 1). */
template <int V, typename T> __device__ __forceinline__ void load_f32(float (&f)[V], const T *p)
{
    if constexpr (V * sizeof(T) >= 16) {
        constexpr int N = pack16<T>::N;
        static_assert(V % N == 0, "whole packs");
#pragma unroll
        for (int k = 0; k < V / N; k++) {
            const pack16<T> q = reinterpret_cast<const pack16<T> *>(p)[k];
#pragma unroll
            for (int i = 0; i < N; i++) f[k * N + i] = to_f32(q.v[i]);
        }
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) f[i] = to_f32(p[i]);
    }
}

template <int V, typename T> __device__ __forceinline__ void store_f32(T *p, const float (&f)[V])
{
    if constexpr (V * sizeof(T) >= 16) {
        constexpr int N = pack16<T>::N;
        static_assert(V % N == 0, "whole packs");
#pragma unroll
        for (int k = 0; k < V / N; k++) {
            pack16<T> q;
#pragma unroll
            for (int i = 0; i < N; i++) q.v[i] = from_f32<T>(f[k * N + i]);
            reinterpret_cast<pack16<T> *>(p)[k] = q;
        }
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) p[i] = from_f32<T>(f[i]);
    }
}

template <int V> __device__ __forceinline__ void add_to(float (&acc)[V], const float (&v)[V])
{
#pragma unroll
    for (int i = 0; i < V; i++) acc[i] += v[i];
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#endif

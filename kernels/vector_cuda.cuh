/* vector_cuda.cuh — what the memory-bound kernels share: 16-byte loads and stores of
 * V elements as floats (one element at a time when V elements do not fill whole packs),
 * alignment tests, a warp's sum, and the split of a pass over rows of items into
 * blocks of whole rows (32-bit index arithmetic). */
#ifndef DPSCALE_VECTOR_CUDA_CUH
#define DPSCALE_VECTOR_CUDA_CUH

#include <stdint.h>

#include <type_traits>

#include "kernels/dtype_cuda.cuh"

static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Rows of C elements are whole 16-byte vectors of T, and every pointer given (nullptr:
 * none) is 16-byte aligned. */
template <typename T, typename... P> static inline bool vectors_fit(int C, P... ptrs)
{
    return C % pack16<T>::N == 0 && (... && (ptrs == nullptr || aligned16(ptrs)));
}

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

/* Call f(std::integral_constant<int, V>) with V = 16 / sizeof(T) (whole 16-byte vectors:
 * the caller has checked the row length and the pointers' alignment) or V = 1. */
template <typename T, typename F> static inline void with_vector_width(bool vectors, F f)
{
    if (vectors) f(std::integral_constant<int, pack16<T>::N>{});
    else f(std::integral_constant<int, 1>{});
}

/* A pass over `rows` rows of `per_row` items each (pixels x channel vectors, say), cut into
 * blocks of whole rows holding about ROW_ITEMS_PER_BLOCK items, so that a thread finds its
 * row and item with 32-bit arithmetic. Item i of block b is row first + i / per_row,
 * item i % per_row of it, for i < count. */
#define ROW_ITEMS_PER_BLOCK 4096

struct row_items {
    int rows_per_block, blocks;
    row_items(int rows, int per_row)
    {
        rows_per_block = per_row >= ROW_ITEMS_PER_BLOCK ? 1 : ROW_ITEMS_PER_BLOCK / per_row;
        blocks = rows <= 0 ? 0 : (rows + rows_per_block - 1) / rows_per_block;
    }
};

struct block_items {
    int first, count;
    __device__ __forceinline__ block_items(int rows, int per_row, int rows_per_block)
    {
        first = blockIdx.x * rows_per_block;
        count = (min(rows, first + rows_per_block) - first) * per_row;
    }
};

#endif

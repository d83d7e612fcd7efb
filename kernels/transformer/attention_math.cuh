/* attention_math.cuh — the few device helpers both fused-attention implementations use
 * (flash_attention.cu's FA2 kernels and flash_attention_sm90.cu's Hopper ones): exp2 on
 * the special-function unit, and a row's max and sum over the 4 lanes of a quad, the
 * lanes that hold one accumulator row in mma.sync's and wgmma's fragment layouts alike. */
#ifndef DPSCALE_ATTENTION_MATH_CUH
#define DPSCALE_ATTENTION_MATH_CUH

__device__ __forceinline__ float fast_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float quad_max(float v)
{
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}

__device__ __forceinline__ float quad_sum(float v)
{
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

#endif

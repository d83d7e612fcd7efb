/* activation.h — GELU (tanh form, as GPT-2 and llm.c use) and ReLU with their
 * derivatives, shared by the CPU loops and the CUDA kernels so that both backends
 * compute the same function.
 *
 * tanh goes through our own exp (Cody-Waite range reduction, a degree-6
 * polynomial, the exponent put in by bit arithmetic): it has no branch and no
 * library call, so the compiler vectorises the CPU loops, where libm's tanhf made
 * the activation cost more than the GEMMs around it. Relative error is below 2e-7
 * over the clamped range, like tanhf's. */
#ifndef DPSCALE_ACTIVATION_H
#define DPSCALE_ACTIVATION_H

#include <stdint.h>

#ifdef __CUDACC__
#define ACT_FN static inline __host__ __device__
#else
#define ACT_FN static inline
#endif

#define GELU_SCALE 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_CUBIC 0.044715f

ACT_FN float act_float_from_bits(int32_t bits)
{
    union { int32_t i; float f; } u;
    u.i = bits;
    return u.f;
}

ACT_FN float act_expf(float x)
{
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    /* k = round(x / ln2) by the 1.5 * 2^23 trick: no floorf, so SSE2 vectorises it */
    const float k = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    const float r = (x - k * 0.693145751953125f) - k * 1.428606765330187e-06f;
    const float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.16666667163372f + r * (0.04166666790843f +
                          r * (0.00833333376795f + r * 0.00138888892252f)))));
    return p * act_float_from_bits(((int32_t)k + 127) << 23);
}

ACT_FN float act_tanhf(float u) { return 1.0f - 2.0f / (act_expf(2.0f * u) + 1.0f); }

ACT_FN float gelu_forward(float x)
{
    const float t = act_tanhf(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
    return 0.5f * x * (1.0f + t);
}

ACT_FN float gelu_derivative(float x)
{
    const float t = act_tanhf(GELU_SCALE * (x + GELU_CUBIC * x * x * x));
    const float sech2 = 1.0f - t * t;
    return 0.5f * (1.0f + t) + 0.5f * x * sech2 * GELU_SCALE * (1.0f + 3.0f * GELU_CUBIC * x * x);
}

#endif

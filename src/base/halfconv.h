/* halfconv.h — fp32 <-> bf16 / fp16 on the host, for the patterns dpscale comm
 * uploads and checks. Round to nearest even; fp16 subnormals flush to zero (the
 * patterns are small integers, far from them). */
#ifndef DPSCALE_HALFCONV_H
#define DPSCALE_HALFCONV_H

#include <stdint.h>
#include <string.h>

static inline uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint16_t float_to_bf16(float f)
{
    uint32_t u = float_bits(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf16_to_float(uint16_t h) { return bits_float((uint32_t)h << 16); }

static inline uint16_t float_to_fp16(float f)
{
    uint32_t u = float_bits(f), sign = (u >> 16) & 0x8000u;
    int exp = (int)((u >> 23) & 0xff) - 127 + 15;
    uint32_t mant = u & 0x7fffffu;
    if (exp <= 0) return (uint16_t)sign;                 /* underflow to zero */
    if (exp >= 31) return (uint16_t)(sign | 0x7c00u);    /* overflow to infinity */
    uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)h;
}

static inline float fp16_to_float(uint16_t h)
{
    uint32_t sign = ((uint32_t)h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    if (exp == 0) return bits_float(sign);             /* zero (subnormals flushed) */
    if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
    return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

#endif

/* test_bn_kinks.h — batch norm inputs whose pre-ReLU values sit on the ReLU's kink (the
 * CPU's and the CUDA backend's tests of the recomputed ReLU mask share them): a third of
 * each channel's rows equal its mean exactly, where the value is beta itself (0, tiny of
 * either sign), and channels whose gain is so small that a positive value rounds to 0 in
 * bf16 (below half its least subnormal, 2^-134) while fp32 keeps it. Every value is
 * exact in fp32, bf16 and fp16 but the tiny ones (fp16 flushes those, as it would). */
#ifndef DPSCALE_TEST_BN_KINKS_H
#define DPSCALE_TEST_BN_KINKS_H

#include <math.h>

#define KINK_D 0.5f /* the rows' distance from the mean: x = mean - d, mean, mean + d */

/* channel c's mean, exact in every dtype */
static inline float kink_mean(int c) { return 0.25f * (float)(c % 5 - 2); }

/* x [rows x C] (rows a multiple of 3, so that each channel's batch mean is kink_mean
 * exactly, on the CPU and in the GPU's shifted sums), and the gains [C]: by c % 6,
 * beta 0, +2^-120, -2^-120, a gain of 2^-133 with beta -2^-133 (mean + d gives
 * +0.22 2^-133: positive in fp32, 0 in bf16), an ordinary channel, a negative gain with
 * beta 0. */
static inline void bn_kink_data(float *x, float *gamma, float *beta, int rows, int C)
{
    for (int i = 0; i < rows; i++)
        for (int c = 0; c < C; c++) x[(size_t)i * C + c] = kink_mean(c) + KINK_D * (float)((i + c) % 3 - 1);
    for (int c = 0; c < C; c++) {
        const float tiny = ldexpf(1.0f, -120), least = ldexpf(1.0f, -133);
        const float ordinary = 0.75f + 0.125f * (float)(c % 4);
        switch (c % 6) {
        case 0: gamma[c] = ordinary, beta[c] = 0.0f; break;
        case 1: gamma[c] = ordinary, beta[c] = tiny; break;
        case 2: gamma[c] = ordinary, beta[c] = -tiny; break;
        case 3: gamma[c] = least, beta[c] = -least; break;
        case 4: gamma[c] = ordinary, beta[c] = 0.375f - 0.25f * (float)(c % 3); break;
        default: gamma[c] = -ordinary, beta[c] = 0.0f; break;
        }
    }
}

#endif

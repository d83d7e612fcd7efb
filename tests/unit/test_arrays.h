/* test_arrays.h — the kernel tests' arrays: a tiny LCG's uniform floats in [-1, 1),
 * filled arrays, a dot product in double and the relative error of an analytic
 * against a numeric derivative. */
#ifndef DPSCALE_TEST_ARRAYS_H
#define DPSCALE_TEST_ARRAYS_H

#include <math.h>
#include <stdlib.h>

/* a tiny LCG: uniform floats in [-1, 1) */
static inline float lcg(unsigned *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (float)((*s >> 8) * (1.0 / 8388608.0)) - 1.0f;
}

static inline float *rand_array(size_t n, unsigned seed)
{
    float *a = malloc((n + 1) * sizeof *a); /* never NULL for n = 0 */
    for (size_t i = 0; i < n; i++) a[i] = lcg(&seed);
    return a;
}

static inline float *filled(size_t n, float value)
{
    float *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = value;
    return a;
}

static inline double dot_d(const float *a, const float *r, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * r[i];
    return s;
}

/* |analytic - numeric| / max(|analytic| + |numeric|, 1e-3) */
static inline double rel_err(double a, double n)
{
    double den = fabs(a) + fabs(n);
    return fabs(a - n) / (den > 1e-3 ? den : 1e-3);
}

#endif

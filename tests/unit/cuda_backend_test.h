/* cuda_backend_test.h — what the tests of the cuda backend's operations share: the
 * backend opened once per precision (or not at all where no GPU is visible), and data
 * moved between host floats and device buffers in fp32 or the compute dtype, with
 * pointers off 16-byte alignment on request; the relative-error check against the CPU.
 * Each test keeps its own data generator and tolerances. */
#ifndef DPSCALE_CUDA_BACKEND_TEST_H
#define DPSCALE_CUDA_BACKEND_TEST_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "base/dtype.h"
#include "base/halfconv.h"
#include "config/config.h"

static struct backend g_be;
static int g_open; /* the dtype g_be runs, + 1; 0: none open */
static int g_no_gpu;

/* The cuda backend at `precision` (fp32, bf16 or fp16), or 0 when there is none. */
static inline int gpu(const char *precision)
{
    const int want = strcmp(precision, "bf16") == 0 ? DT_BF16 : strcmp(precision, "fp16") == 0 ? DT_F16 : DT_F32;
    if (g_no_gpu) return 0;
    if (g_open == want + 1) return 1;
    if (g_open) backend_close(&g_be);
    g_open = 0;
    char flag[64], err[512] = "";
    snprintf(flag, sizeof flag, "--train.precision=%s", precision);
    char *argv[] = {"run", "--run.backend=cuda", flag, NULL};
    struct config cfg;
    if (config_load(&cfg, 3, argv, err, sizeof err) != 0 || backend_open(&g_be, &cfg, 0, 1, err, sizeof err) != 0) {
        printf("    skipped: no cuda backend here (%s)\n", err);
        g_no_gpu = 1;
        return 0;
    }
    g_open = want + 1;
    return 1;
}

static inline size_t elem(void) { return dtype_size(g_be.act_dtype); }

/* v as the compute dtype holds it */
static inline float rnd(float v)
{
    if (g_be.act_dtype == DT_BF16) return bf16_to_float(float_to_bf16(v));
    if (g_be.act_dtype == DT_F16) return fp16_to_float(float_to_fp16(v));
    return v;
}

/* A device buffer of n elements of `size` bytes starting `off` elements into its allocation
 * (off = 1: not 16-byte aligned), filled from host (NULL: zeros). */
static inline void *dev_raw(const void *host, size_t n, size_t size, int off)
{
    char *d = (char *)g_be.ops->alloc(&g_be, (n + 1) * size) + (size_t)off * size;
    if (host != NULL && n > 0) g_be.ops->upload(&g_be, d, host, n * size);
    return d;
}

static inline void dev_free(void *d, size_t size, int off) { g_be.ops->free(&g_be, (char *)d - (size_t)off * size); }

/* host floats into dtype dt (fp32 or the compute dtype) on the device */
static inline void *dev_from(const float *host, size_t n, int dt, int off)
{
    if (dt == DT_F32) return dev_raw(host, n, 4, off);
    float *tmp = dev_raw(host, n, 4, 0);
    void *d = dev_raw(NULL, n, elem(), off);
    g_be.ops->cast_from_f32(&g_be, d, tmp, n);
    dev_free(tmp, 4, 0);
    return d;
}

/* n elements of dtype dt (fp32 or the compute dtype) from the device, as floats */
static inline float *host_from(const void *dev, size_t n, int dt)
{
    float *h = malloc((n + 1) * sizeof *h);
    if (dt == DT_F32) {
        g_be.ops->download(&g_be, h, dev, n * 4);
        return h;
    }
    float *tmp = dev_raw(NULL, n, 4, 0);
    g_be.ops->cast_to_f32(&g_be, tmp, dev, n);
    g_be.ops->download(&g_be, h, tmp, n * 4);
    dev_free(tmp, 4, 0);
    return h;
}

/* max |got - want| / max |want| <= tol, a NaN (an element never written) failing it;
 * prints the worst element */
static inline int close_to(const char *what, const float *got, const float *want, size_t n, double tol)
{
    double scale = 0.0, worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - want[i]) / (scale > 0.0 ? scale : 1.0);
        if (isnan(e) || e > worst) {
            worst = e, at = i;
            if (isnan(e)) break;
        }
    }
    if (worst <= tol) return 1;
    printf("    %s (%s): relative error %.3g at element %zu of %zu (%.9g, the cpu's %.9g), tolerance %g\n", what,
           dtype_name(g_be.act_dtype), worst, at, n, n ? got[at] : 0.0, n ? want[at] : 0.0, tol);
    return 0;
}

/* Median seconds of 10 calls of run(arg) on the backend's stream, after 2 untimed (CUDA
 * events between the calls): the timings the GPU tests print. */
static inline double median_of_10_calls(void (*run)(void *), void *arg)
{
    struct backend_event *e[11];
    for (int i = 0; i < 11; i++) e[i] = g_be.ops->event_create(&g_be);
    for (int r = 0; r < 2; r++) run(arg);
    g_be.ops->event_record(&g_be, e[0]);
    for (int r = 0; r < 10; r++) {
        run(arg);
        g_be.ops->event_record(&g_be, e[r + 1]);
    }
    g_be.ops->synchronize(&g_be);
    double t[10];
    for (int r = 0; r < 10; r++) t[r] = g_be.ops->event_elapsed_s(&g_be, e[r], e[r + 1]);
    for (int i = 0; i < 11; i++) g_be.ops->event_destroy(&g_be, e[i]);
    for (int i = 1; i < 10; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            const double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    return 0.5 * (t[4] + t[5]);
}

#endif

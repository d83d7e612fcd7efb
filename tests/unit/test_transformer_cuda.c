/* test_transformer_cuda.c — the cuda backend's LayerNorm against the CPU's
 * (kernels/transformer/transformer_cpu.h), through the backend table as the transformer
 * calls it (be->tf, src/model/families/transformer.c), in fp32, bf16 and fp16: in 16 bits
 * the CPU runs on the same rounded inputs and the GPU's outputs are held to the 16-bit
 * dtype's resolution, in fp32 (and the fp32 gain gradients in every precision) to fp32's.
 *
 * Widths GPT-2's and BERT's (768, 1024, 1600), wider rows (2048 .. 12288) and an odd one
 * (1003: one element at a time), also with pointers one element off 16-byte alignment;
 * 1, 37 and a few thousand rows (more tiles than the backward's persistent grid has
 * blocks, and a last tile cut short); dx overwritten and added to (accumulate), the gains'
 * gradients in fp32 and in the compute dtype, overwritten; rows whose gain sums do not fit
 * in shared memory (30,000 wide); no rows at all; and the backward's bits the same on two
 * runs.
 *
 * Where a GPU is present it also prints the median time of a bf16 backward at GPT-2 XL's,
 * GPT-2 small's and BERT-Large's shapes beside the time its bytes take at 4.8 TB/s (an
 * H200's memory): a figure to read, not a check. Needs a GPU: where none is visible (or
 * the binary has no CUDA) every test passes without checking anything and says so once. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/transformer/transformer_cpu.h"
#include "backend/backend.h"
#include "config/config.h"
#include "base/halfconv.h"
#include "check.h"
#include "cuda_backend_test.h"

#define MEMORY_BYTES_PER_S 4.8e12 /* an H200's HBM3e, the datasheet's */

static const char *const precisions[] = {"fp32", "bf16", "fp16"};
/* the statement that follows, once with each precision (none without a GPU) */
#define EACH_PRECISION for (int pi_ = 0; pi_ < 3 && gpu(precisions[pi_]); pi_++)

/* ---- data in the compute dtype ---- */

/* n values offset + [-1, 1) as the compute dtype holds them, element i from a hash of
 * (seed, i): the same whatever the thread count */
static float *rand_array(size_t n, unsigned seed, float offset)
{
    float *a = malloc(n * sizeof *a);
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        uint64_t z = ((uint64_t)seed << 40) + i + 0x9e3779b97f4a7c15ull;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        a[i] = rnd(offset + (float)((z >> 40) * (1.0 / 8388608.0)) - 1.0f);
    }
    return a;
}

static float *nan_array(size_t n)
{
    float *a = malloc(n * sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = NAN;
    return a;
}

/* the tolerance of a result held in dtype dt: its resolution, or fp32's */
static double tol_of(int dt) { return dt == DT_F32 ? 1e-5 : 1e-2; }

/* ---- the shapes ---- */

static const int widths[] = {768, 1024, 1600, 2048, 4096, 8192, 1003, 12288};
#define NWIDTHS (int)(sizeof widths / sizeof widths[0])

/* rows enough for about 300 of the backward's tiles of 16-bit rows (64 KiB of dy and x:
 * more tiles than 2 blocks on each SM of a GPU of up to 150 SMs, so blocks take several),
 * an odd count: the last tile short */
static int many_rows(int C)
{
    int tile = 1;
    while (tile < 32 && 2 * (size_t)tile * 4 * (size_t)C <= (64u << 10)) tile *= 2;
    return 300 * tile + 7;
}

/* ---- LayerNorm forward ---- */

static void ln_forward_case(int R, int C, int off)
{
    const size_t n = (size_t)R * C;
    float *x = rand_array(n, 1, 2.0f), *gamma = rand_array(C, 2, 1.0f), *beta = rand_array(C, 3, 0.0f);
    float *y = malloc((n + 1) * 4), *mean = malloc((R + 1) * 4), *rstd = malloc((R + 1) * 4);
    float *nans_r = nan_array(R), *nans_n = nan_array(n);
    cpu_layernorm_forward(y, mean, rstd, x, gamma, beta, R, C);
    void *x_d = dev_from(x, n, g_be.act_dtype, off), *g_d = dev_from(gamma, C, g_be.act_dtype, off);
    void *b_d = dev_from(beta, C, g_be.act_dtype, off), *y_d = dev_from(nans_n, n, g_be.act_dtype, off);
    float *mean_d = dev_raw(nans_r, R, 4, 0), *rstd_d = dev_raw(nans_r, R, 4, 0);
    g_be.tf->layernorm_forward(&g_be, y_d, mean_d, rstd_d, x_d, g_d, b_d, R, C);
    float *gy = host_from(y_d, n, g_be.act_dtype), *gm = host_from(mean_d, R, DT_F32);
    float *gr = host_from(rstd_d, R, DT_F32);
    int ok = close_to("layernorm y", gy, y, n, tol_of(g_be.act_dtype));
    ok &= close_to("layernorm mean", gm, mean, R, 1e-5) & close_to("layernorm rstd", gr, rstd, R, 1e-5);
    if (!ok) printf("    forward: rows %d, C %d, pointer offset %d\n", R, C, off);
    CHECK(ok);
    dev_free(x_d, elem(), off), dev_free(g_d, elem(), off), dev_free(b_d, elem(), off), dev_free(y_d, elem(), off);
    dev_free(mean_d, 4, 0), dev_free(rstd_d, 4, 0);
    free(x), free(gamma), free(beta), free(y), free(mean), free(rstd), free(nans_r), free(nans_n);
    free(gy), free(gm), free(gr);
}

TEST(layernorm_forward_matches_the_cpu)
{
    EACH_PRECISION
    for (int k = 0; k < NWIDTHS; k++) {
        const int C = widths[k];
        ln_forward_case(37, C, 0);
        ln_forward_case(300, C, 0);
        if (C == 1024 || C == 8192) ln_forward_case(37, C, 1); /* not 16-byte aligned */
    }
}

/* ---- LayerNorm backward ---- */

/* The backward on the GPU and the CPU from the same dy, x, mean, rstd, gamma (and dx, when
 * accumulate); dx starts as NaN where it is overwritten, and so do the gains' gradients,
 * in grad_dtype (fp32 or the compute dtype). Returns whether they agree; *raw (unless NULL)
 * gets the GPU's dx, dgamma and dbeta bytes, *raw_bytes their size. */
static int ln_backward_case(int R, int C, int accumulate, int grad_dtype, int off, unsigned char **raw,
                            size_t *raw_bytes)
{
    const size_t n = (size_t)R * C, ge = dtype_size(grad_dtype);
    float *x = rand_array(n, 11, 0.25f), *dy = rand_array(n, 12, 0.0f), *gamma = rand_array(C, 13, 1.0f);
    float *dx = accumulate ? rand_array(n, 14, 0.0f) : nan_array(n), *zeros = calloc(C + 1, 4);
    float *y = malloc((n + 1) * 4), *mean = malloc((R + 1) * 4), *rstd = malloc((R + 1) * 4);
    float *dgamma = malloc((C + 1) * 4), *dbeta = malloc((C + 1) * 4), *nans_c = nan_array(C);
    cpu_layernorm_forward(y, mean, rstd, x, gamma, zeros, R, C); /* the statistics both read */
    void *x_d = dev_from(x, n, g_be.act_dtype, off), *dy_d = dev_from(dy, n, g_be.act_dtype, off);
    void *g_d = dev_from(gamma, C, g_be.act_dtype, off), *dx_d = dev_from(dx, n, g_be.act_dtype, off);
    void *dg_d = dev_from(nans_c, C, grad_dtype, 0), *db_d = dev_from(nans_c, C, grad_dtype, 0);
    float *mean_d = dev_raw(mean, R, 4, 0), *rstd_d = dev_raw(rstd, R, 4, 0);
    if (!accumulate) memset(dx, 0, n * 4);
    cpu_layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, R, C, accumulate);
    g_be.tf->layernorm_backward(&g_be, dx_d, dg_d, db_d, grad_dtype, dy_d, x_d, mean_d, rstd_d, g_d, R, C, accumulate);
    float *gdx = host_from(dx_d, n, g_be.act_dtype), *gdg = host_from(dg_d, C, grad_dtype);
    float *gdb = host_from(db_d, C, grad_dtype);
    int ok = close_to("layernorm dx", gdx, dx, n, tol_of(g_be.act_dtype));
    ok &= close_to("dgamma", gdg, dgamma, C, tol_of(grad_dtype)) & close_to("dbeta", gdb, dbeta, C, tol_of(grad_dtype));
    if (!ok)
        printf("    backward: rows %d, C %d, accumulate %d, gradients %s, pointer offset %d\n", R, C, accumulate,
               dtype_name(grad_dtype), off);
    if (raw != NULL) {
        *raw_bytes = n * elem() + 2 * C * ge;
        *raw = malloc(*raw_bytes);
        g_be.ops->download(&g_be, *raw, dx_d, n * elem());
        g_be.ops->download(&g_be, *raw + n * elem(), dg_d, C * ge);
        g_be.ops->download(&g_be, *raw + n * elem() + C * ge, db_d, C * ge);
    }
    dev_free(x_d, elem(), off), dev_free(dy_d, elem(), off), dev_free(g_d, elem(), off), dev_free(dx_d, elem(), off);
    dev_free(dg_d, ge, 0), dev_free(db_d, ge, 0), dev_free(mean_d, 4, 0), dev_free(rstd_d, 4, 0);
    free(x), free(dy), free(gamma), free(dx), free(zeros), free(y), free(mean), free(rstd);
    free(dgamma), free(dbeta), free(nans_c), free(gdx), free(gdg), free(gdb);
    return ok;
}

TEST(layernorm_backward_matches_the_cpu)
{
    EACH_PRECISION
    for (int k = 0; k < NWIDTHS; k++) {
        const int C = widths[k], t = g_be.act_dtype;
        /* 1 and 37 rows: dx overwritten or added to, gradients in fp32 or the compute dtype */
        for (int mode = 0; mode < 4; mode++) {
            const int grad_dtype = (mode & 2) ? t : DT_F32;
            if ((mode & 2) && t == DT_F32) continue; /* fp32: one gradient dtype */
            CHECK(ln_backward_case(1, C, mode & 1, grad_dtype, 0, NULL, NULL));
            CHECK(ln_backward_case(37, C, mode & 1, grad_dtype, 0, NULL, NULL));
        }
        /* many rows (blocks of several tiles): added to, gradients in the compute dtype */
        CHECK(ln_backward_case(many_rows(C), C, 1, t, 0, NULL, NULL));
        if (C == 1024 || C == 8192) { /* not 16-byte aligned: one element at a time */
            CHECK(ln_backward_case(37, C, 0, DT_F32, 1, NULL, NULL));
            CHECK(ln_backward_case(many_rows(C) / 4, C, 1, t, 1, NULL, NULL));
        }
    }
}

/* 30,000 columns: gain sums of 240 KB a block, more than its shared memory holds, so they
 * are added in the block's partial row itself; with 16-byte vectors and without (30,001) */
TEST(layernorm_backward_of_rows_too_wide_for_shared_memory_matches_the_cpu)
{
    EACH_PRECISION
    for (int C = 30000; C <= 30001; C++) {
        CHECK(ln_backward_case(37, C, 0, DT_F32, 0, NULL, NULL));
        CHECK(ln_backward_case(300, C, 1, g_be.act_dtype, 0, NULL, NULL));
    }
}

TEST(layernorm_backward_of_no_rows_gives_gains_of_zero)
{
    EACH_PRECISION
    {
        enum { C = 768 };
        float *nans = nan_array(C);
        void *dx_d = dev_raw(NULL, 1, elem(), 0), *dy_d = dev_raw(NULL, 1, elem(), 0), *x_d = dev_raw(NULL, 1, elem(), 0);
        void *g_d = dev_raw(NULL, C, elem(), 0), *dg_d = dev_raw(nans, C, 4, 0), *db_d = dev_raw(nans, C, 4, 0);
        float *m_d = dev_raw(NULL, 1, 4, 0), *r_d = dev_raw(NULL, 1, 4, 0);
        g_be.tf->layernorm_backward(&g_be, dx_d, dg_d, db_d, DT_F32, dy_d, x_d, m_d, r_d, g_d, 0, C, 0);
        float *dg = host_from(dg_d, C, DT_F32), *db = host_from(db_d, C, DT_F32);
        int zero = 1;
        for (int c = 0; c < C; c++) zero &= dg[c] == 0.0f && db[c] == 0.0f;
        if (!zero) printf("    no rows (%s): dgamma[0] %g, dbeta[0] %g, expected 0\n", dtype_name(g_be.act_dtype),
                          dg[0], db[0]);
        CHECK(zero);
        dev_free(dx_d, elem(), 0), dev_free(dy_d, elem(), 0), dev_free(x_d, elem(), 0), dev_free(g_d, elem(), 0);
        dev_free(dg_d, 4, 0), dev_free(db_d, 4, 0), dev_free(m_d, 4, 0), dev_free(r_d, 4, 0);
        free(nans), free(dg), free(db);
    }
}

TEST(layernorm_backward_gives_the_same_bits_twice)
{
    static const int shape[][3] = {{0, 768, 0}, {0, 8192, 0}, {1207, 1003, 0}, {0, 1024, 1}}; /* rows (0: many), C, offset */
    EACH_PRECISION
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        const int C = shape[k][1], R = shape[k][0] ? shape[k][0] : many_rows(C), off = shape[k][2];
        unsigned char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        ln_backward_case(R, C, 1, DT_F32, off, &a, &na);
        ln_backward_case(R, C, 1, DT_F32, off, &b, &nb);
        const int same = na == nb && memcmp(a, b, na) == 0;
        if (!same) printf("    %s: rows %d, C %d, offset %d: the two runs differ\n", dtype_name(g_be.act_dtype), R, C, off);
        CHECK(same);
        free(a), free(b);
    }
}

/* ---- time per call (printed, not checked) ---- */

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median of `calls` backward calls' times, each between two events, after 3 untimed */
static double ln_backward_median_s(void *dx, void *dg, void *db, const void *dy, const void *x, const float *mean,
                                   const float *rstd, const void *gamma, int R, int C, int accumulate)
{
    enum { CALLS = 21 };
    struct backend_event *ev[CALLS + 1];
    double t[CALLS];
    for (int i = 0; i < 3; i++)
        g_be.tf->layernorm_backward(&g_be, dx, dg, db, DT_F32, dy, x, mean, rstd, gamma, R, C, accumulate);
    for (int i = 0; i <= CALLS; i++) ev[i] = g_be.ops->event_create(&g_be);
    g_be.ops->event_record(&g_be, ev[0]);
    for (int i = 0; i < CALLS; i++) {
        g_be.tf->layernorm_backward(&g_be, dx, dg, db, DT_F32, dy, x, mean, rstd, gamma, R, C, accumulate);
        g_be.ops->event_record(&g_be, ev[i + 1]);
    }
    for (int i = 0; i < CALLS; i++) t[i] = g_be.ops->event_elapsed_s(&g_be, ev[i], ev[i + 1]);
    for (int i = 0; i <= CALLS; i++) g_be.ops->event_destroy(&g_be, ev[i]);
    qsort(t, CALLS, sizeof t[0], by_value);
    return t[CALLS / 2];
}

TEST(layernorm_backward_time_per_call_beside_the_memory_floor)
{
    static const struct { int R, C; const char *model; } shape[] = {
        {8192, 1600, "GPT-2 XL"}, {16384, 768, "GPT-2 small"}, {8192, 1024, "BERT-Large"}};
    if (!gpu("bf16")) return;
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        const int R = shape[k].R, C = shape[k].C;
        const size_t n = (size_t)R * C;
        float *x = rand_array(n, 21, 0.0f), *dy = rand_array(n, 22, 0.0f), *gamma = rand_array(C, 23, 1.0f);
        float *mean = calloc(R, 4), *rstd = malloc(R * 4);
        for (int r = 0; r < R; r++) rstd[r] = 1.7f;
        void *x_d = dev_from(x, n, DT_BF16, 0), *dy_d = dev_from(dy, n, DT_BF16, 0);
        void *g_d = dev_from(gamma, C, DT_BF16, 0);
        void *dx_d = dev_raw(NULL, n, elem(), 0), *dg_d = dev_raw(NULL, C, 4, 0), *db_d = dev_raw(NULL, C, 4, 0);
        float *mean_d = dev_raw(mean, R, 4, 0), *rstd_d = dev_raw(rstd, R, 4, 0);
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            /* read dy and x, write dx (and read it first when adding to it) */
            const double bytes = (3.0 + accumulate) * (double)n * elem();
            const double s = ln_backward_median_s(dx_d, dg_d, db_d, dy_d, x_d, mean_d, rstd_d, g_d, R, C, accumulate);
            printf("    bf16 backward %5d x %4d (%s), accumulate %d: %6.1f us a call (median of 21); the memory "
                   "floor %5.1f us (%.1f MB at %.1f TB/s): %.2f TB/s\n",
                   R, C, shape[k].model, accumulate, s * 1e6, bytes / MEMORY_BYTES_PER_S * 1e6, bytes / 1e6,
                   MEMORY_BYTES_PER_S / 1e12, bytes / s / 1e12);
        }
        dev_free(x_d, elem(), 0), dev_free(dy_d, elem(), 0), dev_free(g_d, elem(), 0), dev_free(dx_d, elem(), 0);
        dev_free(dg_d, 4, 0), dev_free(db_d, 4, 0), dev_free(mean_d, 4, 0), dev_free(rstd_d, 4, 0);
        free(x), free(dy), free(gamma), free(mean), free(rstd);
    }
}

int main(void)
{
    const int rc = test_main("transformer_cuda");
    if (g_open) backend_close(&g_be);
    return rc;
}

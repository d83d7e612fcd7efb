/* test_transformer_cuda.c — the cuda backend's LayerNorm against the CPU's
 * (kernels/transformer/transformer_cpu.h), in fp32, bf16 and fp16: in 16 bits the CPU runs
 * on the same rounded inputs and the GPU's outputs are held to the 16-bit dtype's
 * resolution, in fp32 (and the fp32 gain gradients in every precision) to fp32's. The
 * forward runs through the backend table as the transformer calls it (be->tf,
 * src/model/families/transformer.c); the backward that way too, and through both of its
 * kernels by name (cuda_layernorm_backward_using: the tiled kernel and the staged one,
 * which runs the tiled kernel where it does not apply), each against the one CPU result.
 *
 * Widths GPT-2's and BERT's (768, 1024, 1600), wider rows (2048 .. 16384), narrow ones (1,
 * 7, 8, 64) and an odd one (1003: one element at a time), also with pointers one element off
 * 16-byte alignment; 1, 37 and a few thousand rows (more tiles than the tiled kernel's
 * persistent grid has blocks, and a last tile cut short), and, for the staged kernel, rows
 * enough that every block refills its stages; dx overwritten and added to (accumulate), the
 * gains' gradients in fp32 and in the compute dtype, overwritten; rows whose gain sums do not
 * fit in shared memory (30,000 wide); no rows at all; each kernel's bits the same on two runs,
 * and the backend table's the kernel DPSCALE_LN_BACKWARD names; the staged kernel taking the
 * models' shapes on compute capability 9.0 or later.
 *
 * Where a GPU is present it also prints the median time of both bf16 backward kernels at
 * GPT-2 XL's, GPT-2 small's and BERT-Large's shapes and at 4096 x 8192, beside the time their
 * bytes take at 4.8 TB/s (an H200's memory): figures to read, not checks. Needs a GPU: where
 * none is visible (or the binary has no CUDA) every test passes without checking anything and
 * says so once. Run on the GPU: bin/tests/test_transformer_cuda */
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
#ifdef DPSCALE_HAVE_CUDA
#include <cuda_runtime.h>

#include "backend/cuda/cuda_state.h"
#include "kernels/kernels_cuda.h"
#include "kernels/transformer/transformer_kernels.h"
#endif

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

static const int widths[] = {768, 1024, 1600, 2048, 4096, 8192, 1003, 12288, 16384, 1, 7, 8, 64};
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

/* How a backward runs: through the backend's table, as the transformer calls it (the kernel
 * DPSCALE_LN_BACKWARD names), or one of the two kernels by name. */
enum ln_via { VIA_TABLE, VIA_TILED, VIA_STAGED, NVIA };
static const char *const via_names[NVIA] = {"backend table", "tiled", "staged"};

/* the kernel DPSCALE_LN_BACKWARD makes the table's (layernorm.cu reads it the same way) */
static int via_of_the_environment(void)
{
    const char *e = getenv("DPSCALE_LN_BACKWARD");
    return e != NULL && strcmp(e, "tiled") == 0 ? VIA_TILED : VIA_STAGED;
}

/* scratch for the kernels called by name: cuda_layernorm_scratch_floats(R, C) floats */
static float *partial_alloc(int R, int C)
{
#ifdef DPSCALE_HAVE_CUDA
    return dev_raw(NULL, cuda_layernorm_scratch_floats(R, C), 4, 0);
#else
    (void)R, (void)C;
    return dev_raw(NULL, 1, 4, 0);
#endif
}

/* The backward through `via` on the backend's stream (partial: partial_alloc's, for the
 * kernels by name). 0 where the launch failed, said. */
static int ln_backward_run(int via, void *dx, void *dg, void *db, void *ds, int grad_dtype, const void *dy,
                           const void *x, const float *mean, const float *rstd, const void *gamma, int R, int C,
                           int accumulate, float *partial)
{
    if (via == VIA_TABLE) {
        g_be.tf->layernorm_backward(&g_be, dx, dg, db, ds, grad_dtype, dy, x, mean, rstd, gamma, R, C, accumulate);
        return 1;
    }
#ifdef DPSCALE_HAVE_CUDA
    const cudaError_t e =
        cuda_layernorm_backward_using(via == VIA_STAGED ? LN_BACKWARD_STAGED : LN_BACKWARD_TILED, dx, dg, db, ds,
                                      grad_dtype, dy, x, mean, rstd, gamma, R, C, accumulate, partial,
                                      g_be.act_dtype, cuda_state_stream(&g_be));
    if (e == cudaSuccess) return 1;
    printf("    the %s backward's launch (rows %d, C %d): %s\n", via_names[via], R, C, cudaGetErrorString(e));
#else
    (void)partial;
#endif
    return 0;
}

#ifdef DPSCALE_HAVE_CUDA
typedef struct ln_staged_shape staged_shape;
#else
typedef struct {
    int blocks, tile_rows, stages, slices, sum_dx;
} staged_shape;
#endif

/* Whether the staged kernel takes these arguments on this GPU (a NULL pointer: any alignment
 * allowed), asked with dx's column sums where sums, and its shape; 0 without CUDA. */
static int staged_takes(staged_shape *shape, const void *dx, const void *dy, const void *x, const void *gamma,
                        const float *partial, int R, int C, int accumulate, int sums)
{
#ifdef DPSCALE_HAVE_CUDA
    return cuda_layernorm_backward_staged_takes(shape, dx, dy, x, gamma, partial, R, C, accumulate, sums,
                                                g_be.act_dtype);
#else
    (void)shape, (void)dx, (void)dy, (void)x, (void)gamma, (void)partial, (void)R, (void)C, (void)accumulate;
    (void)sums;
    return 0;
#endif
}

/* One problem's inputs, on the host and the device: x, dy, gamma, the statistics the CPU's
 * forward gives, and dx as it is before the call (random when accumulating, else NaN). */
struct ln_inputs {
    int R, C, accumulate, grad_dtype, off, sums; /* sums: ask for dx's column sums too */
    size_t n;
    float *x, *dy, *gamma, *dx0, *mean, *rstd;
    void *x_d, *dy_d, *g_d;
    float *mean_d, *rstd_d, *partial_d;
};

static void ln_inputs_make(struct ln_inputs *in, int R, int C, int accumulate, int grad_dtype, int off)
{
    const size_t n = (size_t)R * C;
    *in = (struct ln_inputs){.R = R, .C = C, .accumulate = accumulate, .grad_dtype = grad_dtype, .off = off, .n = n};
    in->x = rand_array(n, 11, 0.25f), in->dy = rand_array(n, 12, 0.0f), in->gamma = rand_array(C, 13, 1.0f);
    in->dx0 = accumulate ? rand_array(n, 14, 0.0f) : nan_array(n);
    in->mean = malloc((R + 1) * 4), in->rstd = malloc((R + 1) * 4);
    float *y = malloc((n + 1) * 4), *zeros = calloc(C + 1, 4);
    cpu_layernorm_forward(y, in->mean, in->rstd, in->x, in->gamma, zeros, R, C); /* the statistics both read */
    free(y), free(zeros);
    in->x_d = dev_from(in->x, n, g_be.act_dtype, off), in->dy_d = dev_from(in->dy, n, g_be.act_dtype, off);
    in->g_d = dev_from(in->gamma, C, g_be.act_dtype, off);
    in->mean_d = dev_raw(in->mean, R, 4, 0), in->rstd_d = dev_raw(in->rstd, R, 4, 0);
    in->partial_d = partial_alloc(R, C);
}

static void ln_inputs_free(struct ln_inputs *in)
{
    dev_free(in->x_d, elem(), in->off), dev_free(in->dy_d, elem(), in->off), dev_free(in->g_d, elem(), in->off);
    dev_free(in->mean_d, 4, 0), dev_free(in->rstd_d, 4, 0), dev_free(in->partial_d, 4, 0);
    free(in->x), free(in->dy), free(in->gamma), free(in->dx0), free(in->mean), free(in->rstd);
}

/* What one backward gave: dx, dgamma, dbeta (and dx's column sums, ds, where asked) as
 * floats; raw (when asked for) their bytes. */
struct ln_outputs {
    int launched, staged; /* staged: the staged kernel took it (VIA_STAGED) */
    float *dx, *dg, *db, *ds;
    unsigned char *raw;
    size_t raw_bytes;
};

/* The backward through `via` on dx = in->dx0 and gains' gradients of NaN, in grad_dtype */
static struct ln_outputs ln_run(const struct ln_inputs *in, int via, int want_raw)
{
    struct ln_outputs o = {0};
    const size_t n = in->n, ge = dtype_size(in->grad_dtype);
    const int C = in->C;
    float *nans_c = nan_array(C);
    void *dx_d = dev_from(in->dx0, n, g_be.act_dtype, in->off);
    void *dg_d = dev_from(nans_c, C, in->grad_dtype, 0), *db_d = dev_from(nans_c, C, in->grad_dtype, 0);
    void *ds_d = in->sums ? dev_from(nans_c, C, in->grad_dtype, 0) : NULL;
    o.staged = via == VIA_STAGED && staged_takes(NULL, dx_d, in->dy_d, in->x_d, in->g_d, in->partial_d, in->R, C,
                                                 in->accumulate, in->sums);
    o.launched = ln_backward_run(via, dx_d, dg_d, db_d, ds_d, in->grad_dtype, in->dy_d, in->x_d, in->mean_d,
                                 in->rstd_d, in->g_d, in->R, C, in->accumulate, in->partial_d);
    o.dx = host_from(dx_d, n, g_be.act_dtype), o.dg = host_from(dg_d, C, in->grad_dtype);
    o.db = host_from(db_d, C, in->grad_dtype);
    if (in->sums) o.ds = host_from(ds_d, C, in->grad_dtype);
    if (want_raw) {
        const int parts = in->sums ? 3 : 2;
        o.raw_bytes = n * elem() + parts * C * ge;
        o.raw = malloc(o.raw_bytes);
        g_be.ops->download(&g_be, o.raw, dx_d, n * elem());
        g_be.ops->download(&g_be, o.raw + n * elem(), dg_d, C * ge);
        g_be.ops->download(&g_be, o.raw + n * elem() + C * ge, db_d, C * ge);
        if (in->sums) g_be.ops->download(&g_be, o.raw + n * elem() + 2 * C * ge, ds_d, C * ge);
    }
    dev_free(dx_d, elem(), in->off), dev_free(dg_d, ge, 0), dev_free(db_d, ge, 0);
    if (ds_d != NULL) dev_free(ds_d, ge, 0);
    free(nans_c);
    return o;
}

static void ln_outputs_free(struct ln_outputs *o) { free(o->dx), free(o->dg), free(o->db), free(o->ds), free(o->raw); }

/* Column sums of the R x C floats a, in double: what dx's column sums must be */
static float *column_sums(const float *a, int R, int C)
{
    float *s = malloc((C + 1) * sizeof *s);
    for (int c = 0; c < C; c++) {
        double v = 0.0;
        for (int r = 0; r < R; r++) v += a[(size_t)r * C + c];
        s[c] = (float)v;
    }
    return s;
}

/* The backward on the CPU and, from the same dy, x, mean, rstd, gamma (and dx, when
 * accumulate), through the table and each kernel by name, with dx's column sums where sums
 * (held to the sums of the dx that kernel wrote). Returns whether all agree with the CPU. */
static int ln_backward_case_sums(int R, int C, int accumulate, int grad_dtype, int off, int sums)
{
    struct ln_inputs in;
    ln_inputs_make(&in, R, C, accumulate, grad_dtype, off);
    in.sums = sums;
    const size_t n = in.n;
    float *dx = malloc((n + 1) * 4), *dgamma = malloc((C + 1) * 4), *dbeta = malloc((C + 1) * 4);
    if (accumulate) memcpy(dx, in.dx0, n * 4);
    else memset(dx, 0, n * 4);
    cpu_layernorm_backward(dx, dgamma, dbeta, in.dy, in.x, in.mean, in.rstd, in.gamma, R, C, accumulate);
    int ok = 1;
    for (int via = 0; via < NVIA; via++) {
        struct ln_outputs o = ln_run(&in, via, 0);
        int good = o.launched && close_to("layernorm dx", o.dx, dx, n, tol_of(g_be.act_dtype));
        good &= close_to("dgamma", o.dg, dgamma, C, tol_of(grad_dtype)) &
                close_to("dbeta", o.db, dbeta, C, tol_of(grad_dtype));
        if (sums && o.launched) {
            float *want = column_sums(o.dx, R, C);
            good &= close_to("dx's column sums", o.ds, want, C, tol_of(grad_dtype));
            free(want);
        }
        if (!good)
            printf("    backward (%s%s): rows %d, C %d, accumulate %d, gradients %s, pointer offset %d, dx's sums %d\n",
                   via_names[via], via == VIA_STAGED && !o.staged ? ", which ran the tiled kernel" : "", R, C,
                   accumulate, dtype_name(grad_dtype), off, sums);
        ok &= good;
        ln_outputs_free(&o);
    }
    ln_inputs_free(&in);
    free(dx), free(dgamma), free(dbeta);
    return ok;
}

/* ln_backward_case_sums without dx's sums and with them (as the transformer asks where a
 * linear layer's bias gradient is dx's column sums) */
static int ln_backward_case(int R, int C, int accumulate, int grad_dtype, int off)
{
    return ln_backward_case_sums(R, C, accumulate, grad_dtype, off, 0) &
           ln_backward_case_sums(R, C, accumulate, grad_dtype, off, 1);
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
            CHECK(ln_backward_case(1, C, mode & 1, grad_dtype, 0));
            CHECK(ln_backward_case(37, C, mode & 1, grad_dtype, 0));
        }
        /* many rows (blocks of several tiles): overwritten in fp32, added to in the compute dtype */
        CHECK(ln_backward_case(many_rows(C), C, 0, DT_F32, 0));
        CHECK(ln_backward_case(many_rows(C), C, 1, t, 0));
        if (C == 1024 || C == 1600 || C == 8192) { /* not 16-byte aligned: one element at a time */
            CHECK(ln_backward_case(37, C, 0, DT_F32, 1));
            CHECK(ln_backward_case(many_rows(C) / 4, C, 1, t, 1));
        }
    }
}

/* The staged kernel over rows enough that each block takes more tiles than it has stages,
 * so that every stage is refilled (its barrier's phases alternate): 10 tiles a block (of the
 * tiles it has at 8192 rows), and a few rows more, so that the blocks' counts differ. Where
 * the staged kernel does not take the width (before compute capability 9.0) it says so and
 * checks the tiled kernel alone. */
TEST(layernorm_backward_staged_refills_its_stages_and_matches_the_cpu)
{
    static const int refill_widths[] = {768, 1600, 8192};
    EACH_PRECISION
    for (size_t k = 0; k < sizeof refill_widths / sizeof refill_widths[0]; k++)
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            const int C = refill_widths[k];
            staged_shape sh, sh2;
            int R = 1207;
            if (staged_takes(&sh, NULL, NULL, NULL, NULL, NULL, 8192, C, accumulate, 1)) {
                R = sh.blocks * sh.tile_rows * 10 + 5;
                CHECK(staged_takes(&sh2, NULL, NULL, NULL, NULL, NULL, R, C, accumulate, 1));
                const int tiles = ((R + sh2.blocks - 1) / sh2.blocks + sh2.tile_rows - 1) / sh2.tile_rows;
                if (tiles <= sh2.stages)
                    printf("    %s, C %d: %d tiles a block, %d stages: no refill\n", dtype_name(g_be.act_dtype), C,
                           tiles, sh2.stages);
                CHECK(tiles > sh2.stages);
            } else {
                printf("    %s, C %d, accumulate %d: not the staged kernel on this GPU; the tiled one alone "
                       "checked\n",
                       dtype_name(g_be.act_dtype), C, accumulate);
            }
            CHECK(ln_backward_case(R, C, accumulate, accumulate ? g_be.act_dtype : DT_F32, 0));
        }
}

/* On compute capability 9.0 or later the staged kernel takes the models' shapes (16-byte
 * vectors, aligned; bf16 and fp16 up to 16,384 wide, 8,192 when accumulating, fp32 8,192 wide
 * when overwriting dx and 4,096 when adding to it),
 * and adds dx's column sums itself up to 8,192 wide in 16 bits and 4,096 in fp32; an odd
 * width or a pointer off alignment goes to the tiled kernel. */
TEST(the_staged_layernorm_backward_takes_the_models_shapes)
{
    static const int wide[] = {768, 1024, 1600, 2048, 4096, 8192};
    EACH_PRECISION
    {
        staged_shape sh;
        if (!staged_takes(&sh, NULL, NULL, NULL, NULL, NULL, 8192, 768, 0, 0)) {
            printf("    %s: the staged kernel does not run on this GPU\n", dtype_name(g_be.act_dtype));
            continue;
        }
        for (size_t k = 0; k < sizeof wide / sizeof wide[0]; k++)
            for (int mode = 0; mode < 4; mode++) {
                const int accumulate = mode & 1, sums = mode >> 1;
                const int takes = staged_takes(&sh, NULL, NULL, NULL, NULL, NULL, 8192, wide[k], accumulate, sums);
                const int sums_here = g_be.act_dtype == DT_F32 ? wide[k] <= 4096 : 1; /* all of `wide` in 16 bits */
                /* fp32 rows of 8,192 added to: two 96 KB stages and gamma leave too little room */
                const int staged_here = !(g_be.act_dtype == DT_F32 && wide[k] == 8192 && accumulate);
                if (takes != staged_here || (takes && sh.sum_dx != (sums && sums_here)))
                    printf("    %s: 8192 x %d, accumulate %d, dx's sums %d: staged %d, sums in the kernel %d\n",
                           dtype_name(g_be.act_dtype), wide[k], accumulate, sums, takes, takes ? sh.sum_dx : 0);
                CHECK(takes == staged_here && (!takes || sh.sum_dx == (sums && sums_here)));
            }
        if (g_be.act_dtype != DT_F32) {
            CHECK(staged_takes(&sh, NULL, NULL, NULL, NULL, NULL, 8192, 16384, 0, 1));
            CHECK(!sh.sum_dx); /* two vectors a thread: the sums by the bias gradient's kernel after it */
        }
        CHECK(!staged_takes(&sh, NULL, NULL, NULL, NULL, NULL, 8192, 1003, 0, 0));
        /* addresses one element past 16-byte alignment: dy, then the partial rows */
        CHECK(!staged_takes(&sh, NULL, (const void *)(uintptr_t)(16 + elem()), NULL, NULL, NULL, 8192, 1024, 0, 0));
        CHECK(!staged_takes(&sh, NULL, NULL, NULL, NULL, (const float *)(uintptr_t)(16 + 4), 8192, 1024, 0, 0));
    }
}

/* 30,000 columns: gain sums of 240 KB a block, more than the tiled kernel's shared memory
 * holds, so that it adds them in the block's partial row itself (and more than the staged
 * kernel stages: it runs the tiled one); with 16-byte vectors and without (30,001) */
TEST(layernorm_backward_of_rows_too_wide_for_shared_memory_matches_the_cpu)
{
    EACH_PRECISION
    for (int C = 30000; C <= 30001; C++) {
        CHECK(ln_backward_case(37, C, 0, DT_F32, 0));
        CHECK(ln_backward_case(300, C, 1, g_be.act_dtype, 0));
    }
}

TEST(layernorm_backward_of_no_rows_gives_gains_of_zero)
{
    EACH_PRECISION
    for (int via = 0; via < NVIA; via++) {
        enum { C = 768 };
        float *nans = nan_array(C);
        void *dx_d = dev_raw(NULL, 1, elem(), 0), *dy_d = dev_raw(NULL, 1, elem(), 0), *x_d = dev_raw(NULL, 1, elem(), 0);
        void *g_d = dev_raw(NULL, C, elem(), 0), *dg_d = dev_raw(nans, C, 4, 0), *db_d = dev_raw(nans, C, 4, 0);
        void *ds_d = dev_raw(nans, C, 4, 0);
        float *m_d = dev_raw(NULL, 1, 4, 0), *r_d = dev_raw(NULL, 1, 4, 0), *partial = partial_alloc(0, C);
        CHECK(ln_backward_run(via, dx_d, dg_d, db_d, ds_d, DT_F32, dy_d, x_d, m_d, r_d, g_d, 0, C, 0, partial));
        float *dg = host_from(dg_d, C, DT_F32), *db = host_from(db_d, C, DT_F32), *ds = host_from(ds_d, C, DT_F32);
        int zero = 1;
        for (int c = 0; c < C; c++) zero &= dg[c] == 0.0f && db[c] == 0.0f && ds[c] == 0.0f;
        if (!zero)
            printf("    no rows (%s, %s): dgamma[0] %g, dbeta[0] %g, dx's sum[0] %g, expected 0\n",
                   dtype_name(g_be.act_dtype), via_names[via], dg[0], db[0], ds[0]);
        CHECK(zero);
        dev_free(dx_d, elem(), 0), dev_free(dy_d, elem(), 0), dev_free(x_d, elem(), 0), dev_free(g_d, elem(), 0);
        dev_free(dg_d, 4, 0), dev_free(db_d, 4, 0), dev_free(ds_d, 4, 0), dev_free(m_d, 4, 0), dev_free(r_d, 4, 0);
        dev_free(partial, 4, 0);
        free(nans), free(dg), free(db), free(ds);
    }
}

/* Each kernel twice on the same inputs: the same bytes of dx, dgamma and dbeta (no atomics,
 * sums in one order); and the backend table's are those of the kernel DPSCALE_LN_BACKWARD
 * names (the tiled kernel when unset). 8192 x 1600: the staged kernel's blocks refill their
 * stages. */
TEST(layernorm_backward_gives_the_same_bits_twice)
{
    static const int shape[][3] = {{0, 768, 0},    {0, 8192, 0},   {1207, 1003, 0},
                                   {0, 1024, 1},   {8192, 1600, 0}}; /* rows (0: many), C, pointer offset */
    EACH_PRECISION
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        const int C = shape[k][1], R = shape[k][0] ? shape[k][0] : many_rows(C), off = shape[k][2];
        struct ln_inputs in;
        ln_inputs_make(&in, R, C, 1, DT_F32, off);
        in.sums = 1;
        struct ln_outputs o[NVIA];
        for (int via = 0; via < NVIA; via++) o[via] = ln_run(&in, via, 1);
        for (int via = VIA_TILED; via < NVIA; via++) {
            struct ln_outputs again = ln_run(&in, via, 1);
            const int same = o[via].raw_bytes == again.raw_bytes && memcmp(o[via].raw, again.raw, again.raw_bytes) == 0;
            if (!same)
                printf("    %s, %s: rows %d, C %d, offset %d: the two runs differ\n", dtype_name(g_be.act_dtype),
                       via_names[via], R, C, off);
            CHECK(same);
            ln_outputs_free(&again);
        }
        const int env = via_of_the_environment();
        const int table_is_env = memcmp(o[VIA_TABLE].raw, o[env].raw, o[env].raw_bytes) == 0;
        if (!table_is_env)
            printf("    %s: rows %d, C %d: the backend table's bits are not the %s kernel's\n",
                   dtype_name(g_be.act_dtype), R, C, via_names[env]);
        CHECK(table_is_env);
        for (int via = 0; via < NVIA; via++) ln_outputs_free(&o[via]);
        ln_inputs_free(&in);
    }
}

/* ---- time per call (printed, not checked) ---- */

static int by_value(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* the median of `calls` backward calls' times through `via`, each between two events, after 3
 * untimed */
static double ln_backward_median_s(int via, void *dx, void *dg, void *db, void *ds, const void *dy, const void *x,
                                   const float *mean, const float *rstd, const void *gamma, int R, int C,
                                   int accumulate, float *partial)
{
    enum { CALLS = 21 };
    struct backend_event *ev[CALLS + 1];
    double t[CALLS];
    for (int i = 0; i < 3; i++)
        ln_backward_run(via, dx, dg, db, ds, DT_F32, dy, x, mean, rstd, gamma, R, C, accumulate, partial);
    for (int i = 0; i <= CALLS; i++) ev[i] = g_be.ops->event_create(&g_be);
    g_be.ops->event_record(&g_be, ev[0]);
    for (int i = 0; i < CALLS; i++) {
        ln_backward_run(via, dx, dg, db, ds, DT_F32, dy, x, mean, rstd, gamma, R, C, accumulate, partial);
        g_be.ops->event_record(&g_be, ev[i + 1]);
    }
    for (int i = 0; i < CALLS; i++) t[i] = g_be.ops->event_elapsed_s(&g_be, ev[i], ev[i + 1]);
    for (int i = 0; i <= CALLS; i++) g_be.ops->event_destroy(&g_be, ev[i]);
    qsort(t, CALLS, sizeof t[0], by_value);
    return t[CALLS / 2];
}

/* the bias gradient's kernel on dx into ds: what dx's sums in the LayerNorm save */
struct bias_alone {
    void *ds, *dx, *partial;
    int R, C;
};
static void bias_alone_run(void *arg)
{
    const struct bias_alone *a = arg;
#ifdef DPSCALE_HAVE_CUDA
    cuda_bias_grad(a->ds, 0, a->dx, a->R, a->C, g_be.act_dtype, a->partial, cuda_state_stream(&g_be));
#else
    (void)a;
#endif
}

TEST(layernorm_backward_time_per_call_beside_the_memory_floor)
{
    static const struct { int R, C; const char *model; } shape[] = {
        {8192, 1600, "GPT-2 XL"}, {16384, 768, "GPT-2 small"}, {8192, 1024, "BERT-Large"}, {4096, 8192, "8,192 wide"}};
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
        void *ds_d = dev_raw(NULL, C, 4, 0);
        float *mean_d = dev_raw(mean, R, 4, 0), *rstd_d = dev_raw(rstd, R, 4, 0), *partial = partial_alloc(R, C);
        for (int accumulate = 0; accumulate < 2; accumulate++) {
            /* read dy and x, write dx (and read it first when adding to it) */
            const double bytes = (3.0 + accumulate) * (double)n * elem();
            double s[NVIA] = {0};
            for (int via = VIA_TILED; via < NVIA; via++) {
                staged_shape sh;
                char how[96] = "";
                if (via == VIA_STAGED) {
                    if (staged_takes(&sh, dx_d, dy_d, x_d, g_d, partial, R, C, accumulate, 0))
                        snprintf(how, sizeof how, " [%d blocks, tiles of %d rows, %d in flight, %d slices]",
                                 sh.blocks, sh.tile_rows, sh.stages, sh.slices);
                    else snprintf(how, sizeof how, " [not taken: the tiled kernel ran]");
                }
                s[via] = ln_backward_median_s(via, dx_d, dg_d, db_d, NULL, dy_d, x_d, mean_d, rstd_d, g_d, R, C,
                                              accumulate, partial);
                printf("    bf16 backward %5d x %4d (%s), accumulate %d, %-6s: %6.1f us a call (median of 21); the "
                       "memory floor %5.1f us (%.1f MB at %.1f TB/s): %.2f TB/s%s\n",
                       R, C, shape[k].model, accumulate, via_names[via], s[via] * 1e6,
                       bytes / MEMORY_BYTES_PER_S * 1e6, bytes / 1e6, MEMORY_BYTES_PER_S / 1e12,
                       bytes / s[via] / 1e12, how);
            }
            printf("    bf16 backward %5d x %4d (%s), accumulate %d: staged / tiled %.2f\n", R, C, shape[k].model,
                   accumulate, s[VIA_STAGED] / s[VIA_TILED]);
            /* with dx's column sums (a linear layer's bias gradient), and the kernel they replace */
            staged_shape sh;
            const int in_kernel = staged_takes(&sh, dx_d, dy_d, x_d, g_d, partial, R, C, accumulate, 1) && sh.sum_dx;
            const double with = ln_backward_median_s(VIA_STAGED, dx_d, dg_d, db_d, ds_d, dy_d, x_d, mean_d, rstd_d, g_d,
                                                     R, C, accumulate, partial);
            struct bias_alone ba = {ds_d, dx_d, partial, R, C};
            const double bias = median_of_10_calls(bias_alone_run, &ba);
            printf("    bf16 backward %5d x %4d (%s), accumulate %d, staged with dx's column sums (%s): %6.1f us "
                   "(+%.1f); the bias gradient's kernel on dx alone %.1f us: %.1f us saved a call\n",
                   R, C, shape[k].model, accumulate, in_kernel ? "in the kernel" : "the bias gradient's kernel after it",
                   with * 1e6, (with - s[VIA_STAGED]) * 1e6, bias * 1e6, (s[VIA_STAGED] + bias - with) * 1e6);
        }
        dev_free(x_d, elem(), 0), dev_free(dy_d, elem(), 0), dev_free(g_d, elem(), 0), dev_free(dx_d, elem(), 0);
        dev_free(dg_d, 4, 0), dev_free(db_d, 4, 0), dev_free(ds_d, 4, 0), dev_free(mean_d, 4, 0);
        dev_free(rstd_d, 4, 0), dev_free(partial, 4, 0);
        free(x), free(dy), free(gamma), free(mean), free(rstd);
    }
}

int main(void)
{
    const int rc = test_main("transformer_cuda");
    if (g_open) backend_close(&g_be);
    return rc;
}

/* test_resnet_kernels.c — the ResNet's CPU kernels: col2im is the adjoint of im2col;
 * a convolution as im2col + GEMM (forward, weight and input gradients) against the
 * direct seven-loop definition; batch norm's statistics, running statistics and
 * backward against central differences in training and frozen mode, with and
 * without its ReLU; batch norm with the residual add and ReLU is, bit for bit, the
 * batch norms and the add it replaces; backward's recomputed ReLU mask is the forward's
 * output's, bit for bit, on values at the kink; max and average pooling against their
 * definitions; the synthetic images as a pure function of the sample; and
 * bit-identical results with 1 and 4 threads. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/resnet/bn_operands.h"
#include "kernels/resnet/relu_mask.h"
#include "kernels/resnet/resnet_cpu.h"
#include "kernels/synthetic.h"
#include "backend/backend.h"
#include "check.h"
#include "test_arrays.h"
#include "test_bn_kinks.h"
#include "test_conv_shapes.h"

#define FD_EPS 1e-3f
#define FD_TOL 1e-2

/* odd sizes, strides 1 and 2, padding, the stem's 7x7/2 and a shortcut's 1x1/2 */
static const struct conv_shape *shapes(int *n)
{
    static struct conv_shape s[TEST_CONV_SHAPES];
    test_conv_shapes(s);
    *n = TEST_CONV_SHAPES;
    return s;
}

static size_t x_size(const struct conv_shape *s) { return (size_t)s->N * s->H * s->W * s->C; }
static size_t col_rows(const struct conv_shape *s) { return (size_t)s->N * s->P * s->Q; }
static int col_cols(const struct conv_shape *s) { return s->R * s->S * s->C; }
static size_t col_size(const struct conv_shape *s) { return col_rows(s) * conv_col_ld(s); }

TEST(col2im_is_the_adjoint_of_im2col)
{
    int ns;
    const struct conv_shape *all = shapes(&ns);
    for (int k = 0; k < ns; k++) {
        const struct conv_shape *s = &all[k];
        const size_t nx = x_size(s), nc = col_size(s);
        float *x = rand_array(nx, 1 + k), *y = rand_array(nc, 11 + k), *col = malloc(nc * 4), *dx = malloc(nx * 4);
        cpu_im2col(col, x, s);
        cpu_col2im(dx, y, s);
        const double lhs = dot_d(col, y, nc), rhs = dot_d(x, dx, nx);
        if (fabs(lhs - rhs) > 1e-5 * (fabs(lhs) + 1.0))
            printf("    shape %d: <im2col x, y> %.9g, <x, col2im y> %.9g\n", k, lhs, rhs);
        CHECK(fabs(lhs - rhs) <= 1e-5 * (fabs(lhs) + 1.0));
        free(x), free(y), free(col), free(dx);
    }
}

/* The direct definition in double, NHWC, weights [Cout x R x S x C]: y, and the
 * gradients dW and dx from dy. */
static void conv_direct(const struct conv_shape *s, int Cout, const float *x, const float *w, const float *dy,
                        double *y, double *dw, double *dx)
{
    const int K = col_cols(s);
    for (size_t i = 0; i < col_rows(s) * Cout; i++) y[i] = 0.0;
    for (size_t i = 0; i < (size_t)Cout * K; i++) dw[i] = 0.0;
    for (size_t i = 0; i < x_size(s); i++) dx[i] = 0.0;
    for (int n = 0; n < s->N; n++)
        for (int p = 0; p < s->P; p++)
            for (int q = 0; q < s->Q; q++)
                for (int o = 0; o < Cout; o++)
                    for (int r = 0; r < s->R; r++)
                        for (int t = 0; t < s->S; t++)
                            for (int c = 0; c < s->C; c++) {
                                const int h = p * s->stride - s->pad + r, v = q * s->stride - s->pad + t;
                                if (h < 0 || h >= s->H || v < 0 || v >= s->W) continue;
                                const size_t xi = (((size_t)n * s->H + h) * s->W + v) * s->C + c;
                                const size_t wi = (size_t)o * K + ((size_t)r * s->S + t) * s->C + c;
                                const size_t yi = (((size_t)n * s->P + p) * s->Q + q) * Cout + o;
                                y[yi] += (double)x[xi] * w[wi];
                                dw[wi] += (double)dy[yi] * x[xi];
                                dx[xi] += (double)dy[yi] * w[wi];
                            }
}

static double worst_rel(const float *got, const double *want, size_t n)
{
    double scale = 0.0, worst = 0.0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(want[i]));
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(got[i] - want[i]) / (scale > 0 ? scale : 1.0));
    return worst;
}

TEST(convolution_as_im2col_and_gemm_matches_the_direct_definition)
{
    enum { COUT = 5 };
    int ns;
    const struct conv_shape *all = shapes(&ns);
    for (int k = 0; k < ns; k++) {
        const struct conv_shape *s = &all[k];
        const int M = (int)col_rows(s), K = col_cols(s), LD = conv_col_ld(s);
        const size_t nx = x_size(s), nc = col_size(s);
        float *x = rand_array(nx, 21 + k), *w = rand_array((size_t)COUT * K, 31 + k);
        float *dy = rand_array((size_t)M * COUT, 41 + k);
        float *col = rand_array(nc, 51 + k), *y = malloc((size_t)M * COUT * 4), *dw = malloc((size_t)COUT * LD * 4);
        float *wp = calloc((size_t)COUT * LD, 4), *dx = malloc(nx * 4);
        double *ry = malloc((size_t)M * COUT * 8), *rdw = malloc((size_t)COUT * K * 8), *rdx = malloc(nx * 8);
        for (int o = 0; o < COUT; o++) memcpy(wp + (size_t)o * LD, w + (size_t)o * K, (size_t)K * 4);
        conv_direct(s, COUT, x, w, dy, ry, rdw, rdx);
        /* y = col Wᵀ; dW = dyᵀ col; dx = col2im(dy W) on rows of LD, the weight padded
         * with zeros as the model pads it: what the model runs */
        cpu_im2col(col, x, s); /* over random bits: it writes the padding's zeros */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, COUT, LD, 1.0f, col, LD, wp, LD, 0.0f, y, COUT);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, COUT, LD, M, 1.0f, dy, COUT, col, LD, 0.0f, dw, LD);
        int pads_zero = 1;
        for (int o = 0; o < COUT; o++) {
            for (int j = K; j < LD; j++) pads_zero &= dw[(size_t)o * LD + j] == 0.0f;
            memmove(dw + (size_t)o * K, dw + (size_t)o * LD, (size_t)K * 4); /* its K columns, packed */
        }
        CHECK(pads_zero);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, LD, COUT, 1.0f, dy, COUT, wp, LD, 0.0f, col, LD);
        cpu_col2im(dx, col, s);
        const double ey = worst_rel(y, ry, (size_t)M * COUT), ew = worst_rel(dw, rdw, (size_t)COUT * K);
        const double ex = worst_rel(dx, rdx, nx);
        if (ey > 1e-5 || ew > 1e-5 || ex > 1e-5) printf("    shape %d: y %.2e, dW %.2e, dx %.2e\n", k, ey, ew, ex);
        CHECK(ey <= 1e-5);
        CHECK(ew <= 1e-5);
        CHECK(ex <= 1e-5);
        free(x), free(w), free(wp), free(dy), free(col), free(y), free(dw), free(dx), free(ry), free(rdw), free(rdx);
    }
}

TEST(im2col_zero_pads_and_copies_each_window)
{
    const struct conv_shape s = conv(1, 3, 3, 2, 3, 1, 1);
    float x[18], col[9 * 18];
    for (int i = 0; i < 18; i++) x[i] = (float)(i + 1);
    cpu_im2col(col, x, &s);
    /* output (0,0): taps (r,t) = (0,*) and (*,0) are padding; tap (1,1) is pixel (0,0) */
    for (int c = 0; c < 2; c++) {
        CHECK(col[(0 * 3 + 0) * 2 + c] == 0.0f);
        CHECK(col[(1 * 3 + 1) * 2 + c] == x[c]);
        CHECK(col[(2 * 3 + 2) * 2 + c] == x[(1 * 3 + 1) * 2 + c]);
    }
    /* the centre output sees the whole image in order */
    for (int i = 0; i < 18; i++) CHECK(col[4 * 18 + i] == x[i]);
}

TEST(relu_mask_bits_are_the_outputs_above_zero_and_zero_the_gradient)
{
    /* 11 elements: a partial last byte; zeros of both signs, a NaN, a subnormal, infinities */
    const float y[11] = {1.0f, 0.0f, -0.0f, -1.0f, NAN, 1e-40f, INFINITY, -INFINITY, 2.0f, 0.0f, 3.0f};
    const float dy[11] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    uint8_t mask[2] = {0xff, 0xff};
    CHECK(relu_mask_bytes(11) == 2 && relu_mask_bytes(16) == 2 && relu_mask_bytes(0) == 0);
    cpu_relu_mask(mask, y, 11);
    CHECK(mask[0] == (1u << 0 | 1u << 5 | 1u << 6));
    CHECK(mask[1] == (1u << 0 | 1u << 2)); /* the unused bits of the last byte 0 */
    float g[11];
    cpu_relu_mask_apply(g, dy, mask, 11);
    for (int i = 0; i < 11; i++) CHECK(g[i] == (y[i] > 0.0f ? dy[i] : 0.0f));
    memcpy(g, dy, sizeof g);
    cpu_relu_mask_apply(g, g, mask, 11); /* in place */
    for (int i = 0; i < 11; i++) CHECK(g[i] == (y[i] > 0.0f ? dy[i] : 0.0f));
}

/* ---- batch norm ---- */

enum { BR = 12, BC = 5 };

struct bn_case {
    int training, relu;
};

static double bn_loss(const struct bn_case *c, const float *x, const float *gamma, const float *beta, const float *R)
{
    float y[BR * BC], mean[BC], rstd[BC], rm[BC], rv[BC];
    for (int j = 0; j < BC; j++) rm[j] = 0.25f * (float)j, rv[j] = 0.5f + 0.25f * (float)j;
    cpu_batchnorm_forward(y, mean, rstd, rm, rv, x, gamma, beta, BR, BC, c->training, 0.1f, c->relu);
    return dot_d(y, R, BR * BC);
}

static double bn_fd_worst(const struct bn_case *c, float *w, size_t n, const float *grad, const float *x,
                          const float *gamma, const float *beta, const float *R)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        const float keep = w[i];
        w[i] = keep + FD_EPS;
        const double lp = bn_loss(c, x, gamma, beta, R);
        w[i] = keep - FD_EPS;
        const double lm = bn_loss(c, x, gamma, beta, R);
        w[i] = keep;
        worst = fmax(worst, rel_err(grad[i], (lp - lm) / (2.0 * FD_EPS)));
    }
    return worst;
}

TEST(batchnorm_backward_matches_finite_differences_in_training_and_frozen_mode)
{
    const struct bn_case cases[] = {{1, 0}, {1, 1}, {0, 0}, {0, 1}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const struct bn_case *c = &cases[k];
        float *x = rand_array(BR * BC, 51), *gamma = rand_array(BC, 52), *beta = rand_array(BC, 53);
        float *R = rand_array(BR * BC, 54);
        for (int j = 0; j < BC; j++) gamma[j] += 1.5f; /* away from 0 */
        float y[BR * BC], mean[BC], rstd[BC], rm[BC], rv[BC], dx[BR * BC], dg[BC], db[BC], inplace[BR * BC];
        for (int j = 0; j < BC; j++) rm[j] = 0.25f * (float)j, rv[j] = 0.5f + 0.25f * (float)j;
        cpu_batchnorm_forward(y, mean, rstd, rm, rv, x, gamma, beta, BR, BC, c->training, 0.1f, c->relu);
        cpu_batchnorm_backward(dx, dg, db, R, x, mean, rstd, gamma, beta, BR, BC, c->training, c->relu);
        const double ex = bn_fd_worst(c, x, BR * BC, dx, x, gamma, beta, R);
        const double eg = bn_fd_worst(c, gamma, BC, dg, x, gamma, beta, R);
        const double eb = bn_fd_worst(c, beta, BC, db, x, gamma, beta, R);
        printf("    training %d relu %d: worst relative error x %.2e, gamma %.2e, beta %.2e\n", c->training, c->relu,
               ex, eg, eb);
        CHECK(ex < FD_TOL);
        CHECK(eg < FD_TOL);
        CHECK(eb < FD_TOL);
        /* dx may be dy itself */
        memcpy(inplace, R, sizeof inplace);
        cpu_batchnorm_backward(inplace, dg, db, inplace, x, mean, rstd, gamma, beta, BR, BC, c->training, c->relu);
        CHECK(memcmp(inplace, dx, sizeof dx) == 0);
        free(x), free(gamma), free(beta), free(R);
    }
}

TEST(batchnorm_training_normalises_each_channel_and_updates_the_running_statistics)
{
    float *x = rand_array(BR * BC, 61), gamma[BC], beta[BC], y[BR * BC], mean[BC], rstd[BC], rm[BC], rv[BC];
    for (int j = 0; j < BC; j++) {
        x[j] += 3.0f; /* a shifted row: the mean is not 0 */
        gamma[j] = 1.0f + (float)j, beta[j] = -0.5f * (float)j, rm[j] = 1.0f, rv[j] = 2.0f;
    }
    cpu_batchnorm_forward(y, mean, rstd, rm, rv, x, gamma, beta, BR, BC, 1, 0.1f, 0);
    for (int j = 0; j < BC; j++) {
        double m = 0.0, v = 0.0, ym = 0.0, yv = 0.0;
        for (int i = 0; i < BR; i++) m += x[i * BC + j], ym += y[i * BC + j];
        m /= BR, ym /= BR;
        for (int i = 0; i < BR; i++) {
            v += (x[i * BC + j] - m) * (x[i * BC + j] - m);
            yv += (y[i * BC + j] - ym) * (y[i * BC + j] - ym);
        }
        v /= BR, yv /= BR;
        CHECK_NEAR(mean[j], m, 1e-6);
        CHECK_NEAR(rstd[j], 1.0 / sqrt(v + 1e-5), 1e-4);
        CHECK_NEAR(ym, beta[j], 1e-5);                                          /* the shift */
        CHECK_NEAR(yv, gamma[j] * gamma[j] * v / (v + 1e-5), 1e-4 * gamma[j] * gamma[j]); /* the gain */
        CHECK_NEAR(rm[j], 0.9 * 1.0 + 0.1 * m, 1e-6);                          /* momentum 0.1 */
        CHECK_NEAR(rv[j], 0.9 * 2.0 + 0.1 * v * BR / (BR - 1), 1e-5);           /* the unbiased variance */
    }
    free(x);
}

TEST(batchnorm_frozen_normalises_with_the_running_statistics_and_keeps_them)
{
    float *x = rand_array(BR * BC, 71), gamma[BC], beta[BC], y[BR * BC], mean[BC], rstd[BC], rm[BC], rv[BC];
    for (int j = 0; j < BC; j++) gamma[j] = 2.0f, beta[j] = 0.5f, rm[j] = 0.1f * (float)j, rv[j] = 4.0f;
    cpu_batchnorm_forward(y, mean, rstd, rm, rv, x, gamma, beta, BR, BC, 0, 0.1f, 1);
    for (int j = 0; j < BC; j++) {
        CHECK(rm[j] == 0.1f * (float)j && rv[j] == 4.0f);
        for (int i = 0; i < BR; i++) {
            const double want = (x[i * BC + j] - 0.1 * j) / sqrt(4.0 + 1e-5) * 2.0 + 0.5;
            CHECK_NEAR(y[i * BC + j], want > 0 ? want : 0.0, 1e-6); /* and its ReLU */
        }
    }
    free(x);
}

/* A bottleneck's tensors for batchnorm_add_relu_forward: the last batch norm's input,
 * the projection's, the identity shortcut, gains and running statistics for both. */
struct block_case {
    int rows, C;
    float *x, *xp, *shortcut, *gamma, *beta, *gp, *bp, *rm, *rv;
};

static struct block_case block_case_new(int rows, int C, unsigned seed)
{
    const size_t n = (size_t)rows * C;
    struct block_case b = {rows, C, rand_array(n, seed), rand_array(n, seed + 1), rand_array(n, seed + 2),
                           rand_array(C, seed + 3), rand_array(C, seed + 4), rand_array(C, seed + 5),
                           rand_array(C, seed + 6), rand_array(2 * (size_t)C, seed + 7), rand_array(2 * (size_t)C, 0)};
    for (size_t i = 0; i < n; i++) b.xp[i] = 2.0f * b.xp[i] + 1.5f; /* a mean away from 0, a spread away from 1 */
    for (int j = 0; j < 2 * C; j++) b.rv[j] = 1.0f + 0.5f * b.rm[j] * b.rm[j];
    return b;
}

static void block_case_free(struct block_case *b)
{
    free(b->x), free(b->xp), free(b->shortcut), free(b->gamma), free(b->beta), free(b->gp), free(b->bp);
    free(b->rm), free(b->rv);
}

/* stats [2 x 4 x C]: each batch norm's mean, rstd, running mean and variance, the running
 * ones from the case's */
static struct bn_operands block_operands(const struct block_case *b, int which, float *stats)
{
    const int C = b->C;
    float *st = stats + (size_t)which * 4 * C;
    memcpy(st + 2 * C, b->rm + (size_t)which * C, C * sizeof(float));
    memcpy(st + 3 * C, b->rv + (size_t)which * C, C * sizeof(float));
    return (struct bn_operands){which ? b->xp : b->x, which ? b->gp : b->gamma, which ? b->bp : b->beta, st, st + C,
                                st + 2 * C, st + 3 * C, NULL};
}

TEST(batchnorm_add_relu_gives_the_bits_of_the_batchnorms_then_the_add_with_relu)
{
    static const int shape[][2] = {{1100, 5}, {37, 16}}; /* several chunks of rows; an odd C */
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++)
        for (int mode = 0; mode < 4; mode++) {
            const int training = mode & 1, proj = mode >> 1, rows = shape[k][0], C = shape[k][1];
            const size_t n = (size_t)rows * C, ns = 8 * (size_t)C;
            struct block_case b = block_case_new(rows, C, 200 + 10 * (unsigned)k);
            float *want = malloc(n * 4), *got = malloc(n * 4), *t = malloc(n * 4);
            float *want_st = calloc(ns, 4), *got_st = calloc(ns, 4);
            /* what the model ran before: batch norm 3 into y, the projection's into t, then y = max(y + t, 0) */
            const struct bn_operands w3 = block_operands(&b, 0, want_st), wp = block_operands(&b, 1, want_st);
            cpu_batchnorm_forward(want, w3.mean, w3.rstd, w3.run_mean, w3.run_var, b.x, b.gamma, b.beta, rows, C,
                                  training, 0.1f, 0);
            if (proj)
                cpu_batchnorm_forward(t, wp.mean, wp.rstd, wp.run_mean, wp.run_var, b.xp, b.gp, b.bp, rows, C, training,
                                      0.1f, 0);
            cpu_add_relu(want, proj ? t : b.shortcut, n);
            const struct bn_operands g3 = block_operands(&b, 0, got_st), gp = block_operands(&b, 1, got_st);
            cpu_batchnorm_add_relu_forward(got, &g3, proj ? &gp : NULL, proj ? NULL : b.shortcut, rows, C, training,
                                           0.1f);
            const size_t nst = (proj ? 8 : 4) * (size_t)C;
            int zeros = 0;
            for (size_t i = 0; i < n; i++) zeros += got[i] == 0.0f;
            if (memcmp(got, want, n * 4) != 0 || memcmp(got_st, want_st, nst * 4) != 0)
                printf("    rows %d, C %d, training %d, projection %d: %s differ\n", rows, C, training, proj,
                       memcmp(got, want, n * 4) != 0 ? "outputs" : "statistics");
            CHECK(memcmp(got, want, n * 4) == 0);
            CHECK(memcmp(got_st, want_st, nst * 4) == 0);
            CHECK(zeros > 0 && (size_t)zeros < n); /* the ReLU clamps some, not all */
            free(want), free(got), free(t), free(want_st), free(got_st);
            block_case_free(&b);
        }
}

TEST(batchnorm_backward_recomputes_the_forwards_relu_mask_bit_for_bit)
{
    /* rows multiples of 3 (test_bn_kinks.h); 2100: several chunks of rows */
    static const int shape[][2] = {{2100, 12}, {30, 7}};
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++)
        for (int training = 0; training < 2; training++) {
            const int rows = shape[k][0], C = shape[k][1];
            const size_t n = (size_t)rows * C;
            float *x = malloc(n * 4), *gamma = malloc(C * 4), *beta = malloc(C * 4), *y = malloc(n * 4);
            float *dy = rand_array(n, 300 + (unsigned)k), *masked = malloc(n * 4);
            float *mean = malloc(C * 4), *rstd = malloc(C * 4), *rm = malloc(C * 4), *rv = malloc(C * 4);
            float *dx[2] = {malloc(n * 4), malloc(n * 4)}, *dg[2] = {malloc(C * 4), malloc(C * 4)};
            float *db[2] = {malloc(C * 4), malloc(C * 4)};
            bn_kink_data(x, gamma, beta, rows, C);
            for (int c = 0; c < C; c++) rm[c] = kink_mean(c), rv[c] = 1.0f / 6.0f; /* frozen: the batch's own */
            cpu_batchnorm_forward(y, mean, rstd, rm, rv, x, gamma, beta, rows, C, training, 0.1f, 1);
            /* the mask as the forward's output gives it: dy where y > 0 */
            int on_kink = 0;
            for (size_t i = 0; i < n; i++) {
                masked[i] = y[i] > 0.0f ? dy[i] : 0.0f;
                on_kink += x[i] == mean[i % C] && beta[i % C] == 0.0f;
            }
            cpu_batchnorm_backward(dx[0], dg[0], db[0], dy, x, mean, rstd, gamma, beta, rows, C, training, 1);
            cpu_batchnorm_backward(dx[1], dg[1], db[1], masked, x, mean, rstd, gamma, beta, rows, C, training, 0);
            const int same = memcmp(dx[0], dx[1], n * 4) == 0 && memcmp(dg[0], dg[1], C * 4) == 0 &&
                             memcmp(db[0], db[1], C * 4) == 0;
            if (!same) printf("    rows %d, C %d, training %d: the recomputed mask's gradients differ\n", rows, C, training);
            CHECK(same);
            CHECK(on_kink >= rows / 3); /* pre-ReLU values of exactly 0 were there to mask */
            free(x), free(gamma), free(beta), free(y), free(dy), free(masked), free(mean), free(rstd), free(rm), free(rv);
            for (int j = 0; j < 2; j++) free(dx[j]), free(dg[j]), free(db[j]);
        }
}

TEST(add_relu_adds_the_shortcut_then_clamps)
{
    float y[4] = {1.0f, -2.0f, 0.5f, -0.25f}, x[4] = {0.5f, 1.0f, -1.0f, 0.25f};
    cpu_add_relu(y, x, 4);
    CHECK(y[0] == 1.5f && y[1] == 0.0f && y[2] == 0.0f && y[3] == 0.0f);
}

/* ---- pooling ---- */

TEST(maxpool_takes_each_window_maximum_and_backward_routes_the_gradient_to_it)
{
    const struct conv_shape s = conv(2, 7, 6, 3, 3, 2, 1); /* the stem's 3x3/2, pad 1 */
    const size_t nx = x_size(&s), ny = col_rows(&s) * s.C;
    float *x = rand_array(nx, 81), *y = malloc(ny * 4), *dy = rand_array(ny, 82), *dx = malloc(nx * 4);
    uint8_t *am = malloc(ny);
    double *want_dx = calloc(nx, sizeof(double));
    cpu_maxpool_forward(y, am, x, &s);
    cpu_maxpool_backward(dx, dy, am, &s);
    for (int n = 0; n < s.N; n++)
        for (int p = 0; p < s.P; p++)
            for (int q = 0; q < s.Q; q++)
                for (int c = 0; c < s.C; c++) {
                    float best = -INFINITY;
                    int at = -1, tap = -1;
                    for (int r = 0; r < 3; r++)
                        for (int t = 0; t < 3; t++) {
                            const int h = 2 * p - 1 + r, w = 2 * q - 1 + t;
                            if (h < 0 || h >= s.H || w < 0 || w >= s.W) continue;
                            const float v = x[((n * s.H + h) * s.W + w) * s.C + c];
                            if (v > best) best = v, at = h * s.W + w, tap = r * 3 + t;
                        }
                    const size_t o = ((size_t)(n * s.P + p) * s.Q + q) * s.C + c;
                    CHECK(y[o] == best && am[o] == tap);
                    want_dx[((size_t)n * s.H * s.W + at) * s.C + c] += dy[o];
                }
    for (size_t i = 0; i < nx; i++) CHECK_NEAR(dx[i], want_dx[i], 1e-6);
    free(x), free(y), free(dy), free(dx), free(am), free(want_dx);
}

TEST(avgpool_averages_each_image_and_backward_spreads_evenly)
{
    enum { N = 3, HW = 5, C = 4 };
    float *x = rand_array(N * HW * C, 91), *dy = rand_array(N * C, 92), y[N * C], dx[N * HW * C];
    cpu_avgpool_forward(y, x, N, HW, C);
    cpu_avgpool_backward(dx, dy, N, HW, C);
    for (int n = 0; n < N; n++)
        for (int c = 0; c < C; c++) {
            double s = 0.0;
            for (int i = 0; i < HW; i++) {
                s += x[(n * HW + i) * C + c];
                CHECK_NEAR(dx[(n * HW + i) * C + c], dy[n * C + c] / HW, 1e-7);
            }
            CHECK_NEAR(y[n * C + c], s / HW, 1e-6);
        }
    free(x), free(dy);
}

/* ---- data, determinism ---- */

TEST(synthetic_images_are_a_pure_function_of_the_sample)
{
    enum { H = 8, W = 6, C = 3, CLASSES = 7 };
    float a[5 * H * W * C], b[2 * H * W * C];
    int la[5], lb[2];
    cpu_synth_images(a, la, 100, 5, H, W, C, CLASSES, 42);
    cpu_synth_images(b, lb, 103, 2, H, W, C, CLASSES, 42); /* samples 103 and 104 again */
    CHECK(memcmp(a + 3 * H * W * C, b, sizeof b) == 0 && la[3] == lb[0] && la[4] == lb[1]);
    for (int i = 0; i < 5; i++) CHECK(la[i] == synth_label(42, 100 + (uint64_t)i, CLASSES));
    for (int i = 0; i < 5 * H * W * C; i++) CHECK(a[i] >= -2.0f && a[i] < 2.0f); /* colour + noise */
    cpu_synth_images(b, lb, 103, 2, H, W, C, CLASSES, 43);
    CHECK(memcmp(a + 3 * H * W * C, b, sizeof b) != 0); /* another seed, other images */
}

TEST(kernels_are_bit_identical_with_1_and_4_threads)
{
    /* more rows than one chunk of the batch-norm sums, so that 4 threads split them */
    const struct conv_shape s = conv(4, 24, 22, 24, 3, 2, 1);
    const int rows = s.N * s.H * s.W, C = s.C;
    const size_t nx = x_size(&s), nc = col_rows(&s) * col_cols(&s), np = col_rows(&s) * C;
    float *x = rand_array(nx, 101), *dy = rand_array(nx, 102), *gamma = rand_array(C, 103), *beta = rand_array(C, 104);
    float *col = rand_array(nc, 105), *pdy = rand_array(np, 106);
    enum { Y, DX, DGAMMA, DBETA, STATS, FUSED, FUSED_STATS, COL2IM, POOL, POOLDX, NOUT };
    const size_t n[NOUT] = {nx, nx, (size_t)C, (size_t)C, 4 * (size_t)C, nx, 8 * (size_t)C, nx, np, nx};
    float *out[2][NOUT];
    const int saved = omp_get_max_threads();
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k == 0 ? 1 : 4);
        float **o = out[k];
        for (int i = 0; i < NOUT; i++) o[i] = calloc(n[i], sizeof(float));
        float *mean = o[STATS], *rstd = mean + C, *rm = rstd + C, *rv = rm + C, *fstats = o[FUSED_STATS];
        uint8_t *am = malloc(np);
        cpu_batchnorm_forward(o[Y], mean, rstd, rm, rv, x, gamma, beta, rows, C, 1, 0.1f, 1);
        cpu_batchnorm_backward(o[DX], o[DGAMMA], o[DBETA], dy, x, mean, rstd, gamma, beta, rows, C, 1, 1);
        const struct bn_operands b3 = {x, gamma, beta, fstats, fstats + C, fstats + 2 * C, fstats + 3 * C};
        const struct bn_operands bp = {dy, beta, gamma, fstats + 4 * C, fstats + 5 * C, fstats + 6 * C, fstats + 7 * C};
        cpu_batchnorm_add_relu_forward(o[FUSED], &b3, &bp, NULL, rows, C, 1, 0.1f);
        cpu_col2im(o[COL2IM], col, &s);
        cpu_maxpool_forward(o[POOL], am, x, &s);
        cpu_maxpool_backward(o[POOLDX], pdy, am, &s);
        free(am);
    }
    omp_set_num_threads(saved);
    for (int i = 0; i < NOUT; i++) {
        if (memcmp(out[0][i], out[1][i], n[i] * sizeof(float)) != 0) printf("    output %d differs\n", i);
        CHECK(memcmp(out[0][i], out[1][i], n[i] * sizeof(float)) == 0);
        free(out[0][i]), free(out[1][i]);
    }
    free(x), free(dy), free(gamma), free(beta), free(col), free(pdy);
}

int main(void) { return test_main("resnet_kernels"); }

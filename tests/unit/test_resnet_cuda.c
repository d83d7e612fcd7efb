/* test_resnet_cuda.c — the cuda backend's ResNet operations against the CPU's
 * (kernels/resnet/resnet_cpu.h), in fp32 and bf16, through the backend table as the model
 * calls them: im2col, col2im, the poolings and the synthetic images give the CPU's bits
 * (in bf16: the CPU's result on the same bf16 inputs, rounded once), with 16-byte vectors
 * and without (an odd channel count, a pointer one element off); batch norm's statistics,
 * running statistics, output and gradients agree to fp32's (bf16's) resolution, with a
 * mean far from zero, many chunks of rows and several column tiles; batch norm with the
 * residual add and ReLU gives the bits of the unfused batch norms and add (and the CPU's
 * values); backward's recomputed ReLU mask gives the bits of the forward's output's mask,
 * on values at the kink and values that round to 0; batch norm's backward and the
 * fused forward give the same bits twice; and ResNet-50's poolings and images timed beside
 * a device-to-device copy.
 *
 * Needs a GPU: where none is visible (or the binary has no CUDA) every test passes
 * without checking anything and says so once. tests/gpu/resnet.sh runs it on the GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef DPSCALE_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "kernels/resnet/bn_operands.h"
#include "kernels/resnet/relu_mask.h"
#include "kernels/resnet/resnet_cpu.h"
#include "backend/backend.h"
#include "config/config.h"
#include "base/halfconv.h"
#include "check.h"
#include "cuda_backend_test.h"
#include "test_bn_kinks.h"
#include "test_conv_shapes.h"

static const char *const precisions[] = {"fp32", "bf16"};
/* the statement that follows, once with each precision (none without a GPU) */
#define EACH_PRECISION for (int pi_ = 0; pi_ < 2 && gpu(precisions[pi_]); pi_++)

/* ---- data in the compute dtype ---- */

static float *rand_array(size_t n, unsigned seed, float offset)
{
    float *a = calloc(n, sizeof *a);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        a[i] = rnd(offset + (float)((seed >> 8) * (1.0 / 8388608.0)) - 1.0f);
    }
    return a;
}

/* ---- comparisons ---- */

/* got == round(want) element by element; prints the first difference and the case
 * (shape k, pointers `off` elements off alignment) */
static int same_bits(const char *what, const float *got, const float *want, size_t n, int k, int off)
{
    for (size_t i = 0; i < n; i++)
        if (!(got[i] == rnd(want[i]))) {
            printf("    %s (%s), shape %d, pointer offset %d: element %zu of %zu is %.9g, the cpu's %.9g\n", what,
                   dtype_name(g_be.act_dtype), k, off, i, n, got[i], rnd(want[i]));
            return 0;
        }
    return 1;
}

/* the device's n elements (compute dtype) == round(want), as same_bits */
static int device_same_bits(const char *what, const void *dev, const float *want, size_t n, int k, int off)
{
    float *got = host_from(dev, n, g_be.act_dtype);
    const int same = same_bits(what, got, want, n, k, off);
    free(got);
    return same;
}

/* |got - want| rstd <= tol for every channel: batch means agree to a fraction of a standard
 * deviation (the GPU's mean is a shift plus the mean of the differences from it, summed
 * in fp32: its error is relative to the data's spread, not to the mean itself) */
static int means_close(const float *got, const float *want, const float *rstd, size_t C, double tol)
{
    for (size_t c = 0; c < C; c++)
        if (!(fabs((double)got[c] - want[c]) * rstd[c] <= tol)) {
            printf("    batch norm mean (%s): channel %zu of %zu is %.9g, the cpu's %.9g, %.3g standard deviations "
                   "apart, tolerance %g\n", dtype_name(g_be.act_dtype), c, C, got[c], want[c],
                   fabs((double)got[c] - want[c]) * rstd[c], tol);
            return 0;
        }
    return 1;
}

/* ---- im2col, col2im, max pooling ---- */

/* the CPU test's shapes, channel counts that fill 16-byte vectors in fp32 and bf16, the
 * stem's channels with an odd number of col elements (im2col's last flat chunk partial),
 * ResNet-50's channel counts (several col rows per block of im2col), a pixel of more
 * 16-byte units than a block has threads, and the stem at its full 224 x 224 with its
 * col rows padded to 152 (the padding's zeros are bits compared too) */
static const struct conv_shape *shapes(int *n)
{
    static struct conv_shape s[TEST_CONV_SHAPES + 9];
    test_conv_shapes(s);
    s[TEST_CONV_SHAPES] = conv(2, 8, 8, 16, 3, 2, 1);
    s[TEST_CONV_SHAPES + 1] = conv(3, 9, 9, 8, 3, 2, 1);
    s[TEST_CONV_SHAPES + 2] = conv(2, 11, 10, 24, 3, 1, 1);
    s[TEST_CONV_SHAPES + 3] = conv(1, 5, 5, 3, 3, 2, 1);
    s[TEST_CONV_SHAPES + 4] = conv(2, 8, 8, 64, 3, 1, 1);
    s[TEST_CONV_SHAPES + 5] = conv(2, 9, 9, 128, 3, 2, 1);
    s[TEST_CONV_SHAPES + 6] = conv(2, 8, 8, 256, 1, 2, 0);
    s[TEST_CONV_SHAPES + 7] = conv(1, 4, 4, 2048, 1, 2, 0);
    s[TEST_CONV_SHAPES + 8] = padded(conv(1, 224, 224, 3, 7, 2, 3), 8); /* as the model runs it */
    *n = TEST_CONV_SHAPES + 9;
    return s;
}

static size_t in_size(const struct conv_shape *s) { return (size_t)s->N * s->H * s->W * s->C; }
static size_t out_size(const struct conv_shape *s) { return (size_t)s->N * s->P * s->Q * s->C; }
static size_t col_size(const struct conv_shape *s) { return (size_t)s->N * s->P * s->Q * conv_col_ld(s); }

TEST(im2col_and_col2im_give_the_cpus_bits)
{
    int ns;
    const struct conv_shape *all = shapes(&ns);
    EACH_PRECISION
    for (int k = 0; k < ns; k++)
        for (int off = 0; off < 2; off++) {
            const struct conv_shape *s = &all[k];
            const size_t nx = in_size(s), nc = col_size(s);
            float *x = rand_array(nx, 3 + k, 0.0f), *y = rand_array(nc, 13 + k, 0.0f);
            float *col = malloc(nc * 4), *dx = malloc(nx * 4);
            cpu_im2col(col, x, s);
            cpu_col2im(dx, y, s);
            void *img_d = dev_from(x, nx, g_be.act_dtype, off), *col_d = dev_from(y, nc, g_be.act_dtype, off);
            g_be.rn->im2col(&g_be, col_d, img_d, s); /* over y's bits: it writes the padding's zeros */
            CHECK(device_same_bits("im2col", col_d, col, nc, k, off));
            void *y_d = dev_from(y, nc, g_be.act_dtype, off);
            g_be.rn->col2im(&g_be, img_d, y_d, s); /* over x, read already */
            CHECK(device_same_bits("col2im", img_d, dx, nx, k, off));
            dev_free(img_d, elem(), off), dev_free(col_d, elem(), off), dev_free(y_d, elem(), off);
            free(x), free(y), free(col), free(dx);
        }
}

TEST(max_pooling_gives_the_cpus_maxima_positions_and_gradients)
{
    int ns;
    const struct conv_shape *all = shapes(&ns);
    EACH_PRECISION
    for (int k = 0; k < ns; k++)
        for (int off = 0; off < 2; off++) {
            const struct conv_shape *s = &all[k];
            if (s->pad >= s->R) continue; /* a window wholly in the padding has no maximum */
            const size_t nx = in_size(s), ny = out_size(s);
            float *x = rand_array(nx, 5 + k, 0.0f), *dy = rand_array(ny, 17 + k, 0.0f);
            float *y = malloc(ny * 4), *dx = malloc(nx * 4);
            uint8_t *am = malloc(ny), *am_got = malloc(ny);
            cpu_maxpool_forward(y, am, x, s);
            cpu_maxpool_backward(dx, dy, am, s);
            void *x_d = dev_from(x, nx, g_be.act_dtype, off), *y_d = dev_raw(NULL, ny, elem(), off);
            uint8_t *am_d = dev_raw(NULL, ny, 1, off);
            g_be.rn->maxpool_forward(&g_be, y_d, am_d, x_d, s);
            g_be.ops->download(&g_be, am_got, am_d, ny);
            CHECK(device_same_bits("max pool", y_d, y, ny, k, off));
            if (memcmp(am_got, am, ny) != 0) printf("    argmax differs: shape %d, offset %d\n", k, off);
            CHECK(memcmp(am_got, am, ny) == 0);
            void *dy_d = dev_from(dy, ny, g_be.act_dtype, off);
            g_be.rn->maxpool_backward(&g_be, x_d, dy_d, am_d, s);
            CHECK(device_same_bits("max pool backward", x_d, dx, nx, k, off));
            dev_free(x_d, elem(), off), dev_free(y_d, elem(), off), dev_free(dy_d, elem(), off);
            dev_free(am_d, 1, off);
            free(x), free(dy), free(y), free(dx), free(am), free(am_got);
        }
}

/* ---- average pooling, the images ---- */

TEST(average_pooling_gives_the_cpus_bits)
{
    static const int shape[][3] = {{3, 49, 64}, {2, 5, 6}, {4, 16, 8}, {2, 9, 2048}};
    EACH_PRECISION
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++)
        for (int off = 0; off < 2; off++) {
            const int N = shape[k][0], HW = shape[k][1], C = shape[k][2];
            const size_t nx = (size_t)N * HW * C, ny = (size_t)N * C;
            float *x = rand_array(nx, 7 + (unsigned)k, 0.0f), *dy = rand_array(ny, 19 + (unsigned)k, 0.0f);
            float *y = malloc(ny * 4), *dx = malloc(nx * 4);
            cpu_avgpool_forward(y, x, N, HW, C);
            cpu_avgpool_backward(dx, dy, N, HW, C);
            void *x_d = dev_from(x, nx, g_be.act_dtype, off), *y_d = dev_raw(NULL, ny, elem(), off), *dy_d = dev_from(dy, ny, g_be.act_dtype, off);
            g_be.rn->avgpool_forward(&g_be, y_d, x_d, N, HW, C);
            CHECK(device_same_bits("average pool", y_d, y, ny, (int)k, off));
            void *dx_d = dev_raw(NULL, nx, elem(), off);
            g_be.rn->avgpool_backward(&g_be, dx_d, dy_d, N, HW, C);
            CHECK(device_same_bits("average pool backward", dx_d, dx, nx, (int)k, off));
            dev_free(x_d, elem(), off), dev_free(y_d, elem(), off), dev_free(dy_d, elem(), off);
            dev_free(dx_d, elem(), off);
            free(x), free(dy), free(y), free(dx);
        }
}

TEST(synthetic_images_and_labels_are_the_cpus)
{
    /* one element a thread; whole 16-byte vectors; more colours than shared memory holds;
     * images of several blocks each */
    static const int shape[][4] = {{3, 10, 7, 3}, {2, 32, 24, 3}, {2, 4, 5, 300}, {3, 224, 224, 3}};
    enum { CLASSES = 7 };
    EACH_PRECISION
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++) {
        const int B = shape[k][0], H = shape[k][1], W = shape[k][2], C = shape[k][3];
        const size_t n = (size_t)B * H * W * C;
        float *x = malloc(n * 4);
        int labels[4], got_labels[4];
        cpu_synth_images(x, labels, 5, B, H, W, C, CLASSES, 99);
        void *x_d = dev_raw(NULL, n, elem(), 0);
        int *l_d = dev_raw(NULL, B, sizeof(int), 0);
        g_be.rn->synth_images(&g_be, x_d, l_d, 5, B, H, W, C, CLASSES, 99);
        g_be.ops->download(&g_be, got_labels, l_d, (size_t)B * sizeof(int));
        CHECK(device_same_bits("synthetic images", x_d, x, n, (int)k, 0));
        CHECK(memcmp(got_labels, labels, (size_t)B * sizeof(int)) == 0);
        dev_free(x_d, elem(), 0), dev_free(l_d, sizeof(int), 0);
        free(x);
    }
}

/* ---- batch norm ---- */

struct bn_shape {
    int rows, C;
    float offset; /* the inputs' mean: far from 0 tests the variance for cancellation */
};

/* C = 4096: more vector columns than a block has threads (a second column tile, one row
 * at a time), in both dtypes. 200000 x 8 and 40000 x 40: enough chunks that the finish adds
 * them in splits first (one group of 32 channels, and two, the second part empty); the
 * second at an even index, so with aligned pointers: the 16-byte and the mask's passes. */
#define BN_MAX_C 4096
static const struct bn_shape bn_shapes[] = {
    {1000, 64, 0.0f}, {37, 6, 0.5f}, {3000, 320, 0.0f}, {200000, 8, 3.0f}, {4096, 16, 1000.0f}, {1, 8, 0.0f},
    {300, BN_MAX_C, 0.0f}, {50, 24, 0.25f}, {40000, 40, 2.0f},
};

/* batch norm forward on the GPU and the CPU from the same x and running statistics;
 * the statistics compared at fp32's resolution, y at the compute dtype's */
static void bn_forward_case(const struct bn_shape *b, int training, int relu, int off)
{
    const size_t n = (size_t)b->rows * b->C, C = (size_t)b->C;
    float *x = rand_array(n, 23, b->offset), *gamma = rand_array(C, 29, 1.0f), *beta = rand_array(C, 31, 0.0f);
    float *rm = rand_array(C, 37, 0.0f), *rv = rand_array(C, 41, 2.0f);
    float *y = malloc(n * 4), *mean = malloc(C * 4), *rstd = malloc(C * 4);
    void *x_d = dev_from(x, n, g_be.act_dtype, off), *y_d = dev_raw(NULL, n, elem(), off);
    void *g_d = dev_from(gamma, C, g_be.act_dtype, 0), *b_d = dev_from(beta, C, g_be.act_dtype, 0);
    float *rm_d = dev_raw(rm, C, 4, 0), *rv_d = dev_raw(rv, C, 4, 0);
    float *mean_d = dev_raw(NULL, C, 4, 0), *rstd_d = dev_raw(NULL, C, 4, 0);
    cpu_batchnorm_forward(y, mean, rstd, rm, rv, x, gamma, beta, b->rows, b->C, training, 0.1f, relu);
    g_be.rn->batchnorm_forward(&g_be, y_d, mean_d, rstd_d, rm_d, rv_d, x_d, g_d, b_d, b->rows, b->C, training, 0.1f,
                               relu, NULL);
    static float got[4][BN_MAX_C];
    float *gy = host_from(y_d, n, g_be.act_dtype);
    g_be.ops->download(&g_be, got[0], mean_d, C * 4);
    g_be.ops->download(&g_be, got[1], rstd_d, C * 4);
    g_be.ops->download(&g_be, got[2], rm_d, C * 4);
    g_be.ops->download(&g_be, got[3], rv_d, C * 4);
    const double ty = g_be.act_dtype == DT_F32 ? 1e-5 : 1e-2;
    int ok = means_close(got[0], mean, rstd, C, 1e-6) & close_to("batch norm rstd", got[1], rstd, C, 1e-5);
    ok &= close_to("running mean", got[2], rm, C, 1e-5) & close_to("running variance", got[3], rv, C, 1e-5);
    ok &= close_to("batch norm y", gy, y, n, ty);
    if (!ok) printf("    rows %d, C %d, offset %g, training %d, relu %d, pointer offset %d\n", b->rows, b->C,
                    (double)b->offset, training, relu, off);
    CHECK(ok);
    dev_free(x_d, elem(), off), dev_free(y_d, elem(), off), dev_free(g_d, elem(), 0), dev_free(b_d, elem(), 0);
    dev_free(rm_d, 4, 0), dev_free(rv_d, 4, 0), dev_free(mean_d, 4, 0), dev_free(rstd_d, 4, 0);
    free(x), free(gamma), free(beta), free(rm), free(rv), free(y), free(mean), free(rstd), free(gy);
}

TEST(batchnorm_forward_matches_the_cpu)
{
    EACH_PRECISION
    for (size_t k = 0; k < sizeof bn_shapes / sizeof bn_shapes[0]; k++)
        for (int mode = 0; mode < 4; mode++) bn_forward_case(&bn_shapes[k], mode & 1, mode >> 1, (int)(k % 2));
}

/* The GPU forward's ReLU output > 0 for an element: batchnorm.cu's bn_value (one fused
 * multiply-add) rounded to the compute dtype, as it stores it, so that the CPU's gradients
 * see the GPU's mask (the CPU's own value, rounded otherwise, is on the other side of 0
 * for the odd element in a million) */
static int gpu_relu_passes(float x, float mean, float rstd, float gamma, float beta)
{
    return rnd(fmaf(x - mean, rstd * gamma, beta)) > 0.0f;
}

/* batch norm backward from the same dy, x and statistics on both, the GPU with its ReLU's
 * mask recomputed (masked), the CPU on dy masked by the GPU forward's mask; grad_dtype
 * fp32 or the compute dtype; in place (dx = dy) or not. Returns the GPU's dx, dgamma,
 * dbeta downloaded raw, for the determinism test. */
static void bn_backward_case(const struct bn_shape *b, int training, int masked, int grad_dtype, int in_place, int off,
                             unsigned char **raw, size_t *raw_bytes)
{
    const size_t n = (size_t)b->rows * b->C, C = (size_t)b->C, ge = dtype_size(grad_dtype);
    float *x = rand_array(n, 43, b->offset), *dy = rand_array(n, 47, 0.0f), *gamma = rand_array(C, 53, 1.0f);
    float *beta = rand_array(C, 59, 0.0f), *rm = rand_array(C, 61, 0.0f), *rv = rand_array(C, 67, 2.0f);
    float *y = malloc(n * 4), *mean = malloc(C * 4), *rstd = malloc(C * 4), *dy_masked = malloc(n * 4);
    cpu_batchnorm_forward(y, mean, rstd, rm, rv, x, gamma, beta, b->rows, b->C, training, 0.1f, masked);
    for (size_t i = 0; i < n; i++)
        dy_masked[i] = !masked || gpu_relu_passes(x[i], mean[i % C], rstd[i % C], gamma[i % C], beta[i % C]) ? dy[i]
                                                                                                            : 0.0f;
    void *x_d = dev_from(x, n, g_be.act_dtype, off), *dy_d = dev_from(dy, n, g_be.act_dtype, off);
    void *g_d = dev_from(gamma, C, g_be.act_dtype, 0), *b_d = dev_from(beta, C, g_be.act_dtype, 0);
    void *dx_d = in_place ? dy_d : dev_raw(NULL, n, elem(), off);
    float *mean_d = dev_raw(mean, C, 4, 0), *rstd_d = dev_raw(rstd, C, 4, 0);
    void *dg_d = dev_raw(NULL, C, ge, 0), *db_d = dev_raw(NULL, C, ge, 0);
    float *dx = malloc(n * 4), *dgamma = malloc(C * 4), *dbeta = malloc(C * 4);
    cpu_batchnorm_backward(dx, dgamma, dbeta, dy_masked, x, mean, rstd, gamma, beta, b->rows, b->C, training, 0);
    g_be.rn->batchnorm_backward(&g_be, dx_d, dg_d, db_d, grad_dtype, dy_d, x_d, mean_d, rstd_d, g_d, b_d, b->rows, b->C,
                                training, masked, NULL, NULL);
    static float gg[BN_MAX_C], gb[BN_MAX_C];
    float *gdx = host_from(dx_d, n, g_be.act_dtype);
    if (grad_dtype == DT_F32) {
        g_be.ops->download(&g_be, gg, dg_d, C * 4);
        g_be.ops->download(&g_be, gb, db_d, C * 4);
    } else {
        float *t = host_from(dg_d, C, g_be.act_dtype);
        memcpy(gg, t, C * 4), free(t);
        t = host_from(db_d, C, g_be.act_dtype);
        memcpy(gb, t, C * 4), free(t);
    }
    const double tx = g_be.act_dtype == DT_F32 ? 1e-5 : 1e-2, tg = grad_dtype == DT_F32 ? 1e-5 : 1e-2;
    int ok = close_to("batch norm dx", gdx, dx, n, tx);
    ok &= close_to("dgamma", gg, dgamma, C, tg) & close_to("dbeta", gb, dbeta, C, tg);
    if (!ok) printf("    rows %d, C %d, training %d, masked %d, gradients %s, in place %d, pointer offset %d\n", b->rows,
                    b->C, training, masked, dtype_name(grad_dtype), in_place, off);
    CHECK(ok);
    if (raw != NULL) {
        *raw_bytes = n * elem() + 2 * C * ge;
        *raw = malloc(*raw_bytes);
        g_be.ops->download(&g_be, *raw, dx_d, n * elem());
        g_be.ops->download(&g_be, *raw + n * elem(), dg_d, C * ge);
        g_be.ops->download(&g_be, *raw + n * elem() + C * ge, db_d, C * ge);
    }
    dev_free(x_d, elem(), off), dev_free(dy_d, elem(), off), dev_free(g_d, elem(), 0), dev_free(b_d, elem(), 0);
    if (!in_place) dev_free(dx_d, elem(), off);
    dev_free(mean_d, 4, 0), dev_free(rstd_d, 4, 0), dev_free(dg_d, ge, 0), dev_free(db_d, ge, 0);
    free(x), free(dy), free(gamma), free(beta), free(rm), free(rv), free(y), free(mean), free(rstd), free(dy_masked);
    free(dx), free(dgamma), free(dbeta), free(gdx);
}

TEST(batchnorm_backward_matches_the_cpu)
{
    EACH_PRECISION
    for (size_t k = 0; k < sizeof bn_shapes / sizeof bn_shapes[0]; k++)
        for (int mode = 0; mode < 8; mode++) {
            const int grad_dtype = (mode & 4) ? g_be.act_dtype : DT_F32;
            if ((mode & 4) && grad_dtype == DT_F32) continue; /* fp32: one gradient dtype */
            /* in place on shapes 2, 3 and 6: with aligned pointers (16-byte vectors) and without */
            bn_backward_case(&bn_shapes[k], mode & 1, (mode >> 1) & 1, grad_dtype, (int)((k / 2) % 2), (int)(k % 2), NULL,
                             NULL);
        }
}

TEST(batchnorm_backward_gives_the_same_bits_twice)
{
    EACH_PRECISION
    {
        unsigned char *a = NULL, *b = NULL;
        size_t na = 0, nb = 0;
        bn_backward_case(&bn_shapes[3], 1, 1, DT_F32, 0, 0, &a, &na);
        bn_backward_case(&bn_shapes[3], 1, 1, DT_F32, 0, 0, &b, &nb);
        CHECK(na == nb && memcmp(a, b, na) == 0);
        free(a), free(b);
    }
}

/* ---- backward's recomputed ReLU mask ---- */

/* Backward's recomputed ReLU mask against the forward's stored output, on the GPU: the
 * gradients with relu = 1 from dy, and with relu = 0 from dy zeroed where the GPU
 * forward's y is not > 0 (what a backward reading y computed), give the same bits, on
 * inputs whose pre-ReLU values are exactly 0, tiny of either sign or, in bf16, positive
 * but rounding to 0 (test_bn_kinks.h). */
static void bn_mask_case(int rows, int C, int training, int grad_dtype, int in_place, int off)
{
    const size_t n = (size_t)rows * C, ge = dtype_size(grad_dtype);
    float *x = malloc(n * 4), *gamma = malloc(C * 4), *beta = malloc(C * 4), *rm = malloc(C * 4), *rv = malloc(C * 4);
    float *dy = rand_array(n, 109, 0.0f), *dy_masked = malloc(n * 4), *mean = malloc(C * 4), *rstd = malloc(C * 4);
    bn_kink_data(x, gamma, beta, rows, C);
    for (int c = 0; c < C; c++) rm[c] = kink_mean(c), rv[c] = 1.0f / 6.0f; /* frozen: the batch's own statistics */
    void *x_d = dev_from(x, n, g_be.act_dtype, off), *y_d = dev_raw(NULL, n, elem(), off);
    void *g_d = dev_from(gamma, C, g_be.act_dtype, 0), *b_d = dev_from(beta, C, g_be.act_dtype, 0);
    float *rm_d = dev_raw(rm, C, 4, 0), *rv_d = dev_raw(rv, C, 4, 0);
    float *mean_d = dev_raw(NULL, C, 4, 0), *rstd_d = dev_raw(NULL, C, 4, 0);
    g_be.rn->batchnorm_forward(&g_be, y_d, mean_d, rstd_d, rm_d, rv_d, x_d, g_d, b_d, rows, C, training, 0.1f, 1, NULL);
    float *y = host_from(y_d, n, g_be.act_dtype);
    g_be.ops->download(&g_be, mean, mean_d, C * 4);
    g_be.ops->download(&g_be, rstd, rstd_d, C * 4);
    int at_zero = 0, round_to_zero = 0; /* what the data holds, as batchnorm.cu computes it */
    for (size_t i = 0; i < n; i++) {
        const size_t c = i % C;
        const float v = fmaf(rnd(x[i]) - mean[c], rstd[c] * rnd(gamma[c]), rnd(beta[c]));
        at_zero += v == 0.0f;
        round_to_zero += v > 0.0f && rnd(v) == 0.0f;
        dy_masked[i] = y[i] > 0.0f ? dy[i] : 0.0f;
    }
    unsigned char *raw[2];
    const size_t bytes = n * elem() + 2 * (size_t)C * ge;
    for (int j = 0; j < 2; j++) { /* j = 0: the recomputed mask; 1: the stored output's */
        void *dy_d = dev_from(j ? dy_masked : dy, n, g_be.act_dtype, off);
        void *dx_d = in_place ? dy_d : dev_raw(NULL, n, elem(), off);
        void *dg_d = dev_raw(NULL, C, ge, 0), *db_d = dev_raw(NULL, C, ge, 0);
        g_be.rn->batchnorm_backward(&g_be, dx_d, dg_d, db_d, grad_dtype, dy_d, x_d, mean_d, rstd_d, g_d, b_d, rows, C,
                                    training, j == 0, NULL, NULL);
        raw[j] = malloc(bytes);
        g_be.ops->download(&g_be, raw[j], dx_d, n * elem());
        g_be.ops->download(&g_be, raw[j] + n * elem(), dg_d, C * ge);
        g_be.ops->download(&g_be, raw[j] + n * elem() + C * ge, db_d, C * ge);
        dev_free(dy_d, elem(), off), dev_free(dg_d, ge, 0), dev_free(db_d, ge, 0);
        if (!in_place) dev_free(dx_d, elem(), off);
    }
    const int same = memcmp(raw[0], raw[1], bytes) == 0;
    if (!same || at_zero == 0 || (g_be.act_dtype != DT_F32 && round_to_zero == 0))
        printf("    rows %d, C %d, training %d, gradients %s, in place %d, pointer offset %d: %s (%d values at 0, %d "
               "rounding to 0)\n", rows, C, training, dtype_name(grad_dtype), in_place, off,
               same ? "the same bits" : "the recomputed mask's gradients differ", at_zero, round_to_zero);
    CHECK(same);
    CHECK(at_zero > 0);
    if (g_be.act_dtype != DT_F32) CHECK(round_to_zero > 0);
    dev_free(x_d, elem(), off), dev_free(y_d, elem(), off), dev_free(g_d, elem(), 0), dev_free(b_d, elem(), 0);
    dev_free(rm_d, 4, 0), dev_free(rv_d, 4, 0), dev_free(mean_d, 4, 0), dev_free(rstd_d, 4, 0);
    free(x), free(gamma), free(beta), free(rm), free(rv), free(dy), free(dy_masked), free(mean), free(rstd), free(y);
    free(raw[0]), free(raw[1]);
}

TEST(batchnorm_backward_recomputes_the_forwards_relu_mask_bit_for_bit)
{
    /* rows multiples of 3 (test_bn_kinks.h): several chunks; an odd C; a pointer off
     * alignment; several column tiles */
    static const int shape[][3] = {{3000, 24, 0}, {999, 7, 0}, {300, 48, 1}, {99, BN_MAX_C, 0}};
    EACH_PRECISION
    for (size_t k = 0; k < sizeof shape / sizeof shape[0]; k++)
        for (int mode = 0; mode < 4; mode++) {
            const int grad_dtype = (mode & 2) ? g_be.act_dtype : DT_F32;
            if ((mode & 2) && grad_dtype == DT_F32) continue;
            bn_mask_case(shape[k][0], shape[k][1], mode & 1, grad_dtype, (int)(k % 2), shape[k][2]);
        }
}

/* ---- batch norm with the residual add and ReLU ---- */

/* One batch norm's tensors on the device: x `off` elements off alignment, its own copy
 * of the running statistics (each run updates its own). */
struct dev_bn {
    void *x, *gamma, *beta;
    float *mean, *rstd, *rm, *rv;
    int off;
};

static struct dev_bn dev_bn_new(const float *x, size_t n, const float *gamma, const float *beta, const float *rm,
                                const float *rv, size_t C, int off)
{
    return (struct dev_bn){dev_from(x, n, g_be.act_dtype, off), dev_from(gamma, C, g_be.act_dtype, 0),
                           dev_from(beta, C, g_be.act_dtype, 0), dev_raw(NULL, C, 4, 0), dev_raw(NULL, C, 4, 0),
                           dev_raw(rm, C, 4, 0), dev_raw(rv, C, 4, 0), off};
}

static void dev_bn_free(struct dev_bn *d)
{
    dev_free(d->x, elem(), d->off), dev_free(d->gamma, elem(), 0), dev_free(d->beta, elem(), 0);
    dev_free(d->mean, 4, 0), dev_free(d->rstd, 4, 0), dev_free(d->rm, 4, 0), dev_free(d->rv, 4, 0);
}

static struct bn_operands dev_bn_operands(const struct dev_bn *d)
{
    return (struct bn_operands){d->x, d->gamma, d->beta, d->mean, d->rstd, d->rm, d->rv, NULL};
}

/* st [4 x C]: mean, rstd, running mean, running variance */
static void dev_bn_stats(const struct dev_bn *d, float *st, size_t C)
{
    g_be.ops->download(&g_be, st, d->mean, C * 4);
    g_be.ops->download(&g_be, st + C, d->rstd, C * 4);
    g_be.ops->download(&g_be, st + 2 * C, d->rm, C * 4);
    g_be.ops->download(&g_be, st + 3 * C, d->rv, C * 4);
}

/* batchnorm_add_relu_forward on the GPU against (1) the GPU's unfused operations: each batch
 * norm's batchnorm_forward (no ReLU), then the add with ReLU of what they stored, as the
 * cuda backend's add computed it (in fp32, rounded once: the CPU's bits), bit for bit, and
 * the statistics too; (2) the CPU's batchnorm_add_relu_forward, the statistics at fp32's
 * resolution, y at the compute dtype's; (3) itself, run again with the mask's bits asked
 * for: the same bits, and the mask that of y > 0 as stored (the CPU's cpu_relu_mask of
 * it; shapes of odd C take the mask's pass of its own). off: the
 * last batch norm's x and y that many elements off alignment; sc_off: the shortcut's
 * tensor (the projection's x, or the identity's). */
static void bn_add_relu_case(const struct bn_shape *b, int training, int proj, int off, int sc_off)
{
    const size_t n = (size_t)b->rows * b->C, C = (size_t)b->C;
    float *x = rand_array(n, 71, b->offset), *xp = rand_array(n, 73, 0.5f), *sc = rand_array(n, 79, 0.0f);
    float *g3 = rand_array(C, 83, 1.0f), *b3 = rand_array(C, 89, 0.0f), *gp = rand_array(C, 97, 1.0f);
    float *bp = rand_array(C, 101, 0.0f), *rm = rand_array(2 * C, 103, 0.0f), *rv = rand_array(2 * C, 107, 2.0f);
    struct dev_bn f3 = dev_bn_new(x, n, g3, b3, rm, rv, C, off), fp = dev_bn_new(xp, n, gp, bp, rm + C, rv + C, C, sc_off);
    struct dev_bn u3 = dev_bn_new(x, n, g3, b3, rm, rv, C, off), up = dev_bn_new(xp, n, gp, bp, rm + C, rv + C, C, sc_off);
    void *sc_d = dev_from(sc, n, g_be.act_dtype, sc_off), *y_d = dev_raw(NULL, n, elem(), off);
    void *again_d = dev_raw(NULL, n, elem(), off), *t3_d = dev_raw(NULL, n, elem(), off);
    void *tp_d = dev_raw(NULL, n, elem(), 0); /* the unfused model's scratch: aligned */
    uint8_t *mask_d = dev_raw(NULL, relu_mask_bytes(n), 1, 0), *mask = malloc(relu_mask_bytes(n));
    uint8_t *mask_want = malloc(relu_mask_bytes(n));
    const struct bn_operands o3 = dev_bn_operands(&f3), op = dev_bn_operands(&fp);
    float *st_f = malloc(8 * C * 4), *st_u = malloc(8 * C * 4), *st_c = malloc(8 * C * 4);
    g_be.rn->batchnorm_add_relu_forward(&g_be, y_d, NULL, &o3, proj ? &op : NULL, proj ? NULL : sc_d, b->rows, b->C,
                                        training, 0.1f);
    dev_bn_stats(&f3, st_f, C), dev_bn_stats(&fp, st_f + 4 * C, C); /* before the second run updates them again */
    g_be.rn->batchnorm_add_relu_forward(&g_be, again_d, mask_d, &o3, proj ? &op : NULL, proj ? NULL : sc_d, b->rows,
                                        b->C, training, 0.1f);
    g_be.ops->download(&g_be, mask, mask_d, relu_mask_bytes(n));
    g_be.rn->batchnorm_forward(&g_be, t3_d, u3.mean, u3.rstd, u3.rm, u3.rv, u3.x, u3.gamma, u3.beta, b->rows, b->C,
                               training, 0.1f, 0, NULL);
    if (proj)
        g_be.rn->batchnorm_forward(&g_be, tp_d, up.mean, up.rstd, up.rm, up.rv, up.x, up.gamma, up.beta, b->rows, b->C,
                                   training, 0.1f, 0, NULL);
    dev_bn_stats(&u3, st_u, C), dev_bn_stats(&up, st_u + 4 * C, C);
    /* (1) the unfused: the add of the two stored tensors */
    float *got = host_from(y_d, n, g_be.act_dtype), *again = host_from(again_d, n, g_be.act_dtype);
    float *want = host_from(t3_d, n, g_be.act_dtype), *r = proj ? host_from(tp_d, n, g_be.act_dtype) : sc;
    cpu_add_relu(want, r, n);
    int ok = same_bits("batch norm + add + relu against the unfused", got, want, n, (int)(b - bn_shapes), off);
    const size_t nst = (proj ? 8 : 4) * C;
    if (memcmp(st_f, st_u, nst * 4) != 0) printf("    batch norm + add + relu: statistics differ from the unfused\n");
    ok &= memcmp(st_f, st_u, nst * 4) == 0;
    /* (2) the CPU, from the same running statistics */
    float *ycpu = malloc(n * 4);
    memcpy(st_c + 2 * C, rm, C * 4), memcpy(st_c + 3 * C, rv, C * 4);
    memcpy(st_c + 6 * C, rm + C, C * 4), memcpy(st_c + 7 * C, rv + C, C * 4);
    const struct bn_operands c3 = {x, g3, b3, st_c, st_c + C, st_c + 2 * C, st_c + 3 * C, NULL};
    const struct bn_operands cp = {xp, gp, bp, st_c + 4 * C, st_c + 5 * C, st_c + 6 * C, st_c + 7 * C, NULL};
    cpu_batchnorm_add_relu_forward(ycpu, &c3, proj ? &cp : NULL, proj ? NULL : sc, b->rows, b->C, training, 0.1f);
    const double ty = g_be.act_dtype == DT_F32 ? 1e-5 : 1e-2;
    for (int j = 0; j < (proj ? 2 : 1); j++) {
        const float *g = st_f + 4 * C * j, *w = st_c + 4 * C * j;
        ok &= means_close(g, w, w + C, C, 1e-6) & close_to("batch norm rstd", g + C, w + C, C, 1e-5);
        ok &= close_to("running mean", g + 2 * C, w + 2 * C, C, 1e-5);
        ok &= close_to("running variance", g + 3 * C, w + 3 * C, C, 1e-5);
    }
    ok &= close_to("batch norm + add + relu y", got, ycpu, n, ty);
    /* (3) deterministic */
    if (memcmp(got, again, n * 4) != 0) printf("    batch norm + add + relu: a second run differs\n");
    ok &= memcmp(got, again, n * 4) == 0;
    cpu_relu_mask(mask_want, again, n);
    if (memcmp(mask, mask_want, relu_mask_bytes(n)) != 0) printf("    batch norm + add + relu: the mask's bits differ\n");
    ok &= memcmp(mask, mask_want, relu_mask_bytes(n)) == 0;
    if (!ok) printf("    rows %d, C %d, offset %g, training %d, projection %d, pointer offsets %d and %d\n", b->rows,
                    b->C, (double)b->offset, training, proj, off, sc_off);
    CHECK(ok);
    dev_bn_free(&f3), dev_bn_free(&fp), dev_bn_free(&u3), dev_bn_free(&up);
    dev_free(sc_d, elem(), sc_off), dev_free(y_d, elem(), off), dev_free(again_d, elem(), off);
    dev_free(t3_d, elem(), off), dev_free(tp_d, elem(), 0), dev_free(mask_d, 1, 0);
    free(mask), free(mask_want);
    if (proj) free(r);
    free(x), free(xp), free(sc), free(g3), free(b3), free(gp), free(bp), free(rm), free(rv);
    free(got), free(again), free(want), free(st_f), free(st_u), free(st_c), free(ycpu);
}

TEST(batchnorm_add_relu_gives_the_unfused_bits_and_matches_the_cpu)
{
    EACH_PRECISION
    for (size_t k = 0; k < sizeof bn_shapes / sizeof bn_shapes[0]; k++)
        for (int mode = 0; mode < 4; mode++) /* pointers: both aligned, either off, both off */
            bn_add_relu_case(&bn_shapes[k], mode & 1, mode >> 1, (int)(k % 2), (int)((k / 2) % 2));
}

/* ---- a block's output ReLU, its backward in batch norm's ---- */

/* batch norm backward with a block's output mask (the bits of out > 0) against what it
 * replaces, on the GPU: act_backward (ReLU) of dy on out, then batch norm backward on that.
 * dy_masked (none, dy itself, a buffer of its own) gets act_backward's bits; dx, dgamma and
 * dbeta get its bits in 16-bit dtypes (the same 8-channel vectors either way) and agree
 * to 1e-5 in fp32 (the masked kernels add 8 channels a thread, the others 4: another
 * order of the sums). Shapes of odd C take the mask's pass of its own. */
static void bn_output_mask_case(const struct bn_shape *b, int training, int grad_dtype, int where, int off)
{
    const size_t n = (size_t)b->rows * b->C, C = (size_t)b->C, ge = dtype_size(grad_dtype), nm = relu_mask_bytes(n);
    float *x = rand_array(n, 113, b->offset), *dy = rand_array(n, 127, 0.0f), *out = rand_array(n, 131, 0.0f);
    float *gamma = rand_array(C, 137, 1.0f), *beta = rand_array(C, 139, 0.0f), *mean = rand_array(C, 149, 0.0f);
    float *rstd = rand_array(C, 151, 2.0f);
    for (size_t i = 0; i < n; i++) out[i] = out[i] > 0.0f ? out[i] : (i % 3 ? 0.0f : -0.0f); /* a ReLU's output */
    void *out_d = dev_from(out, n, g_be.act_dtype, off), *x_d = dev_from(x, n, g_be.act_dtype, off);
    float *out_t = host_from(out_d, n, g_be.act_dtype); /* as stored */
    uint8_t *mask = malloc(nm);
    cpu_relu_mask(mask, out_t, n);
    uint8_t *mask_d = dev_raw(mask, nm, 1, 0);
    void *g_d = dev_from(gamma, C, g_be.act_dtype, 0), *b_d = dev_from(beta, C, g_be.act_dtype, 0);
    float *mean_d = dev_raw(mean, C, 4, 0), *rstd_d = dev_raw(rstd, C, 4, 0);
    unsigned char *raw[2];
    const size_t bytes = n * elem() + 2 * C * ge;
    float *masked[2] = {NULL, NULL};
    for (int j = 0; j < 2; j++) { /* j = 0: act_backward, then batch norm; 1: the mask in batch norm's passes */
        void *dy_d = dev_from(dy, n, g_be.act_dtype, off), *dx_d = dev_raw(NULL, n, elem(), off);
        void *own_d = dev_raw(NULL, n, elem(), off), *dg_d = dev_raw(NULL, C, ge, 0), *db_d = dev_raw(NULL, C, ge, 0);
        void *dm = j == 0 ? dy_d : where == 0 ? NULL : where == 1 ? dy_d : own_d;
        if (j == 0) {
            g_be.ops->act_backward(&g_be, dy_d, out_d, b->rows, b->C, ACT_RELU);
            g_be.rn->batchnorm_backward(&g_be, dx_d, dg_d, db_d, grad_dtype, dy_d, x_d, mean_d, rstd_d, g_d, b_d,
                                        b->rows, b->C, training, 0, NULL, NULL);
        } else {
            g_be.rn->batchnorm_backward(&g_be, dx_d, dg_d, db_d, grad_dtype, dy_d, x_d, mean_d, rstd_d, g_d, b_d,
                                        b->rows, b->C, training, 0, mask_d, dm);
        }
        raw[j] = malloc(bytes);
        g_be.ops->download(&g_be, raw[j], dx_d, n * elem());
        g_be.ops->download(&g_be, raw[j] + n * elem(), dg_d, C * ge);
        g_be.ops->download(&g_be, raw[j] + n * elem() + C * ge, db_d, C * ge);
        if (dm != NULL) masked[j] = host_from(dm, n, g_be.act_dtype);
        dev_free(dy_d, elem(), off), dev_free(dx_d, elem(), off), dev_free(own_d, elem(), off);
        dev_free(dg_d, ge, 0), dev_free(db_d, ge, 0);
    }
    int ok = masked[1] == NULL || memcmp(masked[0], masked[1], n * 4) == 0;
    if (!ok) printf("    the masked gradient differs from act_backward's\n");
    if (g_be.act_dtype != DT_F32) {
        const int same = memcmp(raw[0], raw[1], bytes) == 0;
        if (!same) printf("    dx, dgamma or dbeta differ from act_backward + batch norm backward's bits\n");
        ok &= same;
    } else {
        const float *a = (const float *)raw[0], *m = (const float *)raw[1];
        ok &= close_to("masked dx", m, a, n, 1e-5) & close_to("masked dgamma and dbeta", m + n, a + n, 2 * C, 1e-5);
    }
    if (!ok) printf("    rows %d, C %d, training %d, gradients %s, dy_masked %s, pointer offset %d\n", b->rows, b->C,
                    training, dtype_name(grad_dtype), where == 0 ? "none" : where == 1 ? "dy" : "its own", off);
    CHECK(ok);
    dev_free(out_d, elem(), off), dev_free(x_d, elem(), off), dev_free(mask_d, 1, 0), dev_free(g_d, elem(), 0);
    dev_free(b_d, elem(), 0), dev_free(mean_d, 4, 0), dev_free(rstd_d, 4, 0);
    free(x), free(dy), free(out), free(gamma), free(beta), free(mean), free(rstd), free(out_t), free(mask);
    free(raw[0]), free(raw[1]), free(masked[0]), free(masked[1]);
}

TEST(batchnorm_backward_with_the_output_mask_gives_act_backward_and_batchnorms_bits)
{
    EACH_PRECISION
    for (size_t k = 0; k < sizeof bn_shapes / sizeof bn_shapes[0]; k++)
        for (int mode = 0; mode < 12; mode++) {
            const int grad_dtype = (mode & 1) ? g_be.act_dtype : DT_F32;
            if ((mode & 1) && grad_dtype == DT_F32) continue; /* fp32: one gradient dtype */
            bn_output_mask_case(&bn_shapes[k], (mode >> 1) & 1, grad_dtype, mode / 4, (int)(k % 2));
        }
}

/* ---- ResNet-50's pooling and images, timed ---- */

#ifdef DPSCALE_HAVE_CUDA
static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

enum { TIMED_REPS = 20 };
#define TIMED(stmt)                                                 \
    ({                                                              \
        stmt;                                                       \
        g_be.ops->synchronize(&g_be);                               \
        const double t0_ = now_s();                                 \
        for (int r_ = 0; r_ < TIMED_REPS; r_++) stmt;               \
        g_be.ops->synchronize(&g_be);                               \
        (now_s() - t0_) / TIMED_REPS;                               \
    })

static void timed_line(const char *what, double s, double bytes, double copy_bps)
{
    printf("    %-34s %8.1f us  %6.0f MB  %7.0f GB/s  %5.2f x the copy's time\n", what, 1e6 * s, bytes / 1e6,
           bytes / s / 1e9, s / (bytes / copy_bps));
}
#endif

/* At batch 256 in bf16, beside a device-to-device copy (the memory-traffic floor: what the
 * kernel must read and write, moved at the copy's rate). Asserts only that they ran. */
TEST(resnet50s_pooling_and_images_timed_at_batch_256)
{
#ifdef DPSCALE_HAVE_CUDA
    if (!gpu("bf16")) return;
    const struct conv_shape s = conv(256, 112, 112, 64, 3, 2, 1);
    const size_t nx = in_size(&s), ny = out_size(&s), img = (size_t)256 * 224 * 224 * 3, nf = (size_t)256 * 49 * 2048;
    void *x = dev_raw(NULL, nx, 2, 0), *dx = dev_raw(NULL, nx, 2, 0), *y = dev_raw(NULL, ny, 2, 0);
    void *dy = dev_raw(NULL, ny, 2, 0), *im = dev_raw(NULL, img, 2, 0), *f = dev_raw(NULL, nf, 2, 0);
    void *pooled = dev_raw(NULL, 256 * 2048, 2, 0);
    uint8_t *am = dev_raw(NULL, ny, 1, 0);
    int *labels = dev_raw(NULL, 256, sizeof(int), 0);
    g_be.rn->synth_images(&g_be, x, labels, 0, 256, 112, 112, 64, 1000, 7); /* maxima to find */
    const double copy_bytes = 2.0 * (double)nx * 2;
    const double copy = TIMED(cudaMemcpyAsync(dx, x, nx * 2, cudaMemcpyDeviceToDevice, backend_stream(&g_be)));
    const double copy_bps = copy_bytes / copy;
    printf("    device-to-device copy of %zu MB: %.1f us, %.0f GB/s\n", nx * 2 / 1000000, 1e6 * copy, copy_bps / 1e9);
    timed_line("synthetic images 256 x 224^2 x 3", TIMED(g_be.rn->synth_images(&g_be, im, labels, 0, 256, 224, 224, 3, 1000, 7)),
               (double)img * 2, copy_bps);
    timed_line("max pool 112^2 x 64, 3x3/2", TIMED(g_be.rn->maxpool_forward(&g_be, y, am, x, &s)),
               (double)nx * 2 + (double)ny * 3, copy_bps);
    timed_line("max pool backward", TIMED(g_be.rn->maxpool_backward(&g_be, dx, dy, am, &s)),
               (double)nx * 2 + (double)ny * 3, copy_bps);
    timed_line("average pool 7^2 x 2048", TIMED(g_be.rn->avgpool_forward(&g_be, pooled, f, 256, 49, 2048)),
               (double)nf * 2, copy_bps);
    timed_line("average pool backward", TIMED(g_be.rn->avgpool_backward(&g_be, f, pooled, 256, 49, 2048)),
               (double)nf * 2, copy_bps);
    CHECK(copy > 0.0);
    void *bufs[] = {x, dx, y, dy, im, f, pooled};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_free(bufs[i], 2, 0);
    dev_free(am, 1, 0), dev_free(labels, sizeof(int), 0);
#endif
}

int main(void)
{
    const int rc = test_main("resnet_cuda");
    if (g_open) backend_close(&g_be);
    return rc;
}

/* test_conv_sm90_cuda.c — the ResNet's implicit-GEMM convolutions on Hopper
 * (kernels/resnet/conv_sm90.cu, the CUDA backend's conv_implicit) against the path they
 * replace, im2col + cuBLASLt (+ col2im for the input's gradient), which the ResNet tests
 * check against the CPU and PyTorch: the forward's y and dgrad's dx agree to bf16's
 * resolution on awkward shapes (8, 24 and 40 channels, odd sizes, padding 0 to 3, 3x3,
 * 5x5 and 7x7 windows, strides 1 and 2 for the forward) and on ResNet-50's windowed
 * convolutions at a batch of 2; every element is written (the output starts as NaN); the
 * same bits twice; the shapes and buffers it declines (fp32, 3 channels, a pointer off
 * 16 bytes, a strided dgrad, a 1x1) are declined, leaving the output untouched.
 *
 * The weight's gradient (the batch cut into slices, their fp32 partials added in order; opt-in
 * with DPSCALE_CONV_WGRAD=implicit, which main sets) agrees with im2col + cuBLASLt in fp32
 * and bf16, also for batches that split unevenly.
 *
 * The forward with batch norm's partial sums in its epilogue (conv_forward_stats: the
 * implicit GEMM on the awkward shapes, the GEMM on 1x1s' inputs; opt-in with
 * DPSCALE_BN_STATS=epilogue, which main sets) gives the plain forward's y to bf16's
 * resolution, and batch norm's statistics, running statistics and output from those sums
 * agree with its own pass over y.
 *
 * It also times ResNet-50's windowed convolutions at its benchmark batch (256, 224 x 224),
 * its strided 1x1s through im2col alone (the implicit GEMM declines them): the implicit GEMM against im2col + cuBLASLt and against cuBLASLt alone on the col
 * buffer (the GEMM the im2col path runs, its floor), median of 10 after 2 warm-ups, in
 * TFLOP/s; it asserts nothing about time.
 *
 * Needs a compute capability 9.0 GPU: elsewhere (or without CUDA) every test passes
 * without checking anything and says so once. Run on the GPU: bin/tests/test_conv_sm90_cuda */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_backend_test.h"
#include "test_arrays.h"
#include "test_conv_shapes.h"

/* the bf16 backend, where its conv_implicit takes a plain 3x3 (a Hopper GPU) */
static int hopper(void)
{
    static int asked = -1;
    if (asked >= 0) return asked && gpu("bf16");
    asked = 0;
    if (!gpu("bf16")) return 0;
    if (g_be.rn == NULL || g_be.rn->conv_implicit == NULL) {
        printf("    skipped: this backend has no implicit GEMM\n");
        return 0;
    }
    const struct conv_shape s = conv(1, 8, 8, 64, 3, 1, 1);
    void *x = dev_raw(NULL, 64 * 64, 2, 0), *w = dev_raw(NULL, 64 * 9 * 64, 2, 0), *y = dev_raw(NULL, 64 * 64, 2, 0);
    asked = g_be.rn->conv_implicit(&g_be, 0, y, x, w, &s, 64);
    g_be.ops->synchronize(&g_be);
    dev_free(x, 2, 0), dev_free(w, 2, 0), dev_free(y, 2, 0);
    if (!asked) printf("    skipped: the implicit GEMM does not run here (not a compute capability 9.0 GPU?)\n");
    return asked;
}

static size_t in_size(const struct conv_shape *s) { return (size_t)s->N * s->H * s->W * s->C; }
static size_t out_size(const struct conv_shape *s, int K) { return (size_t)s->N * s->P * s->Q * K; }
static size_t col_cols(const struct conv_shape *s) { return (size_t)s->R * s->S * s->C; }
static size_t col_size(const struct conv_shape *s) { return (size_t)s->N * s->P * s->Q * col_cols(s); }

/* device buffers of one convolution in bf16: x, w, dy, and the outputs of both paths; dw
 * (fp32) for the timing of the weight's gradient */
struct bufs {
    void *x, *w, *dy, *col, *got, *want, *dw;
};

static struct bufs bufs_new(const struct conv_shape *s, int K, int dgrad)
{
    const size_t nx = in_size(s), nw = (size_t)K * col_cols(s), ny = out_size(s, K), nout = dgrad == 1 ? nx : ny;
    float *x = rand_array(nx, 11), *w = rand_array(nw, 13), *dy = rand_array(ny, 17), *nan = malloc(nout * 4);
    for (size_t i = 0; i < nout; i++) nan[i] = NAN;
    struct bufs b = {dev_from(x, nx, DT_BF16, 0), dev_from(w, nw, DT_BF16, 0), dev_from(dy, ny, DT_BF16, 0),
                     dev_raw(NULL, col_size(s), 2, 0), dev_from(nan, nout, DT_BF16, 0), dev_raw(NULL, nout, 2, 0),
                     dev_raw(NULL, nw, 4, 0)};
    free(x), free(w), free(dy), free(nan);
    return b;
}

static void bufs_free(struct bufs *b)
{
    dev_free(b->x, 2, 0), dev_free(b->w, 2, 0), dev_free(b->dy, 2, 0), dev_free(b->col, 2, 0);
    dev_free(b->got, 2, 0), dev_free(b->want, 2, 0), dev_free(b->dw, 4, 0);
}

/* the im2col path into b->want: y = col w^T, or (dgrad 1) dx = col2im(dy w), or (dgrad 2)
 * into b->dw the weight's gradient dy^T col */
static void im2col_path(struct bufs *b, const struct conv_shape *s, int K, int dgrad, int gemm_only)
{
    const int M = s->N * s->P * s->Q, KC = (int)col_cols(s);
    if (dgrad == 2) {
        if (!gemm_only) g_be.rn->im2col(&g_be, b->col, b->x, s);
        g_be.ops->gemm(&g_be, 1, 0, K, KC, M, 1.0f, b->dy, K, b->col, KC, 0.0f, b->dw, 1, KC);
    } else if (!dgrad) {
        if (!gemm_only) g_be.rn->im2col(&g_be, b->col, b->x, s);
        g_be.ops->gemm(&g_be, 0, 1, M, K, KC, 1.0f, b->col, KC, b->w, KC, 0.0f, b->want, 0, K);
    } else {
        g_be.ops->gemm(&g_be, 0, 0, M, KC, K, 1.0f, b->dy, K, b->w, KC, 0.0f, b->col, 0, KC);
        if (!gemm_only) g_be.rn->col2im(&g_be, b->want, b->col, s);
    }
}

static int implicit(struct bufs *b, const struct conv_shape *s, int K, int dgrad)
{
    if (dgrad == 2) return g_be.rn->conv_wgrad_implicit(&g_be, b->dw, DT_F32, b->dy, b->x, s, K);
    return g_be.rn->conv_implicit(&g_be, dgrad, b->got, dgrad ? b->dy : b->x, b->w, s, K);
}

static void print_shape(const struct conv_shape *s, int K, int dgrad)
{
    printf("    %s N %d, %dx%d x %d -> %d, window %dx%d, stride %d, pad %d\n", dgrad ? "dgrad" : "forward", s->N, s->H,
           s->W, s->C, K, s->R, s->S, s->stride, s->pad);
}

/* one convolution both ways: the implicit GEMM's output against the im2col path's, and again for its bits */
static void compare(const struct conv_shape *s, int K, int dgrad)
{
    struct bufs b = bufs_new(s, K, dgrad);
    const size_t n = dgrad ? in_size(s) : out_size(s, K);
    im2col_path(&b, s, K, dgrad, 0);
    const int ran = implicit(&b, s, K, dgrad);
    if (!ran) print_shape(s, K, dgrad), printf("    the implicit GEMM declined this shape\n");
    CHECK(ran);
    float *want = host_from(b.want, n, DT_BF16), *got = host_from(b.got, n, DT_BF16);
    /* both accumulate in fp32 and round once to bf16, in different orders: an ulp apart (2^-8) */
    const int ok = close_to(dgrad ? "dgrad dx" : "forward y", got, want, n, 8e-3);
    if (!ok) print_shape(s, K, dgrad);
    CHECK(ok);
    unsigned char *first = malloc(n * 2), *second = malloc(n * 2);
    g_be.ops->download(&g_be, first, b.got, n * 2);
    implicit(&b, s, K, dgrad);
    g_be.ops->download(&g_be, second, b.got, n * 2);
    CHECK(memcmp(first, second, n * 2) == 0);
    free(want), free(got), free(first), free(second);
    bufs_free(&b);
}


/* ResNet-50's windowed convolutions at batch N (test_conv_shapes.h), then its strided 1x1
 * shortcuts; the stem's (3 channels) is not among them: TMA cannot take it */
static const struct conv_case *resnet50(int N, int *n)
{
    static struct conv_case c[RESNET50_WINDOWED + 3];
    resnet50_windowed(N, c);
    c[7] = (struct conv_case){conv(N, 56, 56, 256, 1, 2, 0), 512};
    c[8] = (struct conv_case){conv(N, 28, 28, 512, 1, 2, 0), 1024};
    c[9] = (struct conv_case){conv(N, 14, 14, 1024, 1, 2, 0), 2048};
    *n = 10;
    return c;
}

TEST(the_forward_matches_im2col_and_gemm)
{
    if (!hopper()) return;
    int n;
    const struct conv_case *c = conv_awkward(&n);
    for (int i = 0; i < n; i++) compare(&c[i].s, c[i].K, 0);
    c = resnet50(2, &n);
    for (int i = 0; i < n; i++)
        if (c[i].s.R > 1) compare(&c[i].s, c[i].K, 0);
}

TEST(the_input_gradient_matches_gemm_and_col2im)
{
    if (!hopper()) return;
    int n;
    const struct conv_case *c = conv_awkward(&n);
    for (int i = 0; i < n; i++)
        if (c[i].s.stride == 1) compare(&c[i].s, c[i].K, 1);
    c = resnet50(2, &n);
    for (int i = 0; i < n; i++)
        if (c[i].s.stride == 1) compare(&c[i].s, c[i].K, 1);
}

/* The weight's gradient both ways, into fp32 or bf16 (grad_dtype): the implicit GEMM (the
 * batch cut into slices, their partials added) against im2col + cuBLASLt, and its bits twice. */
static void compare_wgrad(const struct conv_shape *s, int K, int grad_dtype)
{
    struct bufs b = bufs_new(s, K, 0);
    const size_t n = (size_t)K * col_cols(s), ge = dtype_size(grad_dtype);
    const int M = s->N * s->P * s->Q, KC = (int)col_cols(s);
    void *want = dev_raw(NULL, n, ge, 0), *got = dev_raw(NULL, n, ge, 0);
    g_be.rn->im2col(&g_be, b.col, b.x, s);
    g_be.ops->gemm(&g_be, 1, 0, K, KC, M, 1.0f, b.dy, K, b.col, KC, 0.0f, want, grad_dtype == DT_F32, KC);
    const int ran = g_be.rn->conv_wgrad_implicit(&g_be, got, grad_dtype, b.dy, b.x, s, K);
    if (!ran) print_shape(s, K, 0), printf("    the implicit weight gradient declined this shape\n");
    CHECK(ran);
    float *w = host_from(want, n, grad_dtype), *g = host_from(got, n, grad_dtype);
    /* fp32 sums of N P Q products in two orders: a few fp32 ulps of the largest; bf16: one rounding */
    const int ok = close_to("wgrad dw", g, w, n, grad_dtype == DT_F32 ? 2e-5 : 8e-3);
    if (!ok) print_shape(s, K, 0), printf("    (the weight's gradient, into %s)\n", dtype_name(grad_dtype));
    CHECK(ok);
    unsigned char *first = malloc(n * ge), *second = malloc(n * ge);
    g_be.ops->download(&g_be, first, got, n * ge);
    g_be.rn->conv_wgrad_implicit(&g_be, got, grad_dtype, b.dy, b.x, s, K);
    g_be.ops->download(&g_be, second, got, n * ge);
    CHECK(memcmp(first, second, n * ge) == 0);
    free(first), free(second), free(w), free(g);
    dev_free(want, ge, 0), dev_free(got, ge, 0);
    bufs_free(&b);
}

TEST(the_weight_gradient_matches_im2col_and_gemm)
{
    if (!hopper()) return;
    int n;
    const struct conv_case *c = conv_awkward(&n);
    for (int i = 0; i < n; i++) compare_wgrad(&c[i].s, c[i].K, DT_F32);
    c = resnet50(2, &n);
    for (int i = 0; i < n; i++)
        if (c[i].s.R > 1) compare_wgrad(&c[i].s, c[i].K, i % 2 ? DT_BF16 : DT_F32);
    /* batches that are cut into slices: 32 and 37 images (the first slices an image more) */
    const struct conv_shape split = conv(32, 8, 8, 64, 3, 1, 1), uneven = conv(37, 9, 7, 24, 3, 2, 1);
    compare_wgrad(&split, 64, DT_F32);
    compare_wgrad(&uneven, 40, DT_BF16);
}

/* what TMA or CUTLASS's kernels cannot take is declined, and the output left as it was */
/* The forward with batch norm's partial sums from its epilogue (rn_ops.h's
 * conv_forward_stats: the implicit GEMM, or the GEMM on a 1x1's input) against the plain
 * forward and batch norm's own pass: y within bf16's resolution (other kernels), the
 * statistics, running ones and normalised output within fp32's, from the partials about a
 * shift (the running mean) that is not the batch's mean. */
static void compare_stats(const struct conv_shape *s, int K, int implicit_conv)
{
    const int rows = s->N * s->P * s->Q;
    struct bufs b = bufs_new(s, K, 0);
    float *shift = rand_array((size_t)K, 19), *gamma = rand_array((size_t)K, 23), *beta = rand_array((size_t)K, 29);
    float *var = malloc((size_t)K * sizeof(float));
    for (int c = 0; c < K; c++) shift[c] *= 3.0f, var[c] = 1.0f; /* the shift: off the mean by up to a few std */
    float *st[2][4]; /* per run: mean, rstd, running mean, running variance */
    void *y[2], *g = dev_from(gamma, (size_t)K, DT_BF16, 0), *be = dev_from(beta, (size_t)K, DT_BF16, 0);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 4; i++) st[r][i] = dev_from(i == 2 ? shift : var, (size_t)K, DT_F32, 0);
        y[r] = dev_raw(NULL, out_size(s, K), 2, 0);
    }
    struct bn_partials pre;
    const int got = g_be.rn->conv_forward_stats(&g_be, implicit_conv, b.got, b.x, b.w, s, K, st[0][2], 0, &pre);
    CHECK(got);
    if (!got) {
        print_shape(s, K, 0);
        return;
    }
    if (implicit_conv) CHECK(g_be.rn->conv_implicit(&g_be, 0, b.want, b.x, b.w, s, K));
    else g_be.ops->gemm(&g_be, 0, 1, rows, K, s->C, 1.0f, b.x, s->C, b.w, s->C, 0.0f, b.want, 0, K);
    g_be.rn->batchnorm_forward(&g_be, y[0], st[0][0], st[0][1], st[0][2], st[0][3], b.got, g, be, rows, K, 1, 0.1f, 1,
                               &pre);
    g_be.rn->batchnorm_forward(&g_be, y[1], st[1][0], st[1][1], st[1][2], st[1][3], b.got, g, be, rows, K, 1, 0.1f, 1,
                               NULL);
    const size_t ny = out_size(s, K);
    float *yg = host_from(b.got, ny, DT_BF16), *yw = host_from(b.want, ny, DT_BF16);
    float *o0 = host_from(y[0], ny, DT_BF16), *o1 = host_from(y[1], ny, DT_BF16);
    int ok = close_to("y (with the sums) against the plain forward", yg, yw, ny, 1e-2) &&
             close_to("batch norm's output from the sums against its own pass", o0, o1, ny, 1e-2);
    for (int i = 0; i < 4; i++) {
        static const char *const what[4] = {"mean", "rstd", "running mean", "running variance"};
        float *a = host_from(st[0][i], (size_t)K, DT_F32), *w = host_from(st[1][i], (size_t)K, DT_F32);
        ok = close_to(what[i], a, w, (size_t)K, 1e-4) && ok;
        free(a), free(w);
    }
    if (!ok) print_shape(s, K, 0);
    CHECK(ok);
    free(yg), free(yw), free(o0), free(o1), free(shift), free(gamma), free(beta), free(var);
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < 4; i++) dev_free(st[r][i], 4, 0);
        dev_free(y[r], 2, 0);
    }
    dev_free(g, 2, 0), dev_free(be, 2, 0);
    bufs_free(&b);
}

TEST(the_forward_with_batch_norm_sums_matches_the_plain_forward_and_pass)
{
    if (!hopper()) return;
    int n = 0;
    const struct conv_case *c = conv_awkward(&n);
    for (int i = 0; i < n; i++) compare_stats(&c[i].s, c[i].K, 1);
    /* 1x1s as GEMMs on their input: rows off the 128-row tile, 64 and wider outputs; 294 tiles
     * (the finish adds them in splits first) */
    const struct conv_case g[] = {{conv(2, 7, 7, 64, 1, 1, 0), 256}, {conv(3, 9, 9, 256, 1, 1, 0), 64},
                                  {conv(1, 5, 3, 8, 1, 1, 0), 24},   {conv(2, 56, 56, 64, 1, 1, 0), 64},
                                  {conv(12, 56, 56, 64, 1, 1, 0), 256}};
    for (size_t i = 0; i < sizeof g / sizeof g[0]; i++) compare_stats(&g[i].s, g[i].K, 0);
}

static void declined(const char *why, const struct conv_shape *s, int K, int dgrad, int off)
{
    struct bufs b = bufs_new(s, K, dgrad);
    const size_t n = dgrad ? in_size(s) : out_size(s, K);
    void *in = (char *)(dgrad ? b.dy : b.x) + 2 * off;
    const int ran = g_be.rn->conv_implicit(&g_be, dgrad, b.got, in, b.w, s, K);
    float *got = host_from(b.got, n, DT_BF16);
    int untouched = 1;
    for (size_t i = 0; i < n; i++) untouched &= isnan(got[i]);
    if (ran || !untouched) printf("    not declined: %s\n", why);
    CHECK(!ran && untouched);
    free(got);
    bufs_free(&b);
}

TEST(what_it_cannot_take_is_declined)
{
    if (!hopper()) return;
    const struct conv_shape stem = conv(2, 16, 16, 3, 7, 2, 3), c12 = conv(2, 8, 8, 12, 3, 1, 1);
    const struct conv_shape c16 = conv(2, 8, 8, 16, 3, 1, 1), strided = conv(2, 8, 8, 16, 3, 2, 1);
    declined("3 channels (the stem)", &stem, 64, 0, 0);
    declined("12 channels (not a multiple of 8)", &c12, 16, 0, 0);
    declined("20 output channels", &c16, 20, 0, 0);
    declined("an input off 16 bytes", &c16, 16, 0, 1);
    declined("a strided dgrad", &strided, 16, 1, 0);
    const struct conv_shape one = conv(2, 8, 8, 64, 1, 2, 0);
    declined("a 1x1 (im2col + cuBLASLt is faster)", &one, 64, 0, 0);
    if (gpu("fp32")) {
        void *x = dev_raw(NULL, in_size(&c16), 4, 0), *w = dev_raw(NULL, 16 * col_cols(&c16), 4, 0);
        void *y = dev_raw(NULL, out_size(&c16, 16), 4, 0);
        CHECK(!g_be.rn->conv_implicit(&g_be, 0, y, x, w, &c16, 16));
        dev_free(x, 4, 0), dev_free(w, 4, 0), dev_free(y, 4, 0);
    }
}

/* one timed path: which = 0 the implicit GEMM, 1 im2col + cuBLASLt, 2 cuBLASLt alone */
struct timed {
    struct bufs *b;
    const struct conv_shape *s;
    int K, dgrad, which;
};

static void run_timed(void *arg)
{
    const struct timed *t = arg;
    if (t->which == 0) implicit(t->b, t->s, t->K, t->dgrad);
    else im2col_path(t->b, t->s, t->K, t->dgrad, t->which == 2);
}

static double time_path(struct bufs *b, const struct conv_shape *s, int K, int dgrad, int which)
{
    struct timed t = {b, s, K, dgrad, which};
    return median_of_10_calls(run_timed, &t);
}

TEST(resnet50_convolutions_timed_at_batch_256)
{
    if (!hopper()) return;
    int n;
    const struct conv_case *c = resnet50(256, &n);
    printf("    ResNet-50's windowed convolutions, batch 256, bf16: ms (TFLOP/s)\n");
    printf("    %-9s %-26s %16s %18s %18s\n", "", "shape", "implicit GEMM", "im2col + cuBLASLt", "cuBLASLt on col");
    double sum[3][3] = {{0}};
    for (int i = 0; i < n; i++)
        for (int dgrad = 0; dgrad < 3; dgrad++) { /* 0 forward, 1 dgrad, 2 the weight's gradient */
            const struct conv_shape *s = &c[i].s;
            if (dgrad == 1 && s->stride != 1) continue;
            struct bufs b = bufs_new(s, c[i].K, dgrad);
            const double flop = 2.0 * s->N * s->P * s->Q * (double)c[i].K * (double)col_cols(s);
            char shape[64];
            snprintf(shape, sizeof shape, "%dx%dx%d->%d %dx%d/%d", s->H, s->W, s->C, c[i].K, s->R, s->S, s->stride);
            printf("    %-9s %-26s", dgrad == 2 ? "wgrad" : dgrad ? "dgrad" : "forward", shape);
            for (int which = 0; which < 3; which++) {
                if (which == 0 && s->R == 1) { /* declined: im2col + cuBLASLt runs it */
                    printf(" %16s ", "im2col path");
                    continue;
                }
                const double t = time_path(&b, s, c[i].K, dgrad, which);
                sum[dgrad][which] += t;
                printf(" %8.3f (%5.0f) ", t * 1e3, flop / t / 1e12);
            }
            printf("\n");
            bufs_free(&b);
        }
    for (int dgrad = 0; dgrad < 3; dgrad++)
        printf("    %-9s %-26s %8.3f ms        %8.3f ms          %8.3f ms\n",
               dgrad == 2 ? "wgrad" : dgrad ? "dgrad" : "forward", "sum",
               sum[dgrad][0] * 1e3, sum[dgrad][1] * 1e3, sum[dgrad][2] * 1e3);
}

int main(void)
{
    setenv("DPSCALE_CONV_WGRAD", "implicit", 1); /* the implicit weight gradient is opt-in: test it */
    setenv("DPSCALE_BN_STATS", "epilogue", 1);   /* and the batch norm sums' epilogue */
    const int rc = test_main("conv_sm90_cuda");
    if (g_open) backend_close(&g_be);
    return rc;
}

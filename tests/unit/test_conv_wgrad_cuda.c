/* test_conv_wgrad_cuda.c — the split-K implicit-GEMM weight gradient (CUTLASS 2, mma.sync:
 * kernels/resnet/conv_wgrad_sm80.cu) against the path it replaces, im2col + cuBLASLt (dw =
 * dy^T col), which the ResNet tests check against the CPU and PyTorch: dw agrees in fp32
 * (to a few fp32 ulps of the largest element) and in bf16 (one rounding) on awkward shapes
 * (8 to 512 channels, K from 8 to 512 on both sides of the 64-row tile, odd sizes, padding 0
 * to 3, 3x3, 5x5 and 7x7 windows, strides 1 and 2), on batches whose reduction is cut into
 * uneven slices, and on ResNet-50's windowed convolutions at batches 2 and 8; every element
 * and every partial is written (dw and the workspace start as NaN); the same bits twice;
 * what it declines (C or K not a multiple of 8, a 1x1, fp32 or fp16 activations, a pointer
 * off 16 bytes) is declined, dw untouched.
 *
 * It also times ResNet-50's windowed weight gradients at its benchmark batch (256, 224 x
 * 224), bf16 in, fp32 out: the split-K implicit GEMM against im2col + cuBLASLt and against
 * cuBLASLt alone on the col buffer (the GEMM the im2col path runs), median of 10 after 2
 * warm-ups, in microseconds and TFLOP/s, and checks the two results agree there too; it
 * asserts nothing about time.
 *
 * Needs a GPU of compute capability 8.0 or later with a kernel image for it (sm_80, sm_86,
 * sm_89, sm_90): elsewhere (or without CUDA) every test passes without checking anything and
 * says so once. Run on the GPU: bin/tests/test_conv_wgrad_cuda */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_backend_test.h"
#include "test_arrays.h"
#include "test_conv_shapes.h"
#ifdef DPSCALE_HAVE_CUDA
#include "backend/cuda/cuda_state.h"
#include "kernels/resnet/conv_wgrad_sm80.h"
#endif

static size_t in_size(const struct conv_shape *s) { return (size_t)s->N * s->H * s->W * s->C; }
static size_t out_size(const struct conv_shape *s, int K) { return (size_t)s->N * s->P * s->Q * K; }
static size_t col_cols(const struct conv_shape *s) { return (size_t)s->R * s->S * s->C; }
static size_t col_size(const struct conv_shape *s) { return (size_t)s->N * s->P * s->Q * col_cols(s); }

/* The kernel's three calls, or (a build without CUDA) nothing taken */
static int wgrad_takes(const struct conv_shape *s, int K, int act_dtype, int grad_dtype, const void *dy, const void *x,
                       const void *dw)
{
#ifdef DPSCALE_HAVE_CUDA
    return cuda_conv_wgrad_sm80_takes(s, K, act_dtype, grad_dtype, dy, x, dw);
#else
    (void)s, (void)K, (void)act_dtype, (void)grad_dtype, (void)dy, (void)x, (void)dw;
    return 0;
#endif
}

static size_t wgrad_workspace_floats(const struct conv_shape *s, int K)
{
#ifdef DPSCALE_HAVE_CUDA
    return cuda_conv_wgrad_sm80_workspace_floats(s, K);
#else
    return (size_t)K * col_cols(s);
#endif
}

/* 1 when it ran (enqueued on the backend's stream), 0 when declined */
static int wgrad_run(void *dw, int grad_dtype, const void *dy, const void *x, const struct conv_shape *s, int K,
                     int act_dtype, float *workspace)
{
#ifdef DPSCALE_HAVE_CUDA
    const cudaError_t e =
        cuda_conv_wgrad_sm80(dw, grad_dtype, dy, x, s, K, act_dtype, workspace, cuda_state_stream(&g_be));
    if (e != cudaSuccess && e != cudaErrorNotSupported)
        printf("    the weight gradient failed: %s\n", cudaGetErrorString(e));
    return e == cudaSuccess;
#else
    (void)dw, (void)grad_dtype, (void)dy, (void)x, (void)s, (void)K, (void)act_dtype, (void)workspace;
    return 0;
#endif
}

/* the slices the kernel cuts this reduction into */
static int splits_of(const struct conv_shape *s, int K)
{
    return (int)(wgrad_workspace_floats(s, K) / ((size_t)K * col_cols(s)));
}

/* the bf16 backend, where the kernel takes a plain 3x3 (compute capability 8.0 or later) */
static int ampere(void)
{
    static int asked = -1;
    if (asked >= 0) return asked && gpu("bf16");
    asked = 0;
    if (!gpu("bf16")) return 0;
    const struct conv_shape s = conv(1, 8, 8, 64, 3, 1, 1);
    void *x = dev_raw(NULL, 64 * 64, 2, 0), *dy = dev_raw(NULL, 64 * 64, 2, 0), *dw = dev_raw(NULL, 64 * 576, 4, 0);
    asked = wgrad_takes(&s, 64, DT_BF16, DT_F32, dy, x, dw);
    dev_free(x, 2, 0), dev_free(dy, 2, 0), dev_free(dw, 4, 0);
    if (!asked)
        printf("    skipped: the split-K weight gradient does not run here (compute capability under 8.0, or no kernel "
               "image for it?)\n");
    return asked;
}

static void *nan_array(size_t n, int dt)
{
    float *h = malloc((n + 1) * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] = NAN;
    void *d = dev_from(h, n, dt, 0);
    free(h);
    return d;
}

/* device buffers of one weight gradient: x, dy (bf16), the col buffer, both paths' dw in
 * grad_dtype and the kernel's workspace, the kernel's two starting as NaN (an element or a
 * partial it never writes shows) */
struct bufs {
    void *x, *dy, *col, *want, *got;
    float *workspace;
    int grad_dtype;
};

static struct bufs bufs_new(const struct conv_shape *s, int K, int grad_dtype)
{
    const size_t nx = in_size(s), ny = out_size(s, K), nw = (size_t)K * col_cols(s), ge = dtype_size(grad_dtype);
    float *x = rand_array(nx, 11), *dy = rand_array(ny, 17);
    struct bufs b = {dev_from(x, nx, DT_BF16, 0), dev_from(dy, ny, DT_BF16, 0), dev_raw(NULL, col_size(s), 2, 0),
                     dev_raw(NULL, nw, ge, 0), nan_array(nw, grad_dtype),
                     nan_array(wgrad_workspace_floats(s, K), DT_F32), grad_dtype};
    free(x), free(dy);
    return b;
}

static void bufs_free(struct bufs *b)
{
    const size_t ge = dtype_size(b->grad_dtype);
    dev_free(b->x, 2, 0), dev_free(b->dy, 2, 0), dev_free(b->col, 2, 0);
    dev_free(b->want, ge, 0), dev_free(b->got, ge, 0), dev_free(b->workspace, 4, 0);
}

/* the im2col path into b->want: dw = dy^T col (gemm_only: the col buffer as it is) */
static void im2col_path(struct bufs *b, const struct conv_shape *s, int K, int gemm_only)
{
    const int M = s->N * s->P * s->Q, KC = (int)col_cols(s);
    if (!gemm_only) g_be.rn->im2col(&g_be, b->col, b->x, s);
    g_be.ops->gemm(&g_be, 1, 0, K, KC, M, 1.0f, b->dy, K, b->col, KC, 0.0f, b->want, b->grad_dtype == DT_F32, KC);
}

static int implicit(struct bufs *b, const struct conv_shape *s, int K)
{
    return wgrad_run(b->got, b->grad_dtype, b->dy, b->x, s, K, DT_BF16, b->workspace);
}

static void print_shape(const struct conv_shape *s, int K)
{
    printf("    wgrad N %d, %dx%d x %d -> %d, window %dx%d, stride %d, pad %d (%d splits)\n", s->N, s->H, s->W, s->C, K,
           s->R, s->S, s->stride, s->pad, splits_of(s, K));
}

/* fp32 sums of N P Q products in two orders: a few fp32 ulps of the largest, growing as the
 * square root of the reduction's length past 64 k rows (ResNet-50's first stage, 802,816
 * rows: 2.7e-5 measured on an H200); bf16: one rounding */
static double tolerance(int grad_dtype, long long npq)
{
    return grad_dtype == DT_F32 ? 2e-5 * fmax(1.0, sqrt((double)npq / 65536.0)) : 8e-3;
}

/* both dw agree; returns 1 when they do */
static int agree(const struct bufs *b, const struct conv_shape *s, int K)
{
    const size_t n = (size_t)K * col_cols(s);
    float *want = host_from(b->want, n, b->grad_dtype), *got = host_from(b->got, n, b->grad_dtype);
    const int ok = close_to(b->grad_dtype == DT_F32 ? "wgrad dw (fp32)" : "wgrad dw (bf16)", got, want, n,
                            tolerance(b->grad_dtype, (long long)s->N * s->P * s->Q));
    if (!ok) print_shape(s, K);
    free(want), free(got);
    return ok;
}

/* one weight gradient both ways, and the kernel's bits twice; returns its split count */
static int compare(const struct conv_shape *s, int K, int grad_dtype)
{
    struct bufs b = bufs_new(s, K, grad_dtype);
    const size_t n = (size_t)K * col_cols(s), bytes = n * dtype_size(grad_dtype);
    im2col_path(&b, s, K, 0);
    const int ran = implicit(&b, s, K);
    if (!ran) print_shape(s, K), printf("    the split-K weight gradient declined this shape\n");
    CHECK(ran);
    CHECK(agree(&b, s, K));
    unsigned char *first = malloc(bytes), *second = malloc(bytes);
    g_be.ops->download(&g_be, first, b.got, bytes);
    dev_free(b.got, dtype_size(grad_dtype), 0);
    b.got = nan_array(n, grad_dtype); /* the second run overwrites it whole too */
    implicit(&b, s, K);
    g_be.ops->download(&g_be, second, b.got, bytes);
    const int same = memcmp(first, second, bytes) == 0;
    if (!same) print_shape(s, K), printf("    not the same bits twice\n");
    CHECK(same);
    free(first), free(second);
    bufs_free(&b);
    return splits_of(s, K);
}


/* batches whose N P Q reduction (3,500 to 17,000 rows) is cut into slices of unequal length:
 * the rows are no multiple of the slices times the k-block, the last k-block partly masked */
static const struct conv_case *uneven(int *n)
{
    static struct conv_case c[6];
    c[0] = (struct conv_case){conv(7, 45, 45, 64, 3, 1, 1), 64};   /* 14175 rows */
    c[1] = (struct conv_case){conv(37, 23, 21, 24, 3, 2, 1), 40};  /* 37 x 12 x 11 = 4884 */
    c[2] = (struct conv_case){conv(9, 57, 55, 16, 3, 2, 1), 136};  /* 9 x 29 x 28 = 7308 */
    c[3] = (struct conv_case){conv(5, 61, 59, 32, 3, 1, 0), 96};   /* 5 x 59 x 57 = 16815 */
    c[4] = (struct conv_case){conv(13, 31, 33, 8, 5, 2, 2), 24};   /* 13 x 16 x 17 = 3536 */
    c[5] = (struct conv_case){conv(11, 40, 40, 64, 3, 2, 1), 128}; /* 11 x 20 x 20 = 4400 */
    *n = 6;
    return c;
}

/* ResNet-50's windowed convolutions at batch N (test_conv_shapes.h) */
static const struct conv_case *resnet50(int N, int *n)
{
    static struct conv_case c[RESNET50_WINDOWED];
    resnet50_windowed(N, c);
    *n = RESNET50_WINDOWED;
    return c;
}

TEST(the_weight_gradient_matches_im2col_and_gemm)
{
    if (!ampere()) return;
    int n;
    const struct conv_case *c = conv_awkward(&n);
    for (int i = 0; i < n; i++) compare(&c[i].s, c[i].K, DT_F32);
    for (int i = 0; i < n; i += 3) compare(&c[i].s, c[i].K, DT_BF16);
    c = resnet50(2, &n);
    for (int i = 0; i < n; i++) compare(&c[i].s, c[i].K, i % 2 ? DT_BF16 : DT_F32);
}

TEST(uneven_slices_of_the_reduction_match_too)
{
    if (!ampere()) return;
    int n, split = 0, shapes = 0;
    const struct conv_case *c = uneven(&n);
    for (int i = 0; i < n; i++, shapes++) split += compare(&c[i].s, c[i].K, i == 1 ? DT_BF16 : DT_F32) > 1;
    c = resnet50(8, &n);
    for (int i = 0; i < n; i++, shapes++) split += compare(&c[i].s, c[i].K, DT_F32) > 1;
    printf("    %d of %d shapes cut into more than one slice\n", split, shapes);
    CHECK(split >= 4); /* the point of these shapes: the partials and their sum ran */
}

/* takes() says no, and a call leaves dw as it was */
static void declined(const char *why, const struct conv_shape *s, int K, int act_dtype, int off)
{
    const size_t nw = (size_t)K * col_cols(s), ne = dtype_size(act_dtype);
    void *x = dev_raw(NULL, in_size(s), ne, 0), *dy = dev_raw(NULL, out_size(s, K), ne, 0);
    void *dw = nan_array(nw + 1, DT_F32);
    float *ws = dev_raw(NULL, nw * 8, 4, 0);
    void *dw_at = (char *)dw + 4 * off;
    const int taken = wgrad_takes(s, K, act_dtype, DT_F32, dy, x, dw_at);
    const int ran = wgrad_run(dw_at, DT_F32, dy, x, s, K, act_dtype, ws);
    float *got = host_from(dw, nw + 1, DT_F32);
    int untouched = 1;
    for (size_t i = 0; i < nw + 1; i++) untouched &= isnan(got[i]);
    if (taken || ran || !untouched) printf("    not declined: %s\n", why);
    CHECK(!taken && !ran && untouched);
    free(got);
    dev_free(x, ne, 0), dev_free(dy, ne, 0), dev_free(dw, 4, 0), dev_free(ws, 4, 0);
}

TEST(what_it_cannot_take_is_declined)
{
    if (!ampere()) return;
    const struct conv_shape c12 = conv(2, 8, 8, 12, 3, 1, 1), c16 = conv(2, 8, 8, 16, 3, 1, 1);
    const struct conv_shape stem = conv(2, 16, 16, 3, 7, 2, 3), one = conv(2, 8, 8, 64, 1, 2, 0);
    const struct conv_shape one_s1 = conv(2, 8, 8, 64, 1, 1, 0);
    declined("12 channels (not a multiple of 8)", &c12, 16, DT_BF16, 0);
    declined("3 channels (the stem)", &stem, 64, DT_BF16, 0);
    declined("20 output channels", &c16, 20, DT_BF16, 0);
    declined("a strided 1x1", &one, 64, DT_BF16, 0);
    declined("a 1x1", &one_s1, 64, DT_BF16, 0);
    declined("fp32 activations", &c16, 16, DT_F32, 0);
    declined("fp16 activations", &c16, 16, DT_F16, 0);
    declined("a gradient off 16 bytes", &c16, 16, DT_BF16, 1);
    /* a gradient in neither fp32 nor bf16, and an x off 16 bytes */
    void *x = dev_raw(NULL, in_size(&c16) + 8, 2, 0), *dy = dev_raw(NULL, out_size(&c16, 16), 2, 0);
    void *dw = dev_raw(NULL, 16 * col_cols(&c16), 4, 0);
    CHECK(!wgrad_takes(&c16, 16, DT_BF16, DT_F16, dy, x, dw));
    CHECK(!wgrad_takes(&c16, 16, DT_BF16, DT_F32, dy, (char *)x + 2, dw));
    CHECK(wgrad_takes(&c16, 16, DT_BF16, DT_F32, dy, x, dw)); /* and the same, aligned, taken */
    /* a shape whose P is not its geometry's */
    struct conv_shape bad = c16;
    bad.P += 1;
    CHECK(!wgrad_takes(&bad, 16, DT_BF16, DT_F32, dy, x, dw));
    dev_free(x, 2, 0), dev_free(dy, 2, 0), dev_free(dw, 4, 0);
}

/* one timed path: which = 0 the split-K implicit GEMM, 1 im2col + cuBLASLt, 2 cuBLASLt alone */
struct timed {
    struct bufs *b;
    const struct conv_shape *s;
    int K, which;
};

static void run_timed(void *arg)
{
    const struct timed *t = arg;
    if (t->which == 0) implicit(t->b, t->s, t->K);
    else im2col_path(t->b, t->s, t->K, t->which == 2);
}

TEST(resnet50_weight_gradients_timed_at_batch_256)
{
    if (!ampere()) return;
    int n;
    const struct conv_case *c = resnet50(256, &n);
    printf("    ResNet-50's windowed weight gradients, batch 256, bf16 in, fp32 out: us (TFLOP/s)\n");
    printf("    %-20s %-18s %6s %18s %18s %18s\n", "shape", "K x RSC x NPQ", "splits", "split-K implicit",
           "im2col + cuBLASLt", "cuBLASLt on col");
    double sum[3] = {0};
    for (int i = 0; i < n; i++) {
        const struct conv_shape *s = &c[i].s;
        const int K = c[i].K;
        struct bufs b = bufs_new(s, K, DT_F32);
        const long long npq = (long long)s->N * s->P * s->Q;
        const double flop = 2.0 * (double)npq * K * (double)col_cols(s);
        char shape[64], gemm[64];
        snprintf(shape, sizeof shape, "%dx%dx%d->%d %dx%d/%d", s->H, s->W, s->C, K, s->R, s->S, s->stride);
        snprintf(gemm, sizeof gemm, "%dx%zux%lld", K, col_cols(s), npq);
        printf("    %-20s %-18s %6d", shape, gemm, splits_of(s, K));
        for (int which = 0; which < 3; which++) {
            struct timed t = {&b, s, K, which};
            const double sec = median_of_10_calls(run_timed, &t);
            sum[which] += sec;
            printf(" %9.1f (%5.0f) ", sec * 1e6, flop / sec / 1e12);
        }
        printf("\n");
        CHECK(agree(&b, s, K)); /* b.want: the GEMM on im2col's col buffer; b.got: the kernel's */
        bufs_free(&b);
    }
    printf("    %-20s %-18s %6s %12.1f us       %12.1f us       %12.1f us\n", "sum", "", "", sum[0] * 1e6, sum[1] * 1e6,
           sum[2] * 1e6);
}

int main(void)
{
    setenv("DPSCALE_CONV", "auto", 1); /* DPSCALE_CONV=im2col would turn the kernel off: test it */
    const int rc = test_main("conv_wgrad_cuda");
    if (g_open) backend_close(&g_be);
    return rc;
}

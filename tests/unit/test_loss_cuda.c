/* test_loss_cuda.c — the classifier's softmax cross-entropy on the GPU (kernels/loss.cu)
 * against the CPU's (kernels/loss_cpu.c) on the same rounded logits: the gradient element
 * by element within the compute dtype's resolution (the softmax's small values too, not
 * only the label's; in fp16 those under its smallest subnormal round to zero), the loss
 * within 1e-5, the padding columns zero, in place (the gradient over the logits, as the
 * transformers' head runs it) and not, with 16-byte vectors and without (ld % 8 != 0), in
 * fp32, bf16 and fp16; the same bits twice.
 *
 * It also times it at GPT-2 small's head (16,384 x 50,257, padded to 50,304, bf16) beside
 * the memory floor of one read and one write at 4.8 TB/s (an H200's), median of 10, with
 * the default block and with 256, 512 and 1,024 threads a row: figures, nothing asserted.
 * Needs a GPU (skips without one): bin/tests/test_loss_cuda */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "cuda_backend_test.h"
#include "kernels/kernels_cpu.h"

#ifdef DPSCALE_HAVE_CUDA
#include <cuda_runtime.h>

#include "kernels/kernels_cuda.h"

static const char *const precisions[] = {"fp32", "bf16", "fp16"};

static cudaStream_t stream(void) { return (cudaStream_t)g_be.ops->stream(&g_be); }

/* logits of a trained-looking head: mostly small, a few large, rounded to the compute dtype */
static float *logits_of(int rows, int ld, int classes, unsigned seed)
{
    float *z = malloc((size_t)rows * ld * sizeof *z);
    for (size_t i = 0; i < (size_t)rows * ld; i++) {
        seed = seed * 1664525u + 1013904223u;
        const float u = (float)((seed >> 8) * (1.0 / 16777216.0));
        z[i] = i % (size_t)ld < (size_t)classes ? rnd(4.0f * u - 2.0f + ((seed & 1023) == 0 ? 8.0f : 0.0f)) : NAN;
    }
    return z;
}

/* |got - want| <= tol |want| + floor, every element (the padding: exactly 0) */
static int elementwise_close(const float *got, const float *want, size_t n, double tol, double floor_abs)
{
    for (size_t i = 0; i < n; i++) {
        const double e = fabs((double)got[i] - want[i]);
        if (!(e <= tol * fabs(want[i]) + floor_abs)) {
            printf("    element %zu: %.9g, the cpu's %.9g (tolerance %g relative + %g)\n", i, got[i], want[i], tol,
                   floor_abs);
            return 0;
        }
    }
    return 1;
}

/* one case on the GPU, twice, against the CPU */
static void xent_case(int rows, int classes, int ld, int in_place)
{
    const size_t n = (size_t)rows * ld;
    const float scale = 1.0f / (float)rows;
    float *z = logits_of(rows, ld, classes, 17u + (unsigned)classes), *dz = malloc(n * sizeof *dz), loss = 0.0f;
    int *labels = malloc((size_t)rows * sizeof *labels);
    for (int i = 0; i < rows; i++) labels[i] = (int)(((unsigned)i * 2654435761u) % (unsigned)classes);
    cpu_softmax_xent(dz, &loss, z, labels, rows, classes, ld, scale);
    int *labels_d = dev_raw(labels, (size_t)rows, sizeof(int), 0);
    float *row_loss = dev_raw(NULL, (size_t)rows, 4, 0), *loss_d = dev_raw(NULL, 1, 4, 0);
    unsigned char *bits[2] = {NULL, NULL};
    const size_t bytes = n * elem();
    for (int k = 0; k < 2; k++) {
        void *z_d = dev_from(z, n, g_be.act_dtype, 0), *dz_d = in_place ? z_d : dev_raw(NULL, n, elem(), 0);
        const cudaError_t e = cuda_softmax_xent(dz_d, loss_d, z_d, labels_d, rows, classes, ld, scale, g_be.act_dtype,
                                                row_loss, stream());
        CHECK(e == cudaSuccess);
        float *got = host_from(dz_d, n, g_be.act_dtype), got_loss = 0.0f;
        g_be.ops->download(&g_be, &got_loss, loss_d, 4);
        /* fp32: __expf against libm's expf; 16 bits: one rounding, and fp16's underflow below 6e-8 */
        const double tol = g_be.act_dtype == DT_F32 ? 5e-5 : g_be.act_dtype == DT_BF16 ? 8e-3 : 1e-3;
        const double floor_abs = g_be.act_dtype == DT_F16 ? 6e-8 : 1e-30;
        const int ok = elementwise_close(got, dz, n, tol, floor_abs) && fabs(got_loss - loss) <= 1e-5 * fabs(loss) + 1e-6;
        if (!ok)
            printf("    %s, rows %d, classes %d, ld %d, in place %d: loss %.9g, the cpu's %.9g\n",
                   dtype_name(g_be.act_dtype), rows, classes, ld, in_place, got_loss, loss);
        CHECK(ok);
        bits[k] = malloc(bytes);
        g_be.ops->download(&g_be, bits[k], dz_d, bytes);
        free(got);
        dev_free(z_d, elem(), 0);
        if (!in_place) dev_free(dz_d, elem(), 0);
    }
    CHECK(memcmp(bits[0], bits[1], bytes) == 0);
    free(bits[0]), free(bits[1]);
    dev_free(labels_d, sizeof(int), 0), dev_free(row_loss, 4, 0), dev_free(loss_d, 4, 0);
    free(z), free(dz), free(labels);
}

TEST(the_loss_and_gradient_match_the_cpu)
{
    static const int c[][3] = {
        {256, 50257, 50304}, /* GPT-2's padded head, fewer rows */
        {3, 30522, 30528},   /* BERT's */
        {37, 61, 64},        {5, 1000, 1000}, {2, 50257, 50257}, /* no 16-byte vectors: ld % 8 != 0 */
        {4, 30000, 30000},
        {1, 1, 8},
    };
    for (int pi = 0; pi < 3 && gpu(precisions[pi]); pi++)
        for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
            for (int in_place = 0; in_place < 2; in_place++) xent_case(c[i][0], c[i][1], c[i][2], in_place);
}

struct head {
    void *z;
    float *loss, *row_loss;
    const int *labels;
    int rows, classes, ld, threads;
};

static void run_head(void *arg)
{
    const struct head *h = arg;
    cuda_softmax_xent_threads(h->z, h->loss, h->z, h->labels, h->rows, h->classes, h->ld, 1.0f, DT_BF16, h->row_loss,
                              h->threads, stream());
}

TEST(gpt2_head_timed)
{
    if (!gpu("bf16")) return;
    const int rows = 16384, classes = 50257, ld = 50304;
    const size_t n = (size_t)rows * ld;
    void *z_d = dev_raw(NULL, n, 2, 0);
    g_be.ops->zero(&g_be, z_d, n * 2);
    int *labels = malloc(rows * sizeof *labels);
    for (int i = 0; i < rows; i++) labels[i] = (i * 7919) % classes;
    int *labels_d = dev_raw(labels, rows, sizeof(int), 0);
    float *row_loss = dev_raw(NULL, rows, 4, 0), *loss_d = dev_raw(NULL, 1, 4, 0);
    const double floor_s = 2.0 * (double)n * 2 / 4.8e12;
    printf("    GPT-2 small's head, %d x %d (ld %d), bf16, in place: memory floor (one read, one write) %.3f ms\n", rows,
           classes, ld, floor_s * 1e3);
    static const int threads[] = {0, 256, 512, 1024};
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        struct head h = {z_d, loss_d, row_loss, labels_d, rows, classes, ld, threads[i]};
        const double t = median_of_10_calls(run_head, &h);
        if (threads[i] == 0)
            printf("    the default: %.3f ms (%.2f x the floor)\n", t * 1e3, t / floor_s);
        else
            printf("    %4d threads a row: %.3f ms (%.2f x the floor)\n", threads[i], t * 1e3, t / floor_s);
    }
    dev_free(z_d, 2, 0), dev_free(labels_d, sizeof(int), 0), dev_free(row_loss, 4, 0), dev_free(loss_d, 4, 0);
    free(labels);
}
#endif

int main(void)
{
    const int rc = test_main("loss_cuda");
    if (g_open) backend_close(&g_be);
    return rc;
}

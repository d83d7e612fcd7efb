/* cpu_resnet.c — the CPU backend's ResNet operations (struct rn_ops, rn_ops.h):
 * thin wrappers over the loops of kernels/resnet/resnet_cpu.c. fp32 throughout. */
#include <string.h>

#include "backend/backend.h"
#include "backend/rn_ops.h"
#include "base/error.h"
#include "kernels/resnet/resnet_cpu.h"

static void need_f32(int grad_dtype)
{
    if (grad_dtype != DT_F32) DP_FATAL(NULL, "the cpu backend keeps gradients in fp32");
}

static void be_im2col(struct backend *b, void *col, const void *x, const struct conv_shape *s)
{
    (void)b;
    cpu_im2col(col, x, s);
}

static void be_col2im(struct backend *b, void *dx, const void *col, const struct conv_shape *s)
{
    (void)b;
    cpu_col2im(dx, col, s);
}

static void be_copy_rows(struct backend *b, void *dst, int dst_ld, const void *src, int src_ld, int rows, int cols,
                         int elem_bytes)
{
    (void)b;
    for (int r = 0; r < rows; r++)
        memcpy((char *)dst + (size_t)r * dst_ld * elem_bytes, (const char *)src + (size_t)r * src_ld * elem_bytes,
               (size_t)cols * elem_bytes);
}

static void be_batchnorm_forward(struct backend *b, void *y, float *mean, float *rstd, float *run_mean, float *run_var,
                                 const void *x, const void *gamma, const void *beta, int rows, int C, int training,
                                 float momentum, int relu, const struct bn_partials *pre)
{
    (void)b;
    (void)pre; /* never given: the CPU table has no conv_forward_stats */
    cpu_batchnorm_forward(y, mean, rstd, run_mean, run_var, x, gamma, beta, rows, C, training, momentum, relu);
}

static void be_batchnorm_add_relu_forward(struct backend *b, void *y, uint8_t *mask, const struct bn_operands *bn,
                                          const struct bn_operands *proj, const void *shortcut, int rows, int C,
                                          int training, float momentum)
{
    (void)b;
    cpu_batchnorm_add_relu_forward(y, bn, proj, shortcut, rows, C, training, momentum);
    if (mask != NULL) cpu_relu_mask(mask, y, (size_t)rows * C);
}

/* with a mask: dy masked into dy_masked (else into dx), the batch norm's backward from there */
static void be_batchnorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                  const void *x, const float *mean, const float *rstd, const void *gamma,
                                  const void *beta, int rows, int C, int training, int relu, const uint8_t *mask,
                                  void *dy_masked)
{
    (void)b;
    need_f32(grad_dtype);
    if (mask != NULL && relu) DP_FATAL(NULL, "batch norm backward: a ReLU's mask given with relu = 1 (one or the other)");
    if (mask != NULL) {
        float *g = dy_masked != NULL ? dy_masked : dx;
        cpu_relu_mask_apply(g, dy, mask, (size_t)rows * C);
        dy = g;
    }
    cpu_batchnorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, beta, rows, C, training, relu);
}

static void need_byte_taps(const struct conv_shape *s)
{
    if ((long)s->R * s->S > MAXPOOL_TAPS)
        DP_FATAL(NULL, "max pooling: a %d x %d window has more taps than its byte argmax holds (%d)", s->R, s->S,
                 MAXPOOL_TAPS);
}

static void be_maxpool_forward(struct backend *b, void *y, uint8_t *argmax, const void *x, const struct conv_shape *s)
{
    (void)b;
    need_byte_taps(s);
    cpu_maxpool_forward(y, argmax, x, s);
}

static void be_maxpool_backward(struct backend *b, void *dx, const void *dy, const uint8_t *argmax, const struct conv_shape *s)
{
    (void)b;
    need_byte_taps(s);
    cpu_maxpool_backward(dx, dy, argmax, s);
}

static void be_avgpool_forward(struct backend *b, void *y, const void *x, int N, int HW, int C)
{
    (void)b;
    cpu_avgpool_forward(y, x, N, HW, C);
}

static void be_avgpool_backward(struct backend *b, void *dx, const void *dy, int N, int HW, int C)
{
    (void)b;
    cpu_avgpool_backward(dx, dy, N, HW, C);
}

static void be_synth_images(struct backend *b, void *x, int *labels, uint64_t first, int B, int H, int W, int C,
                            int classes, uint64_t seed)
{
    (void)b;
    cpu_synth_images(x, labels, first, B, H, W, C, classes, seed);
}

const struct rn_ops cpu_rn_ops = {
    .im2col = be_im2col,
    .col2im = be_col2im,
    .copy_rows = be_copy_rows,
    .batchnorm_forward = be_batchnorm_forward,
    .batchnorm_add_relu_forward = be_batchnorm_add_relu_forward,
    .batchnorm_backward = be_batchnorm_backward,
    .maxpool_forward = be_maxpool_forward,
    .maxpool_backward = be_maxpool_backward,
    .avgpool_forward = be_avgpool_forward,
    .avgpool_backward = be_avgpool_backward,
    .synth_images = be_synth_images,
};

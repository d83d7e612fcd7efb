/* resnet_cuda.c — the CUDA backend's ResNet operations (cuda_rn_ops, resnet_cuda.h):
 * each enqueues its kernels (kernels/resnet/resnet.cu, batchnorm.cu, and Hopper's
 * implicit GEMMs, conv_sm90.cu) on the backend's current stream in the compute dtype.
 * Batch norm's partial sums and the implicit weight gradient's live in two scratches, the
 * ResNet's slot of the backend's state (cuda_state.h), allocated on first use (the
 * warm-up steps) at the size of the largest call seen, and kept. */
#include "backend/cuda/resnet_cuda.h"

#include <cuda_runtime.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_state.h"
#include "base/cuda_check.h"
#include "base/error.h"
#include "kernels/resnet/conv_sm90.h"
#include "kernels/resnet/conv_wgrad_sm80.h"
#include "kernels/resnet/gemm_bn_stats_sm90.h"
#include "kernels/resnet/resnet_kernels.h"
#include "kernels/env_switch.h"

struct rn_cuda {
    float *bn_scratch;
    size_t bn_bytes;
    float *stats[2]; /* conv_forward_stats' slots: the partial sums, then the squares' */
    size_t stats_bytes[2];
    float *wgrad_scratch; /* the implicit weight gradient's partial sums, grown like bn_scratch */
    size_t wgrad_bytes;
};

static void rn_release(struct backend *b, void *state)
{
    struct rn_cuda *r = state;
    if (r->bn_scratch != NULL) b->ops->free(b, r->bn_scratch);
    if (r->wgrad_scratch != NULL) b->ops->free(b, r->wgrad_scratch);
    for (int i = 0; i < 2; i++)
        if (r->stats[i] != NULL) b->ops->free(b, r->stats[i]);
    free(r);
}

static struct rn_cuda *rn(struct backend *b)
{
    struct cuda_family_slot *slot = cuda_state_family(b, &cuda_rn_ops);
    if (slot->state == NULL) {
        slot->state = calloc(1, sizeof(struct rn_cuda));
        CHECK_ALLOC(slot->state);
        slot->release = rn_release;
    }
    return slot->state;
}

static cudaStream_t stream(struct backend *b) { return cuda_state_stream(b); }

static float *bn_scratch(struct backend *b, int rows, int C)
{
    struct rn_cuda *r = rn(b);
    return cuda_state_grow(b, (void **)&r->bn_scratch, &r->bn_bytes,
                           cuda_batchnorm_scratch_floats(rows, C) * sizeof(float));
}

static void cuda_rn_im2col(struct backend *b, void *col, const void *x, const struct conv_shape *s)
{
    CHECK_CUDA(cuda_im2col(col, x, s, b->act_dtype, stream(b)));
}

static void cuda_rn_copy_rows(struct backend *b, void *dst, int dst_ld, const void *src, int src_ld, int rows, int cols,
                              int elem_bytes)
{
    if (rows > 0 && cols > 0)
        CHECK_CUDA(cudaMemcpy2DAsync(dst, (size_t)dst_ld * elem_bytes, src, (size_t)src_ld * elem_bytes,
                                     (size_t)cols * elem_bytes, (size_t)rows, cudaMemcpyDeviceToDevice, stream(b)));
}

static void cuda_rn_col2im(struct backend *b, void *dx, const void *col, const struct conv_shape *s)
{
    CHECK_CUDA(cuda_col2im(dx, col, s, b->act_dtype, stream(b)));
}

static void cuda_rn_batchnorm_forward(struct backend *b, void *y, float *mean, float *rstd, float *run_mean,
                                      float *run_var, const void *x, const void *gamma, const void *beta, int rows,
                                      int C, int training, float momentum, int relu, const struct bn_partials *pre)
{
    float *scratch = bn_scratch(b, rows, C);
    CHECK_CUDA(cuda_batchnorm_forward(y, mean, rstd, run_mean, run_var, x, gamma, beta, rows, C, training, momentum, relu,
                                      pre, scratch, b->act_dtype, stream(b)));
}

static void cuda_rn_batchnorm_add_relu_forward(struct backend *b, void *y, uint8_t *mask, const struct bn_operands *bn,
                                               const struct bn_operands *proj, const void *shortcut, int rows, int C,
                                               int training, float momentum)
{
    float *scratch = bn_scratch(b, rows, C); /* both batch norms' partial sums, one after the other */
    CHECK_CUDA(cuda_batchnorm_add_relu_forward(y, mask, bn, proj, shortcut, rows, C, training, momentum, scratch,
                                               b->act_dtype, stream(b)));
}

static void cuda_rn_batchnorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, int grad_dtype,
                                       const void *dy, const void *x, const float *mean, const float *rstd,
                                       const void *gamma, const void *beta, int rows, int C, int training, int relu,
                                       const uint8_t *mask, void *dy_masked)
{
    float *scratch = bn_scratch(b, rows, C);
    CHECK_CUDA(cuda_batchnorm_backward(dx, dgamma, dbeta, grad_dtype, dy, x, mean, rstd, gamma, beta, rows, C, training,
                                       relu, mask, dy_masked, scratch, b->act_dtype, stream(b)));
}

static void cuda_rn_maxpool_forward(struct backend *b, void *y, uint8_t *argmax, const void *x, const struct conv_shape *s)
{
    CHECK_CUDA(cuda_maxpool_forward(y, argmax, x, s, b->act_dtype, stream(b)));
}

static void cuda_rn_maxpool_backward(struct backend *b, void *dx, const void *dy, const uint8_t *argmax,
                                     const struct conv_shape *s)
{
    CHECK_CUDA(cuda_maxpool_backward(dx, dy, argmax, s, b->act_dtype, stream(b)));
}

static void cuda_rn_avgpool_forward(struct backend *b, void *y, const void *x, int N, int HW, int C)
{
    CHECK_CUDA(cuda_avgpool_forward(y, x, N, HW, C, b->act_dtype, stream(b)));
}

static void cuda_rn_avgpool_backward(struct backend *b, void *dx, const void *dy, int N, int HW, int C)
{
    CHECK_CUDA(cuda_avgpool_backward(dx, dy, N, HW, C, b->act_dtype, stream(b)));
}

static void cuda_rn_synth_images(struct backend *b, void *x, int *labels, uint64_t first, int B, int H, int W, int C,
                                 int classes, uint64_t seed)
{
    CHECK_CUDA(cuda_synth_images(x, labels, first, B, H, W, C, classes, seed, b->act_dtype, stream(b)));
}

/* Hopper's implicit GEMM (kernels/resnet/conv_sm90.h says where it applies) */
static int cuda_rn_conv_implicit(struct backend *b, int dgrad, void *out, const void *in, const void *w,
                                 const struct conv_shape *s, int K)
{
    const enum conv_sm90_op op = dgrad ? CONV_SM90_DGRAD : CONV_SM90_FORWARD;
    if (!cuda_conv_sm90_takes(op, s, K, b->act_dtype, in, w, out)) return 0;
    CHECK_CUDA(cuda_conv_sm90(op, out, in, w, s, K, b->act_dtype, stream(b)));
    return 1;
}

/* CUTLASS 2's split-K weight gradient where it beat im2col + cuBLASLt on an H200
 * (results/h200x1-relu-bits: test_conv_wgrad_cuda's timings at ResNet-50's shapes): the long
 * reductions of the first two stages (802,816 output pixels: 289 against 543 µs; 200,704:
 * 218-220 against 268-310), not the later ones (50,176 and 12,544: 224-310 against 122-191 µs,
 * where the col is small and cuBLASLt on it runs at 600-700 TFLOP/s) */
#define WGRAD_SPLITK_MIN_ROWS 131072

/* The weight's gradient as an implicit GEMM: Hopper's (only where DPSCALE_CONV_WGRAD=implicit
 * asks for it, conv_sm90.h), else CUTLASS 2's with its reduction split (conv_wgrad_sm80.h) on
 * reductions of WGRAD_SPLITK_MIN_ROWS and more */
static int cuda_rn_conv_wgrad_implicit(struct backend *b, void *dw, int grad_dtype, const void *dy, const void *x,
                                       const struct conv_shape *s, int K)
{
    struct rn_cuda *r = rn(b);
    if (cuda_conv_sm90_wgrad_takes(s, K, b->act_dtype, grad_dtype, dy, x, dw)) {
        float *ws = cuda_state_grow(b, (void **)&r->wgrad_scratch, &r->wgrad_bytes,
                                    cuda_conv_sm90_wgrad_workspace_floats(s, K) * sizeof(float));
        CHECK_CUDA(cuda_conv_sm90_wgrad(dw, grad_dtype, dy, x, s, K, b->act_dtype, ws, stream(b)));
        return 1;
    }
    if ((long long)s->N * s->P * s->Q < WGRAD_SPLITK_MIN_ROWS ||
        !cuda_conv_wgrad_sm80_takes(s, K, b->act_dtype, grad_dtype, dy, x, dw))
        return 0;
    float *ws = cuda_state_grow(b, (void **)&r->wgrad_scratch, &r->wgrad_bytes,
                                cuda_conv_wgrad_sm80_workspace_floats(s, K) * sizeof(float));
    CHECK_CUDA(cuda_conv_wgrad_sm80(dw, grad_dtype, dy, x, s, K, b->act_dtype, ws, stream(b)));
    return 1;
}

/* DPSCALE_BN_STATS=epilogue: batch norm's statistics from the forward convolutions'
 * epilogues (conv_forward_stats), not by its own pass over their outputs. Opt-in: on an H200
 * the 53 convolutions of ResNet-50's forward took 24.2 ms with the sums' epilogue against
 * ~5.9 ms without, for 1.4 ms of batch norm's passes saved (results/h200x1-bn-stats-epilogue) */
static int stats_epilogue_enabled(void)
{
    static int cached = -1;
    return env_switch(&cached, "DPSCALE_BN_STATS", "epilogue");
}

/* The forward with batch norm's partial sums from its epilogue (conv_sm90.h's implicit GEMM,
 * gemm_bn_stats_sm90.h's GEMM), into slot `slot`: where those kernels take the call */
static int cuda_rn_conv_forward_stats(struct backend *b, int implicit, void *y, const void *in, const void *w,
                                      const struct conv_shape *s, int K, const float *shift, int slot,
                                      struct bn_partials *pre)
{
    if (!stats_epilogue_enabled() || slot < 0 || slot > 1) return 0;
    const long long M = (long long)s->N * s->P * s->Q;
    const int ld = conv_col_ld(s);
    if (M > INT_MAX) return 0;
    if (implicit ? !cuda_conv_sm90_takes(CONV_SM90_FORWARD, s, K, b->act_dtype, in, w, y)
                 : !cuda_gemm_bn_stats_takes((int)M, K, ld, b->act_dtype, in, ld, w, ld, y))
        return 0;
    const struct bn_partials_shape sh = implicit ? cuda_conv_sm90_stats_shape(s, K) : cuda_gemm_bn_stats_shape((int)M, K);
    struct rn_cuda *r = rn(b);
    const size_t n = (size_t)sh.tiles * sh.ld;
    float *sum = cuda_state_grow(b, (void **)&r->stats[slot], &r->stats_bytes[slot], 2 * n * sizeof(float));
    float *sumsq = sum + n;
    if (implicit) CHECK_CUDA(cuda_conv_sm90_stats(y, in, w, s, K, b->act_dtype, shift, sum, sumsq, stream(b)));
    else CHECK_CUDA(cuda_gemm_bn_stats(y, in, ld, w, ld, (int)M, K, ld, b->act_dtype, shift, sum, sumsq, stream(b)));
    *pre = (struct bn_partials){sum, sumsq, shift, sh};
    return 1;
}

const struct rn_ops cuda_rn_ops = {
    .im2col = cuda_rn_im2col,
    .col2im = cuda_rn_col2im,
    .copy_rows = cuda_rn_copy_rows,
    .batchnorm_forward = cuda_rn_batchnorm_forward,
    .batchnorm_add_relu_forward = cuda_rn_batchnorm_add_relu_forward,
    .batchnorm_backward = cuda_rn_batchnorm_backward,
    .maxpool_forward = cuda_rn_maxpool_forward,
    .maxpool_backward = cuda_rn_maxpool_backward,
    .avgpool_forward = cuda_rn_avgpool_forward,
    .avgpool_backward = cuda_rn_avgpool_backward,
    .synth_images = cuda_rn_synth_images,
    .conv_implicit = cuda_rn_conv_implicit,
    .conv_wgrad_implicit = cuda_rn_conv_wgrad_implicit,
    .conv_forward_stats = cuda_rn_conv_forward_stats,
};

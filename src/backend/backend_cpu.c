/* backend_cpu.c — the CPU backend: GEMMs through OpenBLAS (cblas_sgemm), the
 * element-wise operations through the loops of kernels/, host clocks for timing.
 * fp32 only. Each rank gets cores / ranks-on-the-node threads unless run.threads
 * says otherwise, so that ranks sharing a node do not oversubscribe it. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernels/kernels_cpu.h"
#include "kernels/resnet_cpu.h"
#include "kernels/transformer_cpu.h"
#include "backend/backend.h"
#include "base/error.h"
#include "base/memlimit.h"

struct backend_event {
    struct timespec when;
};

static int cpu_init(struct backend *b, const struct config *cfg, int local_rank, int local_size, char *err, size_t errlen)
{
    if (cfg->precision != PREC_FP32) {
        snprintf(err, errlen, "the cpu backend runs fp32 only, not train.precision = %s; set --precision=fp32 or --backend=cuda",
                 config_value_name(cfg, "train", "precision"));
        return -1;
    }
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cfg->threads > 0 ? cfg->threads : (int)(cores / (local_size > 0 ? local_size : 1));
    if (threads < 1) threads = 1;
    openblas_set_num_threads(threads);
    omp_set_num_threads(threads);
    b->info.threads = threads;
    b->act_dtype = DT_F32;
    b->info.device_index = -1;
    snprintf(b->info.library, sizeof b->info.library, "%s", openblas_get_config());
    /* OpenBLAS 0.3.21 takes some virtualised AVX-512 CPUs for a Prescott and runs SSE3 kernels. */
    if (local_rank == 0 && strstr(openblas_get_corename(), "rescott") != NULL && __builtin_cpu_supports("avx2"))
        fprintf(stderr, "dpscale: warning: OpenBLAS chose its Prescott (SSE3) kernels on a CPU with AVX2; GEMMs will run "
                        "several times slower\nhint: export OPENBLAS_CORETYPE=%s before starting dpscale\n",
                __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell");
    snprintf(b->info.device_name, sizeof b->info.device_name, "%s", "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f != NULL) {
        char line[256];
        while (fgets(line, sizeof line, f) != NULL)
            if (strncmp(line, "model name", 10) == 0 && strchr(line, ':') != NULL) {
                char *name = strchr(line, ':') + 2;
                name[strcspn(name, "\n")] = '\0';
                snprintf(b->info.device_name, sizeof b->info.device_name, "%s", name);
                break;
            }
        fclose(f);
    }
    return 0;
}

static void cpu_shutdown(struct backend *b) { (void)b; }

/* The host's limit (memlimit.h): MemAvailable, the cgroup's, RLIMIT_AS. */
static size_t cpu_memory_available(struct backend *b, int local_size)
{
    (void)b;
    struct mem_limit l;
    memlimit_host(local_size, &l);
    return l.bytes;
}

static void *cpu_alloc(struct backend *b, size_t bytes)
{
    (void)b;
    void *p = NULL;
    if (bytes == 0) bytes = 64;
    if (posix_memalign(&p, 64, bytes) != 0)
        DP_FATAL("lower train.batch_per_gpu or the model size", "cannot allocate %zu bytes of host memory", bytes);
    memset(p, 0, bytes);
    return p;
}

static void cpu_free(struct backend *b, void *p) { (void)b; free(p); }
static void cpu_copy(struct backend *b, void *dst, const void *src, size_t bytes) { (void)b; memcpy(dst, src, bytes); }

static void cpu_gemm(struct backend *b, int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda,
                     const void *B, int ldb, float beta, void *C, int c_is_f32, int ldc)
{
    (void)b;
    (void)c_is_f32; /* everything is fp32 here */
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, A, lda,
                B, ldb, beta, C, ldc);
}

/* The element-wise operations: thin wrappers over kernels/ (which know no backend). */
static void be_bias_act_forward(struct backend *b, void *out, void *pre, const void *bias, int bias_dtype, int rows,
                                int cols, int act)
{
    (void)b;
    if (bias_dtype != DT_F32) DP_FATAL(NULL, "the cpu backend keeps biases in fp32");
    cpu_bias_act_forward(out, pre, bias, rows, cols, act);
}

static void be_act_backward(struct backend *b, void *d, const void *pre, int rows, int cols, int act)
{
    (void)b;
    cpu_act_backward(d, pre, rows, cols, act);
}

static void be_bias_grad(struct backend *b, void *dbias, int dbias_dtype, const void *d, int rows, int cols)
{
    (void)dbias_dtype; /* fp32 only */
    (void)b;
    cpu_bias_grad(dbias, d, rows, cols);
}

static void be_softmax_xent(struct backend *b, void *dlogits, float *loss, const void *logits, const int *labels,
                            int rows, int classes, int ld, float grad_scale)
{
    (void)b;
    cpu_softmax_xent(dlogits, loss, logits, labels, rows, classes, ld, grad_scale);
}

static void be_optimizer_step(struct backend *b, float *params, const void *grads, int grad_dtype, void *s1, void *s2,
                              int state_dtype, void *params_lp, size_t n, const struct optim_hparams *h)
{
    (void)b;
    (void)params_lp; /* fp32 only: the weights are their own compute copy */
    if (grad_dtype != DT_F32 || state_dtype != DT_F32 || params == NULL)
        DP_FATAL(NULL, "the cpu backend keeps weights, gradients and state in fp32");
    cpu_optimizer_step(params, grads, s1, s2, n, h);
}

static void cpu_cast_from_f32(struct backend *b, void *dst, const float *src, size_t n)
{
    (void)b;
    memcpy(dst, src, n * sizeof(float));
}

static void cpu_cast_to_f32(struct backend *b, float *dst, const void *src, size_t n)
{
    (void)b;
    memcpy(dst, src, n * sizeof(float));
}

static void cpu_zero(struct backend *b, void *ptr, size_t bytes)
{
    (void)b;
    memset(ptr, 0, bytes);
}

static void be_synth_batch(struct backend *b, void *x, int *labels, uint64_t first, int rows, int input_dim,
                           int classes, uint64_t seed)
{
    (void)b;
    cpu_synth_batch(x, labels, first, rows, input_dim, classes, seed);
}

/* The transformer's operations: fp32 throughout on the CPU. */
static void need_f32(int grad_dtype)
{
    if (grad_dtype != DT_F32) DP_FATAL(NULL, "the cpu backend keeps gradients in fp32");
}

static void be_embed_forward(struct backend *b, void *x, const int *tokens, const int *segments, const void *wte,
                             const void *wpe, const void *wse, int B, int T, int C)
{
    (void)b;
    cpu_embed_forward(x, tokens, segments, wte, wpe, wse, B, T, C);
}

static void be_embed_backward(struct backend *b, void *dwte, void *dwpe, void *dwse, int grad_dtype, const int *tokens,
                              const int *segments, const void *dx, int B, int T, int C, int V, int S)
{
    (void)b;
    need_f32(grad_dtype);
    cpu_embed_backward(dwte, dwpe, dwse, tokens, segments, dx, B, T, C, V, S);
}

static void be_layernorm_forward(struct backend *b, void *y, float *mean, float *rstd, const void *x, const void *gamma,
                                 const void *beta, int rows, int C)
{
    (void)b;
    cpu_layernorm_forward(y, mean, rstd, x, gamma, beta, rows, C);
}

static void be_layernorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                  const void *x, const float *mean, const float *rstd, const void *gamma, int rows, int C,
                                  int accumulate)
{
    (void)b;
    need_f32(grad_dtype);
    cpu_layernorm_backward(dx, dgamma, dbeta, dy, x, mean, rstd, gamma, rows, C, accumulate);
}

static void be_attention_forward(struct backend *b, void *out, void *probs, const void *qkv, int B, int T, int C, int H,
                                 int causal)
{
    (void)b;
    cpu_attention_forward(out, probs, qkv, B, T, C, H, causal);
}

static void be_attention_backward(struct backend *b, void *dqkv, const void *dout, const void *qkv, const void *probs,
                                  int B, int T, int C, int H, int causal)
{
    (void)b;
    cpu_attention_backward(dqkv, dout, qkv, probs, B, T, C, H, causal);
}

/* attention's products alone (backend.h), each head one cblas_sgemm per product, the
 * T x T matrices in one scratch of the call. Row-major, Q, K, V and dO [T x D]
 * (ld 3C, C): S = s Q K^T; O = P V; dV = P^T dO; dP = dO V^T; dQ = s dS K; dK = s dS^T Q. */
static void be_attention_products(struct backend *b, int backward, void *io, void *dqkv, const void *qkv, int B, int T,
                                  int C, int H)
{
    (void)b;
    const int D = C / H, ld3 = 3 * C;
    const float scale = 1.0f / sqrtf((float)D);
    float *p = calloc((size_t)T * T, sizeof(float));
    CHECK_ALLOC(p);
    for (int s = 0; s < B; s++)
        for (int h = 0; h < H; h++) {
            const float *q = (const float *)qkv + (size_t)s * T * ld3 + (size_t)h * D, *k = q + C, *v = q + 2 * C;
            float *o = (float *)io + (size_t)s * T * C + (size_t)h * D;
            if (!backward) {
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, scale, q, ld3, k, ld3, 0.0f, p, T);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T, 1.0f, p, T, v, ld3, 0.0f, o, C);
                continue;
            }
            float *dq = (float *)dqkv + (size_t)s * T * ld3 + (size_t)h * D, *dk = dq + C, *dv = dq + 2 * C;
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, 1.0f, p, T, o, C, 0.0f, dv, ld3);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, D, 1.0f, o, C, v, ld3, 0.0f, p, T);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, D, T, scale, p, T, k, ld3, 0.0f, dq, ld3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, T, scale, p, T, q, ld3, 0.0f, dk, ld3);
        }
    free(p);
}

static void be_add(struct backend *b, void *y, const void *x, size_t n)
{
    (void)b;
    cpu_add(y, x, n);
}

static void be_gather_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    (void)b;
    cpu_gather_rows(dst, src, rows, n, C);
}

static void be_synth_tokens(struct backend *b, int *tokens, int *segments, int *targets, int *mask_rows,
                            uint64_t first, int B, int T, int V, int nmask, int bert, uint64_t seed)
{
    (void)b;
    cpu_synth_tokens(tokens, segments, targets, mask_rows, first, B, T, V, nmask, bert, seed);
}

static void be_scatter_rows(struct backend *b, void *dst, const void *src, const int *rows, int n, int C)
{
    (void)b;
    cpu_scatter_rows(dst, src, rows, n, C);
}

/* The ResNet's operations: fp32 throughout on the CPU. */
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

static void be_batchnorm_forward(struct backend *b, void *y, float *mean, float *rstd, float *run_mean, float *run_var,
                                 const void *x, const void *gamma, const void *beta, int rows, int C, int training,
                                 float momentum, int relu)
{
    (void)b;
    cpu_batchnorm_forward(y, mean, rstd, run_mean, run_var, x, gamma, beta, rows, C, training, momentum, relu);
}

static void be_batchnorm_backward(struct backend *b, void *dx, void *dgamma, void *dbeta, int grad_dtype, const void *dy,
                                  const void *x, const void *y, const float *mean, const float *rstd, const void *gamma,
                                  int rows, int C, int training)
{
    (void)b;
    need_f32(grad_dtype);
    cpu_batchnorm_backward(dx, dgamma, dbeta, dy, x, y, mean, rstd, gamma, rows, C, training);
}

static void be_add_relu(struct backend *b, void *y, const void *x, size_t n)
{
    (void)b;
    cpu_add_relu(y, x, n);
}

static void be_maxpool_forward(struct backend *b, void *y, int *argmax, const void *x, const struct conv_shape *s)
{
    (void)b;
    cpu_maxpool_forward(y, argmax, x, s);
}

static void be_maxpool_backward(struct backend *b, void *dx, const void *dy, const int *argmax, const struct conv_shape *s)
{
    (void)b;
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

/* Host clocks: the CPU backend is synchronous, so a timestamp marks a phase end. */
static struct backend_event *cpu_event_create(struct backend *b)
{
    (void)b;
    struct backend_event *e = calloc(1, sizeof *e);
    CHECK_ALLOC(e);
    return e;
}

static void cpu_event_destroy(struct backend *b, struct backend_event *e) { (void)b; free(e); }

static void cpu_event_record(struct backend *b, struct backend_event *e)
{
    (void)b;
    clock_gettime(CLOCK_MONOTONIC, &e->when);
}

static void cpu_event_record_on(struct backend *b, struct backend_event *e, void *stream)
{
    (void)stream; /* one timeline on the host */
    cpu_event_record(b, e);
}

static double cpu_event_elapsed_s(struct backend *b, struct backend_event *start, struct backend_event *end)
{
    (void)b;
    return (double)(end->when.tv_sec - start->when.tv_sec) + 1e-9 * (double)(end->when.tv_nsec - start->when.tv_nsec);
}

static void cpu_synchronize(struct backend *b) { (void)b; }

const struct backend_ops backend_cpu_ops = {
    .name = "cpu",
    .init = cpu_init,
    .shutdown = cpu_shutdown,
    .memory_available = cpu_memory_available,
    .stream = NULL,
    .reserve = NULL,
    .energy_j = NULL,
    .nvlink_tx_bytes = NULL,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .gemm = cpu_gemm,
    .bias_act_forward = be_bias_act_forward,
    .act_backward = be_act_backward,
    .bias_grad = be_bias_grad,
    .softmax_xent = be_softmax_xent,
    .optimizer_step = be_optimizer_step,
    .cast_from_f32 = cpu_cast_from_f32,
    .cast_to_f32 = cpu_cast_to_f32,
    .zero = cpu_zero,
    .synth_batch = be_synth_batch,
    .embed_forward = be_embed_forward,
    .embed_backward = be_embed_backward,
    .layernorm_forward = be_layernorm_forward,
    .layernorm_backward = be_layernorm_backward,
    .attention_forward = be_attention_forward,
    .attention_backward = be_attention_backward,
    .attention_products = be_attention_products,
    .add = be_add,
    .gather_rows = be_gather_rows,
    .scatter_rows = be_scatter_rows,
    .synth_tokens = be_synth_tokens,
    .im2col = be_im2col,
    .col2im = be_col2im,
    .batchnorm_forward = be_batchnorm_forward,
    .batchnorm_backward = be_batchnorm_backward,
    .add_relu = be_add_relu,
    .maxpool_forward = be_maxpool_forward,
    .maxpool_backward = be_maxpool_backward,
    .avgpool_forward = be_avgpool_forward,
    .avgpool_backward = be_avgpool_backward,
    .synth_images = be_synth_images,
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_record_on = cpu_event_record_on,
    .event_elapsed_s = cpu_event_elapsed_s,
    .synchronize = cpu_synchronize,
};

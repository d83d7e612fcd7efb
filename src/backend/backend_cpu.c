/* backend_cpu.c — the CPU backend: GEMMs through OpenBLAS (cblas_sgemm), the
 * element-wise operations through the loops of kernels/, host clocks for timing;
 * the transformer's and the ResNet's operations are in cpu_transformer.c and
 * cpu_resnet.c. fp32 only. Each rank gets cores / ranks-on-the-node threads unless
 * run.threads says otherwise, so that ranks sharing a node do not oversubscribe it. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "kernels/kernels_cpu.h"
#include "base/error.h"
#include "base/memlimit.h"

struct backend_event {
    struct timespec when;
};

static int blas_took_prescott_on_avx2(void)
{
    return strstr(openblas_get_corename(), "rescott") != NULL && __builtin_cpu_supports("avx2");
}

static const char *right_core(void) { return __builtin_cpu_supports("avx512f") ? "SkylakeX" : "Haswell"; }

void backend_cpu_take_the_right_kernels(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE") != NULL || !blas_took_prescott_on_avx2()) return;
    /* the binary's own path, not /proc/self/exe: exec names the process after the file
     * (ps, pgrep, pkill and Slurm's tools would see "exe") */
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || (size_t)n >= sizeof self - 1) return;
    self[n] = '\0';
    if (setenv("OPENBLAS_CORETYPE", right_core(), 1) != 0) return;
    execv(self, argv);
    unsetenv("OPENBLAS_CORETYPE"); /* the restart failed: go on, and cpu_init warns */
}

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
    b->tf = &cpu_tf_ops;
    b->rn = &cpu_rn_ops;
    b->info.device_index = -1;
    snprintf(b->info.library, sizeof b->info.library, "%s", openblas_get_config());
    /* Where backend_cpu_take_the_right_kernels could not restart dpscale, or the
     * user asked for Prescott on a CPU with AVX2. */
    if (local_rank == 0 && blas_took_prescott_on_avx2())
        fprintf(stderr, "dpscale: warning: OpenBLAS chose its Prescott (SSE3) kernels on a CPU with AVX2; GEMMs will run "
                        "several times slower\nhint: export OPENBLAS_CORETYPE=%s before starting dpscale\n",
                right_core());
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
    .event_create = cpu_event_create,
    .event_destroy = cpu_event_destroy,
    .event_record = cpu_event_record,
    .event_record_on = cpu_event_record_on,
    .event_elapsed_s = cpu_event_elapsed_s,
    .synchronize = cpu_synchronize,
};

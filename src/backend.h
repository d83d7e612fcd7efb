/* backend.h — the compute seam: one table of function pointers per backend.
 *
 * The training loop (train.c) calls only these; it never says #ifdef CUDA. Two
 * implementations: backend_cpu.c (OpenBLAS + the C loops of kernels/) and
 * backend_cuda.c (cuBLAS + the CUDA kernels of kernels/). All matrices are row-major; pointers are
 * in the backend's memory (device memory on a GPU), and all calls are issued in
 * order on one compute stream, so only event_elapsed_s and synchronize wait. */
#ifndef DPSCALE_BACKEND_H
#define DPSCALE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct optim_hparams {
    int kind; /* enum optimizer */
    float lr, momentum, weight_decay, beta1, beta2, eps;
    float grad_scale; /* multiplies every gradient first: 1/N turns the allreduce sum into a mean */
    long long step;   /* 1-based, for AdamW's bias correction */
};

struct backend_info {
    char device_name[128];
    char library[128]; /* e.g. "OpenBLAS 0.3.21 ..." */
    int threads;
};

struct backend;
struct backend_event;

struct backend_ops {
    const char *name;
    int (*init)(struct backend *b, const struct config *cfg, int local_rank, int local_size, char *err, size_t errlen);
    void (*shutdown)(struct backend *b);
    /* Bytes this rank can still allocate (0 = unknown). */
    size_t (*memory_available)(struct backend *b, int local_size);

    void *(*alloc)(struct backend *b, size_t bytes); /* zero-filled */
    void (*free)(struct backend *b, void *ptr);
    void (*upload)(struct backend *b, void *dst, const void *src, size_t bytes);
    void (*download)(struct backend *b, void *dst, const void *src, size_t bytes);

    /* C[m x n] = alpha * op(A) * op(B) + beta * C, row-major; op(X) = X^T when trans. */
    void (*gemm)(struct backend *b, int trans_a, int trans_b, int m, int n, int k, float alpha, const float *A,
                 int lda, const float *B, int ldb, float beta, float *C, int ldc);

    /* pre += bias (per column); out = act(pre). out may equal pre when act is ACT_NONE. */
    void (*bias_act_forward)(struct backend *b, float *out, float *pre, const float *bias, int rows, int cols, int act);
    /* d *= act'(pre), in place: turns dL/d(out) into dL/d(pre). */
    void (*act_backward)(struct backend *b, float *d, const float *pre, int rows, int cols, int act);
    /* dbias[j] = sum over rows of d[i][j]. */
    void (*bias_grad)(struct backend *b, float *dbias, const float *d, int rows, int cols);
    /* Mean softmax cross-entropy of the rows into *loss (backend memory);
     * dlogits = (softmax - onehot) * grad_scale. */
    void (*softmax_xent)(struct backend *b, float *dlogits, float *loss, const float *logits, const int *labels,
                         int rows, int classes, float grad_scale);
    /* One optimizer step over the whole flat arena. */
    void (*optimizer_step)(struct backend *b, float *params, const float *grads, float *state1, float *state2, size_t n,
                           const struct optim_hparams *h);
    /* Samples first_sample .. first_sample+rows-1 of the synthetic task. */
    void (*synth_batch)(struct backend *b, float *x, int *labels, uint64_t first_sample, int rows, int input_dim,
                        int classes, uint64_t seed);

    struct backend_event *(*event_create)(struct backend *b);
    void (*event_destroy)(struct backend *b, struct backend_event *e);
    void (*event_record)(struct backend *b, struct backend_event *e);
    double (*event_elapsed_s)(struct backend *b, struct backend_event *start, struct backend_event *end);
    void (*synchronize)(struct backend *b);
};

struct backend {
    const struct backend_ops *ops;
    struct backend_info info;
    void *impl;
};

extern const struct backend_ops backend_cpu_ops;

/* Pick and start the backend that cfg->backend names (auto: cuda when a GPU is
 * visible and the binary has it, else cpu). Returns 0 or -1 with a message. */
int backend_open(struct backend *b, const struct config *cfg, int local_rank, int local_size, char *err, size_t errlen);
void backend_close(struct backend *b);

#endif

/* backend.h — the compute seam: one table of function pointers per backend.
 *
 * The training loop (train.c) calls only these; it never says #ifdef CUDA. Two
 * implementations: backend_cpu.c (OpenBLAS + the C loops of kernels/) and
 * backend_cuda.c (cuBLAS + the CUDA kernels of kernels/). All matrices are row-major; pointers are
 * in the backend's memory (device memory on a GPU), and all calls are issued in
 * order on the current stream, so only event_elapsed_s and synchronize wait.
 *
 * struct backend_ops is the core every model uses; a model family's own operations
 * are a table of their own (tf_ops.h: the transformer's, rn_ops.h: the ResNet's),
 * which struct backend points at where the backend has them (NULL: it has not, and
 * the family is refused there).
 *
 * Streams: the compute stream runs the step; the update stream runs the optimizer
 * of a gradient bucket while backward goes on; set_stream points the following
 * calls at either (or at a comm library's stream), and stream_wait orders one
 * stream after the work enqueued so far on another. The CPU backend has no
 * streams: every call is done when it returns, and these are no-ops. */
#ifndef DPSCALE_BACKEND_H
#define DPSCALE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend/rn_ops.h"
#include "backend/tf_ops.h"
#include "base/dtype.h"
#include "config/config.h"
#include "kernels/kernel_types.h" /* struct optim_hparams */

/* A layer's bias and GELU fused into its GEMM (cuBLASLt epilogues); rows of C are
 * samples, columns features, as in gemm. */
enum gemm_epilogue {
    EPI_BIAS = 1,       /* C = A B + bias */
    EPI_GELU_BIAS = 2,  /* aux = A B + bias; C = gelu(aux) */
    EPI_DGELU_BGRAD = 3, /* C = (A B) * gelu'(aux); bias = column sums of C */
    EPI_DGELU = 4,       /* C = (A B) * gelu'(aux) (bias unused) */
    EPI_BGRADB = 5       /* C = op(A) op(B); bias[i] = sum over k of op(A)[i][k], written in C's dtype: in a
                          * weight-gradient GEMM (A = the output gradient, k = the rows) the layer's bias
                          * gradient (cuBLASLt's BGRADB: its B is our A) */
};
struct gemm_fusion {
    int kind;  /* enum gemm_epilogue */
    void *bias; /* forward: the bias, in the compute dtype; DGELU_BGRAD, BGRADB: its gradient, written in C's dtype */
    void *aux;  /* the pre-activation [rows x ldc]: written (GELU_BIAS) or read (DGELU_BGRAD) */
    const void *residual; /* EPI_BIAS: C = A B + bias + residual (a residual connection; [rows x ldc], not C
                           * itself); NULL: none */
    int c_is_f32;         /* C in fp32 rather than the compute dtype (BGRADB into fp32 gradients) */
};

struct backend_info {
    char device_name[256];
    char library[160];  /* e.g. "OpenBLAS 0.3.21 ..." or "cuBLASLt 130100, CUDA runtime 13000" */
    char driver[64];    /* GPU driver version, "" on the CPU */
    char bus_id[32];    /* PCI bus id of this rank's GPU, "" on the CPU */
    int device_index;   /* CUDA device ordinal, -1 on the CPU */
    int threads;
    double peak_tflops; /* in the run's precision; 0 = unknown (no MFU) */
};

struct backend;
struct backend_event;

struct backend_ops {
    const char *name;
    int (*init)(struct backend *b, const struct config *cfg, int local_rank, int local_size, char *err, size_t errlen);
    void (*shutdown)(struct backend *b);
    /* Bytes this rank can still allocate (0 = unknown). */
    size_t (*memory_available)(struct backend *b, int local_size);
    /* The compute stream (cudaStream_t) that collectives must order against; NULL on the CPU. */
    void *(*stream)(struct backend *b);
    /* The stream of the overlapped optimizer update; NULL on the CPU. */
    void *(*update_stream)(struct backend *b);
    /* The following calls go to `stream` (NULL: the compute stream). */
    void (*set_stream)(struct backend *b, void *stream);
    /* `waiter` runs nothing more until the work enqueued so far on `waited` is done
     * (NULL: the compute stream). */
    void (*stream_wait)(struct backend *b, void *waiter, void *waited);
    /* Size the scratch the kernels need for `rows` x up to `max_cols`, before the timed loop. */
    void (*reserve)(struct backend *b, int rows, int max_cols);
    /* The GPU's energy counter in joules, or a negative value when there is none. */
    double (*energy_j)(struct backend *b);
    /* Bytes this GPU has sent over NVLink (a counter), or a negative value when unknown. */
    double (*nvlink_tx_bytes)(struct backend *b);
    /* A profiler's capture (cudaProfilerStart / Stop) begins (on = 1) or ends; may be NULL. */
    void (*profiler)(struct backend *b, int on);

    void *(*alloc)(struct backend *b, size_t bytes); /* zero-filled */
    void (*free)(struct backend *b, void *ptr);
    void (*upload)(struct backend *b, void *dst, const void *src, size_t bytes);
    void (*download)(struct backend *b, void *dst, const void *src, size_t bytes);

    /* The following GEMMs leave `margin` SMs free (for a collective beside them); 0 = all SMs. May be NULL. */
    void (*gemm_sm_limit)(struct backend *b, int margin);
    /* C[m x n] = alpha * op(A) * op(B) + beta * C, row-major; op(X) = X^T when trans.
     * A and B are in the compute dtype; C is fp32 (c_is_f32) or the compute dtype.
     * Accumulation is fp32 in every precision. */
    void (*gemm)(struct backend *b, int trans_a, int trans_b, int m, int n, int k, float alpha, const void *A,
                 int lda, const void *B, int ldb, float beta, void *C, int c_is_f32, int ldc);

    /* C[m x n] (compute dtype, or fp32 where f->c_is_f32) = op(A) op(B) with the epilogue `f` (alpha 1, beta 0). NULL
     * where the backend has none (the CPU): the step runs the element-wise kernels. */
    void (*gemm_fused)(struct backend *b, int trans_a, int trans_b, int m, int n, int k, const void *A, int lda,
                       const void *B, int ldb, void *C, int ldc, const struct gemm_fusion *f);
    /* pre += bias (per column; fp32, or the compute dtype without a master copy:
     * bias_dtype); out = act(pre). out may equal pre when act is ACT_NONE. */
    void (*bias_act_forward)(struct backend *b, void *out, void *pre, const void *bias, int bias_dtype, int rows,
                             int cols, int act);
    /* d *= act'(pre), in place: turns dL/d(out) into dL/d(pre). */
    void (*act_backward)(struct backend *b, void *d, const void *pre, int rows, int cols, int act);
    /* dbias[j] = sum over rows of d[i][j], summed in fp32, stored as dbias_dtype (fp32 or the compute dtype). */
    void (*bias_grad)(struct backend *b, void *dbias, int dbias_dtype, const void *d, int rows, int cols);
    /* Mean softmax cross-entropy of the rows into *loss (fp32, backend memory);
     * dlogits = (softmax - onehot) * grad_scale. Rows are ld >= classes elements apart:
     * the padding columns (a padded vocabulary's) are masked, not read, and their
     * gradient is written 0. dlogits may be logits (the gradient over the logits). */
    void (*softmax_xent)(struct backend *b, void *dlogits, float *loss, const void *logits, const int *labels,
                         int rows, int classes, int ld, float grad_scale);
    /* One optimizer step over n elements of the flat arenas (all of it, or a bucket's
     * slice); grads are fp32 or in the compute dtype (grad_dtype: a 16-bit allreduce's
     * result, read as is). Also refreshes the compute-dtype copy of the weights when
     * params_lp is not NULL (a fused cast); with params NULL there is no master copy
     * and params_lp itself is updated in place. The state is fp32 or in the compute dtype
     * (state_dtype). Element-wise: the result of an element does not depend on how the
     * arena is cut into calls. */
    void (*optimizer_step)(struct backend *b, float *params, const void *grads, int grad_dtype, void *state1,
                           void *state2, int state_dtype, void *params_lp, size_t n, const struct optim_hparams *h);
    /* Cast n fp32 values into the compute dtype, and back. */
    void (*cast_from_f32)(struct backend *b, void *dst, const float *src, size_t n);
    void (*cast_to_f32)(struct backend *b, float *dst, const void *src, size_t n);
    void (*zero)(struct backend *b, void *ptr, size_t bytes);
    /* Samples first_sample .. first_sample+rows-1 of the synthetic task. */
    void (*synth_batch)(struct backend *b, void *x, int *labels, uint64_t first_sample, int rows, int input_dim,
                        int classes, uint64_t seed);

    struct backend_event *(*event_create)(struct backend *b);
    void (*event_destroy)(struct backend *b, struct backend_event *e);
    void (*event_record)(struct backend *b, struct backend_event *e);
    /* The current stream runs nothing more until e has happened (a no-op for an event
     * never recorded). May be NULL (no streams). */
    void (*event_wait)(struct backend *b, struct backend_event *e);
    /* Record on another stream (a comm library's); NULL stream = the compute stream. */
    void (*event_record_on)(struct backend *b, struct backend_event *e, void *stream);
    double (*event_elapsed_s)(struct backend *b, struct backend_event *start, struct backend_event *end);
    void (*synchronize)(struct backend *b);
};

struct backend {
    const struct backend_ops *ops;
    const struct tf_ops *tf; /* the transformer's operations (tf_ops.h); NULL: the backend has none */
    const struct rn_ops *rn; /* the ResNet's (rn_ops.h); NULL: none */
    struct backend_info info;
    int act_dtype; /* enum dtype of activations and of the weights' compute copy */
    void *impl;
};

/* Where the comm layer finds the backend's compute stream (NULL on the CPU). */
void *backend_stream(struct backend *b);
/* Energy counter in joules; negative when the backend has none. */
double backend_energy_j(struct backend *b);
double backend_nvlink_tx_bytes(struct backend *b);
/* DPSCALE_PROFILE=step: the first timed step of each pass is bracketed for a profiler
 * started with its capture off (ncu --profile-from-start off; the GPU idles for a launch
 * latency at each end, so that step's figure is the profile's, not a measurement).
 * backend_profiling: whether it is asked; backend_profile_step: the capture begins (on = 1)
 * or ends, the backend's streams synchronized first. */
int backend_profiling(void);
void backend_profile_step(struct backend *b, int on);
/* The streams of backend.h's ops, NULL-safe for the CPU (no streams: no-ops). */
void *backend_update_stream(struct backend *b);
void backend_set_stream(struct backend *b, void *stream);
void backend_stream_wait(struct backend *b, void *waiter, void *waited);

extern const struct backend_ops backend_cpu_ops;

/* OpenBLAS 0.3.21 takes some virtualised AVX-512 CPUs (an Emerald Rapids under KVM)
 * for a Prescott and runs its SSE3 kernels, several times slower. It reads its core
 * type once, when it is loaded, so the only fix is before that: where it chose
 * Prescott on a CPU with AVX2 and OPENBLAS_CORETYPE is unset, this starts the program
 * again with OPENBLAS_CORETYPE = SkylakeX or Haswell (execv of the binary that
 * /proc/self/exe links to: the same pid and the same name, so that mpirun, srun and ps
 * see the same process). Call it first in main, with main's argv untouched. Returns
 * only when there was nothing to fix or the restart failed (then cpu_init's warning
 * says what to export). The core OpenBLAS ran is in the result file (the backend's
 * library string). */
void backend_cpu_take_the_right_kernels(char **argv);

/* Pick and start the backend that cfg->backend names (auto: cuda when a GPU is
 * visible and the binary has it, else cpu). Returns 0 or -1 with a message. */
int backend_open(struct backend *b, const struct config *cfg, int local_rank, int local_size, char *err, size_t errlen);
void backend_close(struct backend *b);

#endif

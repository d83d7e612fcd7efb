/* cuda_state.h — the CUDA backend's state (struct backend's impl): its streams, the
 * cuBLASLt handle and the plan of every GEMM shape seen, the core operations'
 * scratch, the GEMMs' compute type and element type, and a slot per model family
 * for that family's own state. backend_cuda.c makes it and assembles the backend's
 * tables; the families' operations (transformer_cuda.c, resnet_cuda.c) reach it
 * through the functions below, so that they need nothing of backend_cuda.c, which
 * uses them. */
#ifndef DPSCALE_CUDA_STATE_H
#define DPSCALE_CUDA_STATE_H

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stddef.h>

#include "system/nvml.h"

struct backend;

#define GEMM_CACHE_SIZE 256

struct gemm_key {
    int ta, tb, m, n, k, lda, ldb, ldc, c_is_f32;
    int sm_target; /* CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET; 0 = all SMs */
    int epilogue;  /* enum gemm_epilogue, 0 = none */
    int align_a, align_b, align_c, align_d; /* the operands' address alignment in bytes, capped at 16 */
};

struct gemm_plan {
    struct gemm_key key;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t a, b, c;
    cublasLtMatmulAlgo_t algo;
};

/* The model families whose operations keep state of their own on the GPU, at most. A
 * family names its slot by a key of its own (its ops table's address), so that a new
 * family needs no line here. */
#define CUDA_FAMILY_SLOTS 8

/* A family's own state (its scratch, its handles): made by the family on its first
 * call, freed by `release` at shutdown. */
struct cuda_family_slot {
    const void *key; /* the family's; NULL: a free slot */
    void *state;     /* NULL until the family's first call */
    void (*release)(struct backend *b, void *state);
};

struct cuda_state {
    cudaStream_t stream;        /* compute */
    cudaStream_t update_stream; /* the overlapped optimizer */
    cudaStream_t cur;           /* where the following calls go */
    cudaEvent_t order;          /* stream_wait's event: recorded and waited at once, so reusable */
    cublasLtHandle_t lt;
    void *workspace;
    struct gemm_plan plans[GEMM_CACHE_SIZE];
    int nplans;
    float *bias_partial;
    size_t bias_partial_floats;
    float *row_loss;
    int row_loss_rows;
    struct nvml_gpu nvml;
    cublasComputeType_t compute;
    cudaDataType_t ab_type;
    int sms, sm_target; /* the GPU's SMs; the GEMMs' target, 0 = all */
    int autotune;       /* train.gemm_autotune */
    struct cuda_family_slot family[CUDA_FAMILY_SLOTS]; /* in the order of the families' first calls */
};

/* The stream the calls go to now (the compute stream, or the one set_stream named). */
cudaStream_t cuda_state_stream(struct backend *b);
cublasComputeType_t cuda_state_compute_type(struct backend *b);
cudaDataType_t cuda_state_ab_type(struct backend *b); /* of the GEMMs' A and B: the compute dtype */
/* The slot of the family whose key is `key` (its ops table), claimed on first use. */
struct cuda_family_slot *cuda_state_family(struct backend *b, const void *key);
/* Every family's state released, in the order of their first calls (at shutdown, the
 * compute stream drained). */
void cuda_state_release_families(struct backend *b);
/* *buf holds at least `need` bytes: reallocated, the current stream drained first, when
 * it grows (during the warm-up steps, which see every size the step needs). */
void *cuda_state_grow(struct backend *b, void **buf, size_t *have, size_t need);

#endif

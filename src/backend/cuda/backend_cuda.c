/* backend_cuda.c — the CUDA backend: one GPU per rank, GEMMs through cuBLASLt,
 * everything else through our kernels (the .cu files of kernels/), on a
 * non-blocking compute stream (the step) and an update stream (the optimizer
 * overlapped with backward, at a lower priority), timed with CUDA events.
 *
 * Precision: fp32 (pure fp32 GEMMs), tf32 (fp32 data, TF32 tensor cores), bf16 and
 * fp16 (activations and the weights' compute copy in 16 bits; master weights,
 * gradients, optimizer state and GEMM accumulation in fp32).
 * cuBLASLt descriptors, layouts and the algorithm of every GEMM shape are made the
 * first time the shape is seen and reused; nothing is rebuilt inside the step.
 * The state is struct cuda_state (cuda_state.h); the transformer's and the ResNet's
 * operations are tables of their own (transformer_cuda.c, resnet_cuda.c). */
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cuda/cuda_state.h"
#include "backend/cuda/resnet_cuda.h"
#include "backend/cuda/transformer_cuda.h"
#include "base/cuda_check.h"
#include "base/error.h"
#include "kernels/kernels_cuda.h"
#include "system/gpu_peaks.h"
#include "system/nvml.h"

#define WORKSPACE_BYTES ((size_t)64 << 20)
#define MEMORY_RESERVE_BYTES ((size_t)1 << 30) /* CUDA context, NCCL buffers, cuBLAS: not in the plan */

/* How far an operand's address is aligned, up to 16 bytes. cuBLASLt's heuristics assume
 * 256-byte aligned operands unless told: a packed arena (the ResNet's tensors after a
 * 10-element bias) would get an algorithm that cublasLtMatmul then refuses. */
static int address_alignment(const void *p)
{
    const uintptr_t a = (uintptr_t)p;
    return a % 16 == 0 ? 16 : a % 8 == 0 ? 8 : a % 4 == 0 ? 4 : a % 2 == 0 ? 2 : 1;
}

struct backend_event {
    cudaEvent_t ev;
};

static struct cuda_state *state(struct backend *b) { return b->impl; }

int backend_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* no driver or no device: clear the sticky error, report none */
        return 0;
    }
    return n;
}

static int cuda_init(struct backend *b, const struct config *cfg, int local_rank, int local_size, char *err, size_t errlen)
{
    int count = backend_cuda_device_count();
    if (count == 0) {
        snprintf(err, errlen, "run.backend = cuda but no GPU is visible (CUDA_VISIBLE_DEVICES=%s); check the driver with "
                 "nvidia-smi, or use --backend=cpu", getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
        return -1;
    }
    /* Bind by node-local rank. A launcher that gives each task its own GPU through
     * CUDA_VISIBLE_DEVICES leaves one visible device: use it. Two ranks on one GPU
     * are caught after init by comparing bus ids across the node. */
    int device = count == 1 ? 0 : local_rank;
    if (device >= count) {
        snprintf(err, errlen, "%d ranks on this node but only %d GPUs are visible; start at most %d ranks per node "
                 "(mpirun --npernode %d, srun --ntasks-per-node=%d)", local_size, count, count, count, count);
        return -1;
    }
    CHECK_CUDA(cudaSetDevice(device));
    struct cuda_state *s = calloc(1, sizeof *s);
    CHECK_ALLOC(s);
    b->impl = s;
    b->tf = &cuda_tf_ops;
    b->rn = &cuda_rn_ops;
    struct cudaDeviceProp prop;
    CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
    CHECK_CUDA(cudaDeviceGetPCIBusId(b->info.bus_id, sizeof b->info.bus_id, device));
    snprintf(b->info.device_name, sizeof b->info.device_name, "%s", prop.name);
    b->info.device_index = device;
    s->sms = prop.multiProcessorCount;
    b->info.threads = 1;

    switch (cfg->precision) {
    case PREC_FP32: b->act_dtype = DT_F32; s->ab_type = CUDA_R_32F; s->compute = CUBLAS_COMPUTE_32F; break;
    case PREC_TF32: b->act_dtype = DT_F32; s->ab_type = CUDA_R_32F; s->compute = CUBLAS_COMPUTE_32F_FAST_TF32; break;
    case PREC_BF16: b->act_dtype = DT_BF16; s->ab_type = CUDA_R_16BF; s->compute = CUBLAS_COMPUTE_32F; break;
    default: b->act_dtype = DT_F16; s->ab_type = CUDA_R_16F; s->compute = CUBLAS_COMPUTE_32F; break;
    }
    b->info.peak_tflops = cfg->peak_tflops > 0 ? cfg->peak_tflops : gpu_peak_tflops(prop.name, cfg->precision);

    /* The block scheduler serves the higher priority first: the compute stream's GEMMs
     * before the overlapped optimizer, which fills the gaps they leave (train.update_priority). */
    s->stream = cuda_stream_at_priority(1);
    s->update_stream = cuda_stream_at_priority(cfg->update_priority);
    s->autotune = cfg->gemm_autotune;
    CHECK_CUDA(cudaEventCreateWithFlags(&s->order, cudaEventDisableTiming));
    s->cur = s->stream;
    CHECK_CUBLAS(cublasLtCreate(&s->lt));
    CHECK_CUDA(cudaMalloc(&s->workspace, WORKSPACE_BYTES));
    int runtime = 0;
    CHECK_CUDA(cudaRuntimeGetVersion(&runtime));
    snprintf(b->info.library, sizeof b->info.library, "cuBLASLt %zu, CUDA runtime %d", cublasLtGetVersion(), runtime);
    nvml_open(&s->nvml, b->info.bus_id);
    nvml_driver_version(b->info.driver, sizeof b->info.driver);
    return 0;
}

static void cuda_shutdown(struct backend *b)
{
    struct cuda_state *s = state(b);
    if (s == NULL) return;
    cudaStreamSynchronize(s->stream);
    cuda_state_release_families(b);
    for (int i = 0; i < s->nplans; i++) {
        cublasLtMatmulDescDestroy(s->plans[i].desc);
        cublasLtMatrixLayoutDestroy(s->plans[i].a);
        cublasLtMatrixLayoutDestroy(s->plans[i].b);
        cublasLtMatrixLayoutDestroy(s->plans[i].c);
    }
    cudaFree(s->bias_partial);
    cudaFree(s->row_loss);
    cudaFree(s->workspace);
    cublasLtDestroy(s->lt);
    cudaStreamSynchronize(s->update_stream);
    cudaEventDestroy(s->order);
    cudaStreamDestroy(s->update_stream);
    cudaStreamDestroy(s->stream);
    free(s);
    b->impl = NULL;
}

static size_t cuda_memory_available(struct backend *b, int local_size)
{
    (void)b;
    (void)local_size; /* one GPU per rank */
    size_t free_bytes = 0, total = 0;
    CHECK_CUDA(cudaMemGetInfo(&free_bytes, &total));
    return free_bytes > MEMORY_RESERVE_BYTES ? free_bytes - MEMORY_RESERVE_BYTES : 1;
}

static void *cuda_stream_of(struct backend *b) { return state(b)->stream; }
static void *cuda_update_stream_of(struct backend *b) { return state(b)->update_stream; }
static void cuda_set_stream(struct backend *b, void *stream) { state(b)->cur = stream != NULL ? stream : state(b)->stream; }

static void cuda_stream_wait(struct backend *b, void *waiter, void *waited)
{
    struct cuda_state *s = state(b);
    cudaStream_t w = waiter != NULL ? waiter : s->stream, d = waited != NULL ? waited : s->stream;
    if (w == d) return;
    CHECK_CUDA(cudaEventRecord(s->order, d));
    CHECK_CUDA(cudaStreamWaitEvent(w, s->order, 0));
}

static void *cuda_alloc(struct backend *b, size_t bytes)
{
    void *p = NULL;
    cudaError_t rc = cudaMalloc(&p, bytes ? bytes : 256);
    if (rc != cudaSuccess)
        DP_FATAL("lower train.batch_per_gpu or the model size", "cudaMalloc of %.2f GiB on %s failed: %s",
                 bytes / 1073741824.0, b->info.device_name, cudaGetErrorString(rc));
    CHECK_CUDA(cudaMemsetAsync(p, 0, bytes, state(b)->stream));
    return p;
}

static void cuda_free(struct backend *b, void *p)
{
    (void)b;
    CHECK_CUDA(cudaDeviceSynchronize()); /* any stream may still use it */
    CHECK_CUDA(cudaFree(p));
}

static void cuda_upload(struct backend *b, void *dst, const void *src, size_t bytes)
{
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, state(b)->stream));
    CHECK_CUDA(cudaStreamSynchronize(state(b)->stream));
}

static void cuda_download(struct backend *b, void *dst, const void *src, size_t bytes)
{
    CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, state(b)->stream));
    CHECK_CUDA(cudaStreamSynchronize(state(b)->stream));
}

/* The operands of one GEMM call, for timing the candidates on them. */
struct gemm_args {
    const void *A, *B;
    const void *Cin; /* C's input when beta != 0 (a residual), else C */
    void *C;
    float alpha, beta;
    const struct gemm_fusion *f; /* NULL: no epilogue */
};

/* The epilogue's pointers of this call: they change from call to call of one shape,
 * so they are set on the plan's descriptor just before each cublasLtMatmul. */
static void set_fusion_pointers(cublasLtMatmulDesc_t desc, const struct gemm_fusion *f)
{
    if (f == NULL) return;
    if (f->kind != EPI_DGELU)
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &f->bias, sizeof f->bias));
    if (f->kind != EPI_BIAS && f->kind != EPI_BGRADB)
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &f->aux, sizeof f->aux));
}

static cublasLtEpilogue_t lt_epilogue(int kind)
{
    return kind == EPI_BIAS ? CUBLASLT_EPILOGUE_BIAS : kind == EPI_GELU_BIAS ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS
         : kind == EPI_DGELU_BGRAD ? CUBLASLT_EPILOGUE_DGELU_BGRAD : kind == EPI_DGELU ? CUBLASLT_EPILOGUE_DGELU
         : kind == EPI_BGRADB ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT;
}

#ifndef GEMM_CANDIDATES /* cuBLASLt's heuristic candidates timed a shape (-D for an A/B build) */
#define GEMM_CANDIDATES 8
#endif
#define GEMM_TUNE_REPS 5
#define GEMM_TUNE_MIN_MS 2.0f
#define GEMM_TUNE_ROUNDS 3
#define GEMM_TUNE_MARGIN 0.97f /* another candidate must be 3 % faster than the first heuristic */

/* Milliseconds per call of candidate algo over reps calls (one timed batch). */
static float time_algo(struct cuda_state *s, const struct gemm_plan *p, const cublasLtMatmulAlgo_t *algo,
                       const struct gemm_args *g, int reps, cudaEvent_t e0, cudaEvent_t e1)
{
    float ms = 0.0f;
    CHECK_CUDA(cudaEventRecord(e0, s->cur));
    for (int r = 0; r < reps; r++)
        CHECK_CUBLAS(cublasLtMatmul(s->lt, p->desc, &g->alpha, g->B, p->a, g->A, p->b, &g->beta, g->Cin, p->c, g->C, p->c,
                                    algo, s->workspace, WORKSPACE_BYTES, s->cur));
    CHECK_CUDA(cudaEventRecord(e1, s->cur));
    CHECK_CUDA(cudaEventSynchronize(e1));
    CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
    return ms / (float)reps;
}

/* The fastest of cuBLASLt's candidates for plan p, timed on the call's own operands
 * on the current stream. The GEMMs of the step have beta = 0, or add a residual that is
 * not their output, so the scratch results are overwritten by the real call that
 * follows; when C is read and written in place (or for one candidate) the first
 * heuristic is kept. A candidate that fails to run is skipped.
 *
 * Each candidate is timed over at least GEMM_TUNE_MIN_MS (small GEMMs over many
 * calls), in GEMM_TUNE_ROUNDS interleaved rounds, and keeps its best round, so that a
 * clock or power change during tuning does not favour whichever ran last; the first
 * heuristic is replaced only by a candidate GEMM_TUNE_MARGIN faster. Near-ties thus
 * give the same choice in every process and launch, and ranks agree. */
static cublasLtMatmulAlgo_t fastest_algo(struct cuda_state *s, const struct gemm_plan *p,
                                         const cublasLtMatmulHeuristicResult_t *cand, int n, const struct gemm_args *g)
{
    if (n == 1 || (g->beta != 0.0f && g->Cin == g->C)) return cand[0].algo;
    cudaEvent_t e0, e1;
    CHECK_CUDA(cudaEventCreate(&e0));
    CHECK_CUDA(cudaEventCreate(&e1));
    int reps[GEMM_CANDIDATES] = {0};
    float best_ms[GEMM_CANDIDATES];
    for (int i = 0; i < n; i++) { /* which run, and how many calls make GEMM_TUNE_MIN_MS */
        best_ms[i] = 1e30f;
        if (cand[i].state != CUBLAS_STATUS_SUCCESS) continue;
        if (cublasLtMatmul(s->lt, p->desc, &g->alpha, g->B, p->a, g->A, p->b, &g->beta, g->Cin, p->c, g->C, p->c,
                           &cand[i].algo, s->workspace, WORKSPACE_BYTES, s->cur) != CUBLAS_STATUS_SUCCESS)
            continue;
        float ms = time_algo(s, p, &cand[i].algo, g, GEMM_TUNE_REPS, e0, e1);
        reps[i] = GEMM_TUNE_REPS;
        while (ms * (float)reps[i] < GEMM_TUNE_MIN_MS && reps[i] < 4096) reps[i] *= 2;
    }
    for (int round = 0; round < GEMM_TUNE_ROUNDS; round++)
        for (int i = 0; i < n; i++) {
            if (reps[i] == 0) continue;
            const float ms = time_algo(s, p, &cand[i].algo, g, reps[i], e0, e1);
            if (ms < best_ms[i]) best_ms[i] = ms;
        }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    int best = 0;
    for (int i = 1; i < n; i++)
        if (best_ms[i] < best_ms[best]) best = i;
    if (reps[0] != 0 && best_ms[best] > GEMM_TUNE_MARGIN * best_ms[0]) best = 0;
    return cand[best].algo;
}

/* The cached cuBLASLt plan of one GEMM shape, made on first use.
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: cuBLAS gets B
 * first, with the transposes swapped in meaning but not in flag (a row-major matrix
 * read as column-major is its transpose). */
static const struct gemm_plan *gemm_plan_for(struct backend *b, const struct gemm_key *key, const struct gemm_args *g)
{
    struct cuda_state *s = state(b);
    for (int i = 0; i < s->nplans; i++)
        if (memcmp(&s->plans[i].key, key, sizeof *key) == 0) return &s->plans[i];
    if (s->nplans == GEMM_CACHE_SIZE) DP_FATAL(NULL, "more than %d GEMM shapes in one process", GEMM_CACHE_SIZE);
    struct gemm_plan *p = &s->plans[s->nplans];
    memset(p, 0, sizeof *p);
    p->key = *key;
    const cublasOperation_t op_first = key->tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_second = key->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cudaDataType_t c_type = key->c_is_f32 ? CUDA_R_32F : s->ab_type;
    CHECK_CUBLAS(cublasLtMatmulDescCreate(&p->desc, s->compute, CUDA_R_32F));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
    CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
    if (key->sm_target > 0)
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &key->sm_target,
                                                    sizeof key->sm_target));
    if (key->epilogue != 0) {
        /* in cuBLAS's column-major view C is features x samples: the bias runs along its
         * rows, and the pre-activation (aux) has C's layout */
        const cublasLtEpilogue_t epi = lt_epilogue(key->epilogue);
        const int64_t aux_ld = key->ldc;
        CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        if (key->epilogue != EPI_BIAS && key->epilogue != EPI_BGRADB)
            CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, sizeof aux_ld));
        set_fusion_pointers(p->desc, g->f);
    }
    /* first operand: B_rm, n x k after op; second: A_rm, k x m after op; C: n x m */
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->a, s->ab_type, key->tb ? key->k : key->n, key->tb ? key->n : key->k, key->ldb));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->b, s->ab_type, key->ta ? key->m : key->k, key->ta ? key->k : key->m, key->lda));
    CHECK_CUBLAS(cublasLtMatrixLayoutCreate(&p->c, c_type, key->n, key->m, key->ldc));
    cublasLtMatmulPreference_t pref;
    size_t ws = WORKSPACE_BYTES;
    CHECK_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    /* below 16 bytes, say so (cuBLAS's A is our B); at 16 or more the defaults, as before */
    const uint32_t align[4] = {(uint32_t)key->align_b, (uint32_t)key->align_a, (uint32_t)key->align_c,
                               (uint32_t)key->align_d};
    const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4; i++)
        if (align[i] < 16)
            CHECK_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, align_attr[i], &align[i], sizeof align[i]));
    cublasLtMatmulHeuristicResult_t cand[GEMM_CANDIDATES];
    int found = 0;
    CHECK_CUBLAS(cublasLtMatmulAlgoGetHeuristic(s->lt, p->desc, p->a, p->b, p->c, p->c, pref,
                                                s->autotune ? GEMM_CANDIDATES : 1, cand, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0)
        DP_FATAL(key->epilogue == EPI_BGRADB ? "set train.bias_grad = kernel"
                 : key->epilogue ? "set train.gemm_epilogue = off" : NULL,
                 "cuBLASLt has no algorithm for a %s GEMM %dx%dx%d (ta=%d tb=%d, epilogue %d)", b->info.device_name,
                 key->m, key->n, key->k, key->ta, key->tb, key->epilogue);
    p->algo = fastest_algo(s, p, cand, found, g);
    s->nplans++;
    return p;
}

static void cuda_gemm(struct backend *b, int ta, int tb, int m, int n, int k, float alpha, const void *A, int lda,
                      const void *B, int ldb, float beta, void *C, int c_is_f32, int ldc)
{
    struct cuda_state *s = state(b);
    const struct gemm_key key = {ta, tb, m, n, k, lda, ldb, ldc, c_is_f32 || b->act_dtype == DT_F32, s->sm_target, 0,
                                 address_alignment(A), address_alignment(B), address_alignment(C),
                                 address_alignment(C)};
    const struct gemm_args args = {A, B, C, C, alpha, beta, NULL};
    const struct gemm_plan *p = gemm_plan_for(b, &key, &args);
    CHECK_CUBLAS(cublasLtMatmul(s->lt, p->desc, &alpha, B, p->a, A, p->b, &beta, C, p->c, C, p->c, &p->algo,
                                s->workspace, WORKSPACE_BYTES, s->cur));
}

static void cuda_gemm_fused(struct backend *b, int ta, int tb, int m, int n, int k, const void *A, int lda,
                            const void *B, int ldb, void *C, int ldc, const struct gemm_fusion *f)
{
    struct cuda_state *s = state(b);
    const float one = 1.0f, beta = f->residual != NULL ? 1.0f : 0.0f;
    const void *Cin = f->residual != NULL ? f->residual : C;
    if (f->residual != NULL && (f->kind != EPI_BIAS || f->residual == C))
        DP_FATAL(NULL, "a GEMM's residual needs the bias epilogue and a buffer other than its output");
    const struct gemm_key key = {ta, tb, m, n, k, lda, ldb, ldc, b->act_dtype == DT_F32 || f->c_is_f32, s->sm_target, f->kind,
                                 address_alignment(A), address_alignment(B), address_alignment(Cin),
                                 address_alignment(C)};
    const struct gemm_args args = {A, B, Cin, C, one, beta, f};
    const struct gemm_plan *p = gemm_plan_for(b, &key, &args);
    set_fusion_pointers(p->desc, f);
    CHECK_CUBLAS(cublasLtMatmul(s->lt, p->desc, &one, B, p->a, A, p->b, &beta, Cin, p->c, C, p->c, &p->algo,
                                s->workspace, WORKSPACE_BYTES, s->cur));
}

static void cuda_gemm_sm_limit(struct backend *b, int margin)
{
    struct cuda_state *s = state(b);
    s->sm_target = margin > 0 && margin < s->sms ? s->sms - margin : 0;
}

static void cuda_reserve(struct backend *b, int rows, int max_cols)
{
    struct cuda_state *s = state(b);
    size_t need = cuda_bias_grad_scratch_floats(rows, max_cols);
    if (need > s->bias_partial_floats) {
        if (s->bias_partial) cuda_free(b, s->bias_partial);
        s->bias_partial = cuda_alloc(b, need * sizeof(float));
        s->bias_partial_floats = need;
    }
    if (rows > s->row_loss_rows) {
        if (s->row_loss) cuda_free(b, s->row_loss);
        s->row_loss = cuda_alloc(b, (size_t)rows * sizeof(float));
        s->row_loss_rows = rows;
    }
}

static void cuda_bias_act_fwd(struct backend *b, void *out, void *pre, const void *bias, int bias_dtype, int rows,
                              int cols, int act)
{
    CHECK_CUDA(cuda_bias_act_forward(out, pre, bias, bias_dtype, rows, cols, act, b->act_dtype, state(b)->cur));
}

static void cuda_act_bwd(struct backend *b, void *d, const void *pre, int rows, int cols, int act)
{
    CHECK_CUDA(cuda_act_backward(d, pre, rows, cols, act, b->act_dtype, state(b)->cur));
}

static void cuda_bias_grad_op(struct backend *b, void *dbias, int dbias_dtype, const void *d, int rows, int cols)
{
    struct cuda_state *s = state(b);
    if (cuda_bias_grad_scratch_floats(rows, cols) > s->bias_partial_floats)
        DP_FATAL(NULL, "bias gradient of %d x %d exceeds the reserved scratch", rows, cols);
    CHECK_CUDA(cuda_bias_grad(dbias, dbias_dtype != DT_F32, d, rows, cols, b->act_dtype, s->bias_partial, s->cur));
}

static void cuda_softmax_xent_op(struct backend *b, void *dlogits, float *loss, const void *logits, const int *labels,
                                 int rows, int classes, int ld, float grad_scale)
{
    struct cuda_state *s = state(b);
    if (rows > s->row_loss_rows) DP_FATAL(NULL, "loss of %d rows exceeds the reserved scratch", rows);
    CHECK_CUDA(cuda_softmax_xent(dlogits, loss, logits, labels, rows, classes, ld, grad_scale, b->act_dtype, s->row_loss,
                                 s->cur));
}

static void cuda_optimizer_op(struct backend *b, float *params, const void *grads, int grad_dtype, void *s1, void *s2,
                              int state_dtype, void *params_lp, size_t n, const struct optim_hparams *h)
{
    CHECK_CUDA(cuda_optimizer_step(params, grads, grad_dtype, s1, s2, state_dtype, params_lp, n, h, b->act_dtype,
                                   state(b)->cur));
}

static void cuda_cast_op(struct backend *b, void *dst, const float *src, size_t n)
{
    CHECK_CUDA(cuda_cast_from_f32(dst, src, n, b->act_dtype, state(b)->cur));
}

static void cuda_cast_back_op(struct backend *b, float *dst, const void *src, size_t n)
{
    CHECK_CUDA(cuda_cast_to_f32(dst, src, n, b->act_dtype, state(b)->cur));
}

static void cuda_zero(struct backend *b, void *ptr, size_t bytes)
{
    CHECK_CUDA(cudaMemsetAsync(ptr, 0, bytes, state(b)->cur));
}

static void cuda_synth_op(struct backend *b, void *x, int *labels, uint64_t first, int rows, int input_dim, int classes,
                          uint64_t seed)
{
    CHECK_CUDA(cuda_synth_batch(x, labels, first, rows, input_dim, classes, seed, b->act_dtype, state(b)->cur));
}

static struct backend_event *cuda_event_create(struct backend *b)
{
    (void)b;
    struct backend_event *e = calloc(1, sizeof *e);
    CHECK_ALLOC(e);
    CHECK_CUDA(cudaEventCreate(&e->ev));
    return e;
}

static void cuda_event_destroy(struct backend *b, struct backend_event *e)
{
    (void)b;
    cudaEventDestroy(e->ev);
    free(e);
}

static void cuda_event_record(struct backend *b, struct backend_event *e)
{
    CHECK_CUDA(cudaEventRecord(e->ev, state(b)->cur));
}

static void cuda_event_wait(struct backend *b, struct backend_event *e)
{
    CHECK_CUDA(cudaStreamWaitEvent(state(b)->cur, e->ev, 0));
}

static void cuda_event_record_on(struct backend *b, struct backend_event *e, void *stream)
{
    CHECK_CUDA(cudaEventRecord(e->ev, stream != NULL ? (cudaStream_t)stream : state(b)->stream));
}

static double cuda_event_elapsed_s(struct backend *b, struct backend_event *start, struct backend_event *end)
{
    (void)b;
    float ms = 0.0f;
    CHECK_CUDA(cudaEventSynchronize(end->ev));
    CHECK_CUDA(cudaEventElapsedTime(&ms, start->ev, end->ev));
    return ms * 1e-3;
}

static void cuda_synchronize(struct backend *b)
{
    CHECK_CUDA(cudaStreamSynchronize(state(b)->update_stream));
    CHECK_CUDA(cudaStreamSynchronize(state(b)->stream));
}

static double cuda_energy(struct backend *b) { return nvml_energy_j(&state(b)->nvml); }
static double cuda_nvlink_tx(struct backend *b) { return nvml_nvlink_tx_bytes(&state(b)->nvml); }

static void cuda_profiler(struct backend *b, int on)
{
    cuda_synchronize(b); /* the capture holds this step's kernels, and no others */
    CHECK_CUDA(on ? cudaProfilerStart() : cudaProfilerStop());
}

const struct backend_ops backend_cuda_ops = {
    .name = "cuda",
    .init = cuda_init,
    .shutdown = cuda_shutdown,
    .memory_available = cuda_memory_available,
    .stream = cuda_stream_of,
    .update_stream = cuda_update_stream_of,
    .set_stream = cuda_set_stream,
    .stream_wait = cuda_stream_wait,
    .reserve = cuda_reserve,
    .energy_j = cuda_energy,
    .nvlink_tx_bytes = cuda_nvlink_tx,
    .profiler = cuda_profiler,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .gemm_sm_limit = cuda_gemm_sm_limit,
    .gemm_fused = cuda_gemm_fused,
    .gemm = cuda_gemm,
    .bias_act_forward = cuda_bias_act_fwd,
    .act_backward = cuda_act_bwd,
    .bias_grad = cuda_bias_grad_op,
    .softmax_xent = cuda_softmax_xent_op,
    .optimizer_step = cuda_optimizer_op,
    .cast_from_f32 = cuda_cast_op,
    .cast_to_f32 = cuda_cast_back_op,
    .zero = cuda_zero,
    .synth_batch = cuda_synth_op,
    .event_create = cuda_event_create,
    .event_destroy = cuda_event_destroy,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_record_on = cuda_event_record_on,
    .event_elapsed_s = cuda_event_elapsed_s,
    .synchronize = cuda_synchronize,
};

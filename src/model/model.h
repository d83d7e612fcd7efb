/* model.h — the model seam: what the rest of dpscale knows of a model.
 *
 * A model is a table of parameter tensors in backward order: each tensor's name,
 * shape, offset in the flat arenas (parameters, gradients, optimizer state share one
 * layout) and its stage. Forward runs stages 0 .. nstages-1; a tensor's stage is the
 * first forward stage that reads it, and backward, which runs the stages the other
 * way, has completed the tensor's gradient once it has finished that stage. The arena
 * holds the tensors in decreasing stage, so the gradients backward has produced are
 * always a prefix of the arena: a gradient bucket is a contiguous slice (no packing
 * copy), and the optimizer is one pass over matching offsets.
 *
 * Bucket planning, ZeRO-1's cut, gradcheck, the optimizer, the result file's /model
 * group and the report read only this table and the few figures beside it. The
 * model's own forward, backward, data and memory functions (struct model_ops, step.h)
 * live in src/model/families/<type>.c, with its shape description behind `impl`; the
 * registry (registry.h) knows which family describes each model.type. Every size
 * is computed with overflow checks. */
#ifndef DPSCALE_MODEL_H
#define DPSCALE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

#define TENSOR_NAME_LEN 48

enum tensor_kind {
    TENSOR_MATRIX = 0, /* a GEMM operand, [rows x cols] row-major: ZeRO-1 shards it */
    TENSOR_VECTOR = 1  /* a bias or a norm's gain/shift, [cols]: every rank updates all of it */
};

enum sample_unit { UNIT_SAMPLES = 0, UNIT_TOKENS = 1, UNIT_IMAGES = 2 };

struct param_tensor {
    char name[TENSOR_NAME_LEN]; /* e.g. "layer3.weight" */
    int kind;                   /* enum tensor_kind */
    int rows, cols;             /* a vector has rows = 1 */
    size_t offset, count;       /* elements of the arenas */
    int stage;                  /* first forward stage that reads it; its gradient is complete after backward's */
};

struct model_ops; /* step.h: the model's forward, backward, data and memory functions */

struct model {
    int type;                      /* enum model_type (config.h) */
    const struct model_ops *ops;
    int nstages;
    int ntensors;
    struct param_tensor *tensors;  /* [ntensors], arena order: stage nstages-1 first */
    size_t *stage_lo, *stage_hi;   /* [nranges]: the arena range of each stage's tensors (lo == hi: none) */
    int nranges;
    size_t nparams;
    double flops_per_sample;       /* GEMM FLOPs of one training step (forward + backward) per sample */
    int unit;                      /* enum sample_unit: what a sample is counted in */
    int units_per_sample;          /* tokens per sequence; 1 for samples and images */
    /* dpscale bench: why the GEMM share of this model's step has no target (NULL: it has one) */
    const char *gemm_share_note;
    void *impl;                    /* the model's own description (src/model/families/) */
};

/* A family's description of the model cfg asks for (config.h's MODEL_TYPES names one per
 * model.type): m filled in, or -1 with a message in err. */
typedef int model_describe_fn(const struct config *cfg, struct model *m, char *err, size_t errlen);

/* What one rank allocates, by where it lives. The device figures are the step's
 * arenas (step_plan_memory, from the same layout step_buffers_alloc allocates) and
 * the communication buffers; the host figures are the loop's copies (the initial
 * parameters, the final download, the kept results, events and timings). On the cpu
 * backend both are host memory. total_bytes = device_bytes + host_bytes. */
struct memory_plan {
    size_t params_bytes, grads_bytes, optimizer_bytes, activations_bytes, data_bytes; /* device: the step's */
    size_t comm_bytes;   /* device: the 16-bit copy that travels, ZeRO-1's replicated buffer, a library's scratch */
    size_t host_bytes;   /* host: initial parameters, downloads, results kept, events, timings */
    size_t device_bytes, total_bytes;
};

/* What model_describe (registry.h) filled in, released (NULL: nothing). */
void model_free(struct model *m);

/* For the models: append a tensor of `stage` at the end of the arena (tensors are
 * added in backward order: stages must not increase). Returns 0, or -1 on overflow. */
int model_add_tensor(struct model *m, const char *name, int kind, int rows, int cols, int stage);
/* The arena range [*lo, *hi) of stage `stage`'s tensors; 0, or -1 when it has none. */
int model_stage_range(const struct model *m, int stage, size_t *lo, size_t *hi);
/* The name of a sample unit ("samples", "tokens", "images"). */
const char *model_unit_name(int unit);

/* *total += a * b * elem, every step checked: 0, or -1 on overflow (for the memory plans). */
int model_add_bytes(size_t *total, size_t a, size_t b, size_t elem);

/* plan->device_bytes and total_bytes again from the figures (after a caller added to
 * them); 0, or -1 on overflow. */
int model_plan_sum(struct memory_plan *plan);

/* GEMM FLOPs of one training step per sample. */
double model_gemm_flops_per_sample(const struct model *m);

/* Deterministic initial parameters (the model's own rule). */
void model_init_params(const struct model *m, uint64_t seed, float *host_params);

/* FNV-1a over the 32-bit words of the parameters: equal replicas have equal hashes. */
uint64_t model_params_hash(const float *params, size_t n);

#endif

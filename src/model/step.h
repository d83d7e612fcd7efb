/* step.h — the pieces of one training step on one rank: the buffers it needs, the
 * forward pass with the loss, the backward pass, the data, and the GEMMs alone (for
 * the benchmark that measures how much of the step is GEMM). The timed loop
 * (run_loop.c), the gradient check (cmd_gradcheck.c) and the benchmark (cmd_bench.c) are
 * built from these, and know no model: each step_* function hands over to the
 * model's own (struct model_ops, src/model/families/<type>.c).
 *
 * The arenas (step_buffers) belong to the step: master weights in fp32, gradients
 * and optimizer state, laid out by the model's tensor table (model.h). The model's
 * activations, inputs and labels are the model's own (`acts`), in the backend's
 * compute dtype (fp32, bf16 or fp16); so is `params_lp`, the copy of the weights the
 * GEMMs read (the master arena itself in fp32). */
#ifndef DPSCALE_STEP_H
#define DPSCALE_STEP_H

#include "backend/backend.h"
#include "config/config.h"
#include "model/model.h"

struct step_buffers {
    float *params;         /* fp32 master weights, model->nparams */
    void *state1, *state2; /* optimizer state arenas of model->nparams, in state_dtype (state2: AdamW only) */
    int state_dtype;       /* enum dtype: fp32, or the compute dtype (train.optimizer_state) */
    int master;            /* 1: params is the fp32 master the optimizer updates; 0 (train.master_weights = off,
                            * 16-bit): the optimizer updates params_lp in place, params is stale until
                            * run_loop_gather_params refreshes it */
    void *grads;      /* the gradient arena, in grad_dtype (train.grad_dtype: fp32 or the compute dtype) */
    int grad_dtype;   /* enum dtype */
    int last_rows;    /* the last tensor's gradient in blocks of this many rows (comm.last_layer_chunks); 0 = whole */
    int fuse_forward;  /* train.gemm_epilogue: bias + GELU in their GEMM's epilogue, where the model has them */
    int fuse_dgelu;    /* train.gemm_epilogue = on: GELU' in the input-gradient GEMM's epilogue */
    int fuse_bgrad;    /* ... and the linear layers' bias gradients in the weight-gradient GEMM (train.bias_grad) */
    int fuse_backward; /* ... and the bias gradient with it (needs gradients in the compute dtype: cuBLASLt
                        * writes the bias gradient in the GEMM's output type) */
    void *params_lp;  /* compute-dtype copy of params, NULL in fp32 */
    float *loss;      /* [steps] */
    size_t elem;      /* bytes of one activation element */
    void *acts;       /* the model's activations, inputs and labels (models/<type>.c) */
};

/* Element `index` of the gradient arena. */
static inline void *step_grad_at(const struct step_buffers *rb, size_t index)
{
    return (char *)rb->grads + index * dtype_size(rb->grad_dtype);
}
/* Element `index` of a buffer of `elem`-byte elements. */
static inline void *step_elem(void *base, size_t index, size_t elem) { return (char *)base + index * elem; }
/* The weights the GEMMs read: the compute copy, or the master arena in fp32. */
static inline void *step_weights(const struct step_buffers *rb) { return rb->params_lp ? rb->params_lp : rb->params; }

/* What the training loop hears of a pass: forward is about to read stage `stage`'s
 * tensors (stage_begin); backward has produced the arena's gradients [0, prefix) and
 * reads none of the weights there any more (grads_done: after each stage, and after
 * each row block of the last tensor's gradient). Either may be NULL; so may the hook. */
struct step_hook {
    void (*stage_begin)(void *ctx, int stage);
    void (*grads_done)(void *ctx, size_t prefix);
    void *ctx;
};

/* Element `offset` of the weights the GEMMs read (for the models' passes). */
static inline const void *step_weight_at(const struct step_buffers *rb, size_t offset)
{
    return step_elem(step_weights(rb), offset, rb->elem);
}

/* The dtype of those weights: the compute copy's, or fp32 (for the bias kernels). */
static inline int step_weight_dtype(const struct backend *be, const struct step_buffers *rb)
{
    return rb->params_lp != NULL ? be->act_dtype : DT_F32;
}

/* For the models' passes: forward is about to read stage `stage` (hook may be NULL). */
static inline void step_hook_stage_begin(const struct step_hook *hook, int stage)
{
    if (hook != NULL && hook->stage_begin != NULL) hook->stage_begin(hook->ctx, stage);
}

/* Backward has finished stage `stage` of m: the gradients up to the end of its range
 * are complete (nothing to say for a stage without tensors). */
static inline void step_hook_stage_done(const struct model *m, const struct step_hook *hook, int stage)
{
    size_t lo, hi;
    if (hook == NULL || hook->grads_done == NULL || model_stage_range(m, stage, &lo, &hi) != 0) return;
    hook->grads_done(hook->ctx, hi);
}

/* One input array of a step (struct model_ops.inputs). */
struct model_input {
    const char *name;
    int is_int;       /* int32; else elements of the compute dtype (or fp32: is_f32) */
    size_t count;
    const void *data; /* backend memory */
    int is_f32;       /* fp32 whatever the compute dtype (state such as running statistics) */
};

/* A model's own half of the step. B: samples of this rank. */
struct model_ops {
    /* Bytes of activations (kept for backward, and scratch) and of a batch's inputs and
     * labels, for `batch` samples of act_elem-byte elements; -1 on overflow. */
    int (*plan_activations)(const struct model *m, size_t act_elem, int batch, size_t *act_bytes, size_t *data_bytes);
    void (*init_params)(const struct model *m, uint64_t seed, float *host_params);
    /* One line for the run's header: the shape, e.g. "9 dense layers, 8192 -> 8192 x8 -> 1024, gelu". */
    void (*summary)(const struct model *m, char *buf, size_t len);
    void (*free)(struct model *m); /* the model's impl */
    /* 1: backward computes the arena's last tensor in blocks of rb->last_rows rows, telling
     * grads_done of each (comm.last_layer_chunks); 0: the split would change nothing. */
    int splits_last;
    /* The factor gradcheck scales the initial matrices by, so that every gradient is
     * above what float32 finite differences resolve (1: as initialised). */
    float gradcheck_matrix_scale;
    /* gradcheck's step, tolerance and the loss's float noise in ulps, where the defaults
     * (3e-3, 1e-2, 2) do not fit the model (0: the default): a network of ReLUs and max
     * pools has kinks that a larger step crosses (src/model/families/resnet.c). */
    float gradcheck_eps;
    double gradcheck_tolerance, gradcheck_quanta;
    /* 0 when backend `be` has every operation the model needs; else -1 and why, with the fix. */
    int (*supported)(const struct model *m, const struct backend *be, char *err, size_t errlen);
    void (*alloc_acts)(struct backend *be, const struct model *m, int B, struct step_buffers *rb);
    void (*free_acts)(struct backend *be, const struct model *m, struct step_buffers *rb);
    /* Samples first_sample .. first_sample+B-1 of the model's synthetic task: a pure
     * function of (seed, sample). */
    void (*data)(struct backend *be, const struct model *m, struct step_buffers *rb, uint64_t first_sample, int B,
                 uint64_t seed);
    /* The step's inputs on the device, for dpscale dump: up to `max` named arrays
     * (ints, or elements of the compute dtype); returns how many. */
    int (*inputs)(const struct model *m, const struct step_buffers *rb, struct model_input *out, int max);
    /* Forward, then the loss of step `slot` into rb->loss[slot] and its gradient
     * times loss_scale, ready for backward. */
    void (*forward_loss)(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                         float loss_scale, const struct step_hook *hook);
    /* Backward: fills the gradient arena in arena order, telling `hook` of each prefix. */
    void (*backward)(struct backend *be, const struct model *m, struct step_buffers *rb, int B,
                     const struct step_hook *hook);
    /* The GEMMs of one forward and backward pass with nothing else: the step's GEMM
     * floor. attention = 1: attention's products too (backend attention_products),
     * where the model has them; returns whether it ran them. */
    int (*gemms_only)(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int attention);
};

/* The step's arenas: their types and sizes. step_buffers_alloc allocates exactly
 * these and the memory plan counts exactly these: one function decides both. */
struct step_layout {
    int grad_dtype, state_dtype, nstates; /* enum dtype; optimizer state arenas (AdamW: 2) */
    size_t params_bytes;     /* fp32 master */
    size_t params_lp_bytes;  /* the compute copy; 0 in fp32 */
    size_t grads_bytes;
    size_t state_bytes;      /* each state arena */
    size_t loss_bytes;       /* [steps] floats */
};
/* 0, or -1 when a size overflows. */
int step_layout_make(const struct config *cfg, const struct model *m, int act_dtype, int steps, struct step_layout *l);

/* The device half of the memory plan of one rank training B samples for `steps`
 * steps: the arenas of step_layout_make, the model's activations and data
 * (plan_activations, which mirrors its alloc_acts). Host and communication figures
 * are zero (the training loop adds its own: train.c). 0, or -1 with a message. */
int step_plan_memory(const struct config *cfg, const struct model *m, int act_dtype, int B, int steps,
                     struct memory_plan *plan, char *err, size_t errlen);

void step_buffers_alloc(struct backend *be, const struct config *cfg, const struct model *m, int B, int steps,
                        struct step_buffers *rb);
/* count x elem bytes of zero-filled backend memory, the size checked (for the models' buffers). */
void *step_alloc(struct backend *be, size_t count, size_t elem);
void step_buffers_free(struct backend *be, const struct model *m, struct step_buffers *rb);

/* Copy host fp32 parameters in (and refresh the compute copy). */
void step_set_params(struct backend *be, const struct model *m, struct step_buffers *rb, const float *host);

/* The model's functions, through its ops. */
void step_data(struct backend *be, const struct model *m, struct step_buffers *rb, uint64_t first_sample, int B,
               uint64_t seed);
void step_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                       float loss_scale, const struct step_hook *hook);
void step_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B,
                   const struct step_hook *hook);
int step_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int attention);

#endif

/* step.h — the pieces of one training step on one rank: the buffers it needs,
 * the forward pass, the backward pass, and the GEMMs alone (for the benchmark
 * that measures how much of the step is GEMM). The timed loop (train.c), the
 * gradient check (gradcheck.c) and the benchmark (bench.c) are built from these.
 *
 * Master weights, gradients and optimizer state are fp32 arenas. Activations are
 * in the backend's compute dtype (fp32, bf16 or fp16); so is `weights`, the copy of
 * the master weights the GEMMs read (the master arena itself in fp32). */
#ifndef DPSCALE_STEP_H
#define DPSCALE_STEP_H

#include "backend.h"
#include "config.h"
#include "model.h"

struct step_buffers {
    float *params;         /* fp32 master weights, model->nparams */
    void *state1, *state2; /* optimizer state arenas of model->nparams, in state_dtype (state2: AdamW only) */
    int state_dtype;       /* enum dtype: fp32, or the compute dtype (train.optimizer_state) */
    int master;            /* 1: params is the fp32 master the optimizer updates; 0 (train.master_weights = off,
                            * 16-bit): the optimizer updates params_lp in place, params is stale until
                            * run_loop_gather_params refreshes it */
    void *grads;      /* the gradient arena, in grad_dtype (train.grad_dtype: fp32 or the compute dtype) */
    int grad_dtype;   /* enum dtype */
    int last_rows;    /* layer 0's weight gradient in blocks of this many rows (comm.last_layer_chunks); 0 = one GEMM */
    int fuse_forward;  /* train.gemm_epilogue: GELU layers' bias + GELU in their GEMM's epilogue */
    int fuse_backward; /* ... and GELU' + bias gradient in the next layer's input-gradient GEMM (needs gradients in
                        * the compute dtype: cuBLASLt writes the bias gradient in the GEMM's output type) */
    void *params_lp;  /* compute-dtype copy of params, NULL in fp32 */
    void *x;          /* [B x input_dim] */
    int *labels;      /* [B] */
    void **pre;       /* per layer [B x out]: pre-activation (the logits for the last layer) */
    void **act;       /* per layer [B x out]: activation (== pre for the last layer) */
    void *dlogits;    /* [B x classes] */
    void *scratch[2]; /* [B x max_dim]: gradient of the current layer's input */
    float *loss;      /* [steps] */
    size_t elem;      /* bytes of one activation element */
};

void step_buffers_alloc(struct backend *be, const struct config *cfg, const struct model *m, int B, int steps,
                        struct step_buffers *rb);
/* Element `index` of the gradient arena. */
static inline void *step_grad_at(const struct step_buffers *rb, size_t index)
{
    return (char *)rb->grads + index * dtype_size(rb->grad_dtype);
}

void step_buffers_free(struct backend *be, const struct model *m, struct step_buffers *rb);

/* Copy host fp32 parameters in (and refresh the compute copy). */
void step_set_params(struct backend *be, const struct model *m, struct step_buffers *rb, const float *host);

/* What the training loop hears of a pass: forward is about to read layer `layer`'s
 * weights (layer_begin); backward has produced the arena's gradients [0, prefix) and
 * reads none of the weights there any more (grads_done: after each layer, and after
 * each row block of layer 0's weight gradient). Either may be NULL; so may the hook. */
struct step_hook {
    void (*layer_begin)(void *ctx, int layer);
    void (*grads_done)(void *ctx, size_t prefix);
    void *ctx;
};

/* Forward pass of B samples in rb->x; the logits end in rb->pre[last]. */
void step_forward(struct backend *be, const struct model *m, struct step_buffers *rb, int B, const struct step_hook *hook);
/* Forward, then the loss of step `slot` into rb->loss[slot] and its gradient (times
 * loss_scale) into rb->dlogits. */
void step_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot,
                       float loss_scale, const struct step_hook *hook);

/* Backward from rb->dlogits: fills the gradient arena, last layer first; `hook`
 * (may be NULL) hears of every finished layer, to start gradient buckets. */
void step_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B,
                   const struct step_hook *hook);
/* The GEMMs of one forward and backward pass, with nothing else: the step's GEMM floor. */
void step_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B);

#endif

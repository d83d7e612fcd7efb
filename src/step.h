/* step.h — the pieces of one training step on one rank: the buffers it needs,
 * the forward pass, the backward pass, and the GEMMs alone (for the benchmark
 * that measures how much of the step is GEMM). The timed loop (train.c), the
 * gradient check (gradcheck.c) and the benchmark (bench.c) are built from these. */
#ifndef DPSCALE_STEP_H
#define DPSCALE_STEP_H

#include "backend.h"
#include "config.h"
#include "model.h"

/* Everything one rank allocates for a run, in backend memory unless noted. */
struct step_buffers {
    float *params, *grads, *state1, *state2;
    float *x;        /* [B x input_dim] */
    int *labels;     /* [B] */
    float **pre;     /* per layer [B x out]: pre-activation (the logits for the last layer) */
    float **act;     /* per layer [B x out]: activation (== pre for the last layer) */
    float *dlogits;  /* [B x classes] */
    float *scratch[2];
    float *loss;     /* [steps] */
};

void step_buffers_alloc(struct backend *be, const struct config *cfg, const struct model *m, int B, int steps,
                        struct step_buffers *rb);
void step_buffers_free(struct backend *be, const struct model *m, struct step_buffers *rb);

/* Forward pass of B samples in rb->x; the logits end in rb->pre[last]. */
void step_forward(struct backend *be, const struct model *m, struct step_buffers *rb, int B);
/* Forward, then the loss of step `slot` into rb->loss[slot] and its gradient into rb->dlogits. */
void step_forward_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, int slot);
/* Backward from rb->dlogits: fills the gradient arena, last layer first. */
void step_backward(struct backend *be, const struct model *m, struct step_buffers *rb, int B);
/* The GEMMs of one forward and backward pass, with nothing else: the step's GEMM floor. */
void step_gemms_only(struct backend *be, const struct model *m, struct step_buffers *rb, int B);

#endif

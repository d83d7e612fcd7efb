/* op_profile.h — where a step's time goes, operation by operation: the backend's
 * operations wrapped so that each call is bracketed by two events on the stream it
 * runs on, summed by kind after every profiled step (dpscale bench). One backend is
 * profiled at a time; profiling adds an event pair per call, so the figures of a
 * profiled step are for the breakdown, never for the step time. */
#ifndef DPSCALE_OP_PROFILE_H
#define DPSCALE_OP_PROFILE_H

#include "backend/backend.h"

enum op_kind {
    OPK_GEMM, OPK_GEMM_FUSED, OPK_BIAS_ACT, OPK_ACT_BACKWARD, OPK_BIAS_GRAD, OPK_SOFTMAX_XENT, OPK_OPTIMIZER,
    OPK_CAST, OPK_EMBED_FORWARD, OPK_EMBED_BACKWARD, OPK_LAYERNORM_FORWARD, OPK_LAYERNORM_BACKWARD,
    OPK_ATTENTION_FORWARD, OPK_ATTENTION_BACKWARD, OPK_FLASH_FORWARD, OPK_FLASH_BACKWARD, OPK_ADD, OPK_ROWS, OPK_DATA, OPK_ZERO,
    OPK_IM2COL, OPK_BATCHNORM_FORWARD, OPK_BATCHNORM_BACKWARD, OPK_POOL, OPK_COUNT
};

struct op_profile {
    double seconds[OPK_COUNT]; /* summed over the profiled steps */
    long long calls[OPK_COUNT];
    int steps;
};

/* From now on be's operations are timed into p (which is zeroed). */
void op_profile_begin(struct backend *be, struct op_profile *p);
/* The calls since the last step_end (or begin) make one step: wait, sum them. */
void op_profile_step_end(struct backend *be);
/* Stop timing: be's operations are its own again. */
void op_profile_end(struct backend *be);

const char *op_kind_name(int kind);
/* 1 for the kinds that are GEMMs (attention's forward and backward hold GEMMs and a softmax: 0). */
int op_kind_is_gemm(int kind);

#endif

/* op_profile.h — where a step's time goes, operation by operation: the backend's
 * operations wrapped so that each call is bracketed by two events on the stream it
 * runs on, summed by kind after every profiled step (dpscale bench). One backend is
 * profiled at a time; profiling adds an event pair per call, so the figures of a
 * profiled step are for the breakdown, never for the step time. */
#ifndef DPSCALE_OP_PROFILE_H
#define DPSCALE_OP_PROFILE_H

#include "backend/backend.h"

/* The kinds of operation are the profiler's own (op_profile.c lists them, with the
 * operations of every family): a reader counts them with op_kind_count and names them
 * with op_kind_name, so that a new family's kinds change no file but op_profile.c. */
#define OP_KINDS_MAX 48

struct op_profile {
    double seconds[OP_KINDS_MAX]; /* [kind], summed over the profiled steps */
    long long calls[OP_KINDS_MAX];
    int steps;
};

/* From now on be's operations are timed into p (which is zeroed). */
void op_profile_begin(struct backend *be, struct op_profile *p);
/* The calls since the last step_end (or begin) make one step: wait, sum them. */
void op_profile_step_end(struct backend *be);
/* Stop timing: be's operations are its own again. */
void op_profile_end(struct backend *be);

int op_kind_count(void);
const char *op_kind_name(int kind);
/* 1 for the kinds that are GEMMs (attention's forward and backward hold GEMMs and a softmax: 0). */
int op_kind_is_gemm(int kind);
/* 1 for the kinds that hold GEMMs beside other work (attention's forward and backward). */
int op_kind_holds_gemms(int kind);

#endif

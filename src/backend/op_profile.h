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

#define OP_GEMM_SHAPES_MAX 96

/* One shape of GEMM the step runs (op(A) [m x k], op(B) [k x n], their leading
 * dimensions, the output's dtype, beta = 0 or 1, the epilogue), with its time summed
 * over the profiled steps, and the operands of its first call to run it again alone. */
struct op_gemm_shape {
    int fused;     /* 0: gemm; 1: gemm_fused with f.kind's epilogue */
    int ta, tb, m, n, k, lda, ldb, ldc, c_is_f32;
    float alpha, beta;
    const void *A, *B;
    void *C;
    struct gemm_fusion f;
    double seconds;
    long long calls;
};

struct op_profile {
    double seconds[OP_KINDS_MAX]; /* [kind], summed over the profiled steps */
    long long calls[OP_KINDS_MAX];
    int steps;
    struct op_gemm_shape gemm[OP_GEMM_SHAPES_MAX]; /* in the order first met; beyond the maximum: not kept */
    int ngemm;
};

/* From now on be's operations are timed into p (which is zeroed). */
void op_profile_begin(struct backend *be, struct op_profile *p);
/* The calls since the last step_end (or begin) make one step: wait, sum them. */
void op_profile_step_end(struct backend *be);
/* Stop timing: be's operations are its own again. */
void op_profile_end(struct backend *be);
/* Each of p's GEMM shapes run alone, `iters` times back to back on its first call's
 * operands (after 3 untimed): the mean seconds of a call into alone_s[i]. Overwrites
 * their outputs (and a GELU epilogue's aux): for after the profiled steps. */
void op_profile_gemm_alone(struct backend *be, const struct op_profile *p, int iters, double *alone_s);
/* "gemm", "gemm+C" (beta = 1), or with the epilogue ("gemm+bias", "gemm+bias+GELU", ...): no spaces. */
const char *op_gemm_shape_name(const struct op_gemm_shape *g);

int op_kind_count(void);
const char *op_kind_name(int kind);
/* 1 for the kinds that are GEMMs (attention's forward and backward hold GEMMs and a softmax: 0). */
int op_kind_is_gemm(int kind);
/* 1 for the kinds that hold GEMMs beside other work (attention's forward and backward). */
int op_kind_holds_gemms(int kind);

#endif

/* run_loop.h — the timed loops of one run on one rank: training steps (with or
 * without the gradient allreduce), the allreduce by itself, and reading back the
 * events they recorded. train.c calls them in the order that the decomposition of
 * DESIGN.md needs; the struct holds everything they share. */
#ifndef DPSCALE_RUN_LOOP_H
#define DPSCALE_RUN_LOOP_H

#include "../mpi/comm.h"
#include "backend.h"
#include "buckets.h"
#include "config.h"
#include "model.h"
#include "step.h"
#include "train.h"

struct run_loop {
    const struct config *cfg;
    const struct model *m;
    struct backend *be;
    struct comm *c;
    int B, N, rank, steps, iters;
    struct step_buffers rb;
    struct bucket_plan plan;
    float *initial_params;  /* host copy: every pass starts from the same weights */
    void *comm_buf;         /* compute-dtype gradients when they travel in 16 bits, else NULL */
    int ar_dtype, ar_op;    /* enum dtype, enum allreduce_op */
    float grad_scale;       /* 1/N unless the transport averages, times 1/loss_scale */
    int next_bucket;        /* first bucket of this step not started yet */
    int marking;            /* timed step whose bucket markers are recorded, -1 = none */
    struct backend_event **phase_ev;  /* [iters][NPHASES]: ends of phases; slot STEP = the start */
    struct backend_event **bucket_ev; /* [iters][nbuckets][2]: start and end of each bucket */
    double timed_wall_s;   /* last pass: wall time of its timed steps */
    double timed_energy_j; /* last pass: energy of this rank's GPU over them; NaN without a counter */
    double nvlink_tx_bytes; /* last pass, all its steps: bytes this GPU sent over NVLink; NaN without a counter */
};

void run_loop_init(struct run_loop *L, const struct config *cfg, const struct model *m, struct backend *be,
                   struct comm *c);
void run_loop_free(struct run_loop *L);

/* Initial weights, zero optimizer state. */
void run_loop_reset(struct run_loop *L);
/* warmup + iters steps; with_comm = 0 leaves out the gradient allreduce (replicas drift: reset after). */
void run_loop_steps(struct run_loop *L, int with_comm);
/* This rank's phase durations of the timed steps of the last pass: out[iter][NPHASES]. */
void run_loop_phase_times(struct run_loop *L, double *out);
/* This rank's bucket start and end times of the last pass, from each step's start: [iter][bucket]. */
void run_loop_bucket_times(struct run_loop *L, double *start, double *end);
/* The allreduce of every bucket, back to back, `reps` times, the device idle and the
 * ranks lined up by a barrier before each: this rank's times in out[reps]. */
void run_loop_allreduce_alone(struct run_loop *L, int reps, double *out);

#endif

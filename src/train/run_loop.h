/* run_loop.h — the timed loops of one run on one rank: training steps (with or
 * without communication), the communication by itself, and reading back the
 * events they recorded. train.c calls them in the order that the decomposition of
 * DESIGN.md needs; the struct holds everything they share.
 *
 * A run on one rank has no comm (c == NULL): no communicator, no communication
 * buffer, no allreduce, no cast, exactly what a single-GPU job does. */
#ifndef DPSCALE_RUN_LOOP_H
#define DPSCALE_RUN_LOOP_H

#include "comm/comm.h"
#include "backend/backend.h"
#include "train/buckets.h"
#include "config/config.h"
#include "model/model.h"
#include "train/shard.h"
#include "model/step.h"
#include "result/run_record.h"

struct run_loop {
    const struct config *cfg;
    const struct model *m;
    struct backend *be;
    struct group *g;
    struct comm *c;         /* NULL on one rank */
    int B, N, rank, steps, iters;
    struct step_buffers rb;
    struct bucket_plan plan;   /* gradient buckets, reduced as backward produces them */
    struct bucket_plan stages; /* one per stage: the updates of a pass without communication */
    int sharded;               /* comm.shard_optimizer on a run that communicates */
    struct shard_plan shard;
    int *first_bucket, *last_bucket; /* [stage]: the buckets of plan that hold its tensors (forward waits for them) */
    int *first_stage_bucket, *last_stage_bucket; /* [stage]: the same in `stages`; -1 for a stage without tensors */
    float *initial_params;  /* host copy: every pass starts from the same weights */
    void *comm_buf;         /* gradients in the compute dtype when they travel in 16 bits, else NULL */
    void *rep_buf;          /* sharded: the replicated ranges' reduced gradients */
    int registered[3];      /* which of grads, comm_buf, the gathered weights came from comm_mem_alloc */
    int ar_dtype, ar_op;    /* enum dtype, enum reduce_op */
    float grad_scale;       /* 1/N unless the library averages, times 1/loss_scale */
    struct optim_hparams h; /* of the step in progress */
    int with_comm;          /* the pass in progress reduces gradients */
    int timed_with_comm;    /* the last pass did: without, it has no exposed communication at all */
    int updating;           /* the pass in progress updates as buckets complete (train.overlap_update) */
    int last_ready;         /* the last bucket is reduced: its update is the one left after backward */
    int step_index;         /* the step of the pass in progress (for the watchdog's notes) */
    struct backend_event **plan_updated;  /* [bucket of plan]: its update done, on the update stream */
    struct backend_event **stage_updated; /* [bucket of layers] */
    int next_bucket;        /* first bucket of this step not started (comm) or not updated (no comm) yet */
    int marking;            /* timed step whose bucket markers are recorded, -1 = none */
    struct backend_event **phase_ev;  /* [iters][NPHASES]: ends of phases; slot STEP = the start */
    struct backend_event **bucket_ev; /* [iters][nbuckets][2]: start and end of each bucket's reduction */
    struct backend_event **ready_ev;  /* [iters][nbuckets]: each bucket's gradients complete (compute stream) */
    int next_ready;         /* first bucket of this step's backward not yet complete */
    int timed_step;         /* timed index of the step in progress, -1 in warm-up */
    double timed_wall_s;   /* last pass: wall time of its timed steps */
    double host_enqueue_s; /* last pass: the shortest time the host took to enqueue one step; a step
                            * whose GPU time is no longer than this is launch-bound */
    double timed_energy_j; /* last pass: energy of this rank's GPU over them; NaN without a counter */
    double nvlink_tx_bytes; /* last pass, all its steps: bytes this GPU sent over NVLink; NaN without a counter */
};

/* c: the run's comm, NULL on one rank. */
void run_loop_init(struct run_loop *L, const struct config *cfg, const struct model *m, struct backend *be,
                   struct group *g, struct comm *c);
void run_loop_free(struct run_loop *L);

/* Initial weights, zero optimizer state. */
void run_loop_reset(struct run_loop *L);
/* warmup + iters steps; with_comm = 0 leaves out communication (replicas drift: reset after). */
void run_loop_steps(struct run_loop *L, int with_comm);
/* This rank's phase durations of the timed steps of the last pass: out[iter][NPHASES]. */
void run_loop_phase_times(struct run_loop *L, double *out);
/* This rank's bucket start and end times of the last pass, from each step's start: [iter][bucket]. */
void run_loop_bucket_times(struct run_loop *L, double *start, double *end);
/* The last pass, [iters][nbuckets]: when each bucket's gradients were complete, from the
 * step's start (on the compute stream: the backward timeline, with or without
 * communication beside it). */
void run_loop_ready_times(struct run_loop *L, double *ready);
/* The communication of one step (every bucket's reduction; sharded: and the
 * all-gathers), back to back, `reps` times, the device idle and the ranks lined up
 * by a barrier before each: this rank's times in out[reps]. */
void run_loop_comm_alone(struct run_loop *L, int reps, double *out);
/* The fp32 master weights of every rank made whole again (sharded runs keep only
 * their block current); then L->rb.params holds the run's final parameters. */
void run_loop_gather_params(struct run_loop *L);

#endif

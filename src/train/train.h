/* train.h — one run of the sweep: N ranks train the model data-parallel, and
 * the timings of every timed step and rank come back, with what the step is made
 * of: the same steps without the allreduce, and the allreduce by itself. */
#ifndef DPSCALE_TRAIN_H
#define DPSCALE_TRAIN_H

#include <stdint.h>

#include "comm/comm.h"
#include "backend/backend.h"
#include "config/config.h"
#include "model/model.h"

/* Phases of a step, in order; PHASE_STEP is the whole step. */
enum phase { PHASE_FORWARD, PHASE_BACKWARD, PHASE_COMM_EXPOSED, PHASE_UPDATE, PHASE_STEP, NPHASES };
extern const char *const phase_names[NPHASES]; /* "forward_s", ... as stored in HDF5 */

struct run_result {
    int nranks, nnodes;
    int batch_per_rank, global_batch;
    int iters, steps; /* timed steps; all steps (warm-up included) */
    char library[8];  /* who reduces: the launch's comm.library (mpi, nccl), also on 1 rank, which reduces nothing */
    char path[8];     /* the path asked for: comm.path (auto, nvlink, pcie, host, net) */
    int communicates; /* 0 on one rank: no communicator, no buffer, no collective */
    char allreduce_dtype[8]; /* the gradients' type on the wire: fp32, bf16 or fp16 */
    /* Filled on rank 0 of the run only: */
    double *times[NPHASES]; /* [iter x rank], seconds; COMM_EXPOSED: end of backward to allreduce done */
    double *compute_only;   /* [iter x rank]: the same step without the allreduce */
    double *compute_only_backward; /* [iter x rank]: backward of those steps */
    int nbuckets;
    double *bucket_count;   /* [bucket]: gradient elements in each bucket */
    double *bucket_start, *bucket_end; /* [iter x rank x bucket]: from the step's start */
    /* [iter x rank x bucket]: when each bucket's gradients were complete, from the step's
     * start, in the real pass and in the compute-only pass (one rank: the same) */
    double *bucket_ready, *bucket_ready_compute_only;
    double *loss;           /* [steps]: mean loss over the global batch of each step */
    double *allreduce_alone; /* [reps x rank]: the step's communication by itself, ranks lined up first; 0 on 1 rank */
    int allreduce_reps;
    double final_loss;
    uint64_t params_hash;
    double params_abs_sum;
    double replica_max_abs_diff; /* largest |p - p(rank 0)| over ranks; 0 when the hashes agree */
    /* Divergence: the first step whose loss is not finite on some rank, and the lowest
     * such rank (-1, -1: none); else the lowest rank holding a parameter that is not
     * finite after the last step (diverged_step = steps - 1 then). diverged_what says
     * which ("the loss is nan", "a parameter is inf"). Every rank agrees on them. */
    int diverged_step, diverged_rank;
    char diverged_what[48];
    double gemm_flops_per_step;  /* over all ranks */
    double allreduce_bytes;      /* gradient bytes reduced per step */
    double gather_bytes;         /* weight bytes all-gathered per step (comm.shard_optimizer), else 0 */
    double energy_j;             /* energy of all ranks' GPUs over the timed steps; NaN without a counter */
    double timed_wall_s;         /* wall time of the timed steps (slowest rank) */
    double host_enqueue_s;       /* shortest host time to enqueue one step (slowest rank) */
    double peak_tflops;          /* per GPU in the run's precision; 0 = unknown */
    double nvlink_tx_bytes;      /* sent over NVLink by all ranks' GPUs during the real steps; NaN = unknown */
    double nvlink_expected_bytes; /* what the allreduces of those steps send: 2(N-1) x gradient bytes per step */
    char path_proof[96];         /* how the NVLink counters bear out the path label */
    float *params;               /* final parameters, when run.save_params is on */
    size_t nparams;
};

/* nccl-tests' bus bytes of one step over (N-1)/N: 2 x an allreduce's bytes, or a
 * reduce-scatter's plus an all-gather's (comm.shard_optimizer). */
static inline double run_bus_bytes(const struct run_result *r)
{
    return r->gather_bytes > 0 ? r->allreduce_bytes + r->gather_bytes : 2.0 * r->allreduce_bytes;
}

/* Everything rank `rank` of a run on n ranks allocates: the step's arenas
 * (step_plan_memory), the communication buffers, and the host's copies (the initial
 * parameters, the final download, saved parameters of earlier sweep points, events,
 * timings). 0, or -1 on overflow with a message. */
int train_plan_memory(const struct config *cfg, const struct model *m, const struct backend *be, int n, int rank,
                      struct memory_plan *plan, char *err, size_t errlen);
/* Whether `plan` fits in what this rank may take: the device's free memory (CUDA),
 * and the host's limit (memlimit.h: MemAvailable, the cgroup, RLIMIT_AS), local_size
 * ranks of the node sharing the host. Returns 0, or -1 with the refusal in err,
 * which names `what` ("the run on 2 ranks"), the parts and the limit that bound it. */
int train_plan_fits(const struct memory_plan *plan, const char *what, const struct backend *be, int local_size,
                    char *err, size_t errlen);
/* train_plan_memory, then train_plan_fits. No communication. */
int train_memory_fits(const struct config *cfg, const struct model *m, struct backend *be, int n, int rank,
                      int local_size, char *err, size_t errlen);

/* Collective over the ranks of g; c is the run's comm, NULL on one rank. `library`
 * labels the run. Returns 0, or -1 (on every rank of g) when the run cannot start,
 * e.g. the memory plan does not fit. */
int train_run(const struct config *cfg, const struct model *m, struct backend *be, struct group *g, struct comm *c,
              const char *library, int local_size, struct run_result *out);
void run_result_free(struct run_result *r);

#endif

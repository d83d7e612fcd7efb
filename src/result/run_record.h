/* run_record.h — the records of what a launch measured, which the training engine
 * (src/train/) fills and the result file (h5out.h) writes: a training run's timings
 * and outcome (struct run_result), its summary, a row of the scaling table (struct
 * run_summary), and an allreduce sweep of dpscale comm (struct collective_result). */
#ifndef DPSCALE_RUN_RECORD_H
#define DPSCALE_RUN_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "result/schema.h"

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
void run_result_free(struct run_result *r);

/* Every figure of a run's summary that is a real number, in the column order of the
 * /summary table: X(name, units, meaning), the list of schema.h, where each is defined.
 * Times in seconds. */
#define RUN_SUMMARY_DOUBLES(X) SCHEMA_SUMMARY_REALS(X)

struct run_summary {
    char library[8], path[8];
    int nranks, nnodes, batch_per_rank, global_batch;
#define RUN_SUMMARY_DECLARE(name, ...) double name;
    RUN_SUMMARY_DOUBLES(RUN_SUMMARY_DECLARE)
#undef RUN_SUMMARY_DECLARE
    double phase_median_s[NPHASES]; /* median over iterations of the max over ranks */
    double params_abs_sum;
    double replica_max_abs_diff;
};

/* An allreduce sweep of dpscale comm (collectives.h measures it). */
struct collective_result {
    char library[8], path[8];
    char dtype[8];
    int elem_bytes;
    int nranks, nnodes, in_place, iters, warmup;
    int nsizes;
    double *size_bytes; /* [size] */
    double *time_s;     /* [size x rank]: mean time of one allreduce on each rank */
    double *algbw_gbps; /* [size]: bytes / (max over ranks of time_s) / 1e9 */
    double *busbw_gbps; /* [size]: algbw x 2(n-1)/n */
    double *wrong;      /* [size]: elements of the checked result that differ from the exact sum, all ranks */
};
void collective_result_free(struct collective_result *r);

#endif

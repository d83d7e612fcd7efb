/* stats.h — from per-iteration, per-rank timings to the figures of the scaling
 * table. The step time of an iteration is the max over ranks (the slowest rank
 * sets the pace of a synchronous step); a run is summarised by the median, p05 and
 * p95 over iterations of that max. Percentiles interpolate linearly between order
 * statistics, as numpy.percentile does by default, so a reader can recompute every
 * figure from the HDF5 datasets. */
#ifndef DPSCALE_STATS_H
#define DPSCALE_STATS_H

#include <stddef.h>

#include "train.h"

/* Every figure of a run's summary that is a real number, in the column order of the
 * /summary table; h5out.c writes them all from this one list. Times in seconds. */
#define RUN_SUMMARY_DOUBLES(X)                                                                       \
    X(step_median_s)          /* median over timed steps of the max over ranks */                   \
    X(step_p05_s) X(step_p95_s)                                                                      \
    X(forward_median_s) X(backward_median_s) X(comm_exposed_median_s) X(update_median_s)             \
    X(compute_only_s)         /* the step without the allreduce: median of the max over ranks */    \
    X(compute_only_mean_s)    /* the same, of the mean over ranks (a typical rank) */               \
    X(compute_only_backward_s) /* backward without communication: median of the max over ranks */ \
    X(allreduce_alone_s)      /* the step's communication by itself, ranks lined up; 0 on 1 rank */ \
    X(overlap_efficiency)     /* 1 - exposed communication / allreduce alone */                     \
    X(samples_per_s) X(samples_per_s_per_rank)                                                       \
    X(speedup) X(efficiency)  /* against the 1-rank run of the launch; NaN without one */           \
    X(loss_compute)           /* (typical compute - ideal step) / step */                            \
    X(loss_imbalance)         /* (slowest compute - typical compute) / step */                      \
    X(loss_interference)      /* (backward - compute-only backward) / step: backward slowed by comm beside it */ \
    X(loss_comm)              /* (step - slowest compute) / step - interference; the four add up to 1 - efficiency */ \
    X(gemm_tflops)            /* GEMM FLOP/s over all ranks at the median step */                   \
    X(mfu)                    /* per GPU over the datasheet peak; NaN when unknown */               \
    X(allreduce_busbw_gbps)   /* nccl-tests busbw of the allreduce alone */                         \
    X(joules_per_sample) X(avg_power_w) /* NaN without an energy counter */                         \
    X(final_loss)

struct run_summary {
    char library[8], path[8];
    int nranks, nnodes, batch_per_rank, global_batch;
#define RUN_SUMMARY_DECLARE(name) double name;
    RUN_SUMMARY_DOUBLES(RUN_SUMMARY_DECLARE)
#undef RUN_SUMMARY_DECLARE
    double phase_median_s[NPHASES]; /* median over iterations of the max over ranks */
    double params_abs_sum;
    double replica_max_abs_diff;
};

/* p in [0, 100] of n sorted values. */
double stats_percentile_sorted(const double *sorted, size_t n, double p);
/* The same on unsorted values (copied, not modified). */
double stats_percentile(const double *values, size_t n, double p);
/* out[i] = max over r of m[i * ranks + r]. */
void stats_max_over_ranks(const double *m, int iters, int ranks, double *out);
/* out[i] = mean over r of m[i * ranks + r]. */
void stats_mean_over_ranks(const double *m, int iters, int ranks, double *out);

void stats_summarize_run(const struct run_result *r, struct run_summary *s);
/* Speedup and efficiency of every run against the run with one rank of the same library and path. */
void stats_fill_scaling(struct run_summary *runs, int n);

#endif

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

struct run_summary {
    char transport[16];
    int nranks, nnodes, batch_per_rank, global_batch;
    double step_median_s, step_p05_s, step_p95_s;
    double phase_median_s[NPHASES]; /* median over iterations of the max over ranks */
    double samples_per_s, samples_per_s_per_rank;
    double speedup, efficiency;     /* against the 1-rank run of the same launch; NaN without one */
    double gemm_tflops;             /* achieved GEMM FLOP/s over all ranks at the median step, in TFLOP/s */
    double allreduce_alone_s;       /* median over repetitions of the max over ranks: the allreduce by itself */
    double allreduce_busbw_gbps;    /* nccl-tests busbw of the gradient allreduce by itself */
    double mfu;                     /* GEMM FLOP/s per GPU over the peak in this precision; NaN when unknown */
    double joules_per_sample;       /* NaN without an energy counter */
    double avg_power_w;             /* per GPU, over the timed steps */
    double final_loss;
    double params_abs_sum;
    double replica_max_abs_diff;
};

/* p in [0, 100] of n sorted values. */
double stats_percentile_sorted(const double *sorted, size_t n, double p);
/* The same on unsorted values (copied, not modified). */
double stats_percentile(const double *values, size_t n, double p);
/* out[i] = max over r of m[i * ranks + r]. */
void stats_max_over_ranks(const double *m, int iters, int ranks, double *out);

void stats_summarize_run(const struct run_result *r, struct run_summary *s);
/* Speedup and efficiency of every run against the run with one rank of the same transport. */
void stats_fill_scaling(struct run_summary *runs, int n);

#endif

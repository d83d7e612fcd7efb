/* stats.h — from per-iteration, per-rank timings to the figures of the scaling
 * table. The step time of an iteration is the max over ranks (the slowest rank
 * sets the pace of a synchronous step); a run is summarised by the median, p05 and
 * p95 over iterations of that max. Percentiles interpolate linearly between order
 * statistics, as numpy.percentile does by default, so a reader can recompute every
 * figure from the HDF5 datasets. */
#ifndef DPSCALE_STATS_H
#define DPSCALE_STATS_H

#include <stddef.h>

#include "result/schema.h"
#include "train/train.h"

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

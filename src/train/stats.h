/* stats.h — from per-iteration, per-rank timings to the figures of the scaling
 * table. The step time of an iteration is the max over ranks (the slowest rank
 * sets the pace of a synchronous step); a run is summarised by the median, p05 and
 * p95 over iterations of that max. Percentiles interpolate linearly between order
 * statistics, as numpy.percentile does by default, so a reader can recompute every
 * figure from the HDF5 datasets. */
#ifndef DPSCALE_STATS_H
#define DPSCALE_STATS_H

#include <stddef.h>

#include "result/run_record.h"

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

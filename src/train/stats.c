/* stats.c — percentiles, max over ranks, and the scaling figures (stats.h). */
#include "train/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double stats_percentile_sorted(const double *sorted, size_t n, double p)
{
    if (n == 0) return NAN;
    double pos = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)floor(pos);
    size_t hi = lo + 1 < n ? lo + 1 : lo;
    double frac = pos - (double)lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double stats_percentile(const double *values, size_t n, double p)
{
    if (n == 0) return NAN;
    double *copy = malloc(n * sizeof *copy);
    CHECK_ALLOC(copy);
    memcpy(copy, values, n * sizeof *copy);
    qsort(copy, n, sizeof *copy, compare_doubles);
    double v = stats_percentile_sorted(copy, n, p);
    free(copy);
    return v;
}

void stats_max_over_ranks(const double *m, int iters, int ranks, double *out)
{
    for (int i = 0; i < iters; i++) {
        double best = m[(size_t)i * ranks];
        for (int r = 1; r < ranks; r++)
            if (m[(size_t)i * ranks + r] > best) best = m[(size_t)i * ranks + r];
        out[i] = best;
    }
}

void stats_mean_over_ranks(const double *m, int iters, int ranks, double *out)
{
    for (int i = 0; i < iters; i++) {
        double sum = 0.0;
        for (int r = 0; r < ranks; r++) sum += m[(size_t)i * ranks + r];
        out[i] = sum / ranks;
    }
}

/* Median over iterations of the max (or mean) over ranks of m[iters x ranks]. */
static double median_across(const double *m, int iters, int ranks, int use_mean)
{
    double *per_iter = malloc((size_t)iters * sizeof *per_iter);
    CHECK_ALLOC(per_iter);
    if (use_mean) stats_mean_over_ranks(m, iters, ranks, per_iter);
    else stats_max_over_ranks(m, iters, ranks, per_iter);
    double v = stats_percentile(per_iter, (size_t)iters, 50.0);
    free(per_iter);
    return v;
}

void stats_summarize_run(const struct run_result *r, struct run_summary *s)
{
    memset(s, 0, sizeof *s);
    memcpy(s->library, r->library, sizeof s->library);
    memcpy(s->path, r->path, sizeof s->path);
    s->nranks = r->nranks;
    s->nnodes = r->nnodes;
    s->batch_per_rank = r->batch_per_rank;
    s->global_batch = r->global_batch;
    double *slowest = malloc((size_t)r->iters * sizeof *slowest);
    CHECK_ALLOC(slowest);
    for (int p = 0; p < NPHASES; p++) {
        stats_max_over_ranks(r->times[p], r->iters, r->nranks, slowest);
        s->phase_median_s[p] = stats_percentile(slowest, (size_t)r->iters, 50.0);
        if (p == PHASE_STEP) {
            s->step_median_s = s->phase_median_s[p];
            s->step_p05_s = stats_percentile(slowest, (size_t)r->iters, 5.0);
            s->step_p95_s = stats_percentile(slowest, (size_t)r->iters, 95.0);
        }
    }
    free(slowest);
    s->forward_median_s = s->phase_median_s[PHASE_FORWARD];
    s->backward_median_s = s->phase_median_s[PHASE_BACKWARD];
    s->comm_exposed_median_s = s->phase_median_s[PHASE_COMM_EXPOSED];
    s->update_median_s = s->phase_median_s[PHASE_UPDATE];
    s->samples_per_s = (double)r->global_batch / s->step_median_s;
    s->samples_per_s_per_rank = s->samples_per_s / r->nranks;
    s->gemm_tflops = r->gemm_flops_per_step / s->step_median_s / 1e12;
    s->allreduce_alone_s = median_across(r->allreduce_alone, r->allreduce_reps, r->nranks, 0);
    s->compute_only_s = median_across(r->compute_only, r->iters, r->nranks, 0);
    s->compute_only_mean_s = median_across(r->compute_only, r->iters, r->nranks, 1);
    s->compute_only_backward_s = median_across(r->compute_only_backward, r->iters, r->nranks, 0);
    s->overlap_efficiency = r->nranks > 1 ? 1.0 - s->phase_median_s[PHASE_COMM_EXPOSED] / s->allreduce_alone_s : NAN;
    s->loss_compute = s->loss_imbalance = s->loss_interference = s->loss_comm = NAN;
    const double ar = s->allreduce_alone_s;
    s->allreduce_busbw_GBps = r->nranks > 1 && ar > 0 ? run_bus_bytes(r) / ar * (r->nranks - 1) / r->nranks / 1e9 : NAN;
    s->mfu = r->peak_tflops > 0 ? s->gemm_tflops / r->nranks / r->peak_tflops : NAN;
    s->joules_per_sample = r->energy_j / ((double)r->iters * r->global_batch);
    s->avg_power_w = r->energy_j / r->timed_wall_s / r->nranks;
    s->final_loss = r->final_loss;
    s->params_abs_sum = r->params_abs_sum;
    s->replica_max_abs_diff = r->replica_max_abs_diff;
    s->speedup = NAN;
    s->efficiency = NAN;
}

void stats_fill_scaling(struct run_summary *runs, int n)
{
    for (int i = 0; i < n; i++) {
        const struct run_summary *base = NULL;
        for (int j = 0; j < n; j++)
            if (runs[j].nranks == 1 && strcmp(runs[j].library, runs[i].library) == 0 && strcmp(runs[j].path, runs[i].path) == 0)
                base = &runs[j];
        if (base == NULL) continue;
        runs[i].speedup = runs[i].samples_per_s / base->samples_per_s;
        runs[i].efficiency = runs[i].speedup / runs[i].nranks;
        /* the ideal step: the 1-rank step scaled to this run's batch per rank */
        struct run_summary *r = &runs[i];
        const double ideal = base->step_median_s * r->batch_per_rank / base->batch_per_rank, step = r->step_median_s;
        r->loss_compute = (r->compute_only_mean_s - ideal) / step;
        r->loss_imbalance = (r->compute_only_s - r->compute_only_mean_s) / step;
        r->loss_interference = (r->backward_median_s - r->compute_only_backward_s) / step;
        r->loss_comm = (step - r->compute_only_s) / step - r->loss_interference;
    }
}

/* test_stats.c — percentiles, max over ranks, and the scaling figures. */
#include <stdlib.h>

#include "../../src/stats.h"
#include "check.h"

TEST(percentile_interpolates_like_numpy)
{
    const double v[] = {4, 1, 3, 2, 5};
    CHECK_NEAR(stats_percentile(v, 5, 50), 3.0, 1e-12);
    CHECK_NEAR(stats_percentile(v, 5, 0), 1.0, 1e-12);
    CHECK_NEAR(stats_percentile(v, 5, 100), 5.0, 1e-12);
    CHECK_NEAR(stats_percentile(v, 5, 5), 1.2, 1e-12);   /* numpy.percentile([1..5], 5) */
    CHECK_NEAR(stats_percentile(v, 5, 95), 4.8, 1e-12);
    const double even[] = {10, 20, 30, 40};
    CHECK_NEAR(stats_percentile(even, 4, 50), 25.0, 1e-12);
}

TEST(percentile_of_one_value_is_that_value)
{
    const double v[] = {7.5};
    CHECK_NEAR(stats_percentile(v, 1, 5), 7.5, 0);
    CHECK_NEAR(stats_percentile(v, 1, 95), 7.5, 0);
}

TEST(percentile_leaves_its_input_unsorted)
{
    double v[] = {3, 1, 2};
    stats_percentile(v, 3, 50);
    CHECK(v[0] == 3 && v[1] == 1 && v[2] == 2);
}

TEST(max_over_ranks_takes_the_slowest_rank_per_iteration)
{
    const double m[] = {1, 5, 2, /* iter 0 */ 7, 3, 4 /* iter 1 */};
    double out[2];
    stats_max_over_ranks(m, 2, 3, out);
    CHECK_NEAR(out[0], 5, 0);
    CHECK_NEAR(out[1], 7, 0);
}

static struct run_result fake_run(int nranks, double step_s, int batch)
{
    struct run_result r = {0};
    r.nranks = nranks;
    r.nnodes = 1;
    r.batch_per_rank = batch;
    r.global_batch = batch * nranks;
    r.iters = 3;
    r.allreduce_bytes = 1e9;
    r.gemm_flops_per_step = 1e12;
    snprintf(r.transport, sizeof r.transport, "mpi");
    for (int p = 0; p < NPHASES; p++) {
        r.times[p] = calloc((size_t)(3 * nranks), sizeof(double));
        for (int i = 0; i < 3 * nranks; i++) r.times[p][i] = p == PHASE_STEP ? step_s : step_s / 4;
    }
    r.times[PHASE_STEP][0] = step_s * 10; /* one slow iteration on rank 0: the median ignores it */
    r.allreduce_reps = 3;
    r.allreduce_alone = calloc((size_t)(3 * nranks), sizeof(double));
    for (int i = 0; i < 3 * nranks; i++) r.allreduce_alone[i] = step_s / 8;
    return r;
}

TEST(summary_uses_median_of_slowest_rank_and_efficiency_against_one_rank)
{
    struct run_result r1 = fake_run(1, 0.100, 32), r4 = fake_run(4, 0.125, 32);
    struct run_summary s[2];
    stats_summarize_run(&r1, &s[0]);
    stats_summarize_run(&r4, &s[1]);
    stats_fill_scaling(s, 2);
    CHECK_NEAR(s[0].step_median_s, 0.100, 1e-15);
    CHECK_NEAR(s[0].samples_per_s, 320.0, 1e-9);
    CHECK_NEAR(s[1].samples_per_s, 128.0 / 0.125, 1e-9);
    CHECK_NEAR(s[1].speedup, 1024.0 / 320.0, 1e-12);
    CHECK_NEAR(s[1].efficiency, 1024.0 / 320.0 / 4.0, 1e-12);
    CHECK_NEAR(s[0].efficiency, 1.0, 1e-15);
    /* busbw = bytes / time * 2(n-1)/n, time = the median of the allreduce by itself */
    CHECK_NEAR(s[1].allreduce_alone_s, 0.125 / 8, 1e-15);
    CHECK_NEAR(s[1].allreduce_busbw_gbps, 1e9 / (0.125 / 8) * 2.0 * 3 / 4 / 1e9, 1e-9);
    CHECK(isnan(s[0].allreduce_busbw_gbps));
    for (int p = 0; p < NPHASES; p++) { free(r1.times[p]); free(r4.times[p]); }
    free(r1.allreduce_alone);
    free(r4.allreduce_alone);
}

TEST(efficiency_is_nan_without_a_one_rank_run)
{
    struct run_result r2 = fake_run(2, 0.1, 8);
    struct run_summary s;
    stats_summarize_run(&r2, &s);
    stats_fill_scaling(&s, 1);
    CHECK(isnan(s.efficiency) && isnan(s.speedup));
    for (int p = 0; p < NPHASES; p++) free(r2.times[p]);
    free(r2.allreduce_alone);
}

int main(void) { return test_main("stats"); }

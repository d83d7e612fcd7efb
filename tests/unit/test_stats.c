/* test_stats.c — percentiles, max over ranks, and the scaling figures. */
#include <stdlib.h>

#include "train/stats.h"
#include "check.h"
#include "fake_run.h"

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
    CHECK_NEAR(s[1].allreduce_busbw_GBps, 1e9 / (0.125 / 8) * 2.0 * 3 / 4 / 1e9, 1e-9);
    CHECK(isnan(s[0].allreduce_busbw_GBps));
    run_result_free(&r1);
    run_result_free(&r4);
}

TEST(efficiency_is_nan_without_a_one_rank_run)
{
    struct run_result r2 = fake_run(2, 0.1, 8);
    struct run_summary s;
    stats_summarize_run(&r2, &s);
    stats_fill_scaling(&s, 1);
    CHECK(isnan(s.efficiency) && isnan(s.speedup));
    run_result_free(&r2);
}

TEST(decomposition_adds_up_to_the_lost_efficiency)
{
    struct run_result r1 = fake_run(1, 0.100, 32), r2 = fake_run(2, 0.125, 32);
    /* rank 1 computes slower than rank 0 in the compute-only pass: imbalance */
    for (int i = 0; i < 3; i++) r2.compute_only[i * 2 + 1] = 0.115;
    for (int i = 0; i < 3; i++) r2.compute_only[i * 2 + 0] = 0.105;
    struct run_summary s[2];
    stats_summarize_run(&r1, &s[0]);
    stats_summarize_run(&r2, &s[1]);
    stats_fill_scaling(s, 2);
    /* ideal 0.100, typical compute 0.110, slowest 0.115, step 0.125 */
    CHECK_NEAR(s[1].loss_compute, 0.010 / 0.125, 1e-12);
    CHECK_NEAR(s[1].loss_imbalance, 0.005 / 0.125, 1e-12);
    CHECK_NEAR(s[1].loss_comm, 0.010 / 0.125, 1e-12);
    CHECK_NEAR(s[1].loss_compute + s[1].loss_imbalance + s[1].loss_comm, 1.0 - s[1].efficiency, 1e-12);
    /* overlap efficiency: 1 - exposed (0.125/4 median) / alone (0.125/8) */
    CHECK_NEAR(s[1].overlap_efficiency, 1.0 - (0.125 / 4) / (0.125 / 8), 1e-12);
    run_result_free(&r1);
    run_result_free(&r2);
}

int main(void) { return test_main("stats"); }

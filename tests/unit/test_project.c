/* test_project.c — the projection's allreduce curve and its step simulation, on cases
 * worked out by hand (docs/PROJECTION.md). */
#include "project/project.h"
#include "check.h"

/* 1 MB in 10 us, 100 MB in 1 ms (100 GB/s algbw), 2 GPUs */
static struct allreduce_curve curve2(void)
{
    struct allreduce_curve c = {.gpus = 2, .nodes = 1, .npoints = 2};
    c.size_bytes[0] = 1e6;
    c.time_s[0] = 10e-6;
    c.size_bytes[1] = 100e6;
    c.time_s[1] = 1e-3;
    return c;
}

TEST(curve_interpolates_in_log_log_and_extends_by_latency_and_bandwidth)
{
    const struct allreduce_curve c = curve2();
    CHECK_NEAR(allreduce_curve_time(&c, 1e6), 10e-6, 1e-15);
    CHECK_NEAR(allreduce_curve_time(&c, 10e6), 100e-6, 1e-12); /* a power law between the points */
    CHECK_NEAR(allreduce_curve_time(&c, 1e3), 10e-6, 1e-15);   /* below: the smallest message's time */
    CHECK_NEAR(allreduce_curve_time(&c, 200e6), 2e-3, 1e-12);  /* above: the largest message's bandwidth */
    CHECK_NEAR(allreduce_curve_time(&c, 0), 0, 0);
}

TEST(busbw_gives_the_ring_time)
{
    /* 2 (N-1)/N S / busbw: 8 GPUs, 1 GB at 100 GB/s busbw = 17.5 ms, plus latency */
    CHECK_NEAR(allreduce_time_from_busbw(8, 1e9, 100, 20e-6), 1.75e-2 + 20e-6, 1e-12);
    CHECK_NEAR(allreduce_time_from_busbw(1, 1e9, 100, 20e-6), 0, 0);
}

static const double ready[] = {0.004, 0.008, 0.010}; /* backward 10 ms, three buckets */
static const double bytes[] = {10e6, 10e6, 10e6};    /* 100 us each on curve2 */

TEST(one_gpu_communicates_nothing)
{
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 1, 0.0};
    const struct projection_terms t = {1.0, 0.5, 0.002, 0.0, 0.0};
    struct projected_step s;
    project_step(&p, &t, NULL, &s);
    CHECK_NEAR(s.step_s, 0.016, 1e-15);
    CHECK(s.comm_s == 0 && s.exposed_s == 0 && s.imbalance_s == 0);
}

TEST(overlapped_buckets_leave_the_last_one_exposed)
{
    const struct allreduce_curve c = curve2();
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 1, 0.0};
    const struct projection_terms t = {1.0, 0.0, 0.0, 0.0, 0.0};
    struct projected_step s;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.comm_s, 300e-6, 1e-12);
    CHECK_NEAR(s.exposed_s, 100e-6, 1e-12); /* the first two end inside backward */
    CHECK_NEAR(s.step_s, 0.0161, 1e-12);
}

TEST(a_slow_link_queues_the_buckets)
{
    struct allreduce_curve c = curve2();
    c.time_s[0] *= 50; /* 10e6 bytes now take 5 ms each: 4-9, 9-14, 14-19 ms */
    c.time_s[1] *= 50;
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 1, 0.0};
    const struct projection_terms t = {1.0, 0.0, 0.0, 0.0, 0.0};
    struct projected_step s;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.exposed_s, 0.009, 1e-12);
}

TEST(interference_stretches_backward_and_its_timeline)
{
    const struct allreduce_curve c = curve2();
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 1, 0.0};
    const struct projection_terms t = {1.0, 0.1, 0.0005, 0.0, 0.0};
    struct projected_step s;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.backward_s, 0.011, 1e-12);
    CHECK_NEAR(s.exposed_s, 100e-6, 1e-12); /* the last bucket, ready at 11 ms */
    CHECK_NEAR(s.step_s, 0.005 + 0.011 + 100e-6 + 0.001 + 0.0005, 1e-12);
}

TEST(interference_per_share_grows_with_the_communication_beside_backward)
{
    struct allreduce_curve c = curve2(); /* 3 buckets of 10e6 bytes, 100 us each: 0.3 ms beside 10 ms */
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 1, 0.0};
    const struct projection_terms t = {1.0, 0.0, 0.0, 0.5, 0.0};
    struct projected_step s;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.backward_s, 0.010 * (1.0 + 0.5 * 0.03), 1e-12);
    c.time_s[0] *= 1000; /* communication longer than backward: the whole of it is beside communication */
    c.time_s[1] *= 1000;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.backward_s, 0.010 * 1.5, 1e-12);
    const struct step_profile off = {0.005, 0.010, 0.001, 3, ready, bytes, 0, 0.0};
    project_step(&off, &t, &c, &s); /* overlap off: nothing runs beside backward */
    CHECK_NEAR(s.backward_s, 0.010, 1e-12);
}

TEST(overlap_off_reduces_everything_after_backward)
{
    const struct allreduce_curve c = curve2();
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 0, 0.0};
    const struct projection_terms t = {2.0, 0.0, 0.0, 0.0, 0.0}; /* and a GPU twice as slow */
    struct projected_step s;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.exposed_s, 300e-6, 1e-12);
    CHECK_NEAR(s.step_s, 0.010 + 0.020 + 300e-6 + 0.002, 1e-12);
}

TEST(the_update_after_communication_replaces_the_update_left_on_several_gpus_only)
{
    const struct allreduce_curve c = curve2();
    /* overlap off: the whole update (8 ms) follows the allreduce; 1 ms was left at 1 GPU */
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 0, 0.008};
    const struct projection_terms t = {1.0, 0.0, 0.0, 0.0, 0.0};
    struct projected_step s;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.update_s, 0.008, 1e-15);
    CHECK_NEAR(s.step_s, 0.005 + 0.010 + 300e-6 + 0.008, 1e-12);
    project_step(&p, &t, NULL, &s); /* 1 GPU: the update left, as measured */
    CHECK_NEAR(s.update_s, 0.001, 1e-15);
    const struct step_profile unknown = {0.005, 0.010, 0.001, 3, ready, bytes, 0, 0.0};
    project_step(&unknown, &t, &c, &s); /* not known: the update left */
    CHECK_NEAR(s.update_s, 0.001, 1e-15);
}

TEST(forward_changes_by_its_own_fraction_on_several_gpus_only)
{
    const struct allreduce_curve c = curve2();
    const struct step_profile p = {0.005, 0.010, 0.001, 3, ready, bytes, 1, 0.0};
    const struct projection_terms t = {2.0, 0.0, 0.0, 0.0, -0.1}; /* 10 % faster beside idle time, on a GPU 2x slower */
    struct projected_step s;
    project_step(&p, &t, &c, &s);
    CHECK_NEAR(s.forward_s, 0.005 * 2.0 * 0.9, 1e-15);
    CHECK_NEAR(s.backward_s, 0.020, 1e-15);
    project_step(&p, &t, NULL, &s);
    CHECK_NEAR(s.forward_s, 0.010, 1e-15);
}

int main(void) { return test_main("project"); }

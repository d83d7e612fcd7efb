/* test_result_estimate.c — the room a launch's result file is planned to take, which
 * result_file_prepare checks before any work: the per-bucket datasets are sized from
 * the bucket plan that training cuts (a tensor opens at most one bucket), not from
 * the gradient's size over comm.bucket_mb, which for a tiny bucket size counted
 * thousands of buckets a plan of a few never has, and refused runs that fit. */
#include "train/buckets.h"
#include "config/config.h"
#include "model/model.h"
#include "model/registry.h"
#include "cli/result_file.h"
#include "check.h"

static struct config g_cfg;
static struct model g_model;

/* An MLP of 3 layers, 24 -> 512 -> 512 -> 5 (278,021 parameters, 6 tensors), a sweep 1,2. */
static void load(const char *bucket_mb, const char *overlap)
{
    char err[512];
    char *argv[] = {"run", "--model.layers=3", "--model.hidden_dim=512", "--model.input_dim=24", "--model.classes=5",
                    "--run.sweep=1,2", "--train.iters=200", (char *)bucket_mb, (char *)overlap, NULL};
    CHECK(config_load(&g_cfg, 9, argv, err, sizeof err) == 0);
    model_free(&g_model);
    CHECK(model_describe(&g_cfg, &g_model, err, sizeof err) == 0);
}

static int plan_buckets(void)
{
    struct bucket_plan plan;
    bucket_plan_make(&g_model, g_cfg.overlap, g_cfg.bucket_mb, g_cfg.first_bucket_mb, &plan);
    if (g_cfg.overlap) bucket_plan_split_last_if_used(&g_model, g_cfg.last_layer_chunks, &plan);
    const int n = plan.nbuckets;
    bucket_plan_free(&plan);
    return n;
}

/* The estimate's form: fixed groups, parameters, and per step, rank and point 16
 * figures plus 4 per bucket, 8 bytes each (200 steps; 1 + 2 ranks). */
static double expected(int buckets)
{
    return 4e6 + 8.0 * (double)g_model.nparams + 200.0 * 3.0 * 8.0 * (16.0 + 4.0 * buckets);
}

TEST(a_tiny_bucket_size_counts_the_buckets_of_the_plan)
{
    load("--comm.bucket_mb=0.001", "--comm.overlap=on");
    const int n = plan_buckets();
    CHECK(n >= 1 && n <= g_model.ntensors + g_cfg.last_layer_chunks);
    CHECK_NEAR(result_file_planned_bytes(&g_cfg, &g_model), expected(n), 1.0);
    /* gradient bytes over 1 kB would be 1,112 buckets: 21 MB more than the plan's */
    CHECK(result_file_planned_bytes(&g_cfg, &g_model) < expected(40));
}

TEST(overlap_off_is_one_bucket)
{
    load("--comm.bucket_mb=0.001", "--comm.overlap=off");
    CHECK(plan_buckets() == 1);
    CHECK_NEAR(result_file_planned_bytes(&g_cfg, &g_model), expected(1), 1.0);
}

TEST(a_file_without_a_model_has_no_buckets)
{
    load("--comm.bucket_mb=25", "--comm.overlap=on");
    CHECK_NEAR(result_file_planned_bytes(&g_cfg, NULL), 4e6 + 200.0 * 3.0 * 8.0 * 16.0, 1.0);
}

int main(void)
{
    const int rc = test_main("result_estimate");
    model_free(&g_model);
    return rc;
}

/* test_memory_plan.c — the memory plan is what the step allocates: a backend whose
 * alloc counts the bytes it hands out runs step_buffers_alloc, and the count must
 * equal step_plan_memory's device figures (the same layout decides both). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/backend.h"
#include "config/config.h"
#include "base/memlimit.h"
#include "model/model.h"
#include "model/registry.h"
#include "model/step.h"
#include "check.h"

static size_t g_allocated;

static void *counting_alloc(struct backend *b, size_t bytes)
{
    (void)b;
    g_allocated += bytes;
    return calloc(bytes ? bytes : 1, 1);
}

static void counting_free(struct backend *b, void *p)
{
    (void)b;
    free(p);
}

/* The cpu backend with its allocations counted. */
static struct backend counting_backend(struct backend_ops *ops, int act_dtype)
{
    *ops = backend_cpu_ops;
    ops->alloc = counting_alloc;
    ops->free = counting_free;
    return (struct backend){.ops = ops, .tf = &cpu_tf_ops, .rn = &cpu_rn_ops, .act_dtype = act_dtype,
                            .info = {.device_index = -1}};
}

static struct config load(int argc, char **argv)
{
    struct config c;
    char err[512];
    if (config_load(&c, argc, argv, err, sizeof err) != 0) printf("    config: %s\n", err);
    return c;
}

/* Allocated bytes of step_buffers_alloc for (cfg, act_dtype, B, steps) against the plan. */
static void check_plan_is_allocation(const struct config *c, int act_dtype, int B, int steps, size_t model_scratch)
{
    struct backend_ops ops;
    struct backend be = counting_backend(&ops, act_dtype);
    struct model m;
    struct memory_plan p;
    char err[256];
    CHECK(model_describe(c, &m, err, sizeof err) == 0);
    if (m.ops->supported != NULL) m.ops->supported(&m, &be, err, sizeof err);
    CHECK(step_plan_memory(c, &m, act_dtype, B, steps, &p, err, sizeof err) == 0);
    struct step_buffers rb;
    g_allocated = 0;
    step_buffers_alloc(&be, c, &m, B, steps, &rb);
    const size_t allocated = g_allocated;
    step_buffers_free(&be, &m, &rb);
    if (p.device_bytes != allocated + model_scratch)
        printf("    plan %zu bytes, allocated %zu + backend scratch %zu\n", p.device_bytes, allocated, model_scratch);
    CHECK(p.device_bytes == allocated + model_scratch);
    model_free(&m);
}

TEST(mlp_plan_is_what_step_buffers_alloc_allocates_fp32_adamw)
{
    char *argv[] = {"run", "--model.layers=4", "--model.input_dim=33", "--model.hidden_dim=70", "--model.classes=9",
                    "--train.optimizer=adamw", NULL};
    struct config c = load(6, argv);
    check_plan_is_allocation(&c, DT_F32, 13, 7, 0);
}

TEST(mlp_plan_is_what_step_buffers_alloc_allocates_bf16_sgd_and_16bit_gradients)
{
    char *argv[] = {"run", "--model.layers=3", "--model.input_dim=16", "--model.hidden_dim=24", "--model.classes=5",
                    "--train.optimizer=sgd", "--train.grad_dtype=compute", "--train.optimizer_state=compute", NULL};
    struct config c = load(8, argv);
    check_plan_is_allocation(&c, DT_BF16, 6, 3, 0);
}

TEST(gpt_plan_is_the_allocation_plus_the_cuda_attention_scratch)
{
    char *argv[] = {"run", "--model.type=gpt", "--model.layers=2", "--model.hidden_dim=32", "--model.heads=4",
                    "--model.seq_len=16", "--model.vocab=100", NULL};
    struct config c = load(7, argv);
    const int B = 3;
    /* dP of every head: the cuda backend's scratch, planned on every backend */
    check_plan_is_allocation(&c, DT_F32, B, 5, (size_t)B * 4 * 16 * 16 * sizeof(float));
}

TEST(bert_plan_is_the_allocation_plus_the_cuda_attention_scratch)
{
    char *argv[] = {"run", "--model.type=bert", "--model.layers=2", "--model.hidden_dim=32", "--model.heads=2",
                    "--model.seq_len=20", "--model.vocab=90", NULL};
    struct config c = load(7, argv);
    const int B = 2;
    check_plan_is_allocation(&c, DT_F32, B, 4, (size_t)B * 2 * 20 * 20 * sizeof(float));
}

TEST(resnet_plan_is_what_step_buffers_alloc_allocates_fp32_and_bf16)
{
    char *argv[] = {"run", "--model.type=resnet", "--model.image_size=20", "--model.blocks=1,2,1",
                    "--model.width=4", "--model.classes=7", "--train.optimizer=adamw", NULL};
    struct config c = load(7, argv);
    check_plan_is_allocation(&c, DT_F32, 3, 5, 0);
    check_plan_is_allocation(&c, DT_BF16, 2, 4, 0);
}

/* A file of `text` at dir/name (the folders made first). */
static void put(const char *dir, const char *name, const char *text)
{
    char path[512], cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    CHECK(system(cmd) == 0);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f != NULL) {
        fputs(text, f);
        fclose(f);
    }
}

static void fake_tree(char *base, size_t len)
{
    snprintf(base, len, "/tmp/dpscale-cgroup-test-%d", (int)getpid());
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
}

TEST(cgroup_v2_headroom_is_the_tightest_level_up_to_the_root)
{
    char base[256], dir[400], proc[400];
    unsigned long long headroom = 0;
    const char *which = NULL;
    fake_tree(base, sizeof base);
    put(base, "cgroup", "0::/job/step\n");
    snprintf(dir, sizeof dir, "%s/fs/job", base);
    put(dir, "memory.max", "1000\n"); /* the job's limit binds the step */
    put(dir, "memory.current", "300\n");
    snprintf(dir, sizeof dir, "%s/fs/job/step", base);
    put(dir, "memory.max", "max\n");
    put(dir, "memory.current", "200\n");
    snprintf(proc, sizeof proc, "%s/cgroup", base);
    snprintf(dir, sizeof dir, "%s/fs", base);
    CHECK(memlimit_cgroup_headroom(proc, dir, &headroom, &which) == 0);
    CHECK(headroom == 700);
    CHECK(which != NULL && strstr(which, "memory.max") != NULL);
}

TEST(cgroup_v1_memory_controller_is_the_fallback)
{
    char base[256], dir[400], proc[400];
    unsigned long long headroom = 0;
    const char *which = NULL;
    fake_tree(base, sizeof base);
    put(base, "cgroup", "5:cpu,cpuacct:/\n4:memory:/slurm/uid_0\n0::/\n");
    snprintf(dir, sizeof dir, "%s/fs/memory/slurm", base);
    put(dir, "memory.limit_in_bytes", "5000\n");
    put(dir, "memory.usage_in_bytes", "1000\n");
    snprintf(dir, sizeof dir, "%s/fs/memory/slurm/uid_0", base);
    put(dir, "memory.limit_in_bytes", "9223372036854771712\n"); /* v1's "no limit" */
    put(dir, "memory.usage_in_bytes", "100\n");
    snprintf(proc, sizeof proc, "%s/cgroup", base);
    snprintf(dir, sizeof dir, "%s/fs", base);
    CHECK(memlimit_cgroup_headroom(proc, dir, &headroom, &which) == 0);
    CHECK(headroom == 4000);
    CHECK(which != NULL && strstr(which, "v1") != NULL);
}

TEST(a_cgroup_without_limits_is_no_limit)
{
    char base[256], dir[400], proc[400];
    unsigned long long headroom = 0;
    const char *which = NULL;
    fake_tree(base, sizeof base);
    put(base, "cgroup", "0::/a\n");
    snprintf(dir, sizeof dir, "%s/fs/a", base);
    put(dir, "memory.max", "max\n");
    put(dir, "memory.current", "12345\n");
    snprintf(proc, sizeof proc, "%s/cgroup", base);
    snprintf(dir, sizeof dir, "%s/fs", base);
    CHECK(memlimit_cgroup_headroom(proc, dir, &headroom, &which) != 0);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    CHECK(system(cmd) == 0);
}

TEST(the_host_limit_is_known_and_named_here)
{
    struct mem_limit one, four;
    memlimit_host(1, &one);
    memlimit_host(4, &four);
    CHECK(one.bytes > 0 && one.source[0] != '\0');
    CHECK(four.bytes <= one.bytes); /* the node's memory is shared by its ranks */
}

int main(void) { return test_main("memory_plan"); }

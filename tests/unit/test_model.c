/* test_model.c — the MLP behind the model seam: layer shapes, the tensor table and
 * its arena layout, FLOPs, and the memory plan with its overflow checks. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/error.h"
#include "model/model.h"
#include "model/registry.h"
#include "model/families/mlp.h"
#include "model/step.h"
#include "check.h"

static struct config small_config(void)
{
    struct config c;
    char err[256], *argv[] = {"run", "--model.layers=3", "--model.input_dim=5", "--model.hidden_dim=7",
                              "--model.classes=2", NULL};
    config_load(&c, 5, argv, err, sizeof err);
    return c;
}

TEST(shapes_chain_input_hidden_classes)
{
    struct config c = small_config();
    static struct model m;
    char err[256];
    CHECK(model_describe(&c, &m, err, sizeof err) == 0);
    CHECK(mlp_of(&m)->layers[0].in == 5 && mlp_of(&m)->layers[0].out == 7);
    CHECK(mlp_of(&m)->layers[1].in == 7 && mlp_of(&m)->layers[1].out == 7);
    CHECK(mlp_of(&m)->layers[2].in == 7 && mlp_of(&m)->layers[2].out == 2 && mlp_of(&m)->layers[2].act == ACT_NONE);
    CHECK(m.nparams == (size_t)(5 * 7 + 7 + 7 * 7 + 7 + 7 * 2 + 2));
}

TEST(arena_is_in_backward_order_and_has_no_gaps)
{
    struct config c = small_config();
    static struct model m;
    char err[256];
    model_describe(&c, &m, err, sizeof err);
    CHECK(mlp_of(&m)->layers[2].b_offset == 0);             /* the last layer comes first */
    CHECK(mlp_of(&m)->layers[2].w_offset == 2);
    CHECK(mlp_of(&m)->layers[1].b_offset == 2 + 14);
    CHECK(mlp_of(&m)->layers[0].w_offset + 35 == m.nparams); /* the first layer ends the arena */
}

TEST(the_table_lists_every_tensor_in_backward_order_without_gaps)
{
    struct config c = small_config();
    static struct model m;
    char err[256];
    model_describe(&c, &m, err, sizeof err);
    CHECK(m.type == MODEL_MLP && m.nstages == 3 && m.ntensors == 6 && m.unit == UNIT_SAMPLES);
    size_t at = 0;
    for (int i = 0; i < m.ntensors; i++) {
        const struct param_tensor *t = &m.tensors[i];
        CHECK(t->offset == at && t->count == (size_t)t->rows * (size_t)t->cols);
        if (i > 0) CHECK(t->stage <= m.tensors[i - 1].stage); /* stages never increase along the arena */
        at += t->count;
    }
    CHECK(at == m.nparams);
    CHECK_CONTAINS(m.tensors[0].name, "layer2.bias");
    CHECK(m.tensors[0].kind == TENSOR_VECTOR && m.tensors[0].cols == 2 && m.tensors[0].stage == 2);
    CHECK_CONTAINS(m.tensors[5].name, "layer0.weight");
    CHECK(m.tensors[5].kind == TENSOR_MATRIX && m.tensors[5].rows == 7 && m.tensors[5].cols == 5);
    size_t lo, hi;
    CHECK(model_stage_range(&m, 1, &lo, &hi) == 0 && lo == mlp_of(&m)->layers[1].b_offset && hi == lo + 7 + 49);
    CHECK(model_stage_range(&m, 3, &lo, &hi) != 0);
}

TEST(the_table_never_wraps_its_sizes_and_refuses_empty_tensors)
{
    static struct model m;
    memset(&m, 0, sizeof m);
    int added = 0, refused = 0;
    for (int i = 0; i < 8 && !refused; i++) { /* 4.6e18 elements each: the fifth cannot fit a size_t */
        if (model_add_tensor(&m, "huge", TENSOR_MATRIX, 2147483647, 2147483647, 0) == 0) added++;
        else refused = 1;
    }
    CHECK(refused && added == 4 && m.ntensors == 4);
    CHECK(model_add_tensor(&m, "empty", TENSOR_VECTOR, 1, 0, 0) != 0 && m.ntensors == 4);
    model_free(&m);
}

TEST(flops_count_forward_and_both_backward_gemms)
{
    struct config c = small_config();
    static struct model m;
    char err[256];
    model_describe(&c, &m, err, sizeof err);
    /* layer 0 has no input gradient: 4 flops per MAC; the others 6 */
    CHECK_NEAR(model_gemm_flops_per_sample(&m), 4.0 * 35 + 6.0 * 49 + 6.0 * 14, 0);
}

TEST(memory_plan_adds_up)
{
    struct config c = small_config();
    static struct model m;
    struct memory_plan p;
    char err[256];
    model_describe(&c, &m, err, sizeof err);
    c.optimizer = OPT_ADAMW;
    CHECK(step_plan_memory(&c, &m, DT_F32, 10, 4, &p, err, sizeof err) == 0);
    CHECK(p.params_bytes == m.nparams * 4 && p.optimizer_bytes == 2 * m.nparams * 4);
    CHECK(p.total_bytes == p.params_bytes + p.grads_bytes + p.optimizer_bytes + p.activations_bytes + p.data_bytes);
    CHECK(p.device_bytes == p.total_bytes && p.host_bytes == 0 && p.comm_bytes == 0);
    CHECK(p.data_bytes == 10 * 5 * 4 + 10 * 4 + 4 * 4);
}

TEST(memory_plan_in_bf16_halves_activations_and_adds_a_weight_copy)
{
    struct config c = small_config();
    static struct model m;
    struct memory_plan p32, p16;
    char err[256];
    model_describe(&c, &m, err, sizeof err);
    c.optimizer = OPT_SGD;
    CHECK(step_plan_memory(&c, &m, DT_F32, 10, 4, &p32, err, sizeof err) == 0);
    CHECK(step_plan_memory(&c, &m, DT_BF16, 10, 4, &p16, err, sizeof err) == 0);
    CHECK(p16.activations_bytes * 2 == p32.activations_bytes);
    CHECK(p16.params_bytes == m.nparams * 6);
}

TEST(memory_plan_overflow_is_reported_not_wrapped)
{
    struct config c = small_config();
    static struct model m;
    struct memory_plan p;
    char err[256];
    c.hidden_dim = 1048576;
    c.layers = 4096;
    CHECK(model_describe(&c, &m, err, sizeof err) == 0); /* 4.5e15 parameters still fit a size_t */
    CHECK(step_plan_memory(&c, &m, DT_F32, 1073741824, 1, &p, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "overflows a 64-bit size");
}

TEST(size_helpers_detect_overflow)
{
    size_t out;
    CHECK(dp_size_mul_checked(SIZE_MAX / 2, 3, &out) != 0);
    CHECK(dp_size_mul_checked(1 << 20, 1 << 20, &out) == 0 && out == (size_t)1 << 40);
    CHECK(dp_size_add_checked(SIZE_MAX, 1, &out) != 0);
    CHECK(dp_size_mul_checked(0, SIZE_MAX, &out) == 0 && out == 0);
}

TEST(init_is_deterministic_and_scaled_by_fan_in)
{
    struct config c = small_config();
    static struct model m;
    char err[256];
    model_describe(&c, &m, err, sizeof err);
    float *a = calloc(m.nparams, sizeof(float)), *b = calloc(m.nparams, sizeof(float));
    model_init_params(&m, 42, a);
    model_init_params(&m, 42, b);
    CHECK(model_params_hash(a, m.nparams) == model_params_hash(b, m.nparams));
    float bound = sqrtf(3.0f / 5.0f);
    for (size_t i = 0; i < 35; i++) CHECK(fabsf(a[mlp_of(&m)->layers[0].w_offset + i]) <= bound);
    CHECK(a[mlp_of(&m)->layers[0].b_offset] == 0.0f);
    model_init_params(&m, 43, b);
    CHECK(model_params_hash(a, m.nparams) != model_params_hash(b, m.nparams));
    free(a);
    free(b);
}

int main(void) { return test_main("model"); }

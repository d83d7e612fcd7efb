/* test_resnet_model.c — the ResNet's table through the model seam: ResNet-50 has
 * torchvision's parameter count and the GEMM FLOPs of its 4.09 G multiply-adds, the
 * tensors are in backward order with torchvision's names and KRSC weight shapes, and
 * impossible shapes and backends are refused with the key to change. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "config/config.h"
#include "model/model.h"
#include "model/registry.h"
#include "model/families/resnet.h"
#include "model/step.h"
#include "check.h"

/* model_describe of `run ARGS...`: 0, or -1 with the message in err. */
static int describe(struct model *m, char *err, size_t len, int argc, char **argv)
{
    struct config c;
    if (config_load(&c, argc, argv, err, len) != 0) return -1;
    return model_describe(&c, m, err, len);
}

static const struct param_tensor *find(const struct model *m, const char *name)
{
    for (int i = 0; i < m->ntensors; i++)
        if (strcmp(m->tensors[i].name, name) == 0) return &m->tensors[i];
    return NULL;
}

static int describe_resnet50(struct model *m)
{
    char err[256];
    char *argv[] = {"run", "--model.type=resnet", "--model.image_size=224", "--model.blocks=3,4,6,3",
                    "--model.width=64", "--model.classes=1000", NULL};
    const int rc = describe(m, err, sizeof err, 6, argv);
    if (rc != 0) printf("    %s\n", err);
    return rc;
}

TEST(resnet50_has_torchvisions_parameter_count_and_flops)
{
    struct model m;
    CHECK(describe_resnet50(&m) == 0);
    CHECK(m.nparams == 25557032); /* sum(p.numel() for p in torchvision.models.resnet50().parameters()) */
    /* 4,089,184,256 multiply-adds forward (convolutions and the dense layer); a training
     * step is 3 times the forward's FLOPs but for the stem's input gradient (118,013,952
     * multiply-adds), which nothing needs */
    CHECK(m.flops_per_sample == 6.0 * 4089184256.0 - 2.0 * 118013952.0);
    CHECK(m.nstages == 18 && m.unit == UNIT_IMAGES && m.units_per_sample == 1);
    const struct resnet *p = resnet_of(&m);
    CHECK(p->stem.P == 112 && p->pool == 56 && p->feat == 2048 && p->feat_hw == 49);
    model_free(&m);
}

TEST(resnet50_table_is_in_backward_order_with_krsc_weights)
{
    struct model m;
    CHECK(describe_resnet50(&m) == 0);
    CHECK(strcmp(m.tensors[0].name, "fc.bias") == 0 && m.tensors[0].stage == 17);
    CHECK(strcmp(m.tensors[m.ntensors - 1].name, "conv1.weight") == 0 && m.tensors[m.ntensors - 1].stage == 0);
    size_t next = 0;
    for (int i = 0; i < m.ntensors; i++) {
        CHECK(m.tensors[i].offset == next);
        next += m.tensors[i].count;
        if (i > 0) CHECK(m.tensors[i].stage <= m.tensors[i - 1].stage);
    }
    CHECK(next == m.nparams);
    /* [Cout x R*S*Cin] */
    const struct param_tensor *t = find(&m, "conv1.weight");
    CHECK(t != NULL && t->rows == 64 && t->cols == 7 * 7 * 3 && t->kind == TENSOR_MATRIX);
    t = find(&m, "layer1.0.conv2.weight");
    CHECK(t != NULL && t->rows == 64 && t->cols == 9 * 64 && t->stage == 1);
    t = find(&m, "layer2.0.conv2.weight"); /* v1.5: the stride is on this 3x3 */
    CHECK(t != NULL && t->rows == 128 && t->cols == 9 * 128 && t->stage == 4);
    t = find(&m, "layer4.2.conv3.weight");
    CHECK(t != NULL && t->rows == 2048 && t->cols == 512 && t->stage == 16);
    t = find(&m, "layer3.0.downsample.conv.weight");
    CHECK(t != NULL && t->rows == 1024 && t->cols == 512);
    t = find(&m, "layer3.5.bn3.gamma");
    CHECK(t != NULL && t->kind == TENSOR_VECTOR && t->cols == 1024);
    CHECK(find(&m, "layer1.1.downsample.conv.weight") == NULL); /* only a stage's first block projects */
    t = find(&m, "fc.weight");
    CHECK(t != NULL && t->rows == 1000 && t->cols == 2048);
    const struct resnet *p = resnet_of(&m);
    CHECK(p->blk[3].stage == 1 && p->blk[3].H == 56 && p->blk[3].P == 28 && p->blk[3].c2.stride == 2);
    CHECK(p->blk[3].c1.stride == 1 && p->blk[3].cp.stride == 2);
    model_free(&m);
}

TEST(impossible_resnets_are_refused_naming_the_fix)
{
    struct {
        const char *arg, *want;
    } cases[] = {
        {"--model.blocks=", "model.blocks"},
        {"--model.blocks=1,1,1,1,1,1,1,1,1", "model.blocks"},
        {"--model.width=60000", "model.width"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct model m;
        char err[256] = "";
        char *argv[] = {"run", "--model.type=resnet", (char *)cases[i].arg, NULL};
        CHECK(describe(&m, err, sizeof err, 3, argv) != 0);
        CHECK_CONTAINS(err, cases[i].want);
    }
}

TEST(a_backend_without_the_resnet_operations_is_refused)
{
    struct model m;
    char err[256] = "";
    char *argv[] = {"run", "--model.type=resnet", "--model.image_size=32", "--model.blocks=1,2", "--model.width=8", NULL};
    CHECK(describe(&m, err, sizeof err, 5, argv) == 0);
    struct backend be = {.ops = &backend_cpu_ops, .rn = &cpu_rn_ops};
    CHECK(m.ops->supported(&m, &be, err, sizeof err) == 0);
    be.rn = NULL; /* a backend without them */
    CHECK(m.ops->supported(&m, &be, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "the cpu backend lacks the resnet's operations; use --backend=cpu");
    struct rn_ops partial = cpu_rn_ops; /* a table with one of them missing */
    partial.batchnorm_backward = NULL;
    be.rn = &partial;
    err[0] = '\0';
    CHECK(m.ops->supported(&m, &be, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "the cpu backend lacks the resnet's operations; use --backend=cpu");
    model_free(&m);
}

int main(void) { return test_main("resnet_model"); }

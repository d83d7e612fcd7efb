/* model.c — the model seam (model.h): the tensor table's bookkeeping, the memory
 * plan, and the figures every model shares. Which family describes the model a
 * config asks for is the registry's (registry.c). */
#include "model/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "model/step.h"

#define MODEL_TABLE_GROW 64

void model_free(struct model *m)
{
    if (m == NULL) return;
    if (m->ops != NULL && m->ops->free != NULL) m->ops->free(m);
    free(m->tensors);
    free(m->stage_lo);
    free(m->stage_hi);
    m->tensors = NULL;
    m->stage_lo = m->stage_hi = NULL;
    m->ntensors = m->nranges = 0;
}

int model_add_tensor(struct model *m, const char *name, int kind, int rows, int cols, int stage)
{
    size_t count, end;
    if (rows < 1 || cols < 1 || dp_size_mul_checked((size_t)rows, (size_t)cols, &count) != 0 ||
        dp_size_add_checked(m->nparams, count, &end) != 0)
        return -1;
    if (m->ntensors > 0 && stage > m->tensors[m->ntensors - 1].stage)
        DP_FATAL(NULL, "model table: tensor %s of stage %d after stage %d (the arena is in backward order)", name,
                 stage, m->tensors[m->ntensors - 1].stage);
    if (m->ntensors % MODEL_TABLE_GROW == 0) {
        struct param_tensor *more = realloc(m->tensors, (size_t)(m->ntensors + MODEL_TABLE_GROW) * sizeof *more);
        CHECK_ALLOC(more);
        m->tensors = more;
    }
    struct param_tensor *t = &m->tensors[m->ntensors++];
    memset(t, 0, sizeof *t);
    snprintf(t->name, sizeof t->name, "%s", name);
    t->kind = kind;
    t->rows = rows;
    t->cols = cols;
    t->offset = m->nparams;
    t->count = count;
    t->stage = stage;
    if (stage >= m->nranges) { /* the first tensor has the highest stage: the ranges grow once */
        size_t *lo = realloc(m->stage_lo, (size_t)(stage + 1) * sizeof *lo);
        size_t *hi = realloc(m->stage_hi, (size_t)(stage + 1) * sizeof *hi);
        CHECK_ALLOC(lo);
        CHECK_ALLOC(hi);
        for (int s = m->nranges; s <= stage; s++) lo[s] = hi[s] = 0;
        m->stage_lo = lo;
        m->stage_hi = hi;
        m->nranges = stage + 1;
    }
    if (m->stage_lo[stage] == m->stage_hi[stage]) m->stage_lo[stage] = t->offset; /* its first tensor */
    m->stage_hi[stage] = end; /* a stage's tensors are contiguous: stages never increase along the arena */
    m->nparams = end;
    return 0;
}

int model_stage_range(const struct model *m, int stage, size_t *lo, size_t *hi)
{
    if (stage < 0 || stage >= m->nranges || m->stage_lo[stage] == m->stage_hi[stage]) return -1;
    *lo = m->stage_lo[stage];
    *hi = m->stage_hi[stage];
    return 0;
}

const char *model_unit_name(int unit)
{
    return unit == UNIT_TOKENS ? "tokens" : unit == UNIT_IMAGES ? "images" : "samples";
}

int model_add_bytes(size_t *total, size_t a, size_t b, size_t elem)
{
    size_t p;
    if (dp_size_mul_checked(a, b, &p) != 0 || dp_size_mul_checked(p, elem, &p) != 0) return -1;
    return dp_size_add_checked(*total, p, total);
}

int model_plan_sum(struct memory_plan *plan)
{
    const size_t device[] = {plan->params_bytes, plan->grads_bytes, plan->optimizer_bytes, plan->activations_bytes,
                             plan->data_bytes, plan->comm_bytes};
    size_t total = 0;
    int bad = 0;
    for (size_t i = 0; i < sizeof device / sizeof device[0]; i++) bad |= dp_size_add_checked(total, device[i], &total);
    plan->device_bytes = total;
    bad |= dp_size_add_checked(total, plan->host_bytes, &total);
    plan->total_bytes = total;
    return bad ? -1 : 0;
}

double model_gemm_flops_per_sample(const struct model *m) { return m->flops_per_sample; }

void model_init_params(const struct model *m, uint64_t seed, float *params) { m->ops->init_params(m, seed, params); }

uint64_t model_params_hash(const float *params, size_t n)
{
    /* FNV-1a over 32-bit words: one multiply per float keeps a 2 GiB model under a second */
    uint64_t h = 0xcbf29ce484222325ULL;
    const uint32_t *w = (const uint32_t *)(const void *)params;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

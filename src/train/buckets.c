/* buckets.c — the bucket plan of the gradient arena (buckets.h). */
#include "train/buckets.h"

#include <stdlib.h>

#include "base/error.h"
#include "model/step.h"

int bucket_plan_make(const struct model *m, int overlap, double bucket_mb, double first_bucket_mb,
                     struct bucket_plan *plan)
{
    /* a tensor opens at most one bucket */
    plan->buckets = calloc((size_t)m->ntensors + 1, sizeof *plan->buckets);
    CHECK_ALLOC(plan->buckets);
    plan->nbuckets = 0;
    if (!overlap) {
        plan->buckets[0] = (struct bucket){0, m->nparams, 0};
        plan->nbuckets = 1;
        return 0;
    }
    struct bucket *cur = NULL;
    double cap_bytes = first_bucket_mb * 1e6;
    for (int i = 0; i < m->ntensors; i++) { /* arena order */
        const struct param_tensor *t = &m->tensors[i];
        if (cur == NULL || (double)cur->count * sizeof(float) >= cap_bytes) {
            if (cur != NULL) cap_bytes = bucket_mb * 1e6;
            cur = &plan->buckets[plan->nbuckets++];
            cur->offset = t->offset;
            cur->count = 0;
        }
        cur->count += t->count;
        cur->ready_after_stage = t->stage;
    }
    return 0;
}

int bucket_plan_split_last(const struct model *m, int chunks, struct bucket_plan *plan)
{
    if (m->ntensors == 0) return 0;
    const struct param_tensor *t = &m->tensors[m->ntensors - 1];
    if (chunks <= 1 || plan->nbuckets == 0 || t->kind != TENSOR_MATRIX || t->rows < 2) return 0;
    /* whole multiples of 64 rows: every block's operands stay 128-byte aligned for cuBLASLt */
    int rows = (t->rows + chunks - 1) / chunks;
    rows = (rows + 63) / 64 * 64;
    if (rows >= t->rows) return 0;
    const int blocks = (t->rows + rows - 1) / rows;
    struct bucket *more = realloc(plan->buckets, (size_t)(plan->nbuckets + blocks) * sizeof *more);
    CHECK_ALLOC(more);
    plan->buckets = more;
    /* the last bucket ends with the last tensor: it keeps the first block */
    struct bucket *last = &plan->buckets[plan->nbuckets - 1];
    const size_t first_block_end = t->offset + (size_t)rows * (size_t)t->cols;
    last->count = first_block_end - last->offset;
    for (int r = rows; r < t->rows; r += rows) {
        const int n = t->rows - r < rows ? t->rows - r : rows;
        plan->buckets[plan->nbuckets++] =
            (struct bucket){t->offset + (size_t)r * (size_t)t->cols, (size_t)n * (size_t)t->cols, t->stage};
    }
    return rows;
}

int bucket_plan_split_last_if_used(const struct model *m, int chunks, struct bucket_plan *plan)
{
    return m->ops->splits_last ? bucket_plan_split_last(m, chunks, plan) : 0;
}

void bucket_plan_per_stage(const struct model *m, struct bucket_plan *plan)
{
    plan->buckets = calloc((size_t)m->nstages + 1, sizeof *plan->buckets);
    CHECK_ALLOC(plan->buckets);
    plan->nbuckets = 0;
    /* arena order: stage nstages-1 first; a stage's tensors are contiguous */
    for (int stage = m->nstages - 1; stage >= 0; stage--) {
        size_t lo, hi;
        if (model_stage_range(m, stage, &lo, &hi) != 0) continue;
        plan->buckets[plan->nbuckets++] = (struct bucket){lo, hi - lo, stage};
    }
}

int bucket_plan_find(const struct bucket_plan *plan, size_t offset)
{
    for (int k = 0; k < plan->nbuckets; k++)
        if (offset >= plan->buckets[k].offset && offset < plan->buckets[k].offset + plan->buckets[k].count) return k;
    return -1;
}

void bucket_plan_free(struct bucket_plan *plan)
{
    free(plan->buckets);
    plan->buckets = NULL;
    plan->nbuckets = 0;
}

/* buckets.c — the bucket plan of the gradient arena (buckets.h). */
#include "buckets.h"

#include <stdlib.h>

#include "error.h"

int bucket_plan_make(const struct model *m, int overlap, double bucket_mb, double first_bucket_mb,
                     struct bucket_plan *plan)
{
    /* at most two tensors per layer: that many buckets at the most */
    plan->buckets = calloc((size_t)m->nlayers * 2 + 1, sizeof *plan->buckets);
    CHECK_ALLOC(plan->buckets);
    plan->nbuckets = 0;
    if (!overlap) {
        plan->buckets[0] = (struct bucket){0, m->nparams, 0};
        plan->nbuckets = 1;
        return 0;
    }
    struct bucket *cur = NULL;
    double cap_bytes = first_bucket_mb * 1e6;
    /* tensors in arena order: for l = last..0, bias then weight */
    for (int l = m->nlayers - 1; l >= 0; l--) {
        const struct layer_shape *s = &m->layers[l];
        const size_t sizes[2] = {(size_t)s->out, (size_t)s->out * (size_t)s->in};
        const size_t offsets[2] = {s->b_offset, s->w_offset};
        for (int t = 0; t < 2; t++) {
            if (cur == NULL || (double)cur->count * sizeof(float) >= cap_bytes) {
                if (cur != NULL) cap_bytes = bucket_mb * 1e6;
                cur = &plan->buckets[plan->nbuckets++];
                cur->offset = offsets[t];
                cur->count = 0;
            }
            cur->count += sizes[t];
            cur->ready_after_layer = l;
        }
    }
    return 0;
}

int bucket_plan_split_last(const struct model *m, int chunks, struct bucket_plan *plan)
{
    const struct layer_shape *s = &m->layers[0];
    if (chunks <= 1 || plan->nbuckets == 0 || s->out < 2) return 0;
    /* whole multiples of 64 rows: every block's operands stay 128-byte aligned for cuBLASLt */
    int rows = (s->out + chunks - 1) / chunks;
    rows = (rows + 63) / 64 * 64;
    if (rows >= s->out) return 0;
    const int blocks = (s->out + rows - 1) / rows;
    struct bucket *more = realloc(plan->buckets, (size_t)(plan->nbuckets + blocks) * sizeof *more);
    CHECK_ALLOC(more);
    plan->buckets = more;
    /* the last bucket ends with layer 0's weight: it keeps the first block */
    struct bucket *last = &plan->buckets[plan->nbuckets - 1];
    const size_t first_block_end = s->w_offset + (size_t)rows * (size_t)s->in;
    last->count = first_block_end - last->offset;
    for (int r = rows; r < s->out; r += rows) {
        const int n = s->out - r < rows ? s->out - r : rows;
        plan->buckets[plan->nbuckets++] = (struct bucket){s->w_offset + (size_t)r * (size_t)s->in, (size_t)n * (size_t)s->in, 0};
    }
    return rows;
}

void bucket_plan_per_layer(const struct model *m, struct bucket_plan *plan)
{
    plan->buckets = calloc((size_t)m->nlayers, sizeof *plan->buckets);
    CHECK_ALLOC(plan->buckets);
    plan->nbuckets = m->nlayers;
    /* arena order: the last layer first, each layer's bias then its weight */
    for (int k = 0; k < m->nlayers; k++) {
        const struct layer_shape *s = &m->layers[m->nlayers - 1 - k];
        plan->buckets[k] = (struct bucket){s->b_offset, (size_t)s->out + (size_t)s->out * (size_t)s->in, m->nlayers - 1 - k};
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

/* shard.c — the ZeRO-1 cut of every bucket (shard.h). */
#include "train/shard.h"

#include <stdlib.h>

#include "base/error.h"

static void push(struct shard_range **list, int *n, size_t offset, size_t count, size_t rep_offset)
{
    if (count == 0) return;
    struct shard_range *more = realloc(*list, (size_t)(*n + 1) * sizeof **list);
    CHECK_ALLOC(more);
    *list = more;
    more[(*n)++] = (struct shard_range){offset, count, rep_offset};
}

/* The vectors (biases, norms' gains) inside [lo, hi), in arena order. */
static int biases_in(const struct model *m, size_t lo, size_t hi, size_t *start, size_t *len)
{
    int n = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const struct param_tensor *t = &m->tensors[i];
        if (t->kind == TENSOR_VECTOR && t->offset >= lo && t->offset < hi) {
            start[n] = t->offset;
            len[n] = t->count;
            n++;
        }
    }
    return n;
}

/* [lo, hi) without the biases, as ranges; *rep_total (when not NULL) numbers them
 * in the replicated buffer. */
static void push_minus_biases(struct shard_range **list, int *n, size_t lo, size_t hi, const size_t *start,
                              const size_t *len, int nb, size_t *rep_total)
{
    size_t at = lo;
    while (at < hi) {
        size_t next = hi;
        int inside = 0;
        for (int i = 0; i < nb && !inside; i++) {
            if (start[i] <= at && at < start[i] + len[i]) {
                at = start[i] + len[i];
                inside = 1;
            } else if (start[i] > at && start[i] < next) {
                next = start[i];
            }
        }
        if (inside) continue;
        push(list, n, at, next - at, rep_total ? *rep_total : 0);
        if (rep_total) *rep_total += next - at;
        at = next;
    }
}

void shard_plan_make(const struct model *m, const struct bucket_plan *plan, int nranks, int rank, struct shard_plan *out)
{
    out->nbuckets = plan->nbuckets;
    out->b = calloc((size_t)plan->nbuckets, sizeof *out->b);
    CHECK_ALLOC(out->b);
    out->rep_total = 0;
    const size_t most = (size_t)m->ntensors + 1;
    size_t *start = malloc(most * sizeof *start), *len = malloc(most * sizeof *len);
    CHECK_ALLOC(start);
    CHECK_ALLOC(len);
    for (int k = 0; k < plan->nbuckets; k++) {
        struct shard_bucket *sb = &out->b[k];
        const size_t o = plan->buckets[k].offset, c = plan->buckets[k].count, s = c / (size_t)nranks;
        sb->block = s;
        const int nb = biases_in(m, o, o + c, start, len);
        /* replicated: every bias, then the tail that no block holds */
        for (int i = 0; i < nb; i++) {
            push(&sb->rep, &sb->nrep, start[i], len[i], out->rep_total);
            out->rep_total += len[i];
        }
        /* the tail that no block holds, then this rank's block, both without the biases */
        push_minus_biases(&sb->rep, &sb->nrep, o + s * (size_t)nranks, o + c, start, len, nb, &out->rep_total);
        push_minus_biases(&sb->own, &sb->nown, o + (size_t)rank * s, o + (size_t)(rank + 1) * s, start, len, nb, NULL);
    }
    free(start);
    free(len);
}

void shard_plan_free(struct shard_plan *p)
{
    for (int k = 0; k < p->nbuckets; k++) {
        free(p->b[k].own);
        free(p->b[k].rep);
    }
    free(p->b);
    p->b = NULL;
    p->nbuckets = 0;
}

/* test_shard.c — the ZeRO-1 cut of each bucket: every element is updated exactly
 * once per rank's view (its block or the replicated ranges), no bias sits in a
 * block, and the blocks of all ranks plus the tail tile the bucket. */
#include <stdlib.h>

#include "train/buckets.h"
#include "config/config.h"
#include "train/shard.h"
#include "check.h"
#include "test_model_of.h"

static int is_bias(const struct model *m, size_t x)
{
    for (int i = 0; i < m->ntensors; i++) {
        const struct param_tensor *t = &m->tensors[i];
        if (t->kind == TENSOR_VECTOR && x >= t->offset && x < t->offset + t->count) return 1;
    }
    return 0;
}

/* For every rank: each element of the arena is in its block (own), or replicated, or
 * in another rank's block; own and replicated never overlap; the replicated ranges
 * are the same on every rank and number the replicated buffer without gaps. */
static void check_cut(const struct model *m, double bucket_mb, double first_mb, int nranks)
{
    struct bucket_plan plan;
    bucket_plan_make(m, 1, bucket_mb, first_mb, &plan);
    unsigned char *owner_count = calloc(m->nparams, 1);
    size_t rep_total = 0;
    for (int r = 0; r < nranks; r++) {
        struct shard_plan sp;
        shard_plan_make(m, &plan, nranks, r, &sp);
        unsigned char *seen = calloc(m->nparams, 1);
        size_t next_rep = 0;
        for (int k = 0; k < plan.nbuckets; k++) {
            const struct bucket *b = &plan.buckets[k];
            const struct shard_bucket *sb = &sp.b[k];
            CHECK(sb->block == b->count / (size_t)nranks);
            for (int i = 0; i < sb->nown; i++)
                for (size_t x = sb->own[i].offset; x < sb->own[i].offset + sb->own[i].count; x++) {
                    CHECK(x >= b->offset + r * sb->block && x < b->offset + (r + 1) * sb->block);
                    CHECK(!is_bias(m, x));
                    seen[x]++;
                    owner_count[x]++;
                }
            for (int i = 0; i < sb->nrep; i++) {
                CHECK(sb->rep[i].rep_offset == next_rep);
                next_rep += sb->rep[i].count;
                for (size_t x = sb->rep[i].offset; x < sb->rep[i].offset + sb->rep[i].count; x++) {
                    CHECK(x >= b->offset && x < b->offset + b->count);
                    CHECK(is_bias(m, x) || x >= b->offset + (size_t)nranks * sb->block);
                    seen[x]++;
                }
            }
        }
        CHECK(next_rep == sp.rep_total);
        if (r == 0) rep_total = sp.rep_total;
        CHECK(sp.rep_total == rep_total);
        for (size_t x = 0; x < m->nparams; x++) CHECK(seen[x] <= 1);
        free(seen);
        shard_plan_free(&sp);
    }
    /* over all ranks: every element is owned once, or replicated (owned by none) */
    size_t owned = 0;
    for (size_t x = 0; x < m->nparams; x++) {
        CHECK(owner_count[x] <= 1);
        owned += owner_count[x];
    }
    CHECK(owned + rep_total == m->nparams);
    free(owner_count);
    bucket_plan_free(&plan);
}

TEST(two_ranks_split_every_bucket_and_replicate_the_biases)
{
    check_cut(test_model_of(4, 33, 65, 7), 0.01, 0.001, 2);
}

TEST(odd_sizes_leave_a_tail_that_every_rank_updates)
{
    check_cut(test_model_of(3, 31, 17, 5), 0.001, 0.001, 3);
    check_cut(test_model_of(5, 7, 9, 3), 0.0005, 0.0001, 8);
}

TEST(one_bucket_for_the_whole_arena)
{
    check_cut(test_model_of(4, 64, 64, 10), 1000, 1000, 4);
}

TEST(more_ranks_than_elements_of_a_bucket_replicates_it_whole)
{
    struct model *m = test_model_of(2, 2, 2, 2); /* tiny buckets */
    check_cut(m, 0.000001, 0.000001, 16);
}

int main(void) { return test_main("shard"); }

/* test_buckets.c — the gradient arena cut into allreduce buckets. */
#include <stdlib.h>

#include "train/buckets.h"
#include "config/config.h"
#include "check.h"
#include "test_model_of.h"

static struct model *model_of(int layers, int width) { return test_model_of(layers, width, width, width); }

static void check_tiles_the_arena(const struct model *m, const struct bucket_plan *p)
{
    size_t next = 0;
    for (int i = 0; i < p->nbuckets; i++) {
        CHECK(p->buckets[i].offset == next);
        next += p->buckets[i].count;
    }
    CHECK(next == m->nparams);
}

TEST(overlap_off_is_one_bucket_after_the_last_layer)
{
    struct model *m = model_of(4, 64);
    struct bucket_plan p;
    bucket_plan_make(m, 0, 25, 1, &p);
    CHECK(p.nbuckets == 1 && p.buckets[0].count == m->nparams && p.buckets[0].ready_after_stage == 0);
    bucket_plan_free(&p);
}

TEST(buckets_tile_the_arena_in_backward_order)
{
    struct model *m = model_of(6, 512); /* 1 MB per weight */
    struct bucket_plan p;
    bucket_plan_make(m, 1, 2.5, 0.5, &p);
    check_tiles_the_arena(m, &p);
    for (int i = 1; i < p.nbuckets; i++) CHECK(p.buckets[i].ready_after_stage <= p.buckets[i - 1].ready_after_stage);
    CHECK(p.buckets[p.nbuckets - 1].ready_after_stage == 0);
    bucket_plan_free(&p);
}

TEST(first_bucket_is_small_and_later_ones_reach_the_cap)
{
    struct model *m = model_of(8, 512); /* weights of 1.05 MB, biases of 2 KB */
    struct bucket_plan p;
    bucket_plan_make(m, 1, 3.0, 1.0, &p);
    /* first: last layer's bias + weight (1.05 MB >= 1 MB) */
    CHECK(p.buckets[0].count == 512 + 512 * 512 && p.buckets[0].ready_after_stage == 7);
    /* then three weights' worth (>= 3 MB) per bucket */
    CHECK(p.buckets[1].count * 4 >= 3000000 && p.buckets[1].count * 4 < 4000000);
    check_tiles_the_arena(m, &p);
    bucket_plan_free(&p);
}

TEST(a_tensor_larger_than_the_cap_gets_its_own_bucket)
{
    struct model *m = model_of(3, 1024); /* 4.2 MB weights */
    struct bucket_plan p;
    bucket_plan_make(m, 1, 1.0, 1.0, &p);
    /* bias+weight of the last layer, then each layer's bias+weight: one bucket per layer */
    CHECK(p.nbuckets == 3);
    for (int i = 0; i < 3; i++) CHECK(p.buckets[i].ready_after_stage == 2 - i);
    check_tiles_the_arena(m, &p);
    bucket_plan_free(&p);
}

TEST(the_last_weight_cut_in_row_blocks_ends_a_bucket_each)
{
    struct model *m = model_of(3, 320); /* layer 0: 320 x 320 */
    struct bucket_plan p;
    bucket_plan_make(m, 1, 25, 1, &p);
    const int before = p.nbuckets;
    /* 320 rows in 3: 107 rounded up to whole 64-row multiples (aligned operands): 128, 128, 64 */
    const int rows = bucket_plan_split_last(m, 3, &p);
    CHECK(rows == 128);
    CHECK(p.nbuckets == before + 2);
    check_tiles_the_arena(m, &p);
    const struct param_tensor *l0 = &m->tensors[m->ntensors - 1]; /* layer 0's weight ends the arena */
    CHECK(p.buckets[p.nbuckets - 3].offset + p.buckets[p.nbuckets - 3].count == l0->offset + 128 * 320);
    CHECK(p.buckets[p.nbuckets - 2].count == 128 * 320 && p.buckets[p.nbuckets - 1].count == 64 * 320);
    CHECK(bucket_plan_split_last(m, 1, &p) == 0); /* one chunk: nothing to cut */
    bucket_plan_free(&p);
    bucket_plan_make(m, 1, 25, 1, &p);
    CHECK(bucket_plan_split_last(test_model_of(2, 8, 40, 4), 4, &p) == 0); /* 40 rows: under one 64-row block */
    bucket_plan_free(&p);
}

int main(void) { return test_main("buckets"); }

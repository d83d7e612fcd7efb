/* buckets.h — how the gradient arena is cut into allreduce buckets.
 *
 * The arena is in backward order (model.h), so buckets are contiguous slices cut
 * at tensor boundaries: tensors are added to the current bucket until it holds
 * bucket_mb (the first bucket: first_bucket_mb), as PyTorch DDP does; a tensor
 * larger than a bucket gets a bucket of its own. A bucket can start as soon as the
 * backward pass has finished the stage of its last tensor. */
#ifndef DPSCALE_BUCKETS_H
#define DPSCALE_BUCKETS_H

#include <stddef.h>

#include "model/model.h"

struct bucket {
    size_t offset, count; /* elements of the arena; complete once backward has produced the prefix up to offset + count */
    int ready_after_stage; /* the stage of its last tensor */
};

struct bucket_plan {
    int nbuckets;
    struct bucket *buckets;
};

/* overlap = 0: one bucket, the whole arena, after backward's last stage. */
int bucket_plan_make(const struct model *m, int overlap, double bucket_mb, double first_bucket_mb,
                     struct bucket_plan *plan);
/* Cut the last tensor of the arena (the last gradient backward produces; a matrix)
 * into `chunks` row blocks, each the end of a bucket of its own: a model that honours
 * rb->last_rows computes its gradient block by block (step.h), and each block's
 * reduction starts while the next is computed. Returns the rows per block (what the
 * backward pass needs), or 0 when unsplit. */
int bucket_plan_split_last(const struct model *m, int chunks, struct bucket_plan *plan);
/* ... when the model computes that tensor block by block (model_ops.splits_last); else 0. */
int bucket_plan_split_last_if_used(const struct model *m, int chunks, struct bucket_plan *plan);
/* One bucket per stage (its tensors): what a 1-GPU job updates as soon as backward
 * has produced it. */
void bucket_plan_per_stage(const struct model *m, struct bucket_plan *plan);
/* The bucket that holds arena element `offset`. */
int bucket_plan_find(const struct bucket_plan *plan, size_t offset);
void bucket_plan_free(struct bucket_plan *plan);

#endif

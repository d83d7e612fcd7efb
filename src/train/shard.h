/* shard.h — how comm.shard_optimizer = on (ZeRO-1) cuts each gradient bucket
 * between the N ranks of a run.
 *
 * A bucket of c elements is reduce-scattered in place in N blocks of s = c / N
 * (floor): rank r owns block r, updates its fp32 master weights there, and the
 * blocks of the weights' compute copy are all-gathered back. Two kinds of elements
 * are kept out of the blocks and updated by every rank instead, from an allreduce
 * of their own: the biases (the forward pass reads their fp32 master copy, which a
 * block's owner alone would keep current) and the tail of c - N s elements that no
 * block holds. Those replicated ranges are allreduced out of place, into a small
 * buffer, before the reduce-scatter overwrites anything. */
#ifndef DPSCALE_SHARD_H
#define DPSCALE_SHARD_H

#include <stddef.h>

#include "train/buckets.h"
#include "model/model.h"

struct shard_range {
    size_t offset, count; /* arena elements */
    size_t rep_offset;    /* replicated ranges: where in the replicated buffer */
};

struct shard_bucket {
    size_t block;               /* s: elements of each rank's block */
    struct shard_range *own;    /* rank's block, biases cut out */
    int nown;
    struct shard_range *rep;    /* biases and the tail, updated by every rank */
    int nrep;
};

struct shard_plan {
    int nbuckets;
    struct shard_bucket *b;
    size_t rep_total; /* elements of the replicated buffer */
};

void shard_plan_make(const struct model *m, const struct bucket_plan *plan, int nranks, int rank, struct shard_plan *out);
void shard_plan_free(struct shard_plan *p);

#endif

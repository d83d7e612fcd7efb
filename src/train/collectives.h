/* collectives.h — dpscale comm: allreduce bandwidth over a range of sizes, with
 * the nccl-tests definitions (time per allreduce, algbw = bytes / time, busbw =
 * algbw x 2(n-1)/n) and a check of every result (the count of wrong elements). */
#ifndef DPSCALE_COLLECTIVES_H
#define DPSCALE_COLLECTIVES_H

#include "comm/comm.h"
#include "backend/backend.h"
#include "config/config.h"

struct collective_result {
    char library[8], path[8];
    char dtype[8];
    int elem_bytes;
    int nranks, nnodes, in_place, iters, warmup;
    int nsizes;
    double *size_bytes; /* [size] */
    double *time_s;     /* [size x rank]: mean time of one allreduce on each rank */
    double *algbw_gbps; /* [size]: bytes / (max over ranks of time_s) / 1e9 */
    double *busbw_gbps; /* [size]: algbw x 2(n-1)/n */
    double *wrong;      /* [size]: elements of the checked result that differ from the exact sum, all ranks */
};

/* Collective over g, through its comm c: measure every size of cfg's [collective]
 * section. Filled on rank 0. */
void collective_measure(struct backend *be, struct group *g, struct comm *c, const struct config *cfg,
                        struct collective_result *out);
void collective_result_free(struct collective_result *r);

#endif

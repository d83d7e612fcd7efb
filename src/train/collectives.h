/* collectives.h — dpscale comm: allreduce bandwidth over a range of sizes, with
 * the nccl-tests definitions (time per allreduce, algbw = bytes / time, busbw =
 * algbw x 2(n-1)/n) and a check of every result (the count of wrong elements), into
 * a struct collective_result (result/run_record.h). */
#ifndef DPSCALE_COLLECTIVES_H
#define DPSCALE_COLLECTIVES_H

#include "comm/comm.h"
#include "backend/backend.h"
#include "config/config.h"
#include "result/run_record.h"

/* Collective over g, through its comm c: measure every size of cfg's [collective]
 * section. Filled on rank 0. */
void collective_measure(struct backend *be, struct group *g, struct comm *c, const struct config *cfg,
                        struct collective_result *out);

#endif

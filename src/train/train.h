/* train.h — one run of the sweep: N ranks train the model data-parallel, and
 * the timings of every timed step and rank come back, with what the step is made
 * of: the same steps without the allreduce, and the allreduce by itself (the
 * record, struct run_result, is result/run_record.h's). */
#ifndef DPSCALE_TRAIN_H
#define DPSCALE_TRAIN_H

#include <stdint.h>

#include "comm/comm.h"
#include "backend/backend.h"
#include "config/config.h"
#include "model/model.h"
#include "result/run_record.h"

/* Everything rank `rank` of a run on n ranks allocates: the step's arenas
 * (step_plan_memory), the communication buffers, and the host's copies (the initial
 * parameters, the final download, saved parameters of earlier sweep points, events,
 * timings). 0, or -1 on overflow with a message. */
int train_plan_memory(const struct config *cfg, const struct model *m, const struct backend *be, int n, int rank,
                      struct memory_plan *plan, char *err, size_t errlen);
/* Whether `plan` fits in what this rank may take: the device's free memory (CUDA),
 * and the host's limit (memlimit.h: MemAvailable, the cgroup, RLIMIT_AS), local_size
 * ranks of the node sharing the host. Returns 0, or -1 with the refusal in err,
 * which names `what` ("the run on 2 ranks"), the parts and the limit that bound it. */
int train_plan_fits(const struct memory_plan *plan, const char *what, const struct backend *be, int local_size,
                    char *err, size_t errlen);
/* train_plan_memory, then train_plan_fits. No communication. */
int train_memory_fits(const struct config *cfg, const struct model *m, struct backend *be, int n, int rank,
                      int local_size, char *err, size_t errlen);

/* Collective over the ranks of g; c is the run's comm, NULL on one rank. `library`
 * labels the run. Returns 0, or -1 (on every rank of g) when the run cannot start,
 * e.g. the memory plan does not fit. */
int train_run(const struct config *cfg, const struct model *m, struct backend *be, struct group *g, struct comm *c,
              const char *library, int local_size, struct run_result *out);

#endif

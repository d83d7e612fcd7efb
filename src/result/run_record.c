/* run_record.c — the names of a step's phases as the result file stores them, and
 * the release of the records (run_record.h). */
#include "result/run_record.h"

#include <stdlib.h>
#include <string.h>

const char *const phase_names[NPHASES] = {"forward_s", "backward_s", "comm_exposed_s", "update_s", "step_s"};

void run_result_free(struct run_result *r)
{
    for (int p = 0; p < NPHASES; p++) free(r->times[p]);
    free(r->compute_only);
    free(r->compute_only_backward);
    free(r->bucket_count);
    free(r->bucket_start);
    free(r->bucket_end);
    free(r->bucket_ready);
    free(r->bucket_ready_compute_only);
    free(r->loss);
    free(r->allreduce_alone);
    free(r->params);
    memset(r, 0, sizeof *r);
}

void collective_result_free(struct collective_result *r)
{
    free(r->size_bytes);
    free(r->time_s);
    free(r->algbw_gbps);
    free(r->busbw_gbps);
    free(r->wrong);
    memset(r, 0, sizeof *r);
}

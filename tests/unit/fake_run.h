/* fake_run.h — a run_result filled with known timings, for the tests of the
 * statistics and of the HDF5 writer: every phase step_s/4 (step_s for the step),
 * one slow first iteration on rank 0, the allreduce alone step_s/8, the compute-only
 * step 0.9 step_s with forward + backward as in the real step (step_s/2: no
 * interference), one bucket; labelled mpi over auto. On one rank it is the honest
 * baseline: no communication (exposed 0, the update step_s/2, the allreduce alone
 * one row of zeros, no gradient bytes, dtype "none"). */
#ifndef DPSCALE_TEST_FAKE_RUN_H
#define DPSCALE_TEST_FAKE_RUN_H

#include <stdio.h>
#include <stdlib.h>

#include "result/run_record.h"

static double *filled(size_t n, double v)
{
    double *a = calloc(n, sizeof(double));
    for (size_t i = 0; i < n; i++) a[i] = v;
    return a;
}

static struct run_result fake_run(int nranks, double step_s, int batch)
{
    struct run_result r = {0};
    const size_t cells = (size_t)3 * nranks;
    r.nranks = nranks;
    r.nnodes = 1;
    r.batch_per_rank = batch;
    r.global_batch = batch * nranks;
    r.iters = 3;
    r.steps = 4;
    r.nparams = 10;
    r.communicates = nranks > 1;
    r.allreduce_bytes = r.communicates ? 1e9 : 0;
    r.gemm_flops_per_step = 1e12;
    snprintf(r.library, sizeof r.library, "mpi");
    snprintf(r.path, sizeof r.path, "auto");
    snprintf(r.allreduce_dtype, sizeof r.allreduce_dtype, "%s", r.communicates ? "fp32" : "none");
    for (int p = 0; p < NPHASES; p++) r.times[p] = filled(cells, p == PHASE_STEP ? step_s : step_s / 4);
    r.times[PHASE_STEP][0] = step_s * 10; /* one slow iteration on rank 0: the median ignores it */
    if (!r.communicates)
        for (size_t i = 0; i < cells; i++) {
            r.times[PHASE_COMM_EXPOSED][i] = 0;
            r.times[PHASE_UPDATE][i] = step_s / 2;
        }
    r.allreduce_reps = r.communicates ? 3 : 1;
    r.allreduce_alone = filled((size_t)r.allreduce_reps * nranks, r.communicates ? step_s / 8 : 0);
    r.compute_only = filled(cells, 0.9 * step_s);
    r.compute_only_backward = filled(cells, step_s / 4); /* = backward_s: no interference */
    r.nbuckets = 1;
    r.bucket_count = filled(1, 10);
    r.bucket_start = filled(cells, step_s / 2);
    r.bucket_end = filled(cells, step_s);
    r.bucket_ready = filled(cells, step_s / 4);
    r.bucket_ready_compute_only = filled(cells, step_s / 4);
    r.loss = filled(4, 2.0);
    r.final_loss = 2.0;
    return r;
}

#endif

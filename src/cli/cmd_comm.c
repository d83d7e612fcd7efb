/* cmd_comm.c — `dpscale comm`: the allreduce bandwidth sweep, printed like
 * nccl-tests and written to the result file under /collectives. It runs on every
 * N >= 2 of run.sweep (on one rank only when the launch has one), through the same
 * library and path as the training step. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "train/collectives.h"
#include "cli/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "cli/result_file.h"
#include "cli/session.h"
#include "train/train.h"

static void print_table(const struct collective_result *r)
{
    say("\nallreduce over %d ranks (%s over path %s, %s, %s, sum; %d warm-up + %d timed per size)\n", r->nranks,
        r->library, r->path, r->dtype, r->in_place ? "in place" : "out of place", r->warmup, r->iters);
    say("%14s %14s %12s %10s %10s %8s\n", "size_bytes", "count", "time_us", "algbw", "busbw", "#wrong");
    for (int k = 0; k < r->nsizes; k++) {
        double slowest = 0;
        for (int i = 0; i < r->nranks; i++)
            if (r->time_s[(size_t)k * r->nranks + i] > slowest) slowest = r->time_s[(size_t)k * r->nranks + i];
        say("%14.0f %14.0f %12.2f %10.2f %10.2f %8.0f\n", r->size_bytes[k], r->size_bytes[k] / r->elem_bytes, slowest * 1e6,
            r->algbw_gbps[k], r->busbw_gbps[k], r->wrong[k]);
    }
    say("time: mean of one allreduce on the slowest rank; algbw = size / time; busbw = algbw x 2(n-1)/n, in GB/s\n");
}

/* The largest allreduce's buffers against what this rank may take: the sizes of
 * collective_measure (min_mib x factor^k up to max_mib, at most 64), a send and a
 * receive buffer on the device (one in place) and the host copy that checks them. */
static int buffers_fit(struct session *s, char *err, size_t errlen)
{
    const struct config *c = &s->cfg;
    const size_t elem = dtype_size(c->coll_dtype);
    double largest = c->coll_min_mib;
    int k = 0;
    for (double mib = c->coll_min_mib; mib <= c->coll_max_mib * (1 + 1e-9) && k < 64; mib *= c->coll_factor, k++)
        largest = mib;
    size_t count = (size_t)(largest * 1048576.0 / elem);
    if (count == 0) count = 1;
    struct memory_plan plan = {0};
    const int bad = model_add_bytes(&plan.comm_bytes, count, elem, c->coll_in_place ? 1 : 2) != 0 ||
                    model_add_bytes(&plan.host_bytes, count, elem, 1) != 0 || model_plan_sum(&plan) != 0;
    if (bad) {
        snprintf(err, errlen, "the largest allreduce (%.6g MiB) overflows a 64-bit size", largest);
        return -1;
    }
    char what[96];
    snprintf(what, sizeof what, "the largest allreduce (%.6g MiB)", largest);
    return train_plan_fits(&plan, what, &s->backend, s->launch.local_size, err, errlen);
}

int cmd_comm(int argc, char **argv)
{
    struct session s;
    int rc = session_start(argc, argv, &s);
    if (rc != EXIT_OK) return rc; /* EXIT_HELP too: main prints the help */
    if (s.cfg.coll_dtype != DT_F32 && s.library == LIBRARY_MPI) {
        if (s.launch.rank == 0)
            fprintf(stderr, "dpscale: error: collective.dtype = %s needs comm.library = nccl (the cuda backend); MPI "
                            "reduces fp32 only here\n", dtype_name(s.cfg.coll_dtype));
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    /* NCCL's copy-engine copies through host memory (NCCL_SHM_USE_CUDA_MEMCPY) stalled this
     * sweep on 2 x H200 with NCCL 2.28.3: no size done in 120 s, at 1-4 MiB always and at
     * larger sizes at random, both ranks spinning. NCCL_CREATE_THREAD_CONTEXT=1, the cure
     * NVIDIA/nccl#803 gives, let the sweep finish but made a training step's allreduce
     * 40-60 times slower, so it would measure what no run gets: refused, not hung. */
    if (s.cfg.shm_copy == SHM_COPY_CE) {
        if (s.launch.rank == 0)
            fprintf(stderr, "dpscale: error: comm.shm_copy = ce is refused by dpscale comm: NCCL's copy-engine copies "
                            "through host memory stall a back-to-back allreduce sweep (NVIDIA/nccl#803); measure the "
                            "host path with comm.shm_copy = sm, or read a run's own allreduce-alone figures "
                            "(dpscale report) for the copy engines\n");
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    char err[1024] = "";
    const int too_big = buffers_fit(&s, err, sizeof err) != 0;
    if (session_refuse_once(&s, too_big, "lower collective.max_mib", err)) {
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    struct result_file out;
    if ((rc = result_file_prepare(&s, &out)) != EXIT_OK) return rc;
    if (!log_quiet()) /* the header; --quiet leaves the tables alone */
        say("dpscale %s — allreduce bandwidth, %d ranks on %d node(s), backend %s on %s, %s over path %s\n",
            DPSCALE_VERSION, s.launch.size, s.launch.nnodes, s.backend.ops->name, s.backend.info.device_name,
            comm_library_name_of(s.library), config_value_name(&s.cfg, "comm", "path"));

    int counts[CONFIG_MAX_SWEEP], ncounts = 0;
    for (int i = 0; i < s.cfg.nsweep; i++)
        if (s.cfg.sweep[i] >= 2) counts[ncounts++] = s.cfg.sweep[i];
    if (ncounts == 0) counts[ncounts++] = 1;
    struct collective_result *results = calloc((size_t)ncounts, sizeof *results);
    CHECK_ALLOC(results);
    double wrong = 0;
    for (int i = 0; i < ncounts; i++) {
        struct group *g = group_create(counts[i]);
        if (g != NULL) {
            struct comm *c = session_open_comm(&s, g, 1);
            collective_measure(&s.backend, g, c, &s.cfg, &results[i]);
            comm_close(c);
            group_destroy(g);
        }
        if (s.launch.rank == 0) {
            print_table(&results[i]);
            for (int k = 0; k < results[i].nsizes; k++) wrong += results[i].wrong[k];
        }
        world_barrier();
    }
    int failed = result_file_write(&s, &out, argc, argv, NULL, NULL, 0, results, ncounts) != 0;
    if (s.launch.rank == 0 && wrong > 0) {
        DP_ERROR("the collectives corrupted data: check the GPUs, the links and the NCCL/MPI installation",
                 "%.0f elements of the allreduce results were wrong", wrong);
        failed = 1;
    }
    failed = session_any_failed(failed);
    for (int i = 0; i < ncounts; i++) collective_result_free(&results[i]);
    free(results);
    session_end(&s);
    return failed ? EXIT_FAILURE_RUN : EXIT_OK;
}

/* comm_nccl.c — the NCCL transport: gradients summed in place on the GPU by
 * ncclAllReduce on a communication stream of its own.
 *
 * Ordering, as frameworks do it: allreduce_start records an event on the compute
 * stream and makes the communication stream wait for it (the gradients are
 * ready), then enqueues the allreduce; allreduce_wait_all makes the compute stream
 * wait for the communication stream (the optimizer needs the sums). The host never
 * blocks. The NCCL communicator is created per run from a unique id that rank 0 of
 * the run broadcasts over MPI. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "../src/backend.h"
#include "comm_internal.h"

#define CHECK_NCCL(call)                                                                              \
    do {                                                                                              \
        ncclResult_t nccl_rc_ = (call);                                                               \
        if (nccl_rc_ != ncclSuccess)                                                                  \
            DP_FATAL("run with NCCL_DEBUG=WARN for NCCL's own account", "%s failed: %s (%s)", #call,  \
                     ncclGetErrorString(nccl_rc_), ncclGetLastError(NULL));                           \
    } while (0)

#define CHECK_CUDA_COMM(call)                                                                         \
    do {                                                                                              \
        cudaError_t rc_ = (call);                                                                     \
        if (rc_ != cudaSuccess) DP_FATAL(NULL, "%s failed: %s", #call, cudaGetErrorString(rc_));      \
    } while (0)

struct nccl_state {
    ncclComm_t comm;
    cudaStream_t comm_stream;
    cudaEvent_t grads_ready, sums_done;
};

/* The communicator in use, for the abort path: a dying rank must not leave its
 * peers inside an allreduce. */
static ncclComm_t g_active = NULL;

static void abort_active(void)
{
    if (g_active != NULL) ncclCommAbort(g_active);
    g_active = NULL;
}

static int nccl_init(struct comm *c)
{
    if (c->stream == NULL) DP_FATAL("use comm.transport = mpi with the cpu backend", "the nccl transport needs GPU buffers");
    struct nccl_state *s = calloc(1, sizeof *s);
    CHECK_ALLOC(s);
    ncclUniqueId id;
    if (c->rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
    CHECK_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, c->mpi));
    CHECK_CUDA_COMM(cudaStreamCreateWithFlags(&s->comm_stream, cudaStreamNonBlocking));
    CHECK_CUDA_COMM(cudaEventCreateWithFlags(&s->grads_ready, cudaEventDisableTiming));
    CHECK_CUDA_COMM(cudaEventCreateWithFlags(&s->sums_done, cudaEventDisableTiming));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (c->max_ctas > 0) config.maxCTAs = c->max_ctas;
    CHECK_NCCL(ncclCommInitRankConfig(&s->comm, c->size, id, c->rank, &config));
    c->impl = s;
    g_active = s->comm;
    comm_set_transport_abort(abort_active);
    return 0;
}

static ncclDataType_t nccl_type(int dtype)
{
    return dtype == DT_BF16 ? ncclBfloat16 : dtype == DT_F16 ? ncclFloat16 : ncclFloat32;
}

static void nccl_allreduce_start(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op, int tag)
{
    struct nccl_state *s = c->impl;
    CHECK_CUDA_COMM(cudaEventRecord(s->grads_ready, (cudaStream_t)c->stream));
    CHECK_CUDA_COMM(cudaStreamWaitEvent(s->comm_stream, s->grads_ready, 0));
    comm_mark(c, tag, 0, s->comm_stream);
    CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_type(dtype), op == ALLREDUCE_AVG ? ncclAvg : ncclSum, s->comm,
                             s->comm_stream));
    comm_mark(c, tag, 1, s->comm_stream);
}

static void nccl_allreduce_wait_all(struct comm *c)
{
    struct nccl_state *s = c->impl;
    CHECK_CUDA_COMM(cudaEventRecord(s->sums_done, s->comm_stream));
    CHECK_CUDA_COMM(cudaStreamWaitEvent((cudaStream_t)c->stream, s->sums_done, 0));
}

static void nccl_destroy(struct comm *c)
{
    struct nccl_state *s = c->impl;
    if (s == NULL) return;
    CHECK_CUDA_COMM(cudaStreamSynchronize(s->comm_stream));
    g_active = NULL;
    CHECK_NCCL(ncclCommDestroy(s->comm));
    cudaEventDestroy(s->grads_ready);
    cudaEventDestroy(s->sums_done);
    cudaStreamDestroy(s->comm_stream);
    free(s);
    c->impl = NULL;
}

const struct comm_transport comm_transport_nccl = {
    .name = "nccl",
    .has_avg = 1,
    .init = nccl_init,
    .allreduce_start = nccl_allreduce_start,
    .progress = NULL,
    .allreduce_wait_all = nccl_allreduce_wait_all,
    .destroy = nccl_destroy,
};

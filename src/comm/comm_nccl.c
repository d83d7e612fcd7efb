/* comm_nccl.c — the NCCL library: collectives on GPU buffers, on a communication
 * stream of its own.
 *
 * Ordering, as frameworks do it: comm_begin records an event on the compute stream
 * and makes the communication stream wait for it (the gradients are ready); the
 * collectives follow in stream order (comm_group_begin/end fuses some into one
 * NCCL group); comm_end records the operation's own event, which comm_wait makes
 * the compute stream wait for. The host never blocks. The
 * communicator is created per run from a unique id that rank 0 of the run
 * broadcasts over MPI, with the options of comm.h in its ncclConfig_t.
 *
 * Registered memory (comm.register = on): buffers come from ncclMemAlloc and are
 * registered with ncclCommRegister, so that NCCL reads and writes them directly
 * instead of copying through its own buffers (with CTAPolicy ZERO, with no SM at
 * all where the path allows it); comm.symmetric = on registers them as symmetric
 * windows, for NCCL's symmetric kernels. */
#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm/mpi_check.h"
#include "base/watchdog.h"
#include "base/cuda_check.h"
#include "comm/comm_internal.h"

#define CHECK_NCCL(call)                                                                              \
    do {                                                                                              \
        ncclResult_t nccl_rc_ = (call);                                                               \
        if (nccl_rc_ != ncclSuccess)                                                                  \
            DP_FATAL("run with NCCL_DEBUG=WARN for NCCL's own account", "%s failed: %s (%s)", #call,  \
                     ncclGetErrorString(nccl_rc_), ncclGetLastError(NULL));                           \
    } while (0)

#define NCCL_MAX_TAGS 8192
#define NCCL_MAX_BUFFERS 64

struct nccl_buffer {
    void *ptr;
    void *handle;      /* ncclCommRegister */
    ncclWindow_t win;  /* ncclCommWindowRegister */
};

struct nccl_state {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready, all_done;
    cudaEvent_t *done; /* [tag], made on first use */
    int ndone;
    struct nccl_buffer buf[NCCL_MAX_BUFFERS];
    int nbuf;
};

static struct nccl_state *st(const struct comm *c) { return c->impl; }

/* The communicator in use, for the abort path: a dying rank must not leave its
 * peers inside a collective. */
static ncclComm_t g_active = NULL;

static void abort_active(void)
{
    if (g_active != NULL) ncclCommAbort(g_active);
    g_active = NULL;
}

/* For the watchdog's thread (watchdog.h): NCCL's asynchronous error, if any. */
static int poll_active(char *why, size_t len)
{
    ncclResult_t async = ncclSuccess;
    if (g_active == NULL || ncclCommGetAsyncError(g_active, &async) != ncclSuccess) return 0;
    if (async == ncclSuccess || async == ncclInProgress) return 0;
    snprintf(why, len, "NCCL reported an asynchronous error: %s (%s)", ncclGetErrorString(async),
             ncclGetLastError(g_active));
    return 1;
}

static int nccl_open(struct comm *c, char *err, size_t errlen)
{
    if (c->compute_stream == NULL) {
        snprintf(err, errlen, "comm.library = nccl needs GPU buffers; use comm.library = mpi (or auto) with the cpu backend");
        return -1;
    }
    struct nccl_state *s = calloc(1, sizeof *s);
    CHECK_ALLOC(s);
    ncclUniqueId id;
    if (c->rank == 0) CHECK_NCCL(ncclGetUniqueId(&id));
    CHECK_MPI(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, group_mpi(c->group)));
    /* as high a priority as the compute stream's: the GEMMs queued behind one another
     * must not starve the collective of SMs */
    s->stream = cuda_stream_at_priority(1);
    CHECK_CUDA(cudaEventCreateWithFlags(&s->ready, cudaEventDisableTiming));
    CHECK_CUDA(cudaEventCreateWithFlags(&s->all_done, cudaEventDisableTiming));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (c->opt.max_ctas > 0) config.maxCTAs = c->opt.max_ctas;
    if (c->opt.cta_policy == 1) config.CTAPolicy = NCCL_CTA_POLICY_EFFICIENCY;
    if (c->opt.cta_policy == 2) config.CTAPolicy = NCCL_CTA_POLICY_ZERO;
    CHECK_NCCL(ncclCommInitRankConfig(&s->comm, c->size, id, c->rank, &config));
    c->impl = s;
    g_active = s->comm;
    mpi_set_library_abort(abort_active);
    watchdog_set_library(poll_active, abort_active);
    return 0;
}

static void nccl_close(struct comm *c)
{
    struct nccl_state *s = st(c);
    if (s == NULL) return;
    CHECK_CUDA(cudaDeviceSynchronize()); /* no stream may still touch a buffer freed below */
    for (int i = 0; i < s->nbuf; i++) {
        if (s->buf[i].win != NULL) CHECK_NCCL(ncclCommWindowDeregister(s->comm, s->buf[i].win));
        if (s->buf[i].handle != NULL) CHECK_NCCL(ncclCommDeregister(s->comm, s->buf[i].handle));
        CHECK_NCCL(ncclMemFree(s->buf[i].ptr));
    }
    watchdog_set_library(NULL, NULL); /* the thread polls it no more once this returns */
    g_active = NULL;
    mpi_set_library_abort(NULL);
    CHECK_NCCL(ncclCommDestroy(s->comm));
    for (int i = 0; i < s->ndone; i++) cudaEventDestroy(s->done[i]);
    free(s->done);
    cudaEventDestroy(s->ready);
    cudaEventDestroy(s->all_done);
    cudaStreamDestroy(s->stream);
    free(s);
    c->impl = NULL;
}

static ncclDataType_t nccl_type(int dtype)
{
    return dtype == DT_BF16 ? ncclBfloat16 : dtype == DT_F16 ? ncclFloat16 : ncclFloat32;
}

static ncclRedOp_t nccl_op(int op) { return op == REDUCE_AVG ? ncclAvg : ncclSum; }

static cudaEvent_t done_event(struct nccl_state *s, int tag)
{
    if (tag < 0 || tag >= NCCL_MAX_TAGS) DP_FATAL(NULL, "comm operation tag %d out of range", tag);
    if (tag >= s->ndone) {
        cudaEvent_t *more = realloc(s->done, (size_t)(tag + 1) * sizeof *more);
        CHECK_ALLOC(more);
        s->done = more;
        for (int i = s->ndone; i <= tag; i++) CHECK_CUDA(cudaEventCreateWithFlags(&s->done[i], cudaEventDisableTiming));
        s->ndone = tag + 1;
    }
    return s->done[tag];
}

static void nccl_begin(struct comm *c, int tag)
{
    struct nccl_state *s = st(c);
    done_event(s, tag); /* made now, not between the group's calls */
    CHECK_CUDA(cudaEventRecord(s->ready, (cudaStream_t)c->compute_stream));
    CHECK_CUDA(cudaStreamWaitEvent(s->stream, s->ready, 0));
    comm_mark(c, tag, 0, s->stream);
}

static void nccl_end(struct comm *c, int tag)
{
    struct nccl_state *s = st(c);
    comm_mark(c, tag, 1, s->stream);
    CHECK_CUDA(cudaEventRecord(done_event(s, tag), s->stream));
}

static void nccl_group_begin(struct comm *c)
{
    (void)c;
    CHECK_NCCL(ncclGroupStart());
}

static void nccl_group_end(struct comm *c)
{
    (void)c;
    CHECK_NCCL(ncclGroupEnd());
}

static void nccl_allreduce(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op)
{
    CHECK_NCCL(ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), st(c)->comm, st(c)->stream));
}

static void nccl_reduce_scatter(struct comm *c, void *buf, size_t count, int dtype, int op)
{
    char *mine = (char *)buf + (size_t)c->rank * count * dtype_size(dtype);
    CHECK_NCCL(ncclReduceScatter(buf, mine, count, nccl_type(dtype), nccl_op(op), st(c)->comm, st(c)->stream));
}

static void nccl_all_gather(struct comm *c, void *buf, size_t count, int dtype)
{
    const char *mine = (const char *)buf + (size_t)c->rank * count * dtype_size(dtype);
    CHECK_NCCL(ncclAllGather(mine, buf, count, nccl_type(dtype), st(c)->comm, st(c)->stream));
}

static void nccl_wait(struct comm *c, int tag)
{
    CHECK_CUDA(cudaStreamWaitEvent((cudaStream_t)c->compute_stream, done_event(st(c), tag), 0));
}

static void nccl_wait_all(struct comm *c)
{
    struct nccl_state *s = st(c);
    CHECK_CUDA(cudaEventRecord(s->all_done, s->stream));
    CHECK_CUDA(cudaStreamWaitEvent((cudaStream_t)c->compute_stream, s->all_done, 0));
}

static void *nccl_stream(const struct comm *c) { return st(c)->stream; }

static void *nccl_mem_alloc(struct comm *c, size_t bytes)
{
    struct nccl_state *s = st(c);
    if (s->nbuf == NCCL_MAX_BUFFERS) DP_FATAL(NULL, "more than %d registered NCCL buffers", NCCL_MAX_BUFFERS);
    struct nccl_buffer *b = &s->buf[s->nbuf];
    /* a symmetric window covers whole pages of NCCL's granularity */
    const size_t size = (bytes + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT * NCCL_WIN_REQUIRED_ALIGNMENT;
    ncclResult_t rc = ncclMemAlloc(&b->ptr, size);
    if (rc != ncclSuccess)
        DP_FATAL("lower train.batch_per_gpu, or set comm.register = off", "ncclMemAlloc of %.2f GiB failed: %s",
                 size / 1073741824.0, ncclGetErrorString(rc));
    CHECK_CUDA(cudaMemsetAsync(b->ptr, 0, size, (cudaStream_t)c->compute_stream));
    if (c->opt.symmetric) CHECK_NCCL(ncclCommWindowRegister(s->comm, b->ptr, size, &b->win, NCCL_WIN_COLL_SYMMETRIC));
    else CHECK_NCCL(ncclCommRegister(s->comm, b->ptr, size, &b->handle));
    s->nbuf++;
    return b->ptr;
}

static void nccl_mem_free(struct comm *c, void *p)
{
    struct nccl_state *s = st(c);
    for (int i = 0; i < s->nbuf; i++) {
        if (s->buf[i].ptr != p) continue;
        CHECK_CUDA(cudaDeviceSynchronize());
        if (s->buf[i].win != NULL) CHECK_NCCL(ncclCommWindowDeregister(s->comm, s->buf[i].win));
        if (s->buf[i].handle != NULL) CHECK_NCCL(ncclCommDeregister(s->comm, s->buf[i].handle));
        CHECK_NCCL(ncclMemFree(p));
        s->buf[i] = s->buf[--s->nbuf];
        return;
    }
}

const struct comm_ops comm_nccl_ops = {
    .name = "nccl",
    .has_avg = 1,
    .open = nccl_open,
    .close = nccl_close,
    .begin = nccl_begin,
    .end = nccl_end,
    .group_begin = nccl_group_begin,
    .group_end = nccl_group_end,
    .allreduce = nccl_allreduce,
    .reduce_scatter = nccl_reduce_scatter,
    .all_gather = nccl_all_gather,
    .progress = NULL,
    .wait = nccl_wait,
    .wait_all = nccl_wait_all,
    .stream = nccl_stream,
    .mem_alloc = nccl_mem_alloc,
    .mem_free = nccl_mem_free,
};

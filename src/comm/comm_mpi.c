/* comm_mpi.c — the MPI library: collectives on host buffers (the CPU backend),
 * fp32 only, non-blocking (MPI_Iallreduce, MPI_Ireduce_scatter_block,
 * MPI_Iallgather). MPI has no average: REDUCE_AVG is a sum and the caller scales
 * by 1/N. Allreduce counts above INT_MAX/2 are split into pieces.
 *
 * MPI moves data only inside MPI calls, so the training loop calls progress()
 * after every layer of backward; it tests the requests (MPI_Testsome), and when
 * the last request of an operation is done, finishes it (a reduce-scatter's block
 * is copied into place only then: another collective of the operation may still
 * have been reading the buffer) and marks its end. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "comm/mpi_check.h"
#include "comm/comm_internal.h"

#define MPI_MAX_PENDING 4096

struct pending {
    int tag;
    float *scratch; /* reduce-scatter: the received block, copied to `dest` when done */
    float *dest;
    size_t count;
};

struct mpi_state {
    MPI_Comm mpi;
    MPI_Request req[MPI_MAX_PENDING];
    struct pending what[MPI_MAX_PENDING];
    int npending;
    struct pending done[MPI_MAX_PENDING]; /* completed reduce-scatters whose operation is not */
    int ndone;
    int tag;  /* of the operation begun last */
    int open; /* that operation is between comm_begin and comm_end */
};

static struct mpi_state *st(const struct comm *c) { return c->impl; }

static int mpi_open(struct comm *c, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    struct mpi_state *s = calloc(1, sizeof *s);
    CHECK_ALLOC(s);
    s->mpi = group_mpi(c->group);
    c->impl = s;
    return 0;
}

static void mpi_close(struct comm *c)
{
    free(c->impl);
    c->impl = NULL;
}

static void check_f32(int dtype)
{
    if (dtype != DT_F32) DP_FATAL("set comm.allreduce_dtype = fp32 with comm.library = mpi", "MPI collectives of 16-bit floats");
}

static MPI_Request *push(struct comm *c, float *scratch, float *dest, size_t count)
{
    struct mpi_state *s = st(c);
    if (s->npending == MPI_MAX_PENDING)
        DP_FATAL("use fewer, larger gradient buckets (comm.bucket_mb)", "more than %d MPI collectives in flight",
                 MPI_MAX_PENDING);
    s->what[s->npending] = (struct pending){s->tag, scratch, dest, count};
    return &s->req[s->npending++];
}

static int has_tag(const struct mpi_state *s, int tag)
{
    for (int i = 0; i < s->npending; i++)
        if (s->what[i].tag == tag) return 1;
    return 0;
}

static void finish(struct comm *c, int tag);

static void mpi_begin(struct comm *c, int tag)
{
    struct mpi_state *s = st(c);
    if (s->open) DP_FATAL(NULL, "comm operation %d begun inside operation %d", tag, s->tag);
    if (has_tag(s, tag)) DP_FATAL(NULL, "comm operation %d begun again before it completed", tag);
    s->tag = tag;
    s->open = 1;
    comm_mark(c, tag, 0, NULL);
}

/* The operation ends once it is closed and its last request is done: here, or in
 * retire() when requests are still in flight. */
static void mpi_end(struct comm *c, int tag)
{
    struct mpi_state *s = st(c);
    s->open = 0;
    if (!has_tag(s, tag)) finish(c, tag);
}

static void mpi_allreduce(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op)
{
    (void)op; /* always a sum: see above */
    check_f32(dtype);
    const size_t piece = (size_t)INT_MAX / 2;
    for (size_t off = 0; off < count; off += piece) {
        size_t len = count - off < piece ? count - off : piece;
        const void *sendbuf = send == recv ? MPI_IN_PLACE : (const void *)((const float *)send + off);
        CHECK_MPI(MPI_Iallreduce(sendbuf, (float *)recv + off, (int)len, MPI_FLOAT, MPI_SUM, st(c)->mpi,
                                 push(c, NULL, NULL, 0)));
    }
}

static void check_count(size_t count)
{
    if (count > (size_t)INT_MAX / 2)
        DP_FATAL("use smaller gradient buckets (comm.bucket_mb)", "an MPI collective of %zu elements per rank", count);
}

/* MPI's in-place reduce-scatter leaves the block at the start of the buffer, not at
 * the rank's offset: receive into a scratch block and copy it into place when done. */
static void mpi_reduce_scatter(struct comm *c, void *buf, size_t count, int dtype, int op)
{
    (void)op;
    check_f32(dtype);
    check_count(count);
    float *scratch = malloc((count ? count : 1) * sizeof(float));
    CHECK_ALLOC(scratch);
    float *dest = (float *)buf + (size_t)c->rank * count;
    CHECK_MPI(MPI_Ireduce_scatter_block(buf, scratch, (int)count, MPI_FLOAT, MPI_SUM, st(c)->mpi,
                                        push(c, scratch, dest, count)));
}

static void mpi_all_gather(struct comm *c, void *buf, size_t count, int dtype)
{
    check_f32(dtype);
    check_count(count);
    CHECK_MPI(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)count, MPI_FLOAT, st(c)->mpi,
                             push(c, NULL, NULL, 0)));
}

/* Operation `tag` has no request left: copy its reduce-scatter blocks into place. */
static void finish(struct comm *c, int tag)
{
    struct mpi_state *s = st(c);
    int kept = 0;
    for (int i = 0; i < s->ndone; i++) {
        struct pending *p = &s->done[i];
        if (p->tag != tag) {
            s->done[kept++] = *p;
            continue;
        }
        memcpy(p->dest, p->scratch, p->count * sizeof(float));
        free(p->scratch);
    }
    s->ndone = kept;
    comm_mark(c, tag, 1, NULL);
}

/* Drop the requests that completed (keeping their reduce-scatter blocks aside),
 * and finish every operation whose last request that was. */
static void retire(struct comm *c, int ndone, const int *done)
{
    struct mpi_state *s = st(c);
    int ended[MPI_MAX_PENDING], nended = 0;
    for (int i = 0; i < ndone; i++) {
        const struct pending *p = &s->what[done[i]];
        if (p->scratch != NULL) {
            if (s->ndone == MPI_MAX_PENDING) DP_FATAL(NULL, "more than %d reduce-scatters in flight", MPI_MAX_PENDING);
            s->done[s->ndone++] = *p;
        }
        ended[nended++] = p->tag;
    }
    int kept = 0;
    for (int i = 0; i < s->npending; i++) {
        if (s->req[i] == MPI_REQUEST_NULL) continue;
        s->req[kept] = s->req[i];
        s->what[kept] = s->what[i];
        kept++;
    }
    s->npending = kept;
    for (int i = 0; i < nended; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++) seen |= ended[j] == ended[i];
        if (!seen && !has_tag(s, ended[i]) && !(s->open && s->tag == ended[i])) finish(c, ended[i]);
    }
}

static void mpi_progress(struct comm *c)
{
    struct mpi_state *s = st(c);
    int ndone = 0, done[MPI_MAX_PENDING];
    if (s->npending == 0) return;
    CHECK_MPI(MPI_Testsome(s->npending, s->req, &ndone, done, MPI_STATUSES_IGNORE));
    if (ndone != MPI_UNDEFINED && ndone > 0) retire(c, ndone, done);
}

static void wait_while(struct comm *c, int tag, int any)
{
    struct mpi_state *s = st(c);
    int ndone = 0, done[MPI_MAX_PENDING];
    while (s->npending > 0 && (any || has_tag(s, tag))) {
        CHECK_MPI(MPI_Waitsome(s->npending, s->req, &ndone, done, MPI_STATUSES_IGNORE));
        if (ndone == MPI_UNDEFINED) break;
        retire(c, ndone, done);
    }
}

static void mpi_wait(struct comm *c, int tag) { wait_while(c, tag, 0); }
static void mpi_wait_all(struct comm *c) { wait_while(c, 0, 1); }

const struct comm_ops comm_mpi_ops = {
    .name = "mpi",
    .has_avg = 0,
    .open = mpi_open,
    .close = mpi_close,
    .begin = mpi_begin,
    .end = mpi_end,
    .group_begin = NULL,
    .group_end = NULL,
    .allreduce = mpi_allreduce,
    .reduce_scatter = mpi_reduce_scatter,
    .all_gather = mpi_all_gather,
    .progress = mpi_progress,
    .wait = mpi_wait,
    .wait_all = mpi_wait_all,
    .stream = NULL,
    .mem_alloc = NULL,
    .mem_free = NULL,
};

/* comm_mpi.c — the MPI transport: gradients summed with MPI_Iallreduce on host
 * buffers (the CPU backend), fp32 only. MPI has no average: ALLREDUCE_AVG is a
 * sum and the optimizer scales by 1/N. Counts above INT_MAX are split into pieces.
 *
 * MPI moves data only inside MPI calls, so the training loop calls progress()
 * after every layer of backward; it tests the requests (MPI_Testsome) and marks
 * the end of every allreduce it finds complete. */
#include <limits.h>
#include <string.h>

#include "../src/backend.h"
#include "comm_internal.h"

static int mpi_init(struct comm *c)
{
    c->npending = 0;
    return 0;
}

static void mpi_allreduce_start(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op, int tag)
{
    (void)op; /* always a sum: see above */
    if (dtype != DT_F32) DP_FATAL("set comm.allreduce_dtype = fp32 with the mpi transport", "MPI allreduce of 16-bit floats");
    const size_t piece = (size_t)INT_MAX / 2;
    comm_mark(c, tag, 0, NULL);
    for (size_t off = 0; off < count; off += piece) {
        size_t len = count - off < piece ? count - off : piece;
        if (c->npending == COMM_MAX_PENDING)
            DP_FATAL("use fewer, larger gradient buckets (comm.bucket_mb)", "more than %d allreduces in flight",
                     COMM_MAX_PENDING);
        const void *sendbuf = send == recv ? MPI_IN_PLACE : (const void *)((const float *)send + off);
        CHECK_MPI(MPI_Iallreduce(sendbuf, (float *)recv + off, (int)len, MPI_FLOAT, MPI_SUM, c->mpi,
                                 &c->pending[c->npending]));
        c->pending_tag[c->npending] = tag;
        c->npending++;
    }
}

/* Mark the requests that completed, and drop them from the pending list. */
static void retire(struct comm *c, int ndone, const int *done)
{
    for (int i = 0; i < ndone; i++) comm_mark(c, c->pending_tag[done[i]], 1, NULL);
    int kept = 0;
    for (int i = 0; i < c->npending; i++) {
        if (c->pending[i] == MPI_REQUEST_NULL) continue;
        c->pending[kept] = c->pending[i];
        c->pending_tag[kept] = c->pending_tag[i];
        kept++;
    }
    c->npending = kept;
}

static void mpi_progress(struct comm *c)
{
    int ndone = 0, done[COMM_MAX_PENDING];
    if (c->npending == 0) return;
    CHECK_MPI(MPI_Testsome(c->npending, c->pending, &ndone, done, MPI_STATUSES_IGNORE));
    if (ndone != MPI_UNDEFINED && ndone > 0) retire(c, ndone, done);
}

static void mpi_allreduce_wait_all(struct comm *c)
{
    int ndone = 0, done[COMM_MAX_PENDING];
    while (c->npending > 0) {
        CHECK_MPI(MPI_Waitsome(c->npending, c->pending, &ndone, done, MPI_STATUSES_IGNORE));
        if (ndone == MPI_UNDEFINED) break;
        retire(c, ndone, done);
    }
    c->npending = 0;
}

static void mpi_destroy(struct comm *c) { (void)c; }

const struct comm_transport comm_transport_mpi = {
    .name = "mpi",
    .has_avg = 0,
    .init = mpi_init,
    .allreduce_start = mpi_allreduce_start,
    .progress = mpi_progress,
    .allreduce_wait_all = mpi_allreduce_wait_all,
    .destroy = mpi_destroy,
};

/* comm_mpi.c — the MPI transport: gradients summed in place with MPI_Iallreduce
 * on host buffers (the CPU backend). Counts above INT_MAX are split into pieces,
 * since MPI counts are int. */
#include <limits.h>

#include "comm_internal.h"

static int mpi_init(struct comm *c)
{
    c->npending = 0;
    return 0;
}

static void mpi_allreduce_start(struct comm *c, float *buf, size_t count)
{
    const size_t piece = (size_t)INT_MAX / 2;
    for (size_t off = 0; off < count; off += piece) {
        size_t len = count - off < piece ? count - off : piece;
        if (c->npending == COMM_MAX_PENDING)
            DP_FATAL("use fewer, larger gradient buckets", "more than %d allreduces in flight", COMM_MAX_PENDING);
        CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, buf + off, (int)len, MPI_FLOAT, MPI_SUM, c->mpi, &c->pending[c->npending]));
        c->npending++;
    }
}

static void mpi_allreduce_wait_all(struct comm *c)
{
    CHECK_MPI(MPI_Waitall(c->npending, c->pending, MPI_STATUSES_IGNORE));
    c->npending = 0;
}

static void mpi_destroy(struct comm *c) { (void)c; }

const struct comm_transport comm_transport_mpi = {
    .name = "mpi",
    .init = mpi_init,
    .allreduce_start = mpi_allreduce_start,
    .allreduce_wait_all = mpi_allreduce_wait_all,
    .destroy = mpi_destroy,
};

/* comm_internal.h — the inside of struct comm, shared by comm.c and the transports. */
#ifndef DPSCALE_COMM_INTERNAL_H
#define DPSCALE_COMM_INTERNAL_H

#include <mpi.h>

#include "../src/error.h"
#include "comm.h"

#define COMM_MAX_PENDING 4096

struct comm {
    MPI_Comm mpi;  /* the first N ranks of the world */
    int rank, size, nnodes;
    const struct comm_transport *transport;
    MPI_Request pending[COMM_MAX_PENDING]; /* MPI transport: started allreduces */
    int npending;
    void *impl;   /* transport's own state */
    void *stream; /* the backend's compute stream (cudaStream_t), or NULL */
    int max_ctas; /* NCCL maxCTAs, 0 = NCCL's default */
    comm_marker_fn marker;
    void *marker_ctx;
    int pending_tag[COMM_MAX_PENDING]; /* MPI transport: the tag of each started request */
};

/* One check macro per API: an MPI failure names the call and the MPI error text. */
/* The marker hook, if any. */
static inline void comm_mark(struct comm *c, int tag, int is_end, void *stream)
{
    if (c->marker != NULL) c->marker(c->marker_ctx, tag, is_end, stream);
}

#define CHECK_MPI(call)                                                                       \
    do {                                                                                      \
        int mpi_rc_ = (call);                                                                 \
        if (mpi_rc_ != MPI_SUCCESS) {                                                         \
            char mpi_msg_[MPI_MAX_ERROR_STRING];                                              \
            int mpi_len_ = 0;                                                                 \
            MPI_Error_string(mpi_rc_, mpi_msg_, &mpi_len_);                                   \
            DP_FATAL("a peer rank may have died; look for its error above", "%s failed: %s", #call, mpi_msg_); \
        }                                                                                     \
    } while (0)

#endif

/* mpi_check.h — what the comm implementations need of the MPI layer: the check
 * macro and the MPI communicator under a group. */
#ifndef DPSCALE_MPI_CHECK_H
#define DPSCALE_MPI_CHECK_H

#include <mpi.h>

#include "base/error.h"
#include "comm/group.h"

/* One check macro per API: an MPI failure names the call and the MPI error text. */
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

MPI_Comm group_mpi(const struct group *g);

#endif

/* comm_internal.h — the inside of struct comm and the table each library fills
 * (comm_mpi.c, comm_nccl.c); only comm.c and the libraries include it. */
#ifndef DPSCALE_COMM_INTERNAL_H
#define DPSCALE_COMM_INTERNAL_H

#include "base/error.h"
#include "comm/comm.h"

struct comm_ops {
    const char *name;
    int has_avg; /* performs REDUCE_AVG itself */
    int (*open)(struct comm *c, char *err, size_t errlen);
    void (*close)(struct comm *c);
    void (*begin)(struct comm *c, int tag);
    void (*end)(struct comm *c, int tag);
    void (*group_begin)(struct comm *c); /* may be NULL */
    void (*group_end)(struct comm *c);
    void (*allreduce)(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op);
    void (*reduce_scatter)(struct comm *c, void *buf, size_t count, int dtype, int op);
    void (*all_gather)(struct comm *c, void *buf, size_t count, int dtype);
    void (*progress)(struct comm *c); /* may be NULL */
    void (*wait)(struct comm *c, int tag);
    void (*wait_all)(struct comm *c);
    void *(*stream)(const struct comm *c);        /* may be NULL: host library */
    void *(*mem_alloc)(struct comm *c, size_t bytes); /* may be NULL: no registered memory */
    void (*mem_free)(struct comm *c, void *p);
};

struct comm {
    const struct comm_ops *ops;
    struct group *group;
    int rank, size;
    void *compute_stream; /* the backend's (cudaStream_t), NULL on the CPU */
    struct comm_options opt;
    comm_marker_fn marker;
    void *marker_ctx;
    void *impl; /* the library's own state */
};

static inline void comm_mark(struct comm *c, int tag, int is_end, void *stream)
{
    if (c->marker != NULL) c->marker(c->marker_ctx, tag, is_end, stream);
}

extern const struct comm_ops comm_mpi_ops;
#ifdef DPSCALE_HAVE_CUDA
extern const struct comm_ops comm_nccl_ops;
#endif

#endif

/* comm.c — comm_open and the thin calls through the library's table (comm.h). */
#include <stdio.h>
#include <stdlib.h>

#include "comm/comm_internal.h"
#include "config/config.h"

/* The table of `library` (enum comm_library), NULL when it is not in this build. */
static const struct comm_ops *library_ops(int library)
{
    if (library == LIBRARY_MPI) return &comm_mpi_ops;
#ifdef DPSCALE_HAVE_CUDA
    if (library == LIBRARY_NCCL) return &comm_nccl_ops;
#endif
    return NULL;
}

const char *comm_library_name_of(int library)
{
    const struct comm_ops *ops = library_ops(library);
    return ops != NULL ? ops->name : "?";
}

int comm_open(struct comm **out, int library, struct group *g, void *compute_stream, const struct comm_options *o,
              char *err, size_t errlen)
{
    const struct comm_ops *ops = library_ops(library);
    if (ops == NULL) {
        snprintf(err, errlen, "comm.library %d is not in this build; rebuild with nvcc on the PATH for nccl", library);
        return -1;
    }
    struct comm *c = calloc(1, sizeof *c);
    CHECK_ALLOC(c);
    c->ops = ops;
    c->group = g;
    c->rank = group_rank(g);
    c->size = group_size(g);
    c->compute_stream = compute_stream;
    if (o != NULL) c->opt = *o;
    if (ops->open(c, err, errlen) != 0) {
        free(c);
        return -1;
    }
    *out = c;
    return 0;
}

void comm_close(struct comm *c)
{
    if (c == NULL) return;
    c->ops->close(c);
    free(c);
}

const char *comm_library_name(const struct comm *c) { return c->ops->name; }
int comm_has_avg(const struct comm *c) { return c->ops->has_avg; }
void *comm_stream(const struct comm *c) { return c->ops->stream != NULL ? c->ops->stream(c) : NULL; }

void comm_set_marker(struct comm *c, comm_marker_fn fn, void *ctx)
{
    c->marker = fn;
    c->marker_ctx = ctx;
}

void comm_begin(struct comm *c, int tag) { c->ops->begin(c, tag); }
void comm_end(struct comm *c, int tag) { c->ops->end(c, tag); }

void comm_group_begin(struct comm *c)
{
    if (c->ops->group_begin != NULL) c->ops->group_begin(c);
}

void comm_group_end(struct comm *c)
{
    if (c->ops->group_end != NULL) c->ops->group_end(c);
}

void comm_allreduce(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op)
{
    c->ops->allreduce(c, send, recv, count, dtype, op);
}

void comm_reduce_scatter(struct comm *c, void *buf, size_t count, int dtype, int op)
{
    c->ops->reduce_scatter(c, buf, count, dtype, op);
}

void comm_all_gather(struct comm *c, void *buf, size_t count, int dtype) { c->ops->all_gather(c, buf, count, dtype); }

void comm_progress(struct comm *c)
{
    if (c->ops->progress != NULL) c->ops->progress(c);
}

void comm_wait(struct comm *c, int tag) { c->ops->wait(c, tag); }
void comm_wait_all(struct comm *c) { c->ops->wait_all(c); }

void *comm_mem_alloc(struct comm *c, size_t bytes)
{
    return c->ops->mem_alloc != NULL && c->opt.register_buffers ? c->ops->mem_alloc(c, bytes) : NULL;
}

void comm_mem_free(struct comm *c, void *p)
{
    if (p != NULL && c->ops->mem_free != NULL) c->ops->mem_free(c, p);
}

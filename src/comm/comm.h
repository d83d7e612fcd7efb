/* comm.h — the comm seam: the collectives that move gradients and weights between
 * the ranks of one run, behind a small table of function pointers per library
 * (comm_mpi.c: MPI on host buffers; comm_nccl.c: NCCL on GPU buffers). Two words,
 * never mixed: the *library* that reduces (mpi, nccl; comm.library) and the *path*
 * the bytes take (nvlink, pcie, host, net; comm.path, see src/comm/nccl_path.h).
 *
 * comm_open() chooses an implementation as backend_open() does; the options are
 * passed at creation and every piece of library state lives in the implementation.
 * A run opens a comm only when it has something to reduce: a 1-rank run has none.
 *
 * Work is grouped in tagged operations: comm_begin(tag), one or more collectives,
 * comm_end(tag). An operation's collectives run after everything enqueued so far
 * on the compute stream (GPU libraries), one after the other; collectives between
 * comm_group_begin and comm_group_end run together (one NCCL group), so they must
 * not touch each other's buffers. The marker
 * hears when operation `tag` starts and ends: on the host at that moment (MPI,
 * stream NULL) or to be enqueued on the library's stream (NCCL), which is where a
 * caller hangs work that needs the result (the per-bucket optimizer update). */
#ifndef DPSCALE_COMM_H
#define DPSCALE_COMM_H

#include <stddef.h>

#include "comm/group.h"
#include "base/dtype.h"

struct comm_options {
    int max_ctas;         /* NCCL maxCTAs: SMs a collective may take from the overlapped compute; 0 = NCCL's */
    int cta_policy;       /* NCCL CTAPolicy: 0 default, 1 efficiency, 2 zero (with registered buffers) */
    int register_buffers; /* buffers from comm_mem_alloc are ncclMemAlloc'ed and ncclCommRegister'ed */
    int symmetric;        /* ... and registered as symmetric windows (NCCL's symmetric kernels) */
};

typedef void (*comm_marker_fn)(void *ctx, int tag, int is_end, void *stream);

struct comm;

/* Collective over the ranks of g, through `library` (enum comm_library of config.h:
 * LIBRARY_MPI or LIBRARY_NCCL). Returns 0, or -1 with a message (e.g. the library
 * is not in this build, or cannot work with this backend's buffers). */
int comm_open(struct comm **out, int library, struct group *g, void *compute_stream, const struct comm_options *o,
              char *err, size_t errlen);
void comm_close(struct comm *c);

const char *comm_library_name(const struct comm *c);
/* The name of `library` (enum comm_library) as its table says it ("mpi", "nccl"), the
 * same as comm_library_name of a comm it opens; "?" when it is not in this build. */
const char *comm_library_name_of(int library);
/* Whether REDUCE_AVG delivers the mean (else the sum: the caller divides by N). */
int comm_has_avg(const struct comm *c);
void comm_set_marker(struct comm *c, comm_marker_fn fn, void *ctx);
/* The stream the library's collectives run on (cudaStream_t), NULL for host libraries. */
void *comm_stream(const struct comm *c);

void comm_begin(struct comm *c, int tag);
void comm_end(struct comm *c, int tag);
void comm_group_begin(struct comm *c);
void comm_group_end(struct comm *c);
/* Sum (or mean) of `count` elements from send into recv; send == recv is in place. */
void comm_allreduce(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op);
/* In place, as NCCL: buf holds size x count elements; rank r receives the reduction
 * of block r at buf + r x count. The other blocks are left as they were. */
void comm_reduce_scatter(struct comm *c, void *buf, size_t count, int dtype, int op);
/* In place: rank r's block sits at buf + r x count; afterwards buf holds every block. */
void comm_all_gather(struct comm *c, void *buf, size_t count, int dtype);

/* Let started operations advance (MPI moves data only inside MPI calls). */
void comm_progress(struct comm *c);
/* Operation `tag` is complete for the host (MPI), or will be before anything enqueued
 * later on the compute stream runs (NCCL). */
void comm_wait(struct comm *c, int tag);
void comm_wait_all(struct comm *c);

/* Device memory for buffers that collectives touch: registered with the library when
 * the options ask for it (collective: every rank allocates the same sequence), plain
 * otherwise. NULL from comm_mem_alloc: the caller allocates as usual. */
void *comm_mem_alloc(struct comm *c, size_t bytes);
void comm_mem_free(struct comm *c, void *p);

#endif

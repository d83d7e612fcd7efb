/* comm.h — process bootstrap and the collectives seam.
 *
 * comm_bootstrap() starts MPI, finds the node-local rank (MPI_Comm_split_type
 * SHARED), and installs the abort hook so that any fatal error takes every rank
 * down. A `struct comm` is the group of the first N ranks that one run of the
 * sweep trains on; its gradient allreduce goes through a transport (a small table
 * of function pointers, one file per transport: comm_mpi.c today). Everything
 * else (barriers, gathers of timings) is plain MPI on the same ranks, outside the
 * timed loop. */
#ifndef DPSCALE_COMM_H
#define DPSCALE_COMM_H

#include <stddef.h>

#include "../src/config.h"

struct launch {
    int rank, size;             /* in MPI_COMM_WORLD */
    int local_rank, local_size; /* on this node */
    int nnodes;
    char host[64];
    char mpi_library[256];      /* MPI_Get_library_version, first line */
};

struct comm;

/* Transport of the gradient allreduce; implementations: comm_mpi.c, comm_nccl.c. */
struct comm_transport {
    const char *name;
    int has_avg; /* performs ALLREDUCE_AVG itself; otherwise AVG is a sum and the caller scales */
    int (*init)(struct comm *c);
    /* Start reducing `count` elements of `dtype` (enum dtype) from send into recv over the
     * group (send == recv: in place). `tag` names the allreduce for the marker hook. */
    void (*allreduce_start)(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op, int tag);
    /* Let started allreduces advance (MPI progresses only inside MPI calls); may be NULL. */
    void (*progress)(struct comm *c);
    /* Every started allreduce is complete (the host waits: MPI) or will be before
     * anything enqueued later on the compute stream runs (GPU transports). */
    void (*allreduce_wait_all)(struct comm *c);
    void (*destroy)(struct comm *c);
};

/* Called by the transport when allreduce `tag` starts (is_end 0) and ends (1): on
 * the host (stream NULL) at that moment, or to be enqueued on `stream` (GPU). */
typedef void (*comm_marker_fn)(void *ctx, int tag, int is_end, void *stream);

extern const struct comm_transport comm_transport_mpi;
#ifdef DPSCALE_HAVE_CUDA
extern const struct comm_transport comm_transport_nccl; /* comm_nccl.c */
#endif

int comm_bootstrap(int *argc, char ***argv, struct launch *out);
void comm_finalize(void);

/* Collective over the world: the first n ranks get a comm, the others NULL.
 * `stream` is the backend's compute stream (NULL on the CPU): GPU transports
 * order their work after what was enqueued there, and the stream after theirs. */
struct comm *comm_create(int n, const struct comm_transport *transport, void *stream);
/* Transport options that must be known before comm_create: NCCL's maxCTAs (0 = its default). */
void comm_set_defaults(int nccl_max_ctas);
void comm_destroy(struct comm *c);

int comm_rank(const struct comm *c);
int comm_size(const struct comm *c);
int comm_nnodes(const struct comm *c);
const char *comm_transport_name(const struct comm *c);

void comm_allreduce_start(struct comm *c, const void *send, void *recv, size_t count, int dtype, int op, int tag);
void comm_progress(struct comm *c);
void comm_allreduce_wait_all(struct comm *c);
/* Whether ALLREDUCE_AVG delivers the mean (else the sum: the caller divides by N). */
int comm_has_avg(const struct comm *c);
void comm_set_marker(struct comm *c, comm_marker_fn fn, void *ctx);

void comm_barrier(struct comm *c);
/* Rank 0 of the group receives size x count doubles, rank-major. */
void comm_gather_doubles(struct comm *c, const double *send, size_t count, double *recv);
/* Sum of `count` doubles over the group, delivered to every rank. */
void comm_sum_doubles(struct comm *c, double *values, size_t count);
double comm_max_double(struct comm *c, double value);
void comm_bcast_bytes(struct comm *c, void *buf, size_t bytes);

/* Called first by the abort path (e.g. ncclCommAbort), so no collective stays blocked. */
void comm_set_transport_abort(void (*hook)(void));

/* World-wide helpers, used outside any run. */
void comm_world_barrier(void);
/* Largest of every rank's `value`: lets all ranks agree that one of them failed. */
int comm_world_max_int(int value);
/* Lowest rank whose `flag` is non-zero, or -1. */
int comm_world_first_rank_with(int flag);
void comm_world_bcast_bytes(void *buf, size_t bytes);
/* 1 on every rank when two ranks of one node hold the same `key` (e.g. a GPU's bus
 * id); *other receives the lower of two such ranks on the higher one. */
int comm_world_node_duplicate(const char *key, int local_rank, int *other);
/* The `key` of every rank on this node, 64 bytes each, in node-local rank order;
 * returns how many (the caller frees *all). */
int comm_node_gather_keys(const char *key, char **all);
/* Every rank's host name, gathered on rank 0 (NULL elsewhere): size x 64 bytes. */
char *comm_world_gather_hosts(const struct launch *l);

#endif

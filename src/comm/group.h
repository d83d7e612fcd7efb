/* group.h — process bootstrap and the groups of ranks a sweep runs on.
 *
 * mpi_bootstrap() starts MPI, finds the node-local rank (MPI_Comm_split_type
 * SHARED), and installs the abort hook so that any fatal error takes every rank
 * down. A `struct group` is the first N ranks of the world that one run of the
 * sweep trains on: barriers and the gathers of timings outside the timed loop go
 * through it. Gradients do not: they travel through the comm seam (src/comm/comm.h),
 * which a run opens on a group only when it has something to reduce (N > 1). */
#ifndef DPSCALE_GROUP_H
#define DPSCALE_GROUP_H

#include <stddef.h>

struct launch {
    int rank, size;             /* in MPI_COMM_WORLD */
    int local_rank, local_size; /* on this node */
    int nnodes;
    char host[64];
    char mpi_library[256];      /* MPI_Get_library_version, first line */
};

struct group;

int mpi_bootstrap(int *argc, char ***argv, struct launch *out);
void mpi_finish(void);

/* Collective over the world: the first n ranks get a group, the others NULL. */
struct group *group_create(int n);
void group_destroy(struct group *g);

int group_rank(const struct group *g);
int group_size(const struct group *g);
int group_nnodes(const struct group *g);

void group_barrier(struct group *g);
/* Rank 0 of the group receives size x count doubles, rank-major. */
void group_gather_doubles(struct group *g, const double *send, size_t count, double *recv);
/* Sum of `count` doubles over the group, delivered to every rank. */
void group_sum_doubles(struct group *g, double *values, size_t count);
double group_max_double(struct group *g, double value);
void group_bcast_bytes(struct group *g, void *buf, size_t bytes);

/* Called first by the abort path (e.g. ncclCommAbort), so no collective stays blocked. */
void mpi_set_library_abort(void (*hook)(void));

/* World-wide helpers, used outside any run. */
void world_barrier(void);
/* Largest of every rank's `value`: lets all ranks agree that one of them failed. */
int world_max_int(int value);
/* Lowest rank whose `flag` is non-zero, or -1. */
int world_first_rank_with(int flag);
void world_bcast_bytes(void *buf, size_t bytes);
/* 1 on every rank when two ranks of one node hold the same `key` (e.g. a GPU's bus
 * id); *other receives the lower of two such ranks on the higher one. */
int world_node_duplicate(const char *key, int local_rank, int *other);
/* The `key` of every rank on this node, 64 bytes each, in node-local rank order;
 * returns how many (the caller frees *all). */
int node_gather_keys(const char *key, char **all);
/* Every rank's host name, gathered on rank 0 (NULL elsewhere): size x 64 bytes. */
char *world_gather_hosts(const struct launch *l);
/* Every rank's `bytes` at `mine`, gathered on rank 0 in rank order (NULL elsewhere). */
void *world_gather_bytes(const void *mine, size_t bytes);

#endif

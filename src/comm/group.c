/* group.c — MPI bootstrap, node-local ranks, the per-run group of the first N
 * ranks, and the small collectives used outside the timed loop (see group.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/mpi_check.h"

struct group {
    MPI_Comm mpi; /* the first N ranks of the world */
    int rank, size, nnodes;
};

static void (*g_library_abort)(void) = NULL;

void mpi_set_library_abort(void (*hook)(void)) { g_library_abort = hook; }

static void abort_all_ranks(int code)
{
    if (g_library_abort != NULL) g_library_abort();
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}

int mpi_bootstrap(int *argc, char ***argv, struct launch *out)
{
    memset(out, 0, sizeof *out);
    CHECK_MPI(MPI_Init(argc, argv));
    /* Errors come back to us, so that the message names the call and the rank. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &out->rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &out->size));

    MPI_Comm node;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, out->rank, MPI_INFO_NULL, &node));
    CHECK_MPI(MPI_Comm_rank(node, &out->local_rank));
    CHECK_MPI(MPI_Comm_size(node, &out->local_size));
    CHECK_MPI(MPI_Comm_free(&node));
    int leader = out->local_rank == 0;
    CHECK_MPI(MPI_Allreduce(&leader, &out->nnodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));

    if (gethostname(out->host, sizeof out->host) != 0) snprintf(out->host, sizeof out->host, "unknown");
    out->host[sizeof out->host - 1] = '\0';
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    CHECK_MPI(MPI_Get_library_version(lib, &len));
    lib[strcspn(lib, "\n")] = '\0';
    snprintf(out->mpi_library, sizeof out->mpi_library, "%s", lib);

    dp_error_set_identity(out->host, out->rank);
    dp_error_set_abort_hook(abort_all_ranks);
    return 0;
}

void mpi_finish(void)
{
    dp_error_set_abort_hook(NULL);
    MPI_Finalize();
}

struct group *group_create(int n)
{
    int rank;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    MPI_Comm sub;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < n ? 0 : MPI_UNDEFINED, rank, &sub));
    if (sub == MPI_COMM_NULL) return NULL;
    struct group *g = calloc(1, sizeof *g);
    CHECK_ALLOC(g);
    g->mpi = sub;
    CHECK_MPI(MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_rank(sub, &g->rank));
    CHECK_MPI(MPI_Comm_size(sub, &g->size));

    MPI_Comm node;
    int local_rank, leader;
    CHECK_MPI(MPI_Comm_split_type(sub, MPI_COMM_TYPE_SHARED, g->rank, MPI_INFO_NULL, &node));
    CHECK_MPI(MPI_Comm_rank(node, &local_rank));
    CHECK_MPI(MPI_Comm_free(&node));
    leader = local_rank == 0;
    CHECK_MPI(MPI_Allreduce(&leader, &g->nnodes, 1, MPI_INT, MPI_SUM, sub));
    return g;
}

void group_destroy(struct group *g)
{
    if (g == NULL) return;
    MPI_Comm_free(&g->mpi);
    free(g);
}

int group_rank(const struct group *g) { return g->rank; }
int group_size(const struct group *g) { return g->size; }
int group_nnodes(const struct group *g) { return g->nnodes; }
MPI_Comm group_mpi(const struct group *g) { return g->mpi; }

void group_barrier(struct group *g) { CHECK_MPI(MPI_Barrier(g->mpi)); }

void group_gather_doubles(struct group *c, const double *send, size_t count, double *recv)
{
    if (count > INT_MAX) DP_FATAL("lower train.iters", "gather of %zu values is too large for MPI", count);
    CHECK_MPI(MPI_Gather(send, (int)count, MPI_DOUBLE, recv, (int)count, MPI_DOUBLE, 0, c->mpi));
}

void group_sum_doubles(struct group *c, double *values, size_t count)
{
    if (count > INT_MAX) DP_FATAL(NULL, "reduction of %zu values is too large for MPI", count);
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, values, (int)count, MPI_DOUBLE, MPI_SUM, c->mpi));
}

double group_max_double(struct group *c, double value)
{
    double out;
    CHECK_MPI(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, c->mpi));
    return out;
}

/* MPI counts are int: large buffers travel in pieces of at most 1 GiB. */
static void bcast_in_pieces(MPI_Comm mpi, void *buf, size_t bytes)
{
    const size_t piece = (size_t)1 << 30;
    for (size_t off = 0; off < bytes; off += piece) {
        size_t len = bytes - off < piece ? bytes - off : piece;
        CHECK_MPI(MPI_Bcast((char *)buf + off, (int)len, MPI_BYTE, 0, mpi));
    }
}

void group_bcast_bytes(struct group *c, void *buf, size_t bytes) { bcast_in_pieces(c->mpi, buf, bytes); }
void world_bcast_bytes(void *buf, size_t bytes) { bcast_in_pieces(MPI_COMM_WORLD, buf, bytes); }

void world_barrier(void) { CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); }

int world_max_int(int value)
{
    int out;
    CHECK_MPI(MPI_Allreduce(&value, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    return out;
}

int world_first_rank_with(int flag)
{
    int rank, first;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    int mine = flag ? rank : INT_MAX;
    CHECK_MPI(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    return first == INT_MAX ? -1 : first;
}

int node_gather_keys(const char *key, char **all)
{
    MPI_Comm node;
    int size;
    char mine[64] = "";
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CHECK_MPI(MPI_Comm_size(node, &size));
    snprintf(mine, sizeof mine, "%s", key);
    *all = calloc((size_t)size, sizeof mine);
    CHECK_ALLOC(*all);
    CHECK_MPI(MPI_Allgather(mine, sizeof mine, MPI_CHAR, *all, sizeof mine, MPI_CHAR, node));
    CHECK_MPI(MPI_Comm_free(&node));
    return size;
}

int world_node_duplicate(const char *key, int local_rank, int *other)
{
    char *all;
    int dup = 0;
    const int size = node_gather_keys(key, &all);
    for (int r = 0; r < local_rank && r < size && !dup; r++)
        if (strcmp(all + (size_t)r * 64, all + (size_t)local_rank * 64) == 0) {
            dup = 1;
            *other = r;
        }
    free(all);
    return world_max_int(dup);
}

char *world_gather_hosts(const struct launch *l)
{
    char *all = NULL;
    if (l->rank == 0) {
        all = calloc((size_t)l->size, 64);
        CHECK_ALLOC(all);
    }
    CHECK_MPI(MPI_Gather(l->host, 64, MPI_CHAR, all, 64, MPI_CHAR, 0, MPI_COMM_WORLD));
    return all;
}

void *world_gather_bytes(const void *mine, size_t bytes)
{
    int rank, size;
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    if (bytes > INT_MAX) DP_FATAL(NULL, "world_gather_bytes: %zu bytes per rank is more than MPI_Gather takes", bytes);
    char *all = NULL;
    if (rank == 0) {
        all = calloc((size_t)size, bytes);
        CHECK_ALLOC(all);
    }
    CHECK_MPI(MPI_Gather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD));
    return all;
}

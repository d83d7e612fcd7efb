/* provenance.h — what a reader needs to reproduce or audit a launch, gathered where it
 * is known: the build (dpscale's version and git commit, the headers of every library),
 * the libraries loaded at run time, the launch (launcher, full command line, start and
 * end, Slurm allocation, the user's system label), and each rank as it saw itself
 * (host, CPU, GPU identity, memory, power limit, clocks, NCCL_* and CUDA_* environment).
 * The names and meanings are schema.h's (SCHEMA_LAUNCH_ATTRS, SCHEMA_LIBRARY_ATTRS,
 * SCHEMA_RANK_*); h5out writes them at the root, on /system and in /system/ranks.
 * Nothing here needs a GPU: what cannot be known is left empty (-1, NaN for numbers). */
#ifndef DPSCALE_PROVENANCE_H
#define DPSCALE_PROVENANCE_H

#include <stdint.h>
#include <stdio.h>

#include "result/schema.h"

#define PROVENANCE_ENV_LEN 4096
#define PROVENANCE_FIELD(name, bytes, meaning) char name[bytes];

/* The libraries dpscale was built with and runs with (schema.h: SCHEMA_LIBRARY_ATTRS). */
struct provenance_libraries {
    SCHEMA_LIBRARY_ATTRS(PROVENANCE_FIELD)
};

/* One rank as it saw itself: fixed size, so that rank 0 can gather every rank's. */
struct provenance_rank {
    int64_t rank, local_rank, cpus, gpu_index, gpu_memory_bytes, gpu_app_clock_graphics_mhz, gpu_app_clock_memory_mhz;
    double gpu_power_limit_w;
    char host[64], cpu_model[128], gpu_name[96], gpu_uuid[96], gpu_bus_id[32], gpu_driver[64];
    char environment[PROVENANCE_ENV_LEN]; /* NCCL_* and CUDA_* as launched, "NAME=value\n" each, sorted */
};

/* The launch (schema.h: SCHEMA_LAUNCH_ATTRS), its libraries and its ranks. */
struct provenance {
    SCHEMA_LAUNCH_ATTRS(PROVENANCE_FIELD)
    char dpscale_version[32];
    char job_id[64];     /* SLURM_JOB_ID, "" outside Slurm */
    char *command_line;  /* the whole command line, each argument quoted for a POSIX shell where needed */
    int argc;
    char **argv;         /* the command line exactly, one argument each */
    struct provenance_libraries libs;
    struct provenance_rank *ranks; /* every rank's (rank 0 of a launch), or this process's */
    int nranks;
};
#undef PROVENANCE_FIELD

/* Remember the command line as main() received it (the subcommands see only their part). */
void provenance_note_command(int argc, char **argv);

/* The launch as it starts, on every rank: start time, command line, launcher, Slurm,
 * libraries. `system_label` may be set later (it comes with the configuration). */
void provenance_start(struct provenance *p);
/* The end time, when the file is written. */
void provenance_finish(struct provenance *p);
void provenance_free(struct provenance *p);

/* This process alone, start to end now (a file that no launch wrote: dpscale project). */
void provenance_local(struct provenance *p);

/* Every NCCL_* and CUDA_* variable of the environment, "NAME=value\n" each, sorted
 * (" ..." at the end when they do not fit). */
void provenance_environment(char *buf, size_t len);
/* This rank: its host and CPU, and its GPU by PCI bus id ("" on the cpu backend; CUDA
 * device `gpu_index`, -1 for none). The environment is left as it is. */
void provenance_rank_collect(struct provenance_rank *r, int rank, int local_rank, const char *host, const char *bus_id,
                             const char *gpu_name, int gpu_index);

/* The libraries: built with (headers) and loaded (run time). */
void provenance_libraries(struct provenance_libraries *l);
/* The same from the CUDA side (provenance_cuda.c; compiled with CUDA only). */
void provenance_cuda_libraries(struct provenance_libraries *l);
/* Total memory of CUDA device `index` in bytes, -1 unknown (provenance_cuda.c). */
long long provenance_cuda_memory_bytes(int index);

/* dpscale --version: version, commit, and each library built with and loaded. */
void provenance_print_version(FILE *out);

/* "2026-01-31T12:00:00Z": now, UTC. */
void provenance_utc_now(char *buf, size_t len);

#endif

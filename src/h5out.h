/* h5out.h — the result file of one launch (HDF5, schema version 1; the README
 * documents every field). Only rank 0 writes. The file is written to NAME.tmp and
 * linked to NAME only when complete, so a crash or a full disk never leaves a
 * half-written result, and an existing result is never overwritten. */
#ifndef DPSCALE_H5OUT_H
#define DPSCALE_H5OUT_H

#include <stddef.h>

#include "collectives.h"
#include "config.h"
#include "model.h"
#include "peer_bw.h"
#include "topo.h"
#include "stats.h"
#include "train.h"

#define H5OUT_SCHEMA_VERSION 4 /* 2: /runs/<library>/<path>, the honest 1-rank run; 3: interference over backward alone;
                               * 4: /model, the model's tensor table */

struct h5out_system {
    const char *dpscale_version;
    const char *created_utc;
    const char *command_line;
    const char *job_id;
    const char *backend;
    const char *device_name;
    const char *backend_library;
    const char *mpi_library;
    const char *driver;
    int threads_per_rank;
    int world_size, nnodes;
    const char *hosts; /* world_size x 64 bytes, one host name per rank */
    const char *library;    /* comm.library in force: mpi or nccl */
    const char *path;       /* comm.path asked for */
    const char *nccl_env;   /* every NCCL_* variable NCCL saw, "NAME=value ..." */
    const struct topo_node *topo;    /* rank 0's node */
    const struct peer_matrix *peers; /* NULL unless measured (dpscale topo) */
};

/* The path of a new result file: cfg->output or dpscale-<utc>-<job>.h5 in
 * cfg->output_dir (created if missing). Fails when it already exists or cannot be
 * written, before any work is done. */
int h5out_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                      char *err, size_t errlen);

/* What a launch measured: training runs (/runs, /summary), allreduce sweeps (/collectives). */
/* One step of one rank laid open (dpscale dump): its initial parameters, the
 * gradients and loss of its first step, and the inputs of that step, all as fp32 or
 * int32 host arrays. */
#define H5OUT_DUMP_MAX_INPUTS 8
struct h5out_array {
    const char *name;
    int is_int;  /* int32, else float32 */
    size_t count;
    const void *data;
};
struct h5out_dump {
    int batch;
    double loss;
    size_t nparams;
    const float *params, *grads;
    int ninputs;
    struct h5out_array inputs[H5OUT_DUMP_MAX_INPUTS];
};

struct h5out_contents {
    const struct model *model; /* its /model group; NULL: none (a file of collectives only) */
    const struct run_result *runs;
    const struct run_summary *summaries;
    int nruns;
    const struct collective_result *collectives;
    int ncollectives;
    const struct h5out_dump *dump; /* its /dump group; NULL: none */
};

/* Write the whole file. Returns 0, or -1 with a message in err (nothing left behind). */
int h5out_write(const char *path, const struct config *cfg, const struct h5out_system *sys,
                const struct h5out_contents *contents, char *err, size_t errlen);

/* A projection (dpscale project): a file of its own, never one with measured runs. It
 * copies the source's /config, /system and /model, holds the projected rows in
 * /summary (library "projected", path the target's name) and what they rest on in
 * /projection. The same all-or-nothing write as h5out_write. */
#define H5OUT_PROJECTION_TEXT 256
struct h5out_projection {
    const char *source;       /* the result file projected */
    const char *target;       /* the comm file or catalog entry */
    const char *compute;      /* "the compute as measured", or how it was scaled */
    const char *ready_times;  /* where each bucket's ready time came from */
    double interference, imbalance_s;
    const struct run_summary *rows;
    int nrows;
    const char *curve_sources; /* nrows x H5OUT_PROJECTION_TEXT: each row's curve and its source */
    const char *dpscale_version, *created_utc, *command_line;
};
int h5out_write_projection(const char *path, const struct h5out_projection *p, char *err, size_t errlen);

#endif

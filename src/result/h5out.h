/* h5out.h — the result file of one launch (HDF5; schema.h names every column and
 * dataset, docs/schema.md documents the layout). Only rank 0 writes. The file is built in
 * memory and written all-or-nothing (h5file.h): a crash or a full disk never leaves a
 * half-written result, and an existing result is never overwritten. */
#ifndef DPSCALE_H5OUT_H
#define DPSCALE_H5OUT_H

#include <stddef.h>

#include "config/config.h"
#include "result/h5file.h"
#include "model/model.h"
#include "result/run_record.h"
#include "system/peer_bw.h"
#include "system/provenance.h"
#include "result/schema.h"
#include "system/topo.h"

#define H5OUT_SCHEMA_VERSION SCHEMA_VERSION

/* What the launch ran on and how it was started. */
struct h5out_system {
    const struct provenance *prov; /* the root's attributes, /system's library versions, /system/ranks */
    const char *backend;
    const char *device_name;
    const char *backend_library;
    const char *mpi_library; /* its first line */
    const char *driver;
    int threads_per_rank;
    int world_size, nnodes;
    int ranks_per_node;     /* of rank 0's node: /summary's gpus_per_node of a run on several nodes */
    const char *hosts;      /* world_size x 64 bytes, one host name per rank */
    const char *library;    /* comm.library in force: mpi or nccl */
    const char *path;       /* comm.path asked for */
    const char *nccl_env;   /* every NCCL_* variable NCCL saw, "NAME=value ..." */
    const struct topo_node *topo;    /* rank 0's node */
    const struct peer_matrix *peers; /* NULL unless measured (dpscale topo) */
    const double *memory;   /* [world_size x 3]: each rank's memory plan, baseline and peak resident set (bytes) */
};

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

/* What a launch measured: training runs (/runs, /summary), allreduce sweeps (/collectives). */
struct h5out_contents {
    const struct model *model; /* its /model group; NULL: none (a file of collectives only) */
    const struct run_result *runs;
    const struct run_summary *summaries;
    int nruns;
    const struct collective_result *collectives;
    int ncollectives;
    const struct h5out_dump *dump; /* its /dump group; NULL: none */
    int disk_mode;                 /* enum h5file_mode: how the file reaches its name */
    int points_total;              /* a sweep: its points; > nruns while the file holds the points done so far */
    const char *diverged;          /* the point the sweep stopped at because its training diverged; NULL: none */
};

/* Write the whole file. Returns 0, or -1 with a message in err (nothing left behind). */
int h5out_write(const char *path, const struct config *cfg, const struct h5out_system *sys,
                const struct h5out_contents *contents, char *err, size_t errlen);

/* A projection (dpscale project): a file of its own, never one with measured runs. It
 * copies the source's /config, /system and /model (and its root attributes, into
 * /projection/source), holds the projected rows in /summary (library "proj", path
 * "sim") and what they rest on in /projection; its own root attributes are the
 * projecting process's provenance, collected here (provenance_local). The same
 * all-or-nothing write as h5out_write. */
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
};
int h5out_write_projection(const char *path, const struct h5out_projection *p, char *err, size_t errlen);

#endif

/* result_read_internal.h — what the readers of src/result share at HDF5's level: the
 * open file (result_in.h), the reader of each kind of file (result_read.h), each given
 * the open file and its schema version: result_read_runs.c (/summary),
 * result_read_comm.c (/collectives) and result_read_topo.c (/system/topology), each
 * returning 0, or -1 with the reason in err; and the names of older schemas
 * (result_read_compat.c). */
#ifndef DPSCALE_RESULT_READ_INTERNAL_H
#define DPSCALE_RESULT_READ_INTERNAL_H

#include <hdf5.h>

#include "result/result_in.h"
#include "result/result_read.h"

struct result_in {
    hid_t file;
};

int result_read_runs(hid_t file, int schema, struct report_file *f, char *err, size_t errlen);
int result_read_comm(hid_t file, int schema, struct report_file *f, char *err, size_t errlen);
int result_read_topo(hid_t file, struct report_file *f, char *err, size_t errlen);

/* The name a dataset or /summary column has in this file: `name` (schema.h), or the
 * name it had before schema 5 (allreduce_busbw_gbps for allreduce_busbw_GBps) where
 * only that one is there. `dset` >= 0: a column of that compound dataset; else a
 * link under loc. */
const char *result_name_in(hid_t loc, hid_t dset, const char *name);

#endif

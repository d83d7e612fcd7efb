/* report_read.h — the parts of report_read (report.h) for each kind of file, each
 * given the open file and its schema version: report_read_runs.c (/summary),
 * report_read_comm.c (/collectives) and report_read_topo.c (/system/topology).
 * Each returns 0, or -1 with the reason in err. */
#ifndef DPSCALE_REPORT_READ_H
#define DPSCALE_REPORT_READ_H

#include <hdf5.h>

#include "report/report.h"

int report_read_runs(hid_t file, int schema, struct report_file *f, char *err, size_t errlen);
int report_read_comm(hid_t file, int schema, struct report_file *f, char *err, size_t errlen);
int report_read_topo(hid_t file, struct report_file *f, char *err, size_t errlen);

/* The name a dataset or /summary column has in this file: `name` (schema.h), or the
 * name it had before schema 5 (allreduce_busbw_gbps for allreduce_busbw_GBps) where
 * only that one is there. `dset` >= 0: a column of that compound dataset; else a
 * link under loc. */
const char *report_name_in(hid_t loc, hid_t dset, const char *name);

/* A path as a file of `schema` wrote it, in today's names: "pcie" before schema 6 was
 * the path through host memory (NCCL_P2P_DISABLE=1), now "host". */
void report_path_in(int schema, const char *written, char *path, size_t pathlen);

/* Schema 1 named a run or sweep by one `transport`: a library ("mpi", "nccl": path
 * auto) or a path that only NCCL took ("nvlink", "pcie" = host memory, "net"). */
void report_schema1_transport(const char *transport, char *library, size_t liblen, char *path, size_t pathlen);

/* What a figure read from a file may be: finite, from 0 (or more than 0, when
 * `positive`) to `most`, or NaN where the schema lets it be unknown. A time, a
 * throughput, a bandwidth, a power or an energy printed at 301 digits, negative or
 * infinite is damage, whether a byte changed or someone wrote it so. */
struct report_figure {
    int nan_ok, positive;
    double most;
};
/* 0 when v is such a figure; -1 with "damaged: WHAT is V; it must be ..." in err. */
int report_check_figure(const char *what, double v, struct report_figure rule, char *err, size_t errlen);

#endif

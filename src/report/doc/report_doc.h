/* report_doc.h — what the procurement document (`dpscale report --doc`, report.h)
 * needs beyond the report's tables, shared by its modules and by --plot:
 *   report_doc_read.c     reads every attribute a file holds as text (its provenance,
 *                         read generically, so that attributes added later show up
 *                         without a change here), the NVLink counters of its runs and
 *                         the link between its first two GPUs;
 *   report_doc_columns.c  names the path that ran ("host memory (P2P off)", "PCIe (P2P)",
 *                         never a bare "pcie"), labels columns by what differs between
 *                         them, orders them and writes their legend;
 *   report_doc.c          writes the document: the models' sections;
 *   report_doc_busbw.c    its busbw section;
 *   report_doc_provenance.c  its provenance appendix.
 * (src/report/report_tables.c is the other report: the tables of every kind, on stdout.) */
#ifndef DPSCALE_REPORT_DOC_H
#define DPSCALE_REPORT_DOC_H

#include <stddef.h>
#include <stdio.h>

#include "report/report.h"
#include "result/result_in.h"

#define DOC_VALUE_LEN 1024

/* One attribute (or small dataset) as text: "created_utc", "system/driver",
 * "config/comm.overlap", "provenance/<...>/<name>". */
struct doc_attr {
    char name[128];
    char value[DOC_VALUE_LEN];
};

/* A run of /runs as it proves its path: the NVLink counters around its timed steps. */
struct doc_info {
    int readable; /* 0: the file could not be opened again (the attributes below are empty) */
    int schema;
    int nattrs, cap;
    struct doc_attr *attrs; /* root, /system, /config, /projection, /provenance (every level) in that order */
    char hosts[256];        /* the distinct hosts of /system/hosts, "vm (2 ranks)" */
    int topo_ngpus;         /* /system/topology ngpus; 0 when absent */
    char link01[8];         /* the link between GPU 0 and GPU 1 ("NV18", "SYS"), or "" */
    int nruns;
    struct result_run_proof runs[REPORT_MAX_ROWS]; /* the path each run took, and its proof */
};

/* Read a file's attributes again (result_read read its tables). Never fails: what
 * cannot be read is left out. doc_free_info releases it. */
void doc_read_info(const char *path, struct doc_info *info);
void doc_free_info(struct doc_info *info);
/* A file's attributes: a copy of those read beside its tables (f->info), or read now. */
void doc_info_of(const struct report_file *f, struct doc_info *info);
/* The value of an attribute by its full name ("system/nccl_env"), or NULL. */
const char *doc_attr(const struct doc_info *info, const char *name);
/* The value of VAR in the file's NCCL environment ("NCCL_P2P_DISABLE"), copied to buf; NULL when unset. */
const char *doc_nccl_env(const struct doc_info *info, const char *var, char *buf, size_t len);

/* A column of a document table: one system (library and path) of one run file, or
 * one allreduce sweep of one comm file. */
struct doc_column {
    const struct report_file *file;
    const struct doc_info *info;
    const struct report_row *sys;     /* run files: the system's first row */
    const struct report_sweep *sweep; /* comm files: the sweep */
    char path_name[96];               /* "NVLink", "host memory (P2P off)", "PROJECTED", ... */
    char library[16];                 /* "NCCL", "MPI" */
    char proof[224];                  /* how the path is known, in words */
    char label[384];                  /* the path, the library and what else sets the column apart */
};

/* The path a system's bytes took, in the document's words, with how that is known. */
void doc_path_name(const char *library, const char *path, const struct doc_info *info, char *name, size_t len,
                   char *proof, size_t prooflen);
/* Fill path_name, library, proof and label of each column (file, info and sys or
 * sweep set): the label names the path and the library, then whatever else differs
 * between the columns (machine, overlap, NCCL CTAs, buckets, NCCL environment,
 * schema, ...), then the file name where that is still not enough to tell them apart. */
void doc_label_columns(struct doc_column *cols, int n);

/* The file name of a path. */
const char *doc_base_name(const char *path);
#define DOC_MAX_COLUMNS 64
/* The order a reader compares paths in: NVLink (or NCCL's choice between GPUs joined
 * by NVLink), PCIe peer-to-peer, host memory, network, not NVLink, any other (auto,
 * MPI's choice); the document's summary has a column of each. */
enum doc_path_rank { DOC_PATH_NVLINK, DOC_PATH_PCIE, DOC_PATH_HOST, DOC_PATH_NET, DOC_PATH_NOT_NVLINK, DOC_PATH_OTHER,
                     DOC_PATH_RANKS };
/* The rank of a column's path_name. */
int doc_path_rank(const char *path_name);
/* What a column's label says beyond its path and library ("" when nothing). */
const char *doc_label_rest(const struct doc_column *c);
/* Columns that differ only in their path side by side, best link first (NVLink,
 * host memory, network); otherwise in the order given. */
void doc_order_columns(struct doc_column *cols, int n);
/* The table of where each column comes from and how its path is known; `runs`:
 * columns of run files, with their price per GPU-hour. */
void doc_legend(FILE *out, const struct doc_column *cols, int n, int runs);
/* The document's busbw section (comm files, by rank count) and provenance appendix. */
void doc_write_busbw(FILE *out, const struct report_file *files, int n, const struct doc_info *infos);
void doc_write_provenance(FILE *out, const struct report_file *files, int n, const struct doc_info *infos);

/* One line of a plot: the rows of `file` like `sys`. */
struct report_series {
    const struct report_file *file;
    const struct report_row *sys;
    const char *label;
    int color;     /* an index into the palette: one per setting, so that two paths of it share a colour */
    int dashed;    /* a path through host memory or the network: dashed beside NVLink's solid line */
    int projected; /* dotted; its title says PROJECTED */
};
/* Speedup and efficiency against GPU count, each with its ideal, one legend for
 * both, written to out_path (.png or .svg) through a temporary file, so that an
 * existing plot is replaced whole or not at all: a temporary that gnuplot did not end
 * (a full disk) is removed, never renamed. Returns 0 or -1 with a message. */
int report_plot_series(const char *out_path, const char *title, const struct report_series *s, int n, char *err,
                       size_t errlen);
/* The same as `name` (one component) inside a folder held open (safe_file.h). */
struct safe_dir;
int report_plot_series_at(const struct safe_dir *d, const char *name, const char *title, const struct report_series *s,
                          int n, char *err, size_t errlen);

#endif

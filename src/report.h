/* report.h — `dpscale report`: result files in, the tables and plots of a
 * procurement report out. report_read.c reads a file (and refuses what dpscale did
 * not write, or a newer schema; it reads schema 1 files too); report_print.c writes the
 * tables as Markdown, CSV or JSON, and the side-by-side comparison; report_plot.c
 * draws through gnuplot. A system is one (library, path) of one file: "NVIDIA H200,
 * nccl over nvlink". */
#ifndef DPSCALE_REPORT_H
#define DPSCALE_REPORT_H

#include <stddef.h>
#include <stdio.h>

#define REPORT_MAX_ROWS 64

struct report_row {
    char library[16]; /* who reduces: mpi, nccl */
    char path[16];    /* the path NCCL's bytes take: auto, nvlink, pcie, net */
    int nranks, nodes, global_batch;
    double samples_per_s, samples_per_s_per_rank, speedup, efficiency;
    double step_s, comm_exposed_s, allreduce_busbw_gbps, mfu, joules_per_sample, avg_power_w;
};

struct report_file {
    char path[512];
    char device[96];    /* /system device_name */
    char host[64];      /* first host of the launch */
    char created[32];
    /* what must match for two files to be compared */
    char model[48];       /* the preset's label (model.name) */
    char model_type[16];  /* /model type (schema 4); "mlp" before */
    char shape[192];      /* /model shape, or the MLP's "L x W wide" before schema 4 */
    char unit[12];        /* what a sample is: samples, tokens, images */
    long long parameters; /* the model's parameter count */
    int units_per_sample; /* tokens per sequence; 1 for samples and images */
    char precision[8], scaling[8];
    char grad_dtype[8]; /* train.grad_dtype: fp32, or compute (16-bit gradients) */
    int projected;      /* a file of dpscale project: its rows are projected, not measured */
    char projection_target[160], projection_compute[256];
    char overlap[8];    /* comm.overlap of the launch */
    char tag[24];       /* what sets the file apart from the others of the report ("overlap off"), or "" */
    long long batch_per_gpu, global_batch;
    double price_per_gpu_hour; /* 0 = none given */
    int nrows;
    struct report_row rows[REPORT_MAX_ROWS];
};

enum report_format { REPORT_MARKDOWN, REPORT_CSV, REPORT_JSON };

/* Returns 0, or -1 with a one-line reason naming the file in err. */
int report_read(const char *path, struct report_file *f, char *err, size_t errlen);
/* Tag the files with their overlap setting when they differ in it. */
void report_label(struct report_file *files, int n);

/* The system of a row: "<device>, <library> over <path>" ("NVIDIA H200, nccl over nvlink"). */
void report_system_label(const struct report_file *f, const struct report_row *r, char *buf, size_t len);
/* Whether two rows belong to the same system (library and path) of a file. */
int report_same_system(const struct report_row *a, const struct report_row *b);

/* The scaling table of every (file, library, path). */
void report_print_tables(FILE *out, const struct report_file *files, int n, int format);
/* Systems side by side: every (file, library, path) is a system; the first is the reference. */
void report_print_compare(FILE *out, const struct report_file *files, int n, int format);
/* Empty when comparable; otherwise what differs, in words. */
void report_comparability(const struct report_file *a, const struct report_file *b, char *why, size_t len);

/* Efficiency and throughput against GPU count, through gnuplot. Returns 0 or -1 with a message. */
int report_plot(const char *out_path, const struct report_file *files, int n, char *err, size_t errlen);

#endif

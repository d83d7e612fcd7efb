/* report.h — `dpscale report`: result files in, the tables and plots of a
 * procurement report out. Every kind of file dpscale writes has its table:
 *   a run file (dpscale run, and dpscale project's projections): the scaling table;
 *   a comm file (dpscale comm): allreduce busbw by size, in nccl-tests' columns;
 *   a topo file (dpscale topo): the link matrix and, where measured, the copy matrices.
 * report_read*.c read a file (refusing what dpscale did not write, or a newer schema;
 * schema 1 files are still read); report_print.c, report_compare.c, report_comm.c
 * and report_topo.c write the tables as Markdown, CSV (csv.h) or JSON (jansson);
 * report_tables.c puts one report together; report_plot.c draws through gnuplot;
 * report_doc.c writes the procurement document (--doc, report_doc.h). A
 * system is one (library, path) of one file: "NVIDIA H200, nccl over nvlink". */
#ifndef DPSCALE_REPORT_H
#define DPSCALE_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#define REPORT_MAX_ROWS 64
#define REPORT_MAX_SWEEPS 32 /* allreduce sweeps of one comm file */
#define REPORT_MAX_SIZES 64  /* message sizes of one sweep */
#define REPORT_MAX_GPUS 16   /* GPUs of one topology (TOPO_MAX_GPUS) */
#define REPORT_MAX_NICS 16
#define REPORT_MAX_COUNT (1 << 30) /* the most ranks, nodes or samples a count read from a file may say */
#define REPORT_MAX_RANKS 65536     /* ranks of one comm sweep */

struct doc_info;

enum report_kind {
    REPORT_RUNS, /* /summary: dpscale run, or a projection */
    REPORT_COMM, /* /collectives: dpscale comm */
    REPORT_TOPO, /* /system/topology alone: dpscale topo */
    REPORT_NONE, /* a dpscale file without a table (dpscale dump) */
};

struct report_row {
    char library[16]; /* who reduces: mpi, nccl */
    char path[16];    /* the path NCCL's bytes take: auto, nvlink, pcie, host, net ("pcie" before schema 6 read as host) */
    int nranks, nodes, global_batch;
    double samples_per_s, samples_per_s_per_rank, speedup, efficiency;
    double step_s, comm_exposed_s, allreduce_busbw_gbps, mfu, joules_per_sample, avg_power_w;
    double step_p05_s, step_p95_s; /* the spread of the step over iterations; NaN where the file has none */
};

/* One allreduce sweep of a comm file: /collectives/<library>/<path>/n<N>. */
struct report_sweep {
    char library[16], path[16];
    char dtype[8]; /* fp32, bf16, fp16 */
    char op[8];    /* the reduction: sum */
    int nranks, nodes, in_place, iters, warmup;
    int nsizes;
    double size_bytes[REPORT_MAX_SIZES];
    double time_s[REPORT_MAX_SIZES]; /* mean time of one allreduce on the slowest rank */
    double algbw_gbps[REPORT_MAX_SIZES], busbw_gbps[REPORT_MAX_SIZES], wrong[REPORT_MAX_SIZES];
};

struct report_comm {
    int nsweeps;
    struct report_sweep sweep[REPORT_MAX_SWEEPS]; /* by library, path, then ranks */
};

/* /system/topology of a topo file. */
struct report_topo {
    char source[160]; /* nvml+sysfs, or the nvidia-smi fixture read */
    int ngpus;
    char link[REPORT_MAX_GPUS][REPORT_MAX_GPUS][8]; /* "X", "NV18", "PIX", ... */
    double nvlinks[REPORT_MAX_GPUS][REPORT_MAX_GPUS];
    char gpu_name[REPORT_MAX_GPUS][96], bus_id[REPORT_MAX_GPUS][32], cpu_affinity[REPORT_MAX_GPUS][128];
    double pcie_gen[REPORT_MAX_GPUS], pcie_width[REPORT_MAX_GPUS], numa_node[REPORT_MAX_GPUS], nvlinks_up[REPORT_MAX_GPUS];
    int nnics;
    char nic_name[REPORT_MAX_NICS][32], nic_link_layer[REPORT_MAX_NICS][16], nic_state[REPORT_MAX_NICS][16];
    double nic_rate_gbps[REPORT_MAX_NICS], nic_numa_node[REPORT_MAX_NICS];
    int has_copies; /* the copy matrices were measured (dpscale topo on a GPU node, one process) */
    double unidir_gbps[REPORT_MAX_GPUS][REPORT_MAX_GPUS], bidir_gbps[REPORT_MAX_GPUS][REPORT_MAX_GPUS];
    double host_gbps[REPORT_MAX_GPUS][REPORT_MAX_GPUS], latency_us[REPORT_MAX_GPUS][REPORT_MAX_GPUS];
};

struct report_file {
    int kind;           /* enum report_kind */
    char path[512];     /* as given, made well-formed UTF-8 for printing */
    char device[96];    /* /system device_name */
    char host[64];      /* first host of the launch */
    char created[32];
    int schema;            /* its schema_version */
    int sealed;            /* 1: its checksums match (checksum.h); 0: it has none, and nothing tells a changed byte */
    int points_done, points_planned; /* a sweep that ended early (root complete = 0): its points written, of those planned */
    char diverged[256];    /* root diverged: why the sweep stopped ("the 2-GPU point diverged at step 7 ..."), or "" */
    char system_label[96]; /* run.system_label (schema 5), "" when none was given */
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
    struct report_comm *comm; /* REPORT_COMM: its sweeps; NULL otherwise */
    struct report_topo *topo; /* REPORT_TOPO: its topology; NULL otherwise */
    struct doc_info *info;    /* its attributes as text (report_doc.h), read beside it for --doc and --plot; or NULL */
};

enum report_format { REPORT_MARKDOWN, REPORT_CSV, REPORT_JSON };

/* Read a result file of any kind. Returns 0, or -1 with a one-line reason (without
 * the path) in err, REPORT_CHANGED when that reason is its checksums. Every figure
 * the report shows is checked against what the schema says it can be (finite, not
 * negative, below a ceiling no measurement reaches; NaN only where the schema lets
 * it be unknown): a file sealed or not, since anyone can seal one. report_free
 * releases what a read file holds. */
#define REPORT_CHANGED (-2)
int report_read(const char *path, struct report_file *f, char *err, size_t errlen);
void report_free(struct report_file *f);
/* 0 when f may be reported: sealed, or of a schema older than CHECKSUM_SINCE_SCHEMA
 * (checksum.h), written before dpscale sealed its files. A later file without
 * checksums lost them: REPORT_CHANGED with the reason and the fix in err. */
int report_require_seal(const struct report_file *f, char *err, size_t errlen);
/* report_read in a child process of its own (report_child.c), so that a file that
 * crashes the HDF5 library, or makes it loop past timeout_s seconds, is one more
 * unreadable file, named in err, and the caller goes on. flags: REPORT_READ_INFO also
 * reads the file's attributes as text into f->info (doc_read_info, for --doc and
 * --plot); REPORT_READ_SEALED refuses what report_require_seal refuses (the report;
 * dpscale seal, asked to vouch for a copy, reads without it). */
enum { REPORT_READ_INFO = 1, REPORT_READ_SEALED = 2 };
int report_read_isolated(const char *path, struct report_file *f, int flags, double timeout_s, char *err, size_t errlen);

/* The note on `out` for a file read without checksums (f->sealed = 0): what it
 * cannot tell, and how to seal a copy one trusts (dpscale seal). */
void report_note_unsealed(FILE *out, const struct report_file *f);
/* The note for a file whose sweep ended early (f->points_done < f->points_planned). */
void report_note_partial(FILE *out, const struct report_file *f);
/* The note for a file whose training diverged (f->diverged set). */
void report_note_diverged(FILE *out, const struct report_file *f);
/* The same in Markdown, a paragraph of its own (the tables, the document); nothing when f did not diverge. */
void report_md_diverged(FILE *out, const struct report_file *f);

/* Tag the run files with their overlap setting when they differ in it. */
void report_label(struct report_file *files, int n);

/* A path as the labels say it: "host memory (P2P off)" for host and "PCIe (P2P)" for pcie,
 * whose bare names a buyer would read as "a PCIe system"; any other path by its name. */
const char *report_path_words(const char *path);
/* The system of a row: "<device>, <library> over <path in words>" ("NVIDIA H200, nccl over
 * nvlink", "NVIDIA H200, nccl over host memory (P2P off)"). */
void report_system_label(const struct report_file *f, const struct report_row *r, char *buf, size_t len);
/* Whether two rows belong to the same system (library and path) of a file. */
int report_same_system(const struct report_row *a, const struct report_row *b);
/* The systems of a file, in the order of their first row: their count, and the
 * index of each one's first row in first_rows (REPORT_MAX_ROWS of room). */
int report_distinct_systems(const struct report_file *f, int first_rows[]);
/* "mlp-small (8 x 1024 wide, fp32), weak scaling, batch 64 per GPU". */
void report_describe(const struct report_file *f, char *buf, size_t len);
/* The unit a file's Markdown tables count in ("tokens", "samples") and its singular. */
void report_unit_of(const struct report_file *f, char *many, char *one, size_t len);
/* Empty when comparable; otherwise what differs, in words. */
void report_comparability(const struct report_file *a, const struct report_file *b, char *why, size_t len);

/* Each table in each format. The Markdown ones end with their footnote; the CSV
 * ones are one header and its rows; the JSON ones are an array of flat records
 * (one pandas.DataFrame each), but the topology's: one object per file. */
void report_runs_markdown(FILE *out, const struct report_file *files, int n);
void report_runs_csv(FILE *out, const struct report_file *files, int n);
json_t *report_runs_json(const struct report_file *files, int n);
/* --compare: systems side by side, the first as reference. Systems that cannot be
 * compared to it are named in the Markdown text, on `warn` for CSV, and in the JSON
 * object's "not_comparable" array (and on `warn`). */
void report_compare_markdown(FILE *out, const struct report_file *files, int n);
void report_compare_csv(FILE *out, FILE *warn, const struct report_file *files, int n);
void report_compare_json(json_t *doc, FILE *warn, const struct report_file *files, int n);
void report_comm_markdown(FILE *out, const struct report_file *files, int n);
void report_comm_csv(FILE *out, const struct report_file *files, int n);
json_t *report_comm_json(const struct report_file *files, int n);
void report_topo_markdown(FILE *out, const struct report_file *files, int n);
void report_topo_csv(FILE *out, const struct report_file *files, int n);
json_t *report_topo_json(const struct report_file *files, int n);

/* One report of files of every kind. `only`: an enum report_kind to print that
 * table alone, or -1 for all (a CSV stream holds one table: then the first kind
 * present, run, comm, topo, and the others are named on `warn`). `unreadable`:
 * nbad "path: reason" lines, listed in the JSON document's "unreadable" field. */
struct report_request {
    int format, compare, only;
    const char *const *unreadable;
    int nbad;
};
void report_write(FILE *out, FILE *warn, const struct report_file *files, int n, const struct report_request *req);

/* Writers of text for each output, in one place (report_format.c); CSV's is csv_text
 * (csv.h). Each writes a control character of v (ESC, BEL, CSI, ...) as its code
 * point, \x1b, and a byte that is not UTF-8 as U+FFFD: text from a file never drives
 * the terminal, the browser or the SVG viewer it reaches. */
void report_md_text(FILE *out, const char *v); /* a Markdown cell or heading: | and \ escaped, line breaks as spaces,
                                                  < and & as entities */
void report_md_code(FILE *out, const char *v); /* inside a Markdown code span: ` as ', < and & as entities */
/* One line on `out` (stderr's notes, warnings and errors), printf's format: every
 * control character of the line written as \xNN, a newline after it. */
void report_message(FILE *out, const char *format, ...) __attribute__((format(printf, 2, 3)));
void report_gp_text(FILE *gp, const char *v);   /* inside a gnuplot single-quoted string: ' doubled, line breaks as spaces */
json_t *report_json_text(const char *v);        /* a JSON string, well-formed UTF-8 whatever v holds */
int report_json_write(FILE *out, const json_t *doc, size_t flags); /* json_dumpf, with DEL and C1 as \u00NN */
json_t *report_json_number(double v);              /* a JSON number, or null for NaN and infinities */
json_t *report_json_count(double v);               /* a JSON integer, or null for NaN and infinities */
int report_json_set(json_t *obj, const char *key, json_t *v); /* json_object_set_new that tolerates v == NULL as null */

/* Speedup and efficiency against GPU count, through gnuplot, each system of the run
 * files one line labelled by what sets it apart, the ideal drawn straight; an existing
 * plot is replaced whole. Returns 0 or -1 with a message. */
int report_plot(const char *out_path, const struct report_file *files, int n, char *err, size_t errlen);

/* --doc OUT.md: the procurement document of files of every kind (report_doc.c),
 * its figures in OUT-figs/ (OUT without .md), both replaced whole when they exist.
 * `command`: the command line quoted in the document (NULL: none); `unreadable`:
 * nbad "path: reason" lines, listed in it. Returns 0; 1 when the document was written
 * but a figure could not be drawn (named on warn and in the document); -1 with err
 * when the document could not be written. */
struct report_doc_request {
    const char *command;
    const char *const *unreadable;
    int nbad;
};
int report_doc_write(const char *out_path, FILE *warn, const struct report_file *files, int n,
                     const struct report_doc_request *req, char *err, size_t errlen);
/* 0 when --doc OUT can be written: its folder is there, OUT is nothing or a regular
 * file, its name without control characters and short enough for its temporary
 * (safe_dir_check_target), and OUT-figs nothing or a folder of this user's, not a
 * link; -1 with the reason in err. report_doc_write checks it too, inside the folder's
 * descriptor that it then writes through. */
int report_doc_check_targets(const char *out_path, char *err, size_t errlen);

#endif

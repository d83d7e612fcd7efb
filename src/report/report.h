/* report.h — `dpscale report`: result files in, the tables and plots of a
 * procurement report out. Every kind of file dpscale writes has its table:
 *   a run file (dpscale run, and dpscale project's projections): the scaling table;
 *   a comm file (dpscale comm): allreduce busbw by size, in nccl-tests' columns;
 *   a topo file (dpscale topo): the link matrix and, where measured, the copy matrices.
 * result_read.h (src/result/) reads a file, refusing what dpscale did not write, or a
 * newer schema (schema 1 files are still read), and report_child.c reads each in a
 * process of its own; report_print.c, report_compare.c, report_comm.c
 * and report_topo.c write the tables as Markdown, CSV (csv.h) or JSON (jansson);
 * report_tables.c puts one report together; report_plot.c draws through gnuplot;
 * report_doc.c writes the procurement document (--doc, report_doc.h). A
 * system is one (library, path) of one file: "NVIDIA H200, nccl over nvlink". */
#ifndef DPSCALE_REPORT_H
#define DPSCALE_REPORT_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

#include "result/result_read.h" /* struct report_file: a result file read whole and checked */

enum report_format { REPORT_MARKDOWN, REPORT_CSV, REPORT_JSON };

/* result_read (result_read.h) in a child process of its own (report_child.c), so that
 * a file that crashes the HDF5 library, or makes it loop past timeout_s seconds, is one
 * more unreadable file, named in err, and the caller goes on: 0, or -1 with the reason
 * in err, REPORT_CHANGED when that reason is its checksums. flags: REPORT_READ_INFO
 * also reads the file's attributes as text into f->info (doc_read_info, for --doc and
 * --plot); REPORT_READ_SEALED refuses what result_require_seal refuses (the report;
 * dpscale seal, asked to vouch for a copy, reads without it). report_free releases
 * what a read file holds, f->info included. */
enum { REPORT_READ_INFO = 1, REPORT_READ_SEALED = 2 };
int report_read_isolated(const char *path, struct report_file *f, int flags, double timeout_s, char *err, size_t errlen);
void report_free(struct report_file *f);

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

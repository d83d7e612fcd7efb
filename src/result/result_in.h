/* result_in.h — one result file open for reading, and what can be read of it by the
 * path of its groups ("" the root, "config", "runs/nccl/nvlink/n1"): attributes,
 * links, the groups that hold runs or curves by GPU count, datasets of figures and of
 * strings, the /model table, the runs' path proofs, and every attribute as text.
 * Nothing here prints: a missing or odd object is a return code, or a reason in err,
 * for the caller to name. Text comes back as h5read.h reads it.
 *   result_in.c       opening the file; attributes, links, groups, figures, strings,
 *                     the /model table; a figure checked against what it may be;
 *   result_in_text.c  every attribute as text, and the runs' path proofs (the
 *                     procurement document's provenance). */
#ifndef DPSCALE_RESULT_IN_H
#define DPSCALE_RESULT_IN_H

#include <stddef.h>

struct result_in;

/* HDF5's own printing of its errors off, for the process: a failure is said in the
 * caller's one line, never as HDF5's stack. result_in_open turns it off too; a command
 * that forks readers (report_read_isolated) turns it off first, so that its children
 * start from the HDF5 it had. */
void result_hdf5_quiet(void);

/* The file at path opened read-only, HDF5's own error printing off; NULL with why in
 * err when it is not a regular file this user can read, is empty, is not HDF5, or HDF5
 * cannot open it. Nothing is checked of what it holds (result_read.h does). */
struct result_in *result_in_open(const char *path, char *err, size_t errlen);
void result_in_close(struct result_in *in); /* NULL: nothing */

/* The attribute `name` of the group at `group`, as h5read.h's h5_attr_str,
 * h5_attr_double and h5_attr_int read it; a group that cannot be opened has none. */
int result_in_attr_str(const struct result_in *in, const char *group, const char *name, char *buf, size_t len);
double result_in_attr_double(const struct result_in *in, const char *group, const char *name);
int result_in_attr_int(const struct result_in *in, const char *group, const char *name, int fallback);
/* The attribute's first value as a number, of any shape or type HDF5 converts to one:
 * 1 with it in *v (left as it was when the attribute holds none), 0 when there is no
 * such attribute (or group), -1 when it cannot be read as numbers (*v left as it was). */
int result_in_attr_first(const struct result_in *in, const char *group, const char *name, double *v);

/* 1 when the file has a link at path (one level or several), else 0. */
int result_in_exists(const struct result_in *in, const char *path);
/* 1 when the group at path can be opened as a group, else 0. */
int result_in_is_group(const struct result_in *in, const char *path);
/* The group's name as HDF5 says it ("/runs/nccl/nvlink/n1") into where (len bytes);
 * where left as it was when the group cannot be opened. */
void result_in_name(const struct result_in *in, const char *group, char *where, size_t len);

/* The names of the links under the group (any kind), in HDF5's native order, each cut
 * to 63 bytes: their count, at most max (the others left out); 0 when it cannot be opened. */
#define RESULT_NAME_LEN 64
int result_in_children(const struct result_in *in, const char *group, char (*names)[RESULT_NAME_LEN], int max);

/* N of a group named "n<N>" (a run or curve of N GPUs), as strtol reads it; 0 for any other name. */
long result_count_of(const char *name);
/* Every group under `top` ("runs", "collectives") that holds groups by GPU count (n1,
 * n2, ...), in order: "<top>/<library>/<path>" (schema 2 on), or "<top>/<path>" (schema
 * 1, before the library was a level of its own). Their count, at most max. */
#define RESULT_GROUP_LEN 160
int result_in_count_groups(const struct result_in *in, const char *top, char (*paths)[RESULT_GROUP_LEN], int max);

/* A dataset of figures of the group, whole (malloc'ed): NULL when absent, or NULL with
 * the reason in err (when err is still "") when it is not what dpscale writes: 1 to
 * max_rank dimensions, none empty, numbers that are finite and not negative (times,
 * sizes, counts). dims: its extent, padded with 1s to 3; *n its element count. A
 * damaged dataset is one line naming it ("damaged: /runs/.../n1/step_s is empty
 * (dimension 2 is 0)"), never a read past a buffer sized by another dataset's shape. */
double *result_in_figures(const struct result_in *in, const char *group, const char *name, int max_rank, size_t *n,
                          size_t dims[3], char *err, size_t errlen);
/* The string dataset at path, as h5read.h's h5_read_strings reads it. */
int result_in_strings(const struct result_in *in, const char *path, char *out, size_t width, size_t max, size_t *n);

/* What /model/tensors (h5out_model.c) says of the parameter arena: 0 with *total (every
 * tensor's elements) and *last (those of the stage that holds the arena's last element:
 * backward's last stage), -1 when the file has no readable table. */
int result_in_model_last_stage(const struct result_in *in, double *last, double *total);

/* What a figure read from a file may be: finite, from 0 (or more than 0, when
 * `positive`) to `most`, or NaN where the schema lets it be unknown. A time, a
 * throughput, a bandwidth, a power or an energy printed at 301 digits, negative or
 * infinite is damage, whether a byte changed or someone wrote it so. */
struct result_figure {
    int nan_ok, positive;
    double most;
};
/* 0 when v is such a figure; -1 with "damaged: WHAT is V; it must be ..." in err. */
int result_check_figure(const char *what, double v, struct result_figure rule, char *err, size_t errlen);

/* Every attribute of the group at `group` ("" the root, its attributes named without
 * a prefix; else "<group>/<name>") as text, in name order, and when `deep` of every
 * group and dataset below it, depth first (a dataset's values as one more entry, then
 * its attributes), hard links only and no deeper than 8 levels. Values are joined by
 * ", ": strings as they are, integers whole, floats to 10 digits, the first 64 of
 * them ("..." after), a larger one counted, other types named; at most
 * RESULT_TEXT_LEN - 1 bytes of well-formed UTF-8. fn is called with the entry's prefix
 * ("", "system/", "provenance/rank0/") and name, apart, and `dataset` 1 for a
 * dataset's values. */
#define RESULT_TEXT_LEN 1024
typedef void (*result_text_fn)(void *ctx, const char *prefix, const char *name, const char *value, int dataset);
void result_in_attrs_text(const struct result_in *in, const char *group, int deep, result_text_fn fn, void *ctx);

/* A run of /runs as it proves its path (a group with an nranks attribute, at any depth
 * up to 8): its library and path in today's names (result_path_in; schema 1's by the
 * group above it, result_schema1_transport), its rank count, the NVLink counters around
 * its timed steps (NaN when not recorded) and path_proof ("verified: ...", "not asked
 * (path auto)"). */
struct result_run_proof {
    char library[16], path[16];
    int nranks;
    double nvlink_tx_bytes, nvlink_expected_bytes;
    char proof[192];
};
/* The runs of a file of `schema`, in name order: their count, at most max. */
int result_in_run_proofs(const struct result_in *in, int schema, struct result_run_proof *runs, int max);

#endif

/* h5w.h — the HDF5 writing h5out*.c build on: a sticky error (the first failed call
 * records what failed and why, every later call is skipped, so a writer reads top to
 * bottom without an error branch per line); attributes; datasets, string datasets and
 * compound tables that take their units and meaning from schema.h (a name the schema
 * does not define is an error, so every dataset has its `units`); groups. Every string
 * is written UTF-8, variable-length. h5file.h puts the file on disk. */
#ifndef DPSCALE_H5W_H
#define DPSCALE_H5W_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "result/schema.h"

struct h5w {
    int failed;
    char err[512];
};

/* CHECK_H5: evaluate an HDF5 call unless an earlier one failed; negative = failure. */
#define CHECK_H5(w, call) ((w)->failed ? (hid_t)-1 : h5w_check((w), (hid_t)(call), #call, __LINE__))
hid_t h5w_check(struct h5w *w, hid_t rc, const char *what, int line);
void h5w_fail(struct h5w *w, const char *what, int line);
void h5_close(hid_t id);

/* A new variable-length UTF-8 string type (close it with h5_close). */
hid_t h5w_text_type(struct h5w *w);

void attr_write(struct h5w *w, hid_t obj, const char *name, hid_t type, const void *value);
void attr_str(struct h5w *w, hid_t obj, const char *name, const char *value);
void attr_i64(struct h5w *w, hid_t obj, const char *name, long long value);
void attr_f64(struct h5w *w, hid_t obj, const char *name, double value);
/* An attribute holding n strings (a 1-D array). */
void attr_strs(struct h5w *w, hid_t obj, const char *name, const char *const *values, size_t n);

/* A dataset of numbers; `units` and `description` attributes from table t of the schema. */
void dataset_write(struct h5w *w, hid_t parent, enum schema_table t, const char *name, hid_t type, int rank,
                   const hsize_t *dims, const void *data);
/* The same under another name (the /dump inputs, which the model names) with the
 * units of the schema's entry `entry`. */
void dataset_write_as(struct h5w *w, hid_t parent, enum schema_table t, const char *entry, const char *name, hid_t type,
                      int rank, const hsize_t *dims, const void *data);
/* A dataset of strings taken from fixed-width fields, `width` bytes each, NUL-terminated. */
void strings_write(struct h5w *w, hid_t parent, enum schema_table t, const char *name, const char *data, size_t width,
                   int rank, const hsize_t *dims);

/* A compound table (one row per entry, one call in pandas), given column by column:
 * H5W_TEXT columns point at nrows `const char *`, H5W_I64 at int64_t, H5W_F64 at
 * double. Its `units` and `description` attributes are arrays, one per column. */
enum h5w_kind { H5W_TEXT, H5W_I64, H5W_F64 };
struct h5w_column {
    const char *name;
    enum h5w_kind kind;
    const void *data;
};
void table_write(struct h5w *w, hid_t parent, const char *name, enum schema_table t, const struct h5w_column *cols,
                 int ncols, size_t nrows);

/* The same table built column by column: h5w_table_column gives the next column's
 * `rows` zeroed cells (const char *, int64_t or double, by kind), h5w_table_write
 * writes them as table_write does and frees them. */
#define H5W_TABLE_MAX_COLUMNS 128
struct h5w_table {
    size_t rows;
    int ncols;
    struct h5w_column cols[H5W_TABLE_MAX_COLUMNS];
};
void *h5w_table_column(struct h5w_table *tb, const char *name, enum h5w_kind kind);
void h5w_table_write(struct h5w *w, hid_t parent, const char *name, enum schema_table t, struct h5w_table *tb);

hid_t h5_group_create(struct h5w *w, hid_t parent, const char *name);
hid_t group_open_or_create(struct h5w *w, hid_t parent, const char *name);

#endif

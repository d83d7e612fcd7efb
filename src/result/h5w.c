/* h5w.c — writing HDF5 with a sticky error (h5w.h): the first failed call records what
 * failed and every later one is skipped; attributes, datasets with their units from
 * schema.h, UTF-8 string datasets, compound tables, groups. */
#include "result/h5w.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"

static herr_t first_error_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    char *buf = data;
    if (n == 0) snprintf(buf, 256, "%s", e->desc != NULL ? e->desc : "");
    return 0;
}

/* Record a failed call once, with HDF5's own innermost reason and errno. */
void h5w_fail(struct h5w *w, const char *what, int line)
{
    if (w->failed) return;
    int saved_errno = errno;
    char reason[256] = "";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, first_error_cb, reason);
    H5Eclear2(H5E_DEFAULT);
    w->failed = 1;
    snprintf(w->err, sizeof w->err, "line %d: %s failed: %s%s%s", line, what, reason,
             saved_errno ? "; " : "", saved_errno ? strerror(saved_errno) : "");
}

hid_t h5w_check(struct h5w *w, hid_t rc, const char *what, int line)
{
    if (rc < 0) h5w_fail(w, what, line);
    return rc;
}

void h5_close(hid_t id)
{
    if (id < 0) return;
    switch (H5Iget_type(id)) {
    case H5I_GROUP: H5Gclose(id); break;
    case H5I_DATASET: H5Dclose(id); break;
    case H5I_DATASPACE: H5Sclose(id); break;
    case H5I_DATATYPE: H5Tclose(id); break;
    case H5I_ATTR: H5Aclose(id); break;
    default: break;
    }
}

hid_t h5w_text_type(struct h5w *w)
{
    hid_t type = CHECK_H5(w, H5Tcopy(H5T_C_S1));
    CHECK_H5(w, H5Tset_size(type, H5T_VARIABLE));
    CHECK_H5(w, H5Tset_cset(type, H5T_CSET_UTF8));
    return type;
}

void attr_write(struct h5w *w, hid_t obj, const char *name, hid_t type, const void *value)
{
    hid_t space = CHECK_H5(w, H5Screate(H5S_SCALAR));
    hid_t attr = CHECK_H5(w, H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT));
    CHECK_H5(w, H5Awrite(attr, type, value));
    h5_close(attr);
    h5_close(space);
}

void attr_str(struct h5w *w, hid_t obj, const char *name, const char *value)
{
    hid_t type = h5w_text_type(w);
    const char *v = value != NULL ? value : "";
    attr_write(w, obj, name, type, &v);
    h5_close(type);
}

void attr_i64(struct h5w *w, hid_t obj, const char *name, long long value)
{
    int64_t v = value;
    attr_write(w, obj, name, H5T_NATIVE_INT64, &v);
}

void attr_f64(struct h5w *w, hid_t obj, const char *name, double value)
{
    attr_write(w, obj, name, H5T_NATIVE_DOUBLE, &value);
}

void attr_strs(struct h5w *w, hid_t obj, const char *name, const char *const *values, size_t n)
{
    hsize_t dims[1] = {(hsize_t)n};
    hid_t type = h5w_text_type(w);
    hid_t space = CHECK_H5(w, H5Screate_simple(1, dims, NULL));
    hid_t attr = CHECK_H5(w, H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT));
    if (n > 0) CHECK_H5(w, H5Awrite(attr, type, values));
    h5_close(attr);
    h5_close(space);
    h5_close(type);
}

/* The schema's entry, or a recorded failure: a dataset the schema does not define has no units. */
static const struct schema_entry *entry_of(struct h5w *w, enum schema_table t, const char *name, int line)
{
    const struct schema_entry *e = schema_find(t, name);
    if (e == NULL && !w->failed) {
        char what[160];
        snprintf(what, sizeof what, "writing %s, which schema.h does not define,", name);
        h5w_fail(w, what, line);
    }
    return e;
}

static void describe(struct h5w *w, hid_t dset, const struct schema_entry *e)
{
    attr_str(w, dset, "units", e->units);
    attr_str(w, dset, "description", e->meaning);
}

void dataset_write_as(struct h5w *w, hid_t parent, enum schema_table t, const char *entry, const char *name, hid_t type,
                      int rank, const hsize_t *dims, const void *data)
{
    const struct schema_entry *e = entry_of(w, t, entry, __LINE__);
    if (e == NULL) return;
    hid_t space = CHECK_H5(w, H5Screate_simple(rank, dims, NULL));
    hid_t dset = CHECK_H5(w, H5Dcreate2(parent, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    CHECK_H5(w, H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
    describe(w, dset, e);
    h5_close(dset);
    h5_close(space);
}

void dataset_write(struct h5w *w, hid_t parent, enum schema_table t, const char *name, hid_t type, int rank,
                   const hsize_t *dims, const void *data)
{
    dataset_write_as(w, parent, t, name, name, type, rank, dims, data);
}

void strings_write(struct h5w *w, hid_t parent, enum schema_table t, const char *name, const char *data, size_t width,
                   int rank, const hsize_t *dims)
{
    size_t n = 1;
    for (int i = 0; i < rank; i++) n *= (size_t)dims[i];
    const char **v = calloc(n + 1, sizeof *v);
    char *copy = calloc(n * (width + 1) + 1, 1);
    CHECK_ALLOC(v);
    CHECK_ALLOC(copy);
    for (size_t i = 0; i < n; i++) { /* each field NUL-terminated, even a full one */
        memcpy(copy + i * (width + 1), data + i * width, width);
        v[i] = copy + i * (width + 1);
    }
    hid_t type = h5w_text_type(w);
    dataset_write(w, parent, t, name, type, rank, dims, n > 0 ? (const void *)v : NULL);
    h5_close(type);
    free(copy);
    free(v);
}

void table_write(struct h5w *w, hid_t parent, const char *name, enum schema_table t, const struct h5w_column *cols,
                 int ncols, size_t nrows)
{
    /* every member is 8 bytes (a char *, an int64, a double): row k, column c at (k * ncols + c) * 8 */
    const size_t row = (size_t)ncols * 8;
    char *rows = calloc(nrows * row + 1, 1);
    const char **units = calloc((size_t)ncols + 1, sizeof *units), **meanings = calloc((size_t)ncols + 1, sizeof *meanings);
    CHECK_ALLOC(rows);
    CHECK_ALLOC(units);
    CHECK_ALLOC(meanings);
    hid_t text = h5w_text_type(w);
    hid_t type = CHECK_H5(w, H5Tcreate(H5T_COMPOUND, row));
    for (int c = 0; c < ncols; c++) {
        const struct schema_entry *e = entry_of(w, t, cols[c].name, __LINE__);
        units[c] = e != NULL ? e->units : "";
        meanings[c] = e != NULL ? e->meaning : "";
        const hid_t member = cols[c].kind == H5W_TEXT ? text : cols[c].kind == H5W_I64 ? H5T_NATIVE_INT64 : H5T_NATIVE_DOUBLE;
        CHECK_H5(w, H5Tinsert(type, cols[c].name, (size_t)c * 8, member));
        for (size_t k = 0; k < nrows; k++) {
            char *cell = rows + k * row + (size_t)c * 8;
            if (cols[c].kind == H5W_TEXT) {
                const char *s = ((const char *const *)cols[c].data)[k];
                s = s != NULL ? s : "";
                memcpy(cell, &s, sizeof s);
            } else {
                memcpy(cell, (const char *)cols[c].data + k * 8, 8);
            }
        }
    }
    hsize_t dims[1] = {(hsize_t)nrows};
    hid_t space = CHECK_H5(w, H5Screate_simple(1, dims, NULL));
    hid_t dset = CHECK_H5(w, H5Dcreate2(parent, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    if (nrows > 0) CHECK_H5(w, H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows));
    attr_strs(w, dset, "units", units, (size_t)ncols);
    attr_strs(w, dset, "description", meanings, (size_t)ncols);
    h5_close(dset);
    h5_close(space);
    h5_close(type);
    h5_close(text);
    free(units);
    free(meanings);
    free(rows);
}

hid_t h5_group_create(struct h5w *w, hid_t parent, const char *name)
{
    return CHECK_H5(w, H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
}

/* /runs/<library>/<path> and /collectives/<library>/<path> are shared by the runs of
 * a library and path. */
hid_t group_open_or_create(struct h5w *w, hid_t parent, const char *name)
{
    if (w->failed) return -1;
    return H5Lexists(parent, name, H5P_DEFAULT) > 0 ? CHECK_H5(w, H5Gopen2(parent, name, H5P_DEFAULT))
                                                    : h5_group_create(w, parent, name);
}

void *h5w_table_column(struct h5w_table *tb, const char *name, enum h5w_kind kind)
{
    if (tb->ncols == H5W_TABLE_MAX_COLUMNS) DP_FATAL(NULL, "a table of more than %d columns", H5W_TABLE_MAX_COLUMNS);
    void *cells = calloc(tb->rows + 1, 8); /* every member is 8 bytes */
    CHECK_ALLOC(cells);
    tb->cols[tb->ncols++] = (struct h5w_column){name, kind, cells};
    return cells;
}

void h5w_table_write(struct h5w *w, hid_t parent, const char *name, enum schema_table t, struct h5w_table *tb)
{
    table_write(w, parent, name, t, tb->cols, tb->ncols, tb->rows);
    for (int c = 0; c < tb->ncols; c++) free((void *)tb->cols[c].data);
    tb->ncols = 0;
}

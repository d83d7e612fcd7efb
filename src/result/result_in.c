/* result_in.c — a result file open for reading, and what can be read of it by the path
 * of its groups (result_in.h): its attributes, links and groups, its datasets of
 * figures and strings, the /model table; and a figure checked against what it may be. */
#include "result/result_in.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/error.h"
#include "result/h5read.h"
#include "result/result_read_internal.h"

/* Why the file cannot be opened as HDF5, in words; -1 when it cannot. */
static int check_openable(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "a folder, not a result file");
        return -1;
    }
    if (!S_ISREG(st.st_mode)) { /* opening a FIFO would wait for a writer, a device would read forever */
        snprintf(err, errlen, "not a regular file (%s), not a result file",
                 S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" : "a device");
        return -1;
    }
    FILE *probe = fopen(path, "rb");
    if (probe == NULL) {
        snprintf(err, errlen, "cannot open it: %s", strerror(errno));
        return -1;
    }
    fclose(probe);
    if (st.st_size == 0) {
        snprintf(err, errlen, "an empty file (a launch that died before writing?), not a result file");
        return -1;
    }
    if (H5Fis_hdf5(path) <= 0) {
        snprintf(err, errlen, "not an HDF5 file (truncated, or not a dpscale result)");
        return -1;
    }
    return 0;
}

void result_hdf5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

struct result_in *result_in_open(const char *path, char *err, size_t errlen)
{
    result_hdf5_quiet();
    if (check_openable(path, err, errlen) != 0) return NULL;
    struct result_in *in = malloc(sizeof *in);
    if (in == NULL) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    in->file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (in->file < 0) {
        snprintf(err, errlen, "HDF5 cannot open it; it is damaged or truncated");
        free(in);
        return NULL;
    }
    return in;
}

void result_in_close(struct result_in *in)
{
    if (in == NULL) return;
    H5Fclose(in->file);
    free(in);
}

/* The group at path, or the file itself for the root ("", which close_group leaves
 * open); -1 when it cannot be opened as a group. */
static hid_t open_group(const struct result_in *in, const char *group)
{
    return group[0] == '\0' ? in->file : H5Gopen2(in->file, group, H5P_DEFAULT);
}

static void close_group(const struct result_in *in, hid_t g)
{
    if (g >= 0 && g != in->file) H5Gclose(g);
}

int result_in_attr_str(const struct result_in *in, const char *group, const char *name, char *buf, size_t len)
{
    const hid_t g = open_group(in, group);
    const int rc = h5_attr_str(g, name, buf, len); /* "" in buf, -1, when g is not a group */
    close_group(in, g);
    return rc;
}

double result_in_attr_double(const struct result_in *in, const char *group, const char *name)
{
    const hid_t g = open_group(in, group);
    const double v = h5_attr_double(g, name);
    close_group(in, g);
    return v;
}

int result_in_attr_int(const struct result_in *in, const char *group, const char *name, int fallback)
{
    const hid_t g = open_group(in, group);
    const int v = h5_attr_int(g, name, fallback);
    close_group(in, g);
    return v;
}

#define MAX_ATTR_VALUES ((hssize_t)1 << 20) /* of one attribute read for its first value */

int result_in_attr_first(const struct result_in *in, const char *group, const char *name, double *v)
{
    const hid_t g = open_group(in, group);
    int rc = 0;
    if (g >= 0 && H5Aexists(g, name) > 0) {
        const hid_t a = H5Aopen(g, name, H5P_DEFAULT), space = a >= 0 ? H5Aget_space(a) : -1;
        const hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
        double *values = n >= 0 && n <= MAX_ATTR_VALUES ? calloc(n > 0 ? (size_t)n : 1, sizeof *values) : NULL;
        rc = -1;
        if (values != NULL && H5Aread(a, H5T_NATIVE_DOUBLE, values) >= 0) {
            if (n > 0) *v = values[0];
            rc = 1;
        }
        free(values);
        if (space >= 0) H5Sclose(space);
        if (a >= 0) H5Aclose(a);
    }
    close_group(in, g);
    return rc;
}

int result_in_exists(const struct result_in *in, const char *path) { return h5_exists(in->file, path); }

int result_in_is_group(const struct result_in *in, const char *path)
{
    const hid_t g = open_group(in, path);
    close_group(in, g);
    return g >= 0;
}

void result_in_name(const struct result_in *in, const char *group, char *where, size_t len)
{
    const hid_t g = open_group(in, group);
    if (g >= 0) H5Iget_name(g, where, len);
    close_group(in, g);
}

struct names {
    int n, max;
    char (*name)[RESULT_NAME_LEN];
};

static herr_t add_name(hid_t g, const char *name, const H5L_info_t *info, void *out)
{
    (void)g;
    (void)info;
    struct names *ns = out;
    if (ns->n < ns->max) snprintf(ns->name[ns->n++], sizeof ns->name[0], "%s", name);
    return 0;
}

int result_in_children(const struct result_in *in, const char *group, char (*names)[RESULT_NAME_LEN], int max)
{
    struct names ns = {0, max, names};
    const hid_t g = open_group(in, group);
    if (g < 0) return 0;
    H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, add_name, &ns);
    close_group(in, g);
    return ns.n;
}

long result_count_of(const char *name)
{
    if (name[0] != 'n' || name[1] == '\0') return 0;
    for (const char *c = name + 1; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return strtol(name + 1, NULL, 10);
}

#define MAX_LEVEL 16 /* the groups of one level listed: libraries under top, paths under a library */

int result_in_count_groups(const struct result_in *in, const char *top, char (*paths)[RESULT_GROUP_LEN], int max)
{
    char libs[MAX_LEVEL][RESULT_NAME_LEN], under[MAX_LEVEL][RESULT_NAME_LEN];
    int n = 0;
    const int nlibs = result_in_children(in, top, libs, MAX_LEVEL);
    for (int i = 0; i < nlibs; i++) {
        char p[RESULT_GROUP_LEN];
        snprintf(p, sizeof p, "%s/%.60s", top, libs[i]);
        const int nunder = result_in_children(in, p, under, MAX_LEVEL);
        int counts = 0;
        for (int j = 0; j < nunder; j++) counts += result_count_of(under[j]) != 0;
        if (counts > 0) { /* schema 1 */
            if (n < max) snprintf(paths[n++], sizeof paths[0], "%s", p);
            continue;
        }
        for (int j = 0; j < nunder && n < max; j++) snprintf(paths[n++], sizeof paths[0], "%.90s/%.60s", p, under[j]);
    }
    return n;
}

#define READ_MAX_ELEMENTS ((size_t)1 << 27) /* 1 GiB of doubles: more iterations x ranks than any run */

double *result_in_figures(const struct result_in *in, const char *group, const char *name, int max_rank, size_t *n,
                          size_t dims[3], char *err, size_t errlen)
{
    const hid_t loc = open_group(in, group);
    if (loc < 0 || H5Lexists(loc, name, H5P_DEFAULT) <= 0) {
        close_group(in, loc);
        return NULL;
    }
    char where[200] = "?", why[96] = "";
    H5Iget_name(loc, where, sizeof where);
    const hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    const hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID, ty = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    const int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    const H5T_class_t cls = ty >= 0 ? H5Tget_class(ty) : H5T_NO_CLASS;
    hsize_t dd[H5S_MAX_RANK] = {1, 1, 1};
    size_t count = 1;
    double *v = NULL;
    if (r < 0) snprintf(why, sizeof why, "cannot be read");
    else if (cls != H5T_FLOAT && cls != H5T_INTEGER) snprintf(why, sizeof why, "does not hold numbers");
    else if (r < 1 || r > max_rank)
        snprintf(why, sizeof why, "has %d dimensions; it must have 1 to %d", r, max_rank);
    else if (H5Sget_simple_extent_dims(sp, dd, NULL) != r) snprintf(why, sizeof why, "cannot be read");
    for (int i = 0; why[0] == '\0' && i < r; i++) {
        if (dd[i] == 0) snprintf(why, sizeof why, "is empty (dimension %d is 0)", i + 1);
        else if (dd[i] > READ_MAX_ELEMENTS / count) snprintf(why, sizeof why, "has more than %zu elements", READ_MAX_ELEMENTS);
        else count *= (size_t)dd[i];
    }
    if (why[0] == '\0') {
        v = malloc(count * sizeof *v);
        CHECK_ALLOC(v);
        if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) snprintf(why, sizeof why, "cannot be read");
        for (size_t i = 0; why[0] == '\0' && i < count; i++)
            if (!isfinite(v[i]) || v[i] < 0)
                snprintf(why, sizeof why, "holds %g at element %zu; it must hold finite figures from 0", v[i], i);
    }
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    close_group(in, loc);
    if (why[0] != '\0') {
        if (err[0] == '\0') snprintf(err, errlen, "damaged: %s/%s %s", where, name, why);
        free(v);
        return NULL;
    }
    *n = count;
    if (dims != NULL)
        for (int i = 0; i < 3; i++) dims[i] = (size_t)dd[i];
    return v;
}

int result_in_strings(const struct result_in *in, const char *path, char *out, size_t width, size_t max, size_t *n)
{
    return h5_read_strings(in->file, path, out, width, max, n);
}

struct tensor_row { /* the columns of /model/tensors read, by name: the table has more */
    int64_t stage, offset, count;
};

int result_in_model_last_stage(const struct result_in *in, double *last, double *total)
{
    const hid_t file = in->file;
    if (H5Lexists(file, "model", H5P_DEFAULT) <= 0 || H5Lexists(file, "model/tensors", H5P_DEFAULT) <= 0) return -1;
    hid_t d = H5Dopen2(file, "model/tensors", H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t sp = H5Dget_space(d), t = H5Tcreate(H5T_COMPOUND, sizeof(struct tensor_row));
    H5Tinsert(t, "stage", HOFFSET(struct tensor_row, stage), H5T_NATIVE_INT64);
    H5Tinsert(t, "offset", HOFFSET(struct tensor_row, offset), H5T_NATIVE_INT64);
    H5Tinsert(t, "count", HOFFSET(struct tensor_row, count), H5T_NATIVE_INT64);
    const hssize_t n = H5Sget_simple_extent_npoints(sp);
    struct tensor_row *r = NULL;
    if (n > 0) {
        r = malloc((size_t)n * sizeof *r);
        CHECK_ALLOC(r);
    }
    int rc = -1;
    if (r != NULL && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) >= 0) {
        hssize_t end = 0;
        for (hssize_t i = 1; i < n; i++)
            if (r[i].offset > r[end].offset) end = i;
        *last = *total = 0;
        for (hssize_t i = 0; i < n; i++) {
            *total += (double)r[i].count;
            if (r[i].stage == r[end].stage) *last += (double)r[i].count;
        }
        rc = *last > 0 ? 0 : -1;
    }
    free(r);
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
    return rc;
}

int result_check_figure(const char *what, double v, struct result_figure rule, char *err, size_t errlen)
{
    if (isnan(v) ? rule.nan_ok : isfinite(v) && v <= rule.most && (rule.positive ? v > 0 : v >= 0)) return 0;
    snprintf(err, errlen, "damaged: %s is %g; it must be %sa finite figure %s 0 and at most %g", what, v,
             rule.nan_ok ? "NaN (unknown) or " : "", rule.positive ? "above" : "from", rule.most);
    return -1;
}

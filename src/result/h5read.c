/* h5read.c — reading what dpscale's result files hold (h5read.h). */
#include "result/h5read.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

#define H5READ_MAX_STRING 65536          /* bytes of one fixed-length string */
#define H5READ_MAX_BYTES ((size_t)1 << 28) /* of one dataset read whole */

/* The attribute, its type, and whether it holds exactly one value: an array
 * attribute of that name is not read into room for one. -1 when absent. */
static hid_t open_single(hid_t obj, const char *name, hid_t *type, int *single)
{
    *type = -1;
    *single = 0;
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return -1;
    hid_t space = H5Aget_space(a);
    *type = H5Aget_type(a);
    *single = space >= 0 && *type >= 0 && H5Sget_simple_extent_npoints(space) == 1;
    if (space >= 0) H5Sclose(space);
    return a;
}

int h5_attr_str(hid_t obj, const char *name, char *buf, size_t len)
{
    buf[0] = '\0';
    int single;
    hid_t ftype, a = open_single(obj, name, &ftype, &single);
    if (a < 0) return -1;
    int rc = -1;
    if (single && H5Tget_class(ftype) == H5T_STRING) {
        if (H5Tis_variable_str(ftype) > 0) {
            hid_t mtype = H5Tcopy(H5T_C_S1);
            H5Tset_size(mtype, H5T_VARIABLE);
            H5Tset_cset(mtype, H5Tget_cset(ftype)); /* HDF5 converts no character set into another */
            char *v = NULL;
            if (H5Aread(a, mtype, &v) >= 0 && v != NULL) {
                utf8_copy(buf, len, v);
                H5free_memory(v);
                rc = 0;
            }
            H5Tclose(mtype);
        } else {
            const size_t n = H5Tget_size(ftype);
            char tmp[1024] = "";
            if (n > 0 && n < sizeof tmp && H5Aread(a, ftype, tmp) >= 0) {
                tmp[n] = '\0';
                utf8_copy(buf, len, tmp);
                rc = 0;
            }
        }
    }
    if (ftype >= 0) H5Tclose(ftype);
    H5Aclose(a);
    return rc;
}

char *h5_attr_text(hid_t obj, const char *name, size_t max)
{
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), t = a >= 0 ? H5Aget_type(a) : -1, s = a >= 0 ? H5Aget_space(a) : -1;
    char *text = NULL, *v = NULL;
    if (t >= 0 && s >= 0 && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) > 0 && H5Sget_simple_extent_npoints(s) == 1) {
        hid_t m = H5Tcopy(H5T_C_S1);
        H5Tset_size(m, H5T_VARIABLE);
        H5Tset_cset(m, H5Tget_cset(t));
        if (H5Aread(a, m, &v) >= 0 && v != NULL && strlen(v) < max) text = strdup(v);
        if (v != NULL) H5free_memory(v);
        H5Tclose(m);
    }
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    if (a >= 0) H5Aclose(a);
    return text;
}

double h5_attr_double(hid_t obj, const char *name)
{
    double v = NAN;
    int single;
    hid_t t, a = open_single(obj, name, &t, &single);
    if (a < 0) return NAN;
    const H5T_class_t cls = H5Tget_class(t);
    if (!single || (cls != H5T_INTEGER && cls != H5T_FLOAT) || H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) v = NAN;
    if (t >= 0) H5Tclose(t);
    H5Aclose(a);
    return v;
}

int h5_attr_int(hid_t obj, const char *name, int fallback)
{
    const double v = h5_attr_double(obj, name);
    return v >= INT_MIN && v <= INT_MAX ? (int)v : fallback; /* NaN compares false */
}

int h5_exists(hid_t loc, const char *path)
{
    char part[256];
    /* H5Lexists fails, rather than says no, when a group along the path is missing */
    for (const char *slash = strchr(path, '/'); slash != NULL; slash = strchr(slash + 1, '/')) {
        snprintf(part, sizeof part, "%.*s", (int)(slash - path), path);
        if (H5Lexists(loc, part, H5P_DEFAULT) <= 0) return 0;
    }
    return H5Lexists(loc, path, H5P_DEFAULT) > 0;
}

/* The dataset, its type and space, or -1 where it is absent. */
static hid_t open_dataset(hid_t loc, const char *name, hid_t *type, hid_t *space)
{
    if (!h5_exists(loc, name)) return -1;
    hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    if (d < 0) return -1;
    *type = H5Dget_type(d);
    *space = H5Dget_space(d);
    return d;
}

int h5_read_doubles(hid_t loc, const char *name, double *out, size_t max, size_t dims[2])
{
    hid_t t = -1, s = -1, d = open_dataset(loc, name, &t, &s);
    if (d < 0) return -1;
    int rc = -1;
    hsize_t shape[2] = {0, 1};
    const int rank = H5Sget_simple_extent_ndims(s);
    const H5T_class_t cls = H5Tget_class(t);
    const int numeric = cls == H5T_INTEGER || cls == H5T_FLOAT;
    if (numeric && (rank == 1 || rank == 2) && H5Sget_simple_extent_dims(s, shape, NULL) == rank &&
        (shape[1] == 0 || shape[0] <= max / shape[1])) { /* no product that overflows */
        dims[0] = (size_t)shape[0];
        dims[1] = (size_t)shape[1];
        rc = shape[0] * shape[1] == 0 || H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) >= 0 ? 0 : -1;
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
    return rc;
}

int h5_read_strings(hid_t loc, const char *name, char *out, size_t width, size_t max, size_t *n)
{
    hid_t t = -1, s = -1, d = open_dataset(loc, name, &t, &s);
    if (d < 0) return -1;
    int rc = -1;
    const hssize_t count = H5Sget_simple_extent_npoints(s);
    if (H5Tget_class(t) == H5T_STRING && count >= 0 && (size_t)count <= max) {
        *n = (size_t)count;
        hid_t m = H5Tcopy(H5T_C_S1);
        H5Tset_cset(m, H5Tget_cset(t));
        if (count == 0) {
            rc = 0;
        } else if (H5Tis_variable_str(t) > 0) {
            char **v = calloc((size_t)count, sizeof *v);
            H5Tset_size(m, H5T_VARIABLE);
            if (v != NULL && H5Dread(d, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0) {
                for (size_t i = 0; i < *n; i++) utf8_copy(out + i * width, width, v[i] ? v[i] : "");
                H5Dvlen_reclaim(m, s, H5P_DEFAULT, v);
                rc = 0;
            }
            free(v);
        } else {
            const size_t w = H5Tget_size(t) + 1; /* room for the NUL HDF5 adds */
            char *raw = w > 1 && w <= H5READ_MAX_STRING && (size_t)count <= H5READ_MAX_BYTES / w ? calloc((size_t)count, w) : NULL;
            H5Tset_size(m, w);
            H5Tset_strpad(m, H5T_STR_NULLTERM);
            if (raw != NULL && H5Dread(d, m, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw) >= 0) {
                for (size_t i = 0; i < *n; i++) utf8_copy(out + i * width, width, raw + i * w);
                rc = 0;
            }
            free(raw);
        }
        H5Tclose(m);
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Dclose(d);
    return rc;
}

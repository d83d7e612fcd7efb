/* h5w.c — writing HDF5 with a sticky error (h5w.h): the first failed call records what
 * failed and every later one is skipped; attributes, datasets, groups; and the file
 * built in memory and written out all-or-nothing. */
#include "h5w.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

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
    hid_t type = CHECK_H5(w, H5Tcopy(H5T_C_S1));
    CHECK_H5(w, H5Tset_size(type, H5T_VARIABLE));
    CHECK_H5(w, H5Tset_cset(type, H5T_CSET_UTF8));
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

void dataset_write(struct h5w *w, hid_t parent, const char *name, hid_t type, int rank, const hsize_t *dims,
                          const void *data, const char *units)
{
    hid_t space = CHECK_H5(w, H5Screate_simple(rank, dims, NULL));
    hid_t dset = CHECK_H5(w, H5Dcreate2(parent, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    CHECK_H5(w, H5Dwrite(dset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
    if (units != NULL) attr_str(w, dset, "units", units);
    h5_close(dset);
    h5_close(space);
}

hid_t h5_group_create(struct h5w *w, hid_t parent, const char *name)
{
    return CHECK_H5(w, H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
}

/* /runs/<library>/<path> and /collectives/<library>/<path> are shared by the runs of
 * a library and path. */
hid_t group_open_or_create(struct h5w *w, hid_t parent, const char *name)
{
    return H5Lexists(parent, name, H5P_DEFAULT) > 0 ? CHECK_H5(w, H5Gopen2(parent, name, H5P_DEFAULT))
                                                    : h5_group_create(w, parent, name);
}


/* Fixed-length strings, `width` bytes each. */
void strings_write(struct h5w *w, hid_t parent, const char *name, const char *data, int n, int width)
{
    hid_t type = CHECK_H5(w, H5Tcopy(H5T_C_S1));
    CHECK_H5(w, H5Tset_size(type, (size_t)width));
    hsize_t dims[1] = {(hsize_t)(n > 0 ? n : 0)};
    dataset_write(w, parent, name, type, 1, dims, data, NULL);
    h5_close(type);
}


/* Write `bytes` to a new file `path` (never an existing one), fsync'ed; -1 on any failure. */
static int write_new_file(const char *path, const void *data, size_t bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return -1;
    const char *p = data;
    size_t left = bytes;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int saved = errno ? errno : ENOSPC;
            close(fd);
            unlink(path);
            errno = saved;
            return -1;
        }
        p += n;
        left -= (size_t)n;
    }
    if (fsync(fd) != 0 || close(fd) != 0) {
        int saved = errno;
        unlink(path);
        errno = saved;
        return -1;
    }
    return 0;
}

/* The in-memory file (HDF5's core driver) that h5out builds: HDF5 never holds a
 * half-written file on disk, and a full disk is one failed write() that we can clean up
 * after, not a library left in an odd state. */
hid_t image_open(struct h5w *w, const char *path, hid_t *fapl)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors come back to us; we print one line */
    *fapl = CHECK_H5(w, H5Pcreate(H5P_FILE_ACCESS));
    CHECK_H5(w, H5Pset_fapl_core(*fapl, 1 << 20, 0));
    return CHECK_H5(w, H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, *fapl));
}

/* Write the in-memory file out as NAME.tmp, then link it to NAME (never over an existing
 * file). Returns 0, or -1 with a message (nothing left behind but a complete NAME.tmp
 * when only the link failed). */
int image_close_and_write(struct h5w *w, const char *path, hid_t file, hid_t fapl, char *err, size_t errlen)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    void *image = NULL;
    ssize_t size = -1;
    if (file >= 0) {
        CHECK_H5(w, H5Fflush(file, H5F_SCOPE_GLOBAL));
        size = w->failed ? -1 : H5Fget_file_image(file, NULL, 0);
        if (size > 0) {
            image = malloc((size_t)size);
            CHECK_ALLOC(image);
            if (H5Fget_file_image(file, image, (size_t)size) != size) h5w_fail(w, "H5Fget_file_image", __LINE__);
        } else {
            h5w_fail(w, "H5Fget_file_image", __LINE__);
        }
        H5Fclose(file);
    }
    if (fapl >= 0) H5Pclose(fapl);
    if (w->failed) {
        free(image);
        snprintf(err, errlen, "building %s failed, nothing was written: %s", path, w->err);
        return -1;
    }
    errno = 0;
    int rc = write_new_file(tmp, image, (size_t)size);
    free(image);
    if (rc != 0) {
        snprintf(err, errlen, "writing %s failed, nothing was kept: %s", tmp, strerror(errno));
        return -1;
    }
    /* link() fails rather than replace: a result that appeared meanwhile survives */
    if (link(tmp, path) != 0) {
        snprintf(err, errlen, "cannot create %s: %s; the complete result is kept in %s", path, strerror(errno), tmp);
        return -1;
    }
    unlink(tmp);
    return 0;
}

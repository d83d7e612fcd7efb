/* h5w.h — the HDF5 writing h5out.c builds on: a sticky error (the first failed call
 * records what failed and why, every later call is skipped, so a writer reads top to
 * bottom without an error branch per line), attributes, datasets and groups, and a file
 * built in memory (HDF5's core driver) then written out as NAME.tmp and linked to NAME,
 * so that a crash or a full disk never leaves a half-written file and an existing one
 * is never overwritten. */
#ifndef DPSCALE_H5W_H
#define DPSCALE_H5W_H

#include <hdf5.h>
#include <stddef.h>

struct h5w {
    int failed;
    char err[512];
};

/* CHECK_H5: evaluate an HDF5 call unless an earlier one failed; negative = failure. */
#define CHECK_H5(w, call) ((w)->failed ? (hid_t)-1 : h5w_check((w), (hid_t)(call), #call, __LINE__))
hid_t h5w_check(struct h5w *w, hid_t rc, const char *what, int line);
void h5w_fail(struct h5w *w, const char *what, int line);
void h5_close(hid_t id);

void attr_write(struct h5w *w, hid_t obj, const char *name, hid_t type, const void *value);
void attr_str(struct h5w *w, hid_t obj, const char *name, const char *value);
void attr_i64(struct h5w *w, hid_t obj, const char *name, long long value);
void attr_f64(struct h5w *w, hid_t obj, const char *name, double value);
void dataset_write(struct h5w *w, hid_t parent, const char *name, hid_t type, int rank, const hsize_t *dims,
                   const void *data, const char *units);
/* Fixed-length strings, `width` bytes each. */
void strings_write(struct h5w *w, hid_t parent, const char *name, const char *data, int n, int width);
hid_t h5_group_create(struct h5w *w, hid_t parent, const char *name);
hid_t group_open_or_create(struct h5w *w, hid_t parent, const char *name);

/* A new file built in memory; image_close_and_write writes it out (0, or -1 with a
 * message in err; nothing left behind but a complete NAME.tmp when only the link failed). */
hid_t image_open(struct h5w *w, const char *path, hid_t *fapl);
int image_close_and_write(struct h5w *w, const char *path, hid_t file, hid_t fapl, char *err, size_t errlen);

#endif

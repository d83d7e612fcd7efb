/* h5file.h — a result file on disk: its name chosen before any work (never one that
 * exists), and its content built in memory (HDF5's core driver) then written out as
 * NAME.tmp, fsync'ed and linked to NAME, so that a crash or a full disk never leaves a
 * half-written file and an existing one is never overwritten. */
#ifndef DPSCALE_H5FILE_H
#define DPSCALE_H5FILE_H

#include <hdf5.h>
#include <stddef.h>

#include "config.h"
#include "h5w.h"

/* The path of a new result file: cfg->output or dpscale-<utc>-<job>.h5 in
 * cfg->output_dir (created if missing). Fails when it already exists or cannot be
 * written, before any work is done. */
int h5file_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                       char *err, size_t errlen);

/* A new file built in memory; h5file_close_and_write writes it out (0, or -1 with a
 * message in err; nothing left behind but a complete NAME.tmp when only the link failed). */
hid_t h5file_open_image(struct h5w *w, const char *path, hid_t *fapl);
int h5file_close_and_write(struct h5w *w, const char *path, hid_t file, hid_t fapl, char *err, size_t errlen);

#endif

/* h5file.h — a result file on disk: its name chosen and claimed before any work (never
 * one that exists; NAME.tmp created at once, holding the claimant's pid and host), and
 * its content built in memory (HDF5's core driver) then written out as NAME.tmp,
 * fsync'ed and moved to NAME, so that a crash or a full disk never leaves a
 * half-written file and another launch's result is never overwritten. A launch may
 * rewrite its own NAME (the sweep points done so far, then all of them). */
#ifndef DPSCALE_H5FILE_H
#define DPSCALE_H5FILE_H

#include <hdf5.h>
#include <stddef.h>

#include "config.h"
#include "h5w.h"

/* The path of a new result file: cfg->output or dpscale-<utc>-<job>.h5 in
 * cfg->output_dir (created if missing), claimed by creating NAME.tmp. Fails when NAME
 * exists, when a running process claimed it, or when it cannot be created there (a
 * folder that is a file, a name too long), before any work is done. A NAME.tmp whose
 * claimant no longer runs on this host is removed, with a warning in note. */
int h5file_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                       char *err, size_t errlen, char *note, size_t notelen);
/* Fails (with the figures) when the file system of `path` has fewer than `bytes` free. */
int h5file_check_space(const char *path, double bytes, char *err, size_t errlen);
/* Give up the claim: NAME.tmp removed (a launch that writes nothing). */
void h5file_release(const char *path);

/* How the written image reaches NAME: a new file nobody claimed (NAME.tmp created
 * afresh; NAME must not exist), a claimed one (our NAME.tmp; NAME must not exist), or a
 * rewrite of the launch's own NAME (replaced). */
enum h5file_mode { H5FILE_NEW = 0, H5FILE_CLAIMED = 1, H5FILE_REWRITE = 2 };

/* A new file built in memory; h5file_close_and_write writes it out (0, or -1 with a
 * message in err; nothing left behind but a complete NAME.tmp when only the link failed). */
hid_t h5file_open_image(struct h5w *w, const char *path, hid_t *fapl);
int h5file_close_and_write(struct h5w *w, const char *path, hid_t file, hid_t fapl, int mode, char *err,
                           size_t errlen);

/* Tests only (DPSCALE_FAULT=0:K:write): the next image written out stops half-way with
 * ENOSPC, as on a disk that fills up; what follows is the real failure's path. */
void h5file_fill_disk(void);

#endif

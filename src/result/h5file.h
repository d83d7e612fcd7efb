/* h5file.h — a result file on disk: its name chosen and claimed before any work (never
 * one that exists; NAME.tmp created at once, holding the claimant's pid and host), and
 * its content built in memory (HDF5's core driver) then written out to a temporary of
 * its own beside NAME (safe_file.h: a fresh random name, created exclusively, never
 * through a link), fsync'ed and moved to NAME, so that a crash or a full disk never
 * leaves a half-written file and another launch's result is never overwritten. A
 * launch may rewrite its own NAME (the sweep points done so far, then all of them).
 *
 * The output folder may be shared (a cluster's scratch, /tmp): nothing here opens a
 * name that someone else can have planted for us. NAME and NAME.tmp are looked at
 * with lstat, and a link (even a dangling one), a FIFO, a device or a folder there is
 * refused before any work; a stale claim is read without following a link or
 * blocking on a FIFO; a rewrite replaces NAME only while it is still the file this
 * launch wrote.
 *
 * The output folder is opened once, when the name is chosen, and held for the
 * launch's lifetime (struct h5file_target): the claim, the temporaries, the moves and
 * every look at NAME are inside that descriptor, so that a folder renamed and replaced
 * by a link meanwhile is never followed, and the result lands in the folder checked.
 * The claim's descriptor is held with flock(LOCK_EX) as long as it is the claim: a
 * later launch tells a live claim from a dead one by the lock, in every pid namespace,
 * and not by the pid inside alone. */
#ifndef DPSCALE_H5FILE_H
#define DPSCALE_H5FILE_H

#include <hdf5.h>
#include <stddef.h>
#include <sys/types.h>

#include "config/config.h"
#include "result/h5w.h"
#include "base/safe_file.h"

/* Where a launch's result file goes, held from h5file_choose_path to h5file_close_target. */
struct h5file_target {
    struct safe_dir dir; /* the output folder, opened once; fd -1 when closed */
    char name[256];      /* NAME, one component inside it */
    int claim_fd;        /* NAME.tmp, held with flock(LOCK_EX) while it is the claim; -1 when none */
    dev_t dir_dev;       /* the folder as it was opened, to tell later whether its path still leads to it */
    ino_t dir_ino;
};

/* The path of a new result file: cfg->output or dpscale-<utc>-<job>.h5 in
 * cfg->output_dir (created if missing), claimed by creating NAME.tmp. Fails, before
 * any work is done, when the name does not end in .h5 or holds a control character,
 * when something is at NAME (a file is never overwritten; a link or a special file is
 * never written through), when NAME.tmp is a link or a special file, when a running
 * process claimed NAME, or when the name cannot be created there (a folder that is a
 * file, a name too long for NAME.tmp or for the temporaries). A NAME.tmp of this user
 * whose claimant no longer runs on this host is removed, with a warning in note. */
int h5file_choose_target(const struct config *cfg, const char *utc_stamp, const char *job_id, struct h5file_target *t,
                         char *path, size_t len, char *err, size_t errlen, char *note, size_t notelen);
/* The same, its folder and claim held by h5file.c itself (one per process). */
int h5file_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                       char *err, size_t errlen, char *note, size_t notelen);
/* Fails (with the figures) when the file system of t's folder has fewer than `bytes` free. */
int h5file_check_space(const struct h5file_target *t, double bytes, char *err, size_t errlen);
/* Give up the claim: NAME.tmp removed while it is still the one this launch made (a
 * launch that writes nothing), and its lock let go. */
void h5file_release(struct h5file_target *t);
/* The claim given up, and the folder closed: the launch writes nothing more. */
void h5file_close_target(struct h5file_target *t);
/* "" while t's folder path still leads to the folder opened; else one clause for a
 * message that says the folder was moved or replaced, and where the opened one is now
 * when that can be told. */
void h5file_folder_note(const struct h5file_target *t, char *note, size_t len);
/* What a dying process must not leave behind: its claim and the temporary it is
 * writing, each removed only while it is still the file this process made (not a
 * temporary kept on purpose, whose name an error gave). Async-signal-safe. */
void h5file_cleanup_now(void);

/* How the written image reaches NAME: a new file nobody claimed (NAME must not exist),
 * a claimed one (our NAME.tmp, given up once NAME is there; NAME must not exist), or
 * a rewrite of the launch's own NAME (replaced, while it is still the file this
 * launch wrote). NAME is never written in place: a reader sees the old file or the
 * new one. */
enum h5file_mode { H5FILE_NEW = 0, H5FILE_CLAIMED = 1, H5FILE_REWRITE = 2 };

/* A new file built in memory; h5file_close_and_write writes it out (inside the held
 * folder when `path` is the launch's result file, else inside the folder of `path`,
 * opened once for the call): 0, or -1 with a message in err that says truly what is
 * left: nothing, NAME as last written, or the complete image in a temporary it names,
 * when only the move to NAME failed. */
hid_t h5file_open_image(struct h5w *w, const char *path, hid_t *fapl);
int h5file_close_and_write(struct h5w *w, const char *path, hid_t file, hid_t fapl, int mode, char *err,
                           size_t errlen);

/* The words of a failed rewrite's message when NAME is still the launch's last write. */
#define H5FILE_AS_LAST_WRITTEN "is as this launch last wrote it"

/* After a failed h5file_close_and_write: the temporary that holds the complete image
 * (its error said so), when only the move to NAME failed; NULL otherwise. */
const char *h5file_kept(void);

/* Tests only (DPSCALE_FAULT=0:K:write): the next image written out stops half-way with
 * ENOSPC, as on a disk that fills up; what follows is the real failure's path. */
void h5file_fill_disk(void);
/* Tests only: DPSCALE_WRITE_FAULT=pause:SECONDS holds every write for that long once
 * its temporary is complete and before it is moved to NAME, so that a test can land a
 * signal inside the write (the temporary, .NAME.XXXXXX, is then there to be seen). */
#define H5FILE_WRITE_FAULT_ENV "DPSCALE_WRITE_FAULT"

#endif

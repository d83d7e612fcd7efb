/* safe_file.h — writing a file in a folder that other users may share (a cluster's
 * output folder, /tmp): nothing dpscale writes ever follows a link or opens a special
 * file that someone else planted there.
 *
 * The content goes to a temporary created exclusively beside the target (a random
 * name, O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC: never a file that existed before, never
 * through a link), is fsync'ed, then moved to the target in one step: renamed over it
 * (replace) or linked to a name that must not exist (never overwrite). A reader thus
 * sees the old file or the whole new one, never half of either, and a crash leaves at
 * worst a hidden temporary. Every step happens inside a folder held open (safe_dir
 * below). The target itself is checked without following a link before any work:
 * a symbolic link (even a dangling one), a FIFO, a device or a folder there is refused
 * in one line. Names with control characters (a newline, ESC) are refused too: they
 * would reach terminals and job logs raw. */
#ifndef DPSCALE_SAFE_FILE_H
#define DPSCALE_SAFE_FILE_H

#include <stddef.h>

/* 0 when `path` can become a file dpscale writes: its name has no control character,
 * and there is nothing at it, or (may_exist) a regular file. -1 with the reason and
 * the fix in err otherwise. `what` names the file in the message ("plot", "result file"). */
int safe_file_check_target(const char *path, const char *what, int may_exist, char *err, size_t errlen);

/* Writes all of `bytes` to fd (retrying short writes and EINTR): 0, or -1 with errno. */
int safe_file_write_all(int fd, const void *data, size_t bytes);

enum safe_file_move { SAFE_FILE_REPLACE = 0, SAFE_FILE_NEVER_OVERWRITE = 1 };

/* Inputs a user names (a config, a topology fixture, a catalog entry, a result file):
 * 0 when `path` is a regular file (links followed: an input may be one), else -1 with
 * what it is in err. A FIFO would block its reader forever and a device never ends. */
int safe_file_check_input(const char *path, const char *what, char *err, size_t errlen);

/* The whole of a small regular text file, NUL-terminated, in *text (to free): opened
 * without blocking (O_NONBLOCK, then fstat, in case the path changed), read to its end,
 * refused past max_bytes. 0, or -1 with the reason in err. */
int safe_file_read_text(const char *path, const char *what, size_t max_bytes, char **text, size_t *len, char *err,
                        size_t errlen);

/* ---- a folder held open: what a launch writes more than once, or in steps ---------
 * A folder looked up by name at each step of a write could be renamed and replaced by
 * a link between two steps by another user, and followed. A safe_dir holds the folder's descriptor from the moment it is checked: every name
 * below is one component inside it (fstatat, openat, renameat, linkat, unlinkat), and
 * a swap of the folder afterwards changes nothing dpscale writes or says. */
struct safe_dir {
    int fd;          /* O_RDONLY|O_DIRECTORY; -1 when closed */
    char path[4096]; /* as given, for messages */
};

/* Opens `folder` (links in its path followed: the user named it; "" is "."). 0, or -1
 * with the reason and the fix in err. */
int safe_dir_open(struct safe_dir *d, const char *folder, char *err, size_t errlen);
/* The folder of `path`, and the offset of its last component in path. */
int safe_dir_open_parent(struct safe_dir *d, const char *path, size_t *name_at, char *err, size_t errlen);
void safe_dir_close(struct safe_dir *d);
/* safe_file_check_target for `name` (one component) inside d. */
int safe_dir_check_target(const struct safe_dir *d, const char *name, const char *what, int may_exist, char *err,
                          size_t errlen);
/* An exclusive temporary ".<name>.XXXXXX" inside d (mode 0666 & ~umask): its
 * descriptor, its name in tmpname; -1 with the reason in err. */
int safe_dir_create_temp(const struct safe_dir *d, const char *name, char *tmpname, size_t len, char *err,
                         size_t errlen);
/* The temporary `tmpname` (closed by the caller after writing), fsync'ed and moved to
 * `name` inside d (renamed over it, or linked to a name that must not exist when `move`
 * is SAFE_FILE_NEVER_OVERWRITE), then d fsync'ed. On failure -1 with the reason in
 * err; the temporary is removed unless keep_on_failure (a complete result that only
 * could not be named: err then says where it is, by its full path). */
int safe_dir_commit(const struct safe_dir *d, const char *tmpname, const char *name, enum safe_file_move move,
                    int keep_on_failure, char *err, size_t errlen);
/* Removes the temporary `tmpname` of d (a write given up). */
void safe_dir_discard(const struct safe_dir *d, const char *tmpname);

/* 1 when s holds a byte below 0x20 or 0x7f (a newline, a tab, ESC, BEL). */
int safe_file_has_control(const char *s);

#endif

/* h5file.c — the result file on disk (h5file.h): its name, and its all-or-nothing write. */
#include "h5file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "error.h"

static int make_dirs(const char *dir)
{
    char buf[CONFIG_STR_LEN];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

int h5file_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                       char *err, size_t errlen, char *note, size_t notelen)
{
    const char *dir = cfg->output_dir[0] ? cfg->output_dir : ".";
    if (make_dirs(dir) != 0 || access(dir, W_OK) != 0) {
        snprintf(err, errlen, "cannot write to output folder %s: %s; set run.output_dir to a writable folder", dir,
                 strerror(errno));
        return -1;
    }
    int n = cfg->output[0] ? snprintf(path, len, "%s/%s", dir, cfg->output)
                           : snprintf(path, len, "%s/dpscale-%s-%s.h5", dir, utc_stamp, job_id);
    if (n < 0 || (size_t)n + 5 >= len) {
        snprintf(err, errlen, "output path is too long: %s", path);
        return -1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (access(path, F_OK) == 0) {
        snprintf(err, errlen, "result file %s already exists and is never overwritten; choose another run.output or move it", path);
        return -1;
    }
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (int attempt = 0; attempt < 2; attempt++) {
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) { /* claimed: who holds it, for a later launch to tell a live claim from a dead one */
            char text[320];
            const int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
            const int ok = n > 0 && write(fd, text, (size_t)n) == n;
            close(fd);
            if (!ok) {
                unlink(tmp);
                snprintf(err, errlen, "cannot write %s: %s; free space in run.output_dir or choose another folder", tmp,
                         strerror(errno ? errno : ENOSPC));
                return -1;
            }
            return 0;
        }
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s; choose a shorter run.output or another run.output_dir", tmp,
                     strerror(errno));
            return -1;
        }
        /* NAME.tmp exists: a live claim stops us; one whose process is gone from this host does not */
        long pid = 0;
        char owner[256] = "";
        FILE *f = fopen(tmp, "r");
        const int got = f != NULL ? fscanf(f, "%ld %255s", &pid, owner) : 0;
        if (f != NULL) fclose(f);
        const int dead = got == 2 && strcmp(owner, host) == 0 && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (!dead || attempt > 0 || unlink(tmp) != 0) {
            snprintf(err, errlen, "%s exists: %s; remove it if no launch is running", tmp,
                     got == 2 ? "another launch (its pid and host inside) is writing this result"
                              : "a launch is writing this result, or one crashed while writing it");
            return -1;
        }
        snprintf(note, notelen, "removed %s, left by process %ld of %s, which no longer runs", tmp, pid, owner);
    }
    return -1;
}

int h5file_check_space(const char *path, double bytes, char *err, size_t errlen)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash != NULL) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    struct statvfs v;
    if (statvfs(dir, &v) != 0) return 0; /* cannot tell: the write will say */
    const double avail = (double)v.f_bavail * (double)v.f_frsize;
    if (avail >= bytes) return 0;
    snprintf(err, errlen, "%s has %.1f MB free, and this launch's result file needs about %.1f MB; free space there or "
             "set run.output_dir to another folder", dir, avail / 1e6, bytes / 1e6);
    return -1;
}

void h5file_release(const char *path)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    unlink(tmp);
}

static int g_disk_fills = 0; /* h5file_fill_disk: the next write_new_file stops half-way */

void h5file_fill_disk(void) { g_disk_fills = 1; }

/* Write `bytes` to `path`, fsync'ed; -1 on any failure (nothing left then). `ours`: the
 * file is the launch's claim (truncated), else it must not exist. */
static int write_new_file(const char *path, const void *data, size_t bytes, int ours)
{
    int fd = open(path, ours ? O_WRONLY | O_CREAT | O_TRUNC : O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return -1;
    const char *p = data;
    size_t done = 0;
    const size_t room = g_disk_fills ? bytes / 2 : bytes; /* what the disk takes */
    g_disk_fills = 0;
    while (done < bytes) {
        ssize_t n = done < room ? write(fd, p + done, room - done) : (errno = ENOSPC, -1);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            int saved = errno ? errno : ENOSPC;
            close(fd);
            unlink(path);
            errno = saved;
            return -1;
        }
        done += (size_t)n;
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
hid_t h5file_open_image(struct h5w *w, const char *path, hid_t *fapl)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* errors come back to us; we print one line */
    *fapl = CHECK_H5(w, H5Pcreate(H5P_FILE_ACCESS));
    CHECK_H5(w, H5Pset_fapl_core(*fapl, 1 << 20, 0));
    return CHECK_H5(w, H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, *fapl));
}

/* Write the in-memory file out as NAME.tmp, then move it to NAME: linked (never over an
 * existing file), or renamed over the launch's own earlier NAME (H5FILE_REWRITE).
 * Returns 0, or -1 with a message (nothing left behind but a complete NAME.tmp when
 * only the link failed). */
int h5file_close_and_write(struct h5w *w, const char *path, hid_t file, hid_t fapl, int mode, char *err,
                           size_t errlen)
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
        if (mode == H5FILE_CLAIMED) unlink(tmp); /* the claim goes with the file that failed */
        snprintf(err, errlen, "building %s failed, nothing was written: %s", path, w->err);
        return -1;
    }
    errno = 0;
    int rc = write_new_file(tmp, image, (size_t)size, mode != H5FILE_NEW);
    free(image);
    if (rc != 0) {
        if (mode == H5FILE_REWRITE)
            snprintf(err, errlen, "writing %s failed: %s; it was removed, and %s is as this launch last wrote it", tmp,
                     strerror(errno), path);
        else snprintf(err, errlen, "writing %s failed: %s; it was removed, nothing was kept", tmp, strerror(errno));
        return -1;
    }
    if (mode == H5FILE_REWRITE) { /* our own NAME: replaced in one step, never half of either */
        if (rename(tmp, path) != 0) {
            snprintf(err, errlen, "cannot replace %s: %s; the complete result is kept in %s", path, strerror(errno), tmp);
            return -1;
        }
        return 0;
    }
    /* link() fails rather than replace: a result that appeared meanwhile survives */
    if (link(tmp, path) != 0) {
        snprintf(err, errlen, "cannot create %s: %s; the complete result is kept in %s", path, strerror(errno), tmp);
        return -1;
    }
    unlink(tmp);
    return 0;
}

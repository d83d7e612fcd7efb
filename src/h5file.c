/* h5file.c — the result file on disk (h5file.h): its name, its claim, and its all-or-nothing write. */
#include "h5file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "safe_file.h"

/* A file this process made, by name and identity: removed only while the name still
 * leads to it (someone may have put another file there since, in a shared folder).
 * ino 0: none. Read by signal handlers: the name is written before the identity. */
struct own_file {
    char path[4200];
    dev_t dev;
    volatile ino_t ino;
};

static struct own_file g_claim; /* NAME.tmp until NAME is there */
static struct own_file g_temp;  /* the temporary being written */
static struct {
    int known;
    dev_t dev;
    ino_t ino;
} g_written; /* NAME as this launch last wrote it: a rewrite replaces only that file */
static char g_kept[4200]; /* the temporary the last failed write kept, complete; "" if none */

static void own_set(struct own_file *f, const char *path, const struct stat *st)
{
    f->ino = 0;
    snprintf(f->path, sizeof f->path, "%s", path);
    f->dev = st->st_dev;
    f->ino = st->st_ino;
}

/* Async-signal-safe: lstat and unlink only. */
static void own_remove(struct own_file *f)
{
    struct stat st;
    const ino_t ino = f->ino;
    if (ino == 0) return;
    if (lstat(f->path, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino && st.st_dev == f->dev)
        unlink(f->path);
    f->ino = 0;
}

void h5file_cleanup_now(void)
{
    own_remove(&g_temp);
    own_remove(&g_claim);
}

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

/* The rule for a result file's name, before anything is made: plain characters (a
 * newline or ESC would reach terminals and job logs raw, and split the lines that name
 * the file), and .h5, the suffix by which dpscale report and the tools find results. */
static int check_name(const struct config *cfg, const char *dir, char *err, size_t errlen)
{
    if (safe_file_has_control(cfg->output) || safe_file_has_control(dir)) {
        snprintf(err, errlen, "run.%s holds a control character (a newline, a tab, ESC); choose a plain file name",
                 safe_file_has_control(cfg->output) ? "output" : "output_dir");
        return -1;
    }
    const size_t n = strlen(cfg->output);
    if (n > 0 && (n <= 3 || strcmp(cfg->output + n - 3, ".h5") != 0)) {
        snprintf(err, errlen, "run.output '%s' is not a result file's name: it must end in .h5 (an HDF5 file, as dpscale "
                 "report reads them); choose a name such as run.h5", cfg->output);
        return -1;
    }
    return 0;
}

/* The temporaries beside NAME (.NAME.XXXXXX, 8 characters more; NAME.tmp, 4) must fit
 * the folder's longest name: found now, not after the sweep. */
static int check_name_length(const char *path, const char *dir, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    const size_t need = strlen(slash != NULL ? slash + 1 : path) + 8;
    errno = 0;
    long max = pathconf(dir, _PC_NAME_MAX);
    if (max <= 0) max = 255;
    if ((long)need <= max) return 0;
    snprintf(err, errlen, "output name %s is too long: %s (the temporaries written beside it need %zu characters, and "
             "the file system takes %ld); choose a shorter run.output", path, strerror(ENAMETOOLONG), need, max);
    return -1;
}

/* NAME.tmp as lstat sees it: nothing, or a regular file (a claim); a link or a special
 * file there is refused, and never opened. */
static int check_claim_slot(const char *tmp, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(tmp, &st) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "cannot create %s: %s; choose a shorter run.output or another run.output_dir", tmp,
                 strerror(errno));
        return -1;
    }
    if (S_ISREG(st.st_mode)) return 0;
    snprintf(err, errlen, "%s is %s, where this launch claims its result file; it is neither opened nor followed: "
             "remove it, or choose another run.output", tmp,
             S_ISLNK(st.st_mode) ? "a symbolic link" : "not a regular file (a folder, a FIFO, a device or a socket)");
    return -1;
}

/* NAME.tmp created exclusively (never through a link, never blocking on a FIFO), with
 * the claimant's pid and host, for a later launch to tell a live claim from a dead one.
 * A claim of this user whose process no longer runs on this host is removed, once. */
static int claim(const char *path, char *err, size_t errlen, char *note, size_t notelen)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (check_claim_slot(tmp, err, errlen) != 0) return -1;
        const int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
        if (fd >= 0) {
            char text[320];
            struct stat st;
            const int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
            errno = 0;
            const int ok = n > 0 && write(fd, text, (size_t)n) == n && fstat(fd, &st) == 0;
            const int saved = errno ? errno : ENOSPC;
            close(fd);
            if (!ok) {
                unlink(tmp); /* made exclusively a moment ago: ours */
                snprintf(err, errlen, "cannot write %s: %s; free space in run.output_dir or choose another folder", tmp,
                         strerror(saved));
                return -1;
            }
            own_set(&g_claim, tmp, &st);
            return 0;
        }
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s; choose a shorter run.output or another run.output_dir", tmp,
                     strerror(errno));
            return -1;
        }
        /* NAME.tmp exists: read it as it is, never through a link nor blocking on a FIFO
         * swapped in since the look above */
        const int rd = open(tmp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (rd < 0 || fstat(rd, &st) != 0 || !S_ISREG(st.st_mode)) {
            const int saved = rd < 0 ? errno : 0;
            if (rd >= 0) close(rd);
            if (check_claim_slot(tmp, err, errlen) == 0) /* a regular file we may not read, or one gone meanwhile */
                snprintf(err, errlen, "%s exists and cannot be read: %s; remove it if no launch is running", tmp,
                         strerror(saved ? saved : EINVAL));
            return -1;
        }
        char text[320];
        ssize_t got_bytes = read(rd, text, sizeof text - 1);
        close(rd);
        text[got_bytes > 0 ? got_bytes : 0] = '\0';
        long pid = 0;
        char owner[256] = "";
        const int got = sscanf(text, "%ld %255s", &pid, owner);
        const int dead = got == 2 && strcmp(owner, host) == 0 && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (!dead || attempt > 0) {
            snprintf(err, errlen, "%s exists: %s; remove it if no launch is running", tmp,
                     got == 2 ? "another launch (its pid and host inside) is writing this result"
                              : "a launch is writing this result, or one crashed while writing it");
            return -1;
        }
        /* a dead claim is removed only when it is this user's and has no other name: a
         * file of someone else's, or a hard link to one, is not ours to delete */
        if (st.st_uid != geteuid() || st.st_nlink != 1) {
            snprintf(err, errlen, "%s was left by process %ld of %s, which no longer runs, but it is %s; remove it "
                     "yourself, or choose another run.output", tmp, pid, owner,
                     st.st_uid != geteuid() ? "another user's file" : "a file with other names (hard links)");
            return -1;
        }
        struct own_file stale;
        own_set(&stale, tmp, &st);
        own_remove(&stale);
        snprintf(note, notelen, "removed %s, left by process %ld of %s, which no longer runs", tmp, pid, owner);
    }
    return -1;
}

int h5file_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                       char *err, size_t errlen, char *note, size_t notelen)
{
    const char *dir = cfg->output_dir[0] ? cfg->output_dir : ".";
    if (check_name(cfg, dir, err, errlen) != 0) return -1;
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
    /* nothing at NAME: a link (even a dangling one) or a special file is refused as a
     * file is, before any work, never written through nor found out after the sweep */
    if (safe_file_check_target(path, "result file", 1, err, errlen) != 0) return -1;
    struct stat st;
    if (lstat(path, &st) == 0) {
        snprintf(err, errlen, "result file %s already exists and is never overwritten; choose another run.output or move it", path);
        return -1;
    }
    if (check_name_length(path, dir, err, errlen) != 0) return -1;
    return claim(path, err, errlen, note, notelen);
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
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (strcmp(tmp, g_claim.path) == 0) own_remove(&g_claim);
}

static int g_disk_fills = 0; /* h5file_fill_disk: the next write_temp stops half-way */

void h5file_fill_disk(void) { g_disk_fills = 1; }

const char *h5file_kept(void) { return g_kept[0] ? g_kept : NULL; }

/* DPSCALE_WRITE_FAULT=pause:SECONDS (tests only): the write held, its temporary complete. */
static void pause_if_asked(void)
{
    const char *fault = getenv(H5FILE_WRITE_FAULT_ENV);
    double seconds = 0.0;
    if (fault == NULL || sscanf(fault, "pause:%lf", &seconds) != 1 || !(seconds > 0.0) || seconds > 600.0) return;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)seconds;
    until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR) {
    }
}

/* `bytes` written to a fresh temporary beside `path` (its name in tmp, its identity in
 * st), closed; 0, or with the reason in why -1 (the temporary removed) or -2 (none
 * could be made). */
static int write_temp(const char *path, const void *data, size_t bytes, char *tmp, size_t tmplen, struct stat *st,
                      char *why, size_t whylen)
{
    const int fd = safe_file_create_temp(path, tmp, tmplen, why, whylen);
    if (fd < 0) return -2;
    if (fstat(fd, st) != 0) st->st_ino = 0;
    else own_set(&g_temp, tmp, st); /* a dying process removes it */
    const size_t room = g_disk_fills ? bytes / 2 : bytes; /* what the disk takes */
    g_disk_fills = 0;
    int rc = safe_file_write_all(fd, data, room);
    if (rc == 0 && room < bytes) {
        errno = ENOSPC;
        rc = -1;
    }
    int saved = rc != 0 ? errno : 0;
    if (close(fd) != 0 && rc == 0) { /* some file systems report a full disk only here */
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        snprintf(why, whylen, "%s", strerror(saved ? saved : ENOSPC));
        own_remove(&g_temp);
        if (st->st_ino == 0) unlink(tmp);
        return -1;
    }
    return 0;
}

/* A rewrite replaces NAME only while it is the file this launch last wrote: someone
 * who put a link or another file there (a shared folder without the sticky bit) gets
 * it back untouched. "" when it is ours, else what is there now. */
static void what_replaced(const char *path, char *what, size_t len)
{
    struct stat st;
    what[0] = '\0';
    if (lstat(path, &st) != 0) snprintf(what, len, "it is gone: %s", strerror(errno));
    else if (S_ISLNK(st.st_mode)) snprintf(what, len, "a symbolic link now");
    else if (!S_ISREG(st.st_mode)) snprintf(what, len, "not a regular file now");
    else if (!g_written.known || st.st_dev != g_written.dev || st.st_ino != g_written.ino)
        snprintf(what, len, "another file now");
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

/* Write the in-memory file out to a fresh temporary, then move it to NAME: linked
 * (never over an existing file), or renamed over the launch's own earlier NAME
 * (H5FILE_REWRITE). Returns 0, or -1 with a message that says what is left. */
int h5file_close_and_write(struct h5w *w, const char *path, hid_t file, hid_t fapl, int mode, char *err,
                           size_t errlen)
{
    void *image = NULL;
    ssize_t size = -1;
    g_kept[0] = '\0';
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
        if (mode == H5FILE_CLAIMED) own_remove(&g_claim); /* the claim goes with the file that failed */
        snprintf(err, errlen, "building %s failed, nothing was written: %s%s%s%s", path, w->err,
                 mode == H5FILE_REWRITE ? "; " : "", mode == H5FILE_REWRITE ? path : "",
                 mode == H5FILE_REWRITE ? " " H5FILE_AS_LAST_WRITTEN : "");
        return -1;
    }
    char tmp[4200], why[4600];
    struct stat st;
    const int rc = write_temp(path, image, (size_t)size, tmp, sizeof tmp, &st, why, sizeof why);
    free(image);
    if (rc != 0) {
        const char *gone = rc == -1 ? "; its temporary was removed" : "";
        if (mode == H5FILE_REWRITE)
            snprintf(err, errlen, "writing %s failed: %s%s, and %s " H5FILE_AS_LAST_WRITTEN, path, why, gone, path);
        else snprintf(err, errlen, "writing %s failed: %s%s, nothing was kept", path, why, gone);
        if (mode == H5FILE_CLAIMED) own_remove(&g_claim);
        return -1;
    }
    pause_if_asked();
    enum safe_file_move move = SAFE_FILE_NEVER_OVERWRITE;
    if (mode == H5FILE_REWRITE) {
        char what[320];
        what_replaced(path, what, sizeof what);
        if (what[0] && strncmp(what, "it is gone", 10) != 0) {
            g_temp.ino = 0; /* kept, as the message says */
            snprintf(g_kept, sizeof g_kept, "%s", tmp);
            snprintf(err, errlen, "%s was replaced since this launch wrote it (%s): it is left alone, and the complete "
                     "result is kept in %s", path, what, tmp);
            return -1;
        }
        if (!what[0]) move = SAFE_FILE_REPLACE; /* ours: replaced in one step; gone: made afresh, over nothing */
    }
    if (safe_file_commit(tmp, path, move, 1, why, sizeof why) != 0) {
        struct stat now;
        if (lstat(tmp, &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev) { /* kept */
            g_temp.ino = 0;
            snprintf(g_kept, sizeof g_kept, "%s", tmp);
        } else {
            own_remove(&g_temp);
        }
        if (mode == H5FILE_REWRITE) snprintf(err, errlen, "%s; %s " H5FILE_AS_LAST_WRITTEN, why, path);
        else snprintf(err, errlen, "%s", why);
        return -1;
    }
    g_temp.ino = 0; /* it is NAME now */
    g_written.known = 1;
    g_written.dev = st.st_dev;
    g_written.ino = st.st_ino;
    if (mode == H5FILE_CLAIMED) own_remove(&g_claim); /* NAME itself stops the next launch now */
    return 0;
}

/* h5file.c — the result file on disk (h5file.h): its name, its claim, and its all-or-nothing write. */
#include "result/h5file.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/safe_file.h"

/* A file this process made, by folder, name and identity: removed only while the name
 * still leads to it (someone may have put another file there since, in a shared
 * folder). ino 0: none. Read by signal handlers: the name is written before the identity. */
struct own_file {
    int dirfd;
    char name[300];
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
static char g_kept[4400]; /* the temporary the last failed write kept, complete; "" if none */
static struct h5file_target *g_target; /* the launch's, from h5file_choose_path to h5file_close_target */
static char g_target_path[4096];       /* its NAME as the launch names it */

static void own_set(struct own_file *f, int dirfd, const char *name, const struct stat *st)
{
    f->ino = 0;
    f->dirfd = dirfd;
    snprintf(f->name, sizeof f->name, "%s", name);
    f->dev = st->st_dev;
    f->ino = st->st_ino;
}

/* Async-signal-safe: fstatat and unlinkat only. */
static void own_remove(struct own_file *f)
{
    struct stat st;
    const ino_t ino = f->ino;
    if (ino == 0) return;
    if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino &&
        st.st_dev == f->dev)
        unlinkat(f->dirfd, f->name, 0);
    f->ino = 0;
}

void h5file_cleanup_now(void)
{
    own_remove(&g_temp);
    own_remove(&g_claim);
}

/* "folder/name" for messages, as safe_dir names its files. */
static void shown_path(const struct safe_dir *d, const char *name, char *buf, size_t len)
{
    const size_t n = strlen(d->path);
    if (strcmp(d->path, ".") == 0) snprintf(buf, len, "%s", name);
    else snprintf(buf, len, "%s%s%s", d->path, n > 0 && d->path[n - 1] == '/' ? "" : "/", name);
}

/* The claim removed (NAME is there, or the launch gives up), then its lock let go. */
static void claim_give_up(void)
{
    own_remove(&g_claim);
    if (g_target != NULL && g_target->claim_fd >= 0) {
        close(g_target->claim_fd);
        g_target->claim_fd = -1;
    }
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
static int check_name_length(const struct h5file_target *t, const char *path, char *err, size_t errlen)
{
    const size_t need = strlen(t->name) + 8;
    errno = 0;
    long max = fpathconf(t->dir.fd, _PC_NAME_MAX);
    if (max <= 0) max = 255;
    if ((long)need <= max && need < sizeof t->name) return 0;
    snprintf(err, errlen, "output name %s is too long: %s (the temporaries written beside it need %zu characters, and "
             "the file system takes %ld); choose a shorter run.output", path, strerror(ENAMETOOLONG), need, max);
    return -1;
}

/* NAME.tmp as fstatat sees it: nothing, or a regular file (a claim); a link or a
 * special file there is refused, and never opened. */
static int check_claim_slot(const struct h5file_target *t, const char *tmpname, const char *tmp, char *err,
                            size_t errlen)
{
    struct stat st;
    if (fstatat(t->dir.fd, tmpname, &st, AT_SYMLINK_NOFOLLOW) != 0) {
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

/* A fresh NAME.tmp (fd), locked before its text is written: a later launch that finds
 * it unlocked with its text whole knows its claimant is gone. 0, or -1 with err. */
static int claim_fill(struct h5file_target *t, int fd, const char *tmpname, const char *tmp, const char *host,
                      char *err, size_t errlen)
{
    char text[320];
    struct stat st;
    /* only this user can open it (0600), so nobody else can hold its lock first */
    if (flock(fd, LOCK_EX | LOCK_NB) != 0 && errno != ENOLCK && errno != EOPNOTSUPP && errno != ENOSYS) {
        snprintf(err, errlen, "cannot lock %s: %s; remove it if no launch is running", tmp, strerror(errno));
        close(fd);
        unlinkat(t->dir.fd, tmpname, 0); /* made exclusively a moment ago: ours */
        return -1;
    } /* a file system without locks: the claim still stops others, and is never taken as stale */
    const int n = snprintf(text, sizeof text, "%ld %s\n", (long)getpid(), host);
    errno = 0;
    const int ok = n > 0 && write(fd, text, (size_t)n) == n && fstat(fd, &st) == 0;
    const int saved = errno ? errno : ENOSPC;
    if (!ok) {
        close(fd);
        unlinkat(t->dir.fd, tmpname, 0);
        snprintf(err, errlen, "cannot write %s: %s; free space in run.output_dir or choose another folder", tmp,
                 strerror(saved));
        return -1;
    }
    own_set(&g_claim, t->dir.fd, tmpname, &st);
    t->claim_fd = fd; /* held, with its lock, until NAME is there or the launch gives up */
    return 0;
}

/* NAME.tmp created exclusively inside the folder (never through a link, never
 * blocking on a FIFO), locked, with the claimant's pid and host. A claim found there
 * is removed, once, only when it is this user's regular file with no other name, its
 * text is whole, nobody holds its lock (a live launch does, in whatever pid namespace)
 * and its pid no longer runs on this host: the pid alone is wrong across pid
 * namespaces, and the lock alone is not held by a claim of an older dpscale. */
static int claim(struct h5file_target *t, const char *path, char *err, size_t errlen, char *note, size_t notelen)
{
    char tmp[4200], tmpname[300];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(tmpname, sizeof tmpname, "%s.tmp", t->name);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (check_claim_slot(t, tmpname, tmp, err, errlen) != 0) return -1;
        const int fd = openat(t->dir.fd, tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
        if (fd >= 0) return claim_fill(t, fd, tmpname, tmp, host, err, errlen);
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s; choose a shorter run.output or another run.output_dir", tmp,
                     strerror(errno));
            return -1;
        }
        /* NAME.tmp exists: read it as it is, never through a link nor blocking on a FIFO
         * swapped in since the look above */
        const int rd = openat(t->dir.fd, tmpname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        struct stat st;
        if (rd < 0 || fstat(rd, &st) != 0 || !S_ISREG(st.st_mode)) {
            const int saved = rd < 0 ? errno : 0;
            if (rd >= 0) close(rd);
            if (check_claim_slot(t, tmpname, tmp, err, errlen) == 0) /* one we may not read, or gone meanwhile */
                snprintf(err, errlen, "%s exists and cannot be read: %s; remove it if no launch is running", tmp,
                         strerror(saved ? saved : EINVAL));
            return -1;
        }
        char text[320];
        const ssize_t got_bytes = read(rd, text, sizeof text - 1);
        text[got_bytes > 0 ? got_bytes : 0] = '\0';
        long pid = 0;
        char owner[256] = "";
        const int got = sscanf(text, "%ld %255s", &pid, owner) == 2 && strchr(text, '\n') != NULL ? 2 : 0;
        const int held = flock(rd, LOCK_EX | LOCK_NB) != 0;
        const int lock_errno = held ? errno : 0;
        const int dead = got == 2 && strcmp(owner, host) == 0 && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
        if (held && lock_errno != EWOULDBLOCK) {
            snprintf(err, errlen, "%s exists, and whether its launch still runs cannot be told (its lock: %s); remove "
                     "it if no launch is running", tmp, strerror(lock_errno));
            close(rd);
            return -1;
        }
        if (held || !dead || attempt > 0) {
            snprintf(err, errlen, "%s exists: %s%s; remove it if no launch is running", tmp,
                     got == 2 ? "another launch (its pid and host inside) is writing this result"
                              : "a launch is writing this result, or one crashed while writing it",
                     held && dead ? " (it holds the claim's lock: its pid is of another pid namespace)" : "");
            close(rd);
            return -1;
        }
        /* a dead claim is removed only when it is this user's and has no other name: a
         * file of someone else's, or a hard link to one, is not ours to delete */
        if (st.st_uid != geteuid() || st.st_nlink != 1) {
            snprintf(err, errlen, "%s was left by process %ld of %s, which no longer runs, but it is %s; remove it "
                     "yourself, or choose another run.output", tmp, pid, owner,
                     st.st_uid != geteuid() ? "another user's file" : "a file with other names (hard links)");
            close(rd);
            return -1;
        }
        struct own_file stale;
        own_set(&stale, t->dir.fd, tmpname, &st);
        own_remove(&stale); /* while we hold its lock: a claimant cannot come back to it */
        close(rd);
        snprintf(note, notelen, "removed %s, left by process %ld of %s, which no longer runs", tmp, pid, owner);
    }
    return -1;
}

int h5file_choose_target(const struct config *cfg, const char *utc_stamp, const char *job_id, struct h5file_target *t,
                         char *path, size_t len, char *err, size_t errlen, char *note, size_t notelen)
{
    const char *dir = cfg->output_dir[0] ? cfg->output_dir : ".";
    t->dir.fd = -1;
    t->claim_fd = -1;
    t->name[0] = '\0';
    if (check_name(cfg, dir, err, errlen) != 0) return -1;
    struct stat st;
    if (make_dirs(dir) != 0 || safe_dir_open(&t->dir, dir, err, errlen) != 0 || fstat(t->dir.fd, &st) != 0 ||
        faccessat(t->dir.fd, ".", W_OK, 0) != 0) {
        snprintf(err, errlen, "cannot write to output folder %s: %s; set run.output_dir to a writable folder", dir,
                 strerror(errno));
        safe_dir_close(&t->dir);
        return -1;
    }
    t->dir_dev = st.st_dev;
    t->dir_ino = st.st_ino;
    int n = cfg->output[0] ? snprintf(t->name, sizeof t->name, "%s", cfg->output)
                           : snprintf(t->name, sizeof t->name, "dpscale-%s-%s.h5", utc_stamp, job_id);
    const int m = snprintf(path, len, "%s/%s", dir, t->name);
    if (n < 0 || (size_t)n >= sizeof t->name) n = 0; /* too long for a name: the check below says so */
    if (m < 0 || (size_t)m + 5 >= len) {
        snprintf(err, errlen, "output path is too long: %s", path);
        goto fail;
    }
    /* nothing at NAME: a link (even a dangling one) or a special file is refused as a
     * file is, before any work, never written through nor found out after the sweep */
    if (safe_dir_check_target(&t->dir, n > 0 ? t->name : cfg->output, "result file", 1, err, errlen) != 0) goto fail;
    if (fstatat(t->dir.fd, t->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        snprintf(err, errlen, "result file %s already exists and is never overwritten; choose another run.output or move it", path);
        goto fail;
    }
    if (check_name_length(t, path, err, errlen) != 0 || claim(t, path, err, errlen, note, notelen) != 0) goto fail;
    g_target = t;
    snprintf(g_target_path, sizeof g_target_path, "%s", path);
    return 0;
fail:
    safe_dir_close(&t->dir);
    return -1;
}

int h5file_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                       char *err, size_t errlen, char *note, size_t notelen)
{
    static struct h5file_target own = {.dir = {.fd = -1}, .claim_fd = -1};
    if (own.dir.fd >= 0) h5file_close_target(&own);
    return h5file_choose_target(cfg, utc_stamp, job_id, &own, path, len, err, errlen, note, notelen);
}

int h5file_check_space(const struct h5file_target *t, double bytes, char *err, size_t errlen)
{
    struct statvfs v;
    if (fstatvfs(t->dir.fd, &v) != 0) return 0; /* cannot tell: the write will say */
    const double avail = (double)v.f_bavail * (double)v.f_frsize;
    if (avail >= bytes) return 0;
    snprintf(err, errlen, "%s has %.1f MB free, and this launch's result file needs about %.1f MB; free space there or "
             "set run.output_dir to another folder", t->dir.path, avail / 1e6, bytes / 1e6);
    return -1;
}

void h5file_release(struct h5file_target *t)
{
    if (g_target == t) claim_give_up();
}

void h5file_close_target(struct h5file_target *t)
{
    h5file_release(t);
    if (g_target == t) {
        g_temp.ino = 0; /* nothing is written any more: the handlers look no further */
        g_target = NULL;
        g_target_path[0] = '\0';
    }
    safe_dir_close(&t->dir);
}

void h5file_folder_note(const struct h5file_target *t, char *note, size_t len)
{
    struct stat st;
    note[0] = '\0';
    if (t->dir.fd < 0 || (stat(t->dir.path, &st) == 0 && st.st_dev == t->dir_dev && st.st_ino == t->dir_ino)) return;
    char link[64], now[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", t->dir.fd);
    const ssize_t k = readlink(link, now, sizeof now - 1);
    if (k > 0) now[k] = '\0';
    /* where the opened folder is now, unless its name would reach a terminal raw */
    const int known = k > 0 && now[0] == '/' && !safe_file_has_control(now) && strstr(now, " (deleted)") == NULL;
    snprintf(note, len, "the folder %s was moved or replaced during the launch; the result is in the folder that was "
             "opened%s%s", t->dir.path, known ? ", now " : "", known ? now : "");
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

/* `bytes` written to a fresh temporary inside d beside `name` (its name in tmpname, its
 * identity in st), closed; 0, or with the reason in why -1 (the temporary removed) or
 * -2 (none could be made). */
static int write_temp(const struct safe_dir *d, const char *name, const void *data, size_t bytes, char *tmpname,
                      size_t tmplen, struct stat *st, char *why, size_t whylen)
{
    const int fd = safe_dir_create_temp(d, name, tmpname, tmplen, why, whylen);
    if (fd < 0) return -2;
    if (fstat(fd, st) != 0) st->st_ino = 0;
    else own_set(&g_temp, d->fd, tmpname, st); /* a dying process removes it */
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
        if (st->st_ino == 0) safe_dir_discard(d, tmpname);
        return -1;
    }
    return 0;
}

/* A rewrite replaces NAME only while it is the file this launch last wrote: someone
 * who put a link or another file there (a shared folder without the sticky bit) gets
 * it back untouched. "" when it is ours, else what is there now. */
static void what_replaced(const struct safe_dir *d, const char *name, char *what, size_t len)
{
    struct stat st;
    what[0] = '\0';
    if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) snprintf(what, len, "it is gone: %s", strerror(errno));
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
        if (mode == H5FILE_CLAIMED) claim_give_up(); /* the claim goes with the file that failed */
        snprintf(err, errlen, "building %s failed, nothing was written: %s%s%s%s", path, w->err,
                 mode == H5FILE_REWRITE ? "; " : "", mode == H5FILE_REWRITE ? path : "",
                 mode == H5FILE_REWRITE ? " " H5FILE_AS_LAST_WRITTEN : "");
        return -1;
    }
    /* the launch's own file goes through the folder it opened; another (a projection)
     * through its folder, opened once for this call */
    struct safe_dir one = {.fd = -1};
    const struct safe_dir *d = NULL;
    const char *name = NULL;
    char tmpname[300], tmp[4400], why[4600];
    if (g_target != NULL && g_target->dir.fd >= 0 && strcmp(path, g_target_path) == 0) {
        d = &g_target->dir;
        name = g_target->name;
    } else {
        size_t at = 0;
        if (safe_dir_open_parent(&one, path, &at, why, sizeof why) != 0) {
            free(image);
            snprintf(err, errlen, "writing %s failed: %s, nothing was kept", path, why);
            return -1;
        }
        d = &one;
        name = path + at;
    }
    struct stat st;
    const int rc = write_temp(d, name, image, (size_t)size, tmpname, sizeof tmpname, &st, why, sizeof why);
    free(image);
    if (rc != 0) {
        const char *gone = rc == -1 ? "; its temporary was removed" : "";
        if (mode == H5FILE_REWRITE)
            snprintf(err, errlen, "writing %s failed: %s%s, and %s " H5FILE_AS_LAST_WRITTEN, path, why, gone, path);
        else snprintf(err, errlen, "writing %s failed: %s%s, nothing was kept", path, why, gone);
        if (mode == H5FILE_CLAIMED) claim_give_up();
        safe_dir_close(&one);
        return -1;
    }
    shown_path(d, tmpname, tmp, sizeof tmp);
    pause_if_asked();
    enum safe_file_move move = SAFE_FILE_NEVER_OVERWRITE;
    if (mode == H5FILE_REWRITE) {
        char what[320];
        what_replaced(d, name, what, sizeof what);
        if (what[0] && strncmp(what, "it is gone", 10) != 0) {
            g_temp.ino = 0; /* kept, as the message says */
            snprintf(g_kept, sizeof g_kept, "%s", tmp);
            snprintf(err, errlen, "%s was replaced since this launch wrote it (%s): it is left alone, and the complete "
                     "result is kept in %s", path, what, tmp);
            safe_dir_close(&one);
            return -1;
        }
        if (!what[0]) move = SAFE_FILE_REPLACE; /* ours: replaced in one step; gone: made afresh, over nothing */
    }
    if (safe_dir_commit(d, tmpname, name, move, 1, why, sizeof why) != 0) {
        struct stat now;
        if (fstatat(d->fd, tmpname, &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino &&
            now.st_dev == st.st_dev) { /* kept */
            g_temp.ino = 0;
            snprintf(g_kept, sizeof g_kept, "%s", tmp);
        } else {
            own_remove(&g_temp);
        }
        if (mode == H5FILE_REWRITE) snprintf(err, errlen, "%s; %s " H5FILE_AS_LAST_WRITTEN, why, path);
        else snprintf(err, errlen, "%s", why);
        safe_dir_close(&one);
        return -1;
    }
    g_temp.ino = 0; /* it is NAME now */
    safe_dir_close(&one);
    g_written.known = 1;
    g_written.dev = st.st_dev;
    g_written.ino = st.st_ino;
    if (mode == H5FILE_CLAIMED) claim_give_up(); /* NAME itself stops the next launch now */
    return 0;
}

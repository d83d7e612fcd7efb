/* safe_file.c — exclusive temporaries beside a target, moved over it in one step (safe_file.h). */
#include "base/safe_file.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/utf8.h"

int safe_file_has_control(const char *s)
{
    if (!utf8_valid(s)) return 1; /* a stray byte may be a C1 control (0x9b: CSI) to a terminal */
    for (size_t n; *s; s += n) {
        unsigned cp;
        n = utf8_next(s, &cp);
        if (utf8_is_control(cp)) return 1;
    }
    return 0;
}

/* The folder of `path` ("." when it has none) into dir; its last component's offset. */
static size_t split_folder(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL) {
        snprintf(dir, len, ".");
        return 0;
    }
    if (slash == path) snprintf(dir, len, "/");
    else snprintf(dir, len, "%.*s", (int)(slash - path), path);
    return (size_t)(slash - path) + 1;
}

/* The name rules every written file follows; `shown` is the path for messages. */
static int check_name(const char *name, const char *shown, const char *what, char *err, size_t errlen)
{
    if (shown[0] == '\0' || name[0] == '\0') {
        snprintf(err, errlen, "the %s's name is empty; give a file name", what);
        return -1;
    }
    if (safe_file_has_control(shown)) {
        snprintf(err, errlen, "the %s's name holds a control character (a newline, a tab, ESC) or bytes that are "
                 "not UTF-8; choose a plain file name", what);
        return -1;
    }
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0 || strchr(name, '/') != NULL) {
        snprintf(err, errlen, "%s names a folder, not a %s; give a file name", shown, what);
        return -1;
    }
    if (strlen(name) + 9 > 255) { /* ".NAME.XXXXXX" must fit the file system's 255 bytes too */
        snprintf(err, errlen, "the %s's name %s is too long (at most 246 bytes, for its temporary beside it); "
                 "choose a shorter one", what, shown);
        return -1;
    }
    return 0;
}

/* The target's kind, by fstatat without following a link. */
static int check_at(int dirfd, const char *name, const char *shown, const char *what, int may_exist, char *err,
                    size_t errlen)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "cannot look at %s: %s; choose another %s name", shown, strerror(errno), what);
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s is a symbolic link, and a %s is never written through one; remove it or choose "
                 "another name", shown, what);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a regular file (a folder, a FIFO, a device or a socket); choose "
                 "another %s name", shown, what);
        return -1;
    }
    if (!may_exist) {
        snprintf(err, errlen, "%s already exists and is never overwritten; choose another name or move it", shown);
        return -1;
    }
    return 0;
}

int safe_file_check_target(const char *path, const char *what, int may_exist, char *err, size_t errlen)
{
    char folder[4096];
    const size_t at = split_folder(path, folder, sizeof folder);
    if (check_name(path + at, path, what, err, errlen) != 0) return -1;
    const int dirfd = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        snprintf(err, errlen, "cannot use the folder %s for the %s: %s; create it or choose a writable folder",
                 folder, what, strerror(errno));
        return -1;
    }
    const int rc = check_at(dirfd, path + at, path, what, may_exist, err, errlen);
    close(dirfd);
    return rc;
}

int safe_dir_open(struct safe_dir *d, const char *folder, char *err, size_t errlen)
{
    snprintf(d->path, sizeof d->path, "%s", folder[0] ? folder : ".");
    d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->fd < 0) {
        snprintf(err, errlen, "cannot use the folder %s: %s; create it or choose a writable folder", d->path,
                 strerror(errno));
        return -1;
    }
    return 0;
}

int safe_dir_open_parent(struct safe_dir *d, const char *path, size_t *name_at, char *err, size_t errlen)
{
    char folder[4096];
    *name_at = split_folder(path, folder, sizeof folder);
    return safe_dir_open(d, folder, err, errlen);
}

void safe_dir_close(struct safe_dir *d)
{
    if (d->fd >= 0) close(d->fd);
    d->fd = -1;
}

/* "folder/name" for messages. */
static void shown_path(const struct safe_dir *d, const char *name, char *buf, size_t len)
{
    if (strcmp(d->path, ".") == 0) snprintf(buf, len, "%s", name);
    else snprintf(buf, len, "%s%s%s", d->path, d->path[strlen(d->path) - 1] == '/' ? "" : "/", name);
}

int safe_dir_check_target(const struct safe_dir *d, const char *name, const char *what, int may_exist, char *err,
                          size_t errlen)
{
    char shown[4400];
    shown_path(d, name, shown, sizeof shown);
    if (check_name(name, shown, what, err, errlen) != 0) return -1;
    return check_at(d->fd, name, shown, what, may_exist, err, errlen);
}

int safe_dir_create_temp(const struct safe_dir *d, const char *name, char *tmpname, size_t len, char *err,
                         size_t errlen)
{
    static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const mode_t mask = umask(0);
    umask(mask);
    for (int attempt = 0; attempt < 100; attempt++) {
        unsigned char r[6];
        if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) { /* never blocks after boot; a clock is enough then */
            const unsigned long t = (unsigned long)getpid() * 2654435761u + (unsigned long)attempt;
            for (int i = 0; i < 6; i++) r[i] = (unsigned char)(t >> (5 * i));
        }
        char suffix[7];
        for (int i = 0; i < 6; i++) suffix[i] = letters[r[i] % (sizeof letters - 1)];
        suffix[6] = '\0';
        if (snprintf(tmpname, len, ".%s.%s", name, suffix) >= (int)len) {
            snprintf(err, errlen, "the name %s is too long for a temporary beside it; choose a shorter one", name);
            return -1;
        }
        /* O_EXCL: never a file that existed, never through a link */
        const int fd = openat(d->fd, tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666 & ~mask);
        if (fd >= 0) return fd;
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create a temporary in %s: %s; choose a writable folder", d->path,
                     strerror(errno));
            break;
        }
    }
    if (errno == EEXIST) snprintf(err, errlen, "cannot create a temporary in %s: every name tried exists", d->path);
    tmpname[0] = '\0';
    return -1;
}

void safe_dir_discard(const struct safe_dir *d, const char *tmpname)
{
    if (tmpname[0]) unlinkat(d->fd, tmpname, 0);
}

int safe_dir_commit(const struct safe_dir *d, const char *tmpname, const char *name, enum safe_file_move move,
                    int keep_on_failure, char *err, size_t errlen)
{
    char shown[4400], kept[4400];
    shown_path(d, name, shown, sizeof shown);
    shown_path(d, tmpname, kept, sizeof kept);
    /* the temporary is still the regular file this process made: fsync it through a
     * descriptor that refuses a link swapped in for it */
    const int fd = openat(d->fd, tmpname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        snprintf(err, errlen, "the temporary %s is gone or was replaced; nothing was written to %s", kept, shown);
        if (fd >= 0) close(fd);
        return -1;
    }
    if (fsync(fd) != 0) {
        snprintf(err, errlen, "cannot flush %s to disk: %s; nothing was written to %s", kept, strerror(errno), shown);
        close(fd);
        unlinkat(d->fd, tmpname, 0);
        return -1;
    }
    close(fd);
    int rc;
    if (move == SAFE_FILE_REPLACE) {
        rc = renameat(d->fd, tmpname, d->fd, name);
    } else { /* link fails rather than replace: a file that appeared meanwhile survives */
        rc = linkat(d->fd, tmpname, d->fd, name, 0);
        if (rc == 0) unlinkat(d->fd, tmpname, 0);
    }
    if (rc != 0) {
        const int saved = errno;
        if (keep_on_failure)
            snprintf(err, errlen, "cannot create %s: %s; the complete content is kept in %s", shown, strerror(saved),
                     kept);
        else {
            unlinkat(d->fd, tmpname, 0);
            snprintf(err, errlen, "cannot create %s: %s; nothing was written", shown, strerror(saved));
        }
        return -1;
    }
    (void)fsync(d->fd);
    return 0;
}

int safe_file_write_all(int fd, const void *data, size_t bytes)
{
    const char *p = data;
    for (size_t done = 0; done < bytes;) {
        const ssize_t n = write(fd, p + done, bytes - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = ENOSPC;
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

static const char *file_kind(mode_t mode)
{
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int safe_file_check_input(const char *path, const char *what, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "cannot open %s %s: %s", what, path, strerror(errno));
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s is %s, not a file; give a regular file", what, path, file_kind(st.st_mode));
        return -1;
    }
    return 0;
}

int safe_file_read_text(const char *path, const char *what, size_t max_bytes, char **text, size_t *len, char *err,
                        size_t errlen)
{
    *text = NULL;
    *len = 0;
    if (safe_file_check_input(path, what, err, errlen) != 0) return -1;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open %s %s: %s", what, path, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t used = 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s is %s, not a file; give a regular file", what, path, file_kind(st.st_mode));
        goto fail;
    }
    /* st_size may be 0 (procfs) or stale: read to the end, up to the limit plus one byte */
    if ((buf = malloc(max_bytes + 2)) == NULL) {
        snprintf(err, errlen, "out of memory reading %s %s", what, path);
        goto fail;
    }
    for (;;) {
        const ssize_t got = read(fd, buf + used, max_bytes + 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
            goto fail;
        }
        if (got == 0) break;
        used += (size_t)got;
        if (used > max_bytes) {
            snprintf(err, errlen, "%s %s is over %g MiB; is this the right file?", what, path, (double)max_bytes / 1048576.0);
            goto fail;
        }
    }
    close(fd);
    buf[used] = '\0';
    *text = buf;
    *len = used;
    return 0;
fail:
    free(buf);
    close(fd);
    return -1;
}

/* safe_file.c — exclusive temporaries beside a target, moved over it in one step (safe_file.h). */
#include "safe_file.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int safe_file_has_control(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f) return 1;
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

int safe_file_check_target(const char *path, const char *what, int may_exist, char *err, size_t errlen)
{
    if (path[0] == '\0') {
        snprintf(err, errlen, "the %s's name is empty; give a file name", what);
        return -1;
    }
    if (safe_file_has_control(path)) {
        snprintf(err, errlen, "the %s's name holds a control character (a newline, a tab, ESC); choose a plain "
                 "file name", what);
        return -1;
    }
    char folder[4096];
    const char *base = path + split_folder(path, folder, sizeof folder);
    if (base[0] == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        snprintf(err, errlen, "%s names a folder, not a %s; give a file name", path, what);
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "cannot look at %s: %s; choose another %s name", path, strerror(errno), what);
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s is a symbolic link, and a %s is never written through one; remove it or choose "
                 "another name", path, what);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a regular file (a folder, a FIFO, a device or a socket); choose "
                 "another %s name", path, what);
        return -1;
    }
    if (!may_exist) {
        snprintf(err, errlen, "%s already exists and is never overwritten; choose another name or move it", path);
        return -1;
    }
    return 0;
}

int safe_file_create_temp(const char *target, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    char dir[4096];
    const size_t at = split_folder(target, dir, sizeof dir);
    const int n = snprintf(tmp, tmplen, "%.*s.%s.XXXXXX", (int)at, target, target + at);
    if (n < 0 || (size_t)n >= tmplen) {
        snprintf(err, errlen, "the path %s is too long for a temporary beside it; choose a shorter one", target);
        return -1;
    }
    /* mkostemp opens with O_CREAT|O_EXCL: it never reuses a name nor follows a link */
    const int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot create a temporary in %s: %s; choose a writable folder", dir, strerror(errno));
        tmp[0] = '\0';
        return -1;
    }
    const mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) { /* mkostemp makes 0600: the target gets the mode a plain create gives */
        snprintf(err, errlen, "cannot set the mode of %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        tmp[0] = '\0';
        return -1;
    }
    return fd;
}

FILE *safe_file_create_temp_stream(const char *target, char *tmp, size_t tmplen, char *err, size_t errlen)
{
    const int fd = safe_file_create_temp(target, tmp, tmplen, err, errlen);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (f == NULL) {
        snprintf(err, errlen, "cannot open %s: %s", tmp, strerror(errno));
        close(fd);
        unlink(tmp);
        tmp[0] = '\0';
    }
    return f;
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

void safe_file_sync_folder(const char *path)
{
    char dir[4096];
    split_folder(path, dir, sizeof dir);
    const int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
}

int safe_file_commit(const char *tmp, const char *target, enum safe_file_move move, int keep_on_failure, char *err,
                     size_t errlen)
{
    /* the temporary is still the regular file this process made: fsync it through a
     * descriptor that refuses a link swapped in for it */
    const int fd = open(tmp, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        snprintf(err, errlen, "the temporary %s is gone or was replaced; nothing was written to %s", tmp, target);
        if (fd >= 0) close(fd);
        return -1;
    }
    if (fsync(fd) != 0) {
        snprintf(err, errlen, "cannot flush %s to disk: %s; nothing was written to %s", tmp, strerror(errno), target);
        close(fd);
        unlink(tmp);
        return -1;
    }
    close(fd);
    int rc;
    if (move == SAFE_FILE_REPLACE) {
        rc = rename(tmp, target);
    } else { /* link() fails rather than replace: a file that appeared meanwhile survives */
        rc = link(tmp, target);
        if (rc == 0) unlink(tmp);
    }
    if (rc != 0) {
        const int saved = errno;
        if (keep_on_failure)
            snprintf(err, errlen, "cannot create %s: %s; the complete content is kept in %s", target, strerror(saved),
                     tmp);
        else {
            unlink(tmp);
            snprintf(err, errlen, "cannot create %s: %s; nothing was written", target, strerror(saved));
        }
        return -1;
    }
    safe_file_sync_folder(target);
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

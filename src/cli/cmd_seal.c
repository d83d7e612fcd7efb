/* cmd_seal.c — `dpscale seal FILE.h5 ...`: seal result files written before dpscale
 * sealed its files (checksum.h), so that `dpscale report` names any later change to
 * them. Each file is first read as the report reads it (in a child process,
 * report_child.c): one the report cannot read is refused, and so is one already
 * sealed whose checksums do not match (sealing it would vouch for the change); one
 * whose checksums match is left as it is. The file is read once more, without
 * following a link and only while it is the file checked, and sealed in memory
 * (checksum_seal_image), checked, written to a copy beside it, NAME.seal.tmp (created
 * exclusively, never through a link: one that is there already is another seal's),
 * fsync'ed, then renamed over NAME (safe_file_commit), so that NAME is at every
 * moment the file as it was or the file sealed, never half of either. A link, a FIFO
 * or a device given to seal is refused before anything reads it. Only the root
 * attributes `checksums` and `checksum_algorithm` are added; no value changes. No
 * MPI is needed. The file's folder is opened once (safe_dir): the look at NAME, the
 * read (through /proc/self/fd where there is one), the copy and the rename are all
 * inside it, so that a folder renamed and replaced by a link meanwhile is never
 * followed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "result/checksum.h"
#include "result/result_in.h"
#include "cli/commands.h"
#include "report/report.h"
#include "base/safe_file.h"
#include "cli/session.h"

#define READ_TIMEOUT_S 60.0 /* as dpscale report's --file-timeout */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: dpscale seal FILE.h5 ...\n\n"
            "  Seals result files written before dpscale sealed its files: adds the checksum of every group\n"
            "  and dataset (root attributes checksums and checksum_algorithm), as dpscale writes them now, so\n"
            "  that dpscale report names the file when any of its values changes later. No value changes.\n"
            "  The checksums vouch for the file from the moment it is sealed: seal a copy you trust.\n"
            "  A file is sealed on a copy beside it (FILE.seal.tmp), fsync'ed and renamed over it: it is\n"
            "  never left half-modified. A file already sealed is left as it is; a symbolic link, a FIFO or a\n"
            "  device is refused (seal the file a link names).\n\n"
            "  -h, --help   this help\n\n"
            "exit status: 0 every file sealed, or already sealed with matching checksums; 1 a file could not be\n"
            "written (its copy is removed, the file left as it was); 2 a file dpscale report cannot read, one\n"
            "already sealed whose checksums do not match (it changed since it was written), or bad options\n");
}

/* All of fd (a regular file of `size` bytes, as fstat said) in memory; NULL with errno. */
static void *read_all(int fd, size_t size, size_t *got)
{
    size_t cap = size + 1, n = 0; /* one more: a file that grew is read to its end too */
    char *buf = malloc(cap);
    while (buf != NULL) {
        if (n == cap) {
            char *more = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (more == NULL) {
                free(buf);
                errno = ENOMEM;
                return NULL;
            }
            buf = more;
            cap *= 2;
        }
        const ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            const int saved = errno;
            free(buf);
            errno = saved;
            return NULL;
        }
        if (k == 0) break;
        n += (size_t)k;
    }
    *got = n;
    return buf;
}

enum seal_copy_rc { COPY_MADE = 0, COPY_NONE = -1, COPY_OURS = -2, COPY_OTHERS = -3 };

/* `path` (opened without following a link, and only while it is the regular file
 * `seen` that was checked) sealed in memory and written to `tmp`, created afresh
 * with the file's mode, never through a link; its identity in `st`. COPY_MADE, or
 * with the reason in err: COPY_NONE (nothing made), COPY_OURS (the partial copy is
 * ours to remove), COPY_OTHERS (tmp was there before: another seal's, left alone). */
static int seal_copy(const struct safe_dir *d, const char *name, const struct stat *seen, const char *tmpname,
                     const char *tmp, struct stat *st, char *err, size_t errlen)
{
    const int in = openat(d->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0 || fstat(in, st) != 0) {
        snprintf(err, errlen, "cannot read it: %s", strerror(errno));
        if (in >= 0) close(in);
        return COPY_NONE;
    }
    if (!S_ISREG(st->st_mode) || st->st_dev != seen->st_dev || st->st_ino != seen->st_ino) {
        snprintf(err, errlen, "it was replaced while it was checked (by %s)",
                 S_ISREG(st->st_mode) ? "another file" : "something that is not a regular file");
        close(in);
        return COPY_NONE;
    }
    size_t size = 0, sealed_size = 0;
    void *buf = read_all(in, (size_t)st->st_size, &size);
    close(in);
    if (buf == NULL) {
        snprintf(err, errlen, "cannot read it: %s", strerror(errno));
        return COPY_NONE;
    }
    void *sealed = checksum_seal_image(buf, size, &sealed_size, err, errlen);
    free(buf);
    if (sealed == NULL) return COPY_NONE;
    /* O_EXCL: a copy of another seal's (or anything else planted there) is never
     * reused, truncated or followed */
    const int out = openat(d->fd, tmpname, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out < 0) {
        const int exists = errno == EEXIST;
        snprintf(err, errlen, exists ? "%s exists: a seal of this file is running or was interrupted; remove it if none is"
                                       " running"
                                     : "cannot create %s: %s; seal a copy in a folder you can write to",
                 tmp, strerror(errno));
        free(sealed);
        return exists ? COPY_OTHERS : COPY_NONE;
    }
    int rc = fchmod(out, st->st_mode & 0777) == 0 && safe_file_write_all(out, sealed, sealed_size) == 0 ? 0 : -1;
    if (rc != 0) snprintf(err, errlen, "copying it to %s failed: %s; free space there", tmp, strerror(errno));
    free(sealed);
    if (close(out) != 0 && rc == 0) {
        snprintf(err, errlen, "copying it to %s failed: %s; free space there", tmp, strerror(errno));
        rc = -1;
    }
    return rc == 0 ? COPY_MADE : COPY_OURS;
}

/* A link, a FIFO or a device is refused before
 * anything reads it (a FIFO would hang the read; a link would have the seal land on
 * its name, not on the file it names). 0, or -1 after saying why. */
static int refuse_odd_file(const struct safe_dir *d, const char *name, const char *path, struct stat *seen,
                           int *exists)
{
    *exists = fstatat(d->fd, name, seen, AT_SYMLINK_NOFOLLOW) == 0;
    if (!*exists || S_ISREG(seen->st_mode) || S_ISDIR(seen->st_mode)) return 0; /* the report names the rest */
    if (S_ISLNK(seen->st_mode))
        fprintf(stderr, "dpscale: error: %s is a symbolic link, and a file is never sealed through one; seal the file "
                        "it names\n", path);
    else
        fprintf(stderr, "dpscale: error: %s is not a regular file (a FIFO, a device or a socket); only a result file "
                        "that dpscale report reads can be sealed\n", path);
    return -1;
}

/* One file, `name` inside the folder d (`path` for messages): EXIT_OK (sealed, or
 * already sealed and matching), EXIT_FAILURE_RUN (not written), EXIT_BAD_INPUT
 * (refused); said on stdout or stderr. */
static int seal_in(const struct safe_dir *d, const char *name, const char *path)
{
    struct stat seen, st;
    int exists = 0;
    if (refuse_odd_file(d, name, path, &seen, &exists) != 0) return EXIT_BAD_INPUT;
    struct report_file *f = calloc(1, sizeof *f);
    char err[5000], why[5000], tmp[4200], tmpname[300], inside[4400];
    if (f == NULL) {
        fprintf(stderr, "dpscale: error: out of memory reading %s\n", path);
        return EXIT_FAILURE_RUN;
    }
    /* the report reads the file inside the opened folder (the child it forks keeps the
     * descriptor), not whatever the path leads to by then */
    snprintf(inside, sizeof inside, "/proc/self/fd/%d/%s", d->fd, name);
    const char *read_at = exists && access(inside, F_OK) == 0 ? inside : path;
    const int read = report_read_isolated(read_at, f, 0, READ_TIMEOUT_S, err, sizeof err);
    const int sealed = read == 0 && f->sealed;
    report_free(f);
    free(f);
    if (read == REPORT_CHANGED) {
        fprintf(stderr, "dpscale: error: %s is sealed and its checksums do not match: it changed since it was written; "
                        "refusing to vouch for it\n", path);
        return EXIT_BAD_INPUT;
    }
    if (read != 0) {
        fprintf(stderr, "dpscale: error: %s: %s; only a result file that dpscale report reads can be sealed\n", path, err);
        return EXIT_BAD_INPUT;
    }
    if (sealed) {
        printf("%s: already sealed, its checksums match\n", path);
        return EXIT_OK;
    }
    if (!exists) { /* read, yet not there a moment before: it was put there meanwhile */
        fprintf(stderr, "dpscale: error: %s was not sealed, and is left as it was: it appeared while it was checked\n",
                path);
        return EXIT_FAILURE_RUN;
    }
    if (snprintf(tmp, sizeof tmp, "%s.seal.tmp", path) >= (int)sizeof tmp ||
        snprintf(tmpname, sizeof tmpname, "%s.seal.tmp", name) >= (int)sizeof tmpname) {
        fprintf(stderr, "dpscale: error: %s: the path is too long to seal beside it; seal a copy with a shorter path\n", path);
        return EXIT_BAD_INPUT;
    }
    int rc = seal_copy(d, name, &seen, tmpname, tmp, &st, err, sizeof err);
    if (rc == COPY_MADE) {
        /* the copy replaces the file only while it is the one that was copied */
        struct stat now;
        if (fstatat(d->fd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
            snprintf(err, sizeof err, "it was replaced while it was sealed");
            rc = COPY_OURS;
        } else if (safe_dir_commit(d, tmpname, name, SAFE_FILE_REPLACE, 0, why, sizeof why) != 0) {
            snprintf(err, sizeof err, "%s", why); /* the copy removed unless it was not ours any more */
            rc = COPY_NONE;
        }
    }
    if (rc == COPY_MADE) {
        printf("sealed %s\n", path);
        return EXIT_OK;
    }
    if (rc == COPY_OURS) unlinkat(d->fd, tmpname, 0); /* made exclusively by this process */
    fprintf(stderr, "dpscale: error: %s was not sealed, and is left as it was: %s\n", path, err);
    return EXIT_FAILURE_RUN;
}

/* One file, its folder opened once for all that is done to it. */
static int seal_one(const char *path)
{
    if (safe_file_has_control(path)) {
        fprintf(stderr, "dpscale: error: a file name holds a control character (a newline, a tab, ESC); rename the "
                        "file before sealing it\n");
        return EXIT_BAD_INPUT;
    }
    struct safe_dir d;
    size_t at = 0;
    char err[5000];
    if (safe_dir_open_parent(&d, path, &at, err, sizeof err) != 0) {
        fprintf(stderr, "dpscale: error: %s: %s\n", path, err);
        return EXIT_BAD_INPUT;
    }
    const int rc = seal_in(&d, path + at, path);
    safe_dir_close(&d);
    return rc;
}

int cmd_seal(int argc, char **argv)
{
    static const struct option opts[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            return EXIT_OK;
        }
        fprintf(stderr, "dpscale: error: unknown option '%s' of dpscale seal\n", argv[optind - 1]);
        usage(stderr);
        return EXIT_BAD_INPUT;
    }
    if (argc - optind < 1) {
        usage(stderr);
        return EXIT_BAD_INPUT;
    }
    result_hdf5_quiet();
    int worst = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        const int rc = seal_one(argv[i]);
        if (rc > worst) worst = rc;
    }
    return worst;
}

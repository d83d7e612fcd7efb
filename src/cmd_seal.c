/* cmd_seal.c — `dpscale seal FILE.h5 ...`: seal result files written before dpscale
 * sealed its files (checksum.h), so that `dpscale report` names any later change to
 * them. Each file is first read as the report reads it (in a child process,
 * report_child.c): one the report cannot read is refused, and so is one already
 * sealed whose checksums do not match (sealing it would vouch for the change); one
 * whose checksums match is left as it is. The seal is made on a copy beside the file,
 * NAME.seal.tmp: copied, sealed, checked, fsync'ed, then renamed over NAME, so that
 * NAME is at every moment the file as it was or the file sealed, never half of
 * either. Only the root attributes `checksums` and `checksum_algorithm` are added; no
 * value changes. No MPI is needed. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "commands.h"
#include "report.h"
#include "session.h"

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
            "  never left half-modified. A file already sealed is left as it is.\n\n"
            "  -h, --help   this help\n\n"
            "exit status: 0 every file sealed, or already sealed with matching checksums; 1 a file could not be\n"
            "written (its copy is removed, the file left as it was); 2 a file dpscale report cannot read, one\n"
            "already sealed whose checksums do not match (it changed since it was written), or bad options\n");
}

static int copy_fd(int in, int out)
{
    char buf[1 << 16];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return (int)n;
        for (const char *p = buf; n > 0;) {
            const ssize_t k = write(out, p, (size_t)n);
            if (k < 0 && errno == EINTR) continue;
            if (k <= 0) {
                if (k == 0) errno = ENOSPC;
                return -1;
            }
            p += k;
            n -= k;
        }
    }
}

/* The folder's entry of a renamed file made durable (best effort: some file systems
 * cannot fsync a folder). */
static void sync_folder(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = '\0';
    else if (slash != NULL) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    const int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

/* `path` copied to `tmp` (created afresh, with its mode), the copy sealed, checked
 * and fsync'ed; 0, or with the reason in err -1 (the copy is ours to remove) or -2
 * (tmp was there before: another seal's, left alone). */
static int seal_copy(const char *path, const char *tmp, char *err, size_t errlen)
{
    char why[512] = "";
    struct stat st;
    const int in = open(path, O_RDONLY);
    if (in < 0 || fstat(in, &st) != 0) {
        snprintf(err, errlen, "cannot read it: %s", strerror(errno));
        if (in >= 0) close(in);
        return -1;
    }
    const int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL, st.st_mode & 07777);
    if (out < 0) {
        const int exists = errno == EEXIST;
        snprintf(err, errlen, exists ? "%s exists: a seal of this file is running or was interrupted; remove it if none is"
                                       " running"
                                     : "cannot create %s: %s; seal a copy in a folder you can write to",
                 tmp, strerror(errno));
        close(in);
        return exists ? -2 : -1;
    }
    int rc = copy_fd(in, out);
    if (rc != 0) snprintf(err, errlen, "copying it to %s failed: %s; free space there", tmp, strerror(errno));
    close(in);
    if (close(out) != 0 && rc == 0) {
        snprintf(err, errlen, "writing %s failed: %s; free space there", tmp, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        hid_t f = H5Fopen(tmp, H5F_ACC_RDWR, H5P_DEFAULT);
        if (f < 0 || checksum_seal(f, why, sizeof why) != 0) rc = -1;
        if (f >= 0 && H5Fclose(f) < 0) rc = -1; /* the attribute reaches the file here: a full disk fails here */
        if (rc != 0) snprintf(err, errlen, "sealing %s failed: %s", tmp, why[0] ? why : "HDF5 cannot write it (a full disk?)");
    }
    if (rc == 0) { /* read back as the report will read it */
        hid_t f = H5Fopen(tmp, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (f < 0 || checksum_verify(f, why, sizeof why) != 1) {
            snprintf(err, errlen, "the sealed copy %s does not verify: %s", tmp, why[0] ? why : "it cannot be opened");
            rc = -1;
        }
        if (f >= 0) H5Fclose(f);
    }
    if (rc == 0) {
        const int fd = open(tmp, O_RDONLY);
        if (fd < 0 || fsync(fd) != 0) {
            snprintf(err, errlen, "fsync of %s failed: %s", tmp, strerror(errno));
            rc = -1;
        }
        if (fd >= 0) close(fd);
    }
    return rc;
}

/* One file: EXIT_OK (sealed, or already sealed and matching), EXIT_FAILURE_RUN (not
 * written), EXIT_BAD_INPUT (refused); said on stdout or stderr. */
static int seal_one(const char *path)
{
    struct report_file *f = calloc(1, sizeof *f);
    char err[5000], tmp[4200];
    if (f == NULL) {
        fprintf(stderr, "dpscale: error: out of memory reading %s\n", path);
        return EXIT_FAILURE_RUN;
    }
    const int read = report_read_isolated(path, f, 0, READ_TIMEOUT_S, err, sizeof err);
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
    if (snprintf(tmp, sizeof tmp, "%s.seal.tmp", path) >= (int)sizeof tmp) {
        fprintf(stderr, "dpscale: error: %s: the path is too long to seal beside it; seal a copy with a shorter path\n", path);
        return EXIT_BAD_INPUT;
    }
    int rc = seal_copy(path, tmp, err, sizeof err);
    if (rc == 0 && rename(tmp, path) != 0) {
        snprintf(err, sizeof err, "cannot rename %s over it: %s", tmp, strerror(errno));
        rc = -1;
    }
    if (rc == 0) {
        sync_folder(path);
        printf("sealed %s\n", path);
        return EXIT_OK;
    }
    if (rc == -1) unlink(tmp); /* ours; -2: another's, left alone */
    fprintf(stderr, "dpscale: error: %s was not sealed, and is left as it was: %s\n", path, err);
    return EXIT_FAILURE_RUN;
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
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a failure is said in one line, not HDF5's stack */
    int worst = EXIT_OK;
    for (int i = optind; i < argc; i++) {
        const int rc = seal_one(argv[i]);
        if (rc > worst) worst = rc;
    }
    return worst;
}

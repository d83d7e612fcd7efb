/* report_child.c — each result file read in a child process of its own
 * (report_read_isolated, report.h). A file can be damaged so that the HDF5 library
 * itself crashes on it (HDF5 1.10 copies a variable-length string from wherever a
 * corrupt global-heap ID points) or loops; then that child dies or is killed at its
 * deadline, the report names the file, and every other file of the call is still
 * reported. The child reads the file (result_read: its checksums, its sizes, its
 * tables) and, for --doc and --plot, its attributes as text (doc_read_info), and
 * hands the structures back through a pipe: a fork has the parent's layout, so they
 * travel as bytes, and the parent checks only that all of them came. The child has
 * no core file and 8 GiB more memory than the parent had mapped. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "report/report.h"
#include "report/doc/report_doc.h"
#include "base/utf8.h"

#define CHILD_MORE_MEMORY ((rlim_t)8 << 30) /* a damaged size that asks for more fails in malloc, not in the OOM killer */
#define MAX_MESSAGE ((size_t)1 << 30)

/* What comes first through the pipe; the structures follow in this order. */
struct header {
    int32_t rc;
    int32_t has_comm, has_topo, has_info, nattrs;
    char err[1024];
};

static int write_all(int fd, const void *p, size_t n)
{
    for (const char *c = p; n > 0;) {
        const ssize_t k = write(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

/* The tests' stand-in for a file that crashes or hangs HDF5: DPSCALE_REPORT_FAULT=
 * crash:NAME or hang:NAME, for the file whose path ends in NAME. */
static void injected_fault(const char *path)
{
    const char *fault = getenv("DPSCALE_REPORT_FAULT"), *colon = fault != NULL ? strchr(fault, ':') : NULL;
    const size_t n = strlen(path), m = colon != NULL ? strlen(colon + 1) : 0;
    if (colon == NULL || m == 0 || m > n || strcmp(path + n - m, colon + 1) != 0) return;
    if (strncmp(fault, "crash:", 6) == 0) raise(SIGSEGV);
    while (strncmp(fault, "hang:", 5) == 0) pause();
}

/* The data memory the process has mapped (VmData: ASan's shadow counts, terabytes of
 * it), in bytes; 0 when unknown. */
static rlim_t data_mapped(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kib = 0;
    while (status != NULL && fgets(line, sizeof line, status) != NULL)
        if (sscanf(line, "VmData: %llu kB", &kib) == 1) break;
    if (status != NULL) fclose(status);
    return (rlim_t)kib << 10;
}

/* At most CHILD_MORE_MEMORY more than is mapped now, and never a core file: a crash
 * here is expected of a damaged file. */
static void limit_child(void)
{
    struct rlimit no_core = {0, 0}, now;
    setrlimit(RLIMIT_CORE, &no_core);
    const rlim_t mapped = data_mapped();
    if (mapped == 0 || getrlimit(RLIMIT_DATA, &now) != 0) return;
    struct rlimit memory = {mapped + CHILD_MORE_MEMORY, mapped + CHILD_MORE_MEMORY};
    if (now.rlim_max != RLIM_INFINITY && memory.rlim_max > now.rlim_max) memory.rlim_cur = memory.rlim_max = now.rlim_max;
    if (now.rlim_cur == RLIM_INFINITY || now.rlim_cur > memory.rlim_cur) setrlimit(RLIMIT_DATA, &memory);
}

static void child(int fd, const char *path, int flags)
{
    limit_child();
    static struct report_file f;
    struct header h = {0};
    injected_fault(path);
    h.rc = result_read(path, &f, h.err, sizeof h.err);
    if (h.rc == 0 && (flags & REPORT_READ_SEALED) && (h.rc = result_require_seal(&f, h.err, sizeof h.err)) != 0)
        report_free(&f);
    if (h.rc == 0 && (flags & REPORT_READ_INFO) && (f.info = calloc(1, sizeof *f.info)) != NULL) doc_read_info(path, f.info);
    h.has_comm = f.comm != NULL;
    h.has_topo = f.topo != NULL;
    h.has_info = f.info != NULL;
    h.nattrs = f.info != NULL ? f.info->nattrs : 0;
    int bad = write_all(fd, &h, sizeof h) != 0 || (h.rc == 0 && write_all(fd, &f, sizeof f) != 0);
    if (!bad && h.has_comm) bad = write_all(fd, f.comm, sizeof *f.comm) != 0;
    if (!bad && h.has_topo) bad = write_all(fd, f.topo, sizeof *f.topo) != 0;
    if (!bad && h.has_info) bad = write_all(fd, f.info, sizeof *f.info) != 0;
    if (!bad && h.nattrs > 0) bad = write_all(fd, f.info->attrs, (size_t)h.nattrs * sizeof *f.info->attrs) != 0;
    _exit(bad ? 3 : 0); /* no atexit, no stdio flush: the parent's buffers are the parent's */
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Everything the child writes until it closes the pipe, by the deadline; 1 when the
 * deadline passed first, -1 when out of memory, else 0. */
static int read_until_eof(int fd, double deadline, char **buf, size_t *len)
{
    size_t cap = 0;
    *buf = NULL;
    *len = 0;
    for (;;) {
        const double left = deadline - now_s();
        if (left <= 0) return 1;
        struct pollfd p = {fd, POLLIN, 0};
        const int r = poll(&p, 1, (int)(left * 1000) + 1);
        if (r < 0 && errno == EINTR) continue;
        if (r == 0) continue; /* the deadline is checked above */
        if (*len == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            char *more = cap <= MAX_MESSAGE ? realloc(*buf, cap) : NULL;
            if (more == NULL) return -1;
            *buf = more;
        }
        const ssize_t k = read(fd, *buf + *len, cap - *len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return 0;
        *len += (size_t)k;
    }
}

/* Take n bytes of the message into dst; -1 when fewer are left. */
static int take(const char *buf, size_t len, size_t *at, void *dst, size_t n)
{
    if (len - *at < n) return -1;
    memcpy(dst, buf + *at, n);
    *at += n;
    return 0;
}

/* The child's message back into f; -1 when it ended early. */
static int unpack(const char *buf, size_t len, struct report_file *f, char *err, size_t errlen, int *rc)
{
    struct header h;
    size_t at = 0;
    if (take(buf, len, &at, &h, sizeof h) != 0) return -1;
    h.err[sizeof h.err - 1] = '\0';
    *rc = h.rc;
    if (h.rc != 0) {
        snprintf(err, errlen, "%s", h.err);
        return at == len ? 0 : -1;
    }
    if (take(buf, len, &at, f, sizeof *f) != 0) return -1;
    f->comm = NULL;
    f->topo = NULL;
    f->info = NULL;
    if (h.has_comm && ((f->comm = malloc(sizeof *f->comm)) == NULL || take(buf, len, &at, f->comm, sizeof *f->comm) != 0))
        return -1;
    if (h.has_topo && ((f->topo = malloc(sizeof *f->topo)) == NULL || take(buf, len, &at, f->topo, sizeof *f->topo) != 0))
        return -1;
    if (h.has_info) {
        if ((f->info = malloc(sizeof *f->info)) == NULL || take(buf, len, &at, f->info, sizeof *f->info) != 0) {
            free(f->info);
            f->info = NULL;
            return -1;
        }
        f->info->attrs = NULL;
        f->info->nattrs = f->info->cap = 0;
        const size_t bytes = (size_t)(h.nattrs > 0 ? h.nattrs : 0) * sizeof *f->info->attrs;
        if (bytes > 0 && ((f->info->attrs = malloc(bytes)) == NULL || take(buf, len, &at, f->info->attrs, bytes) != 0))
            return -1;
        f->info->nattrs = f->info->cap = h.nattrs > 0 ? h.nattrs : 0;
    }
    return at == len ? 0 : -1;
}

void report_free(struct report_file *f)
{
    if (f->info != NULL) free(f->info->attrs); /* doc_free_info's work, without linking the document's reader */
    free(f->info);
    f->info = NULL;
    result_free(f);
}

int report_read_isolated(const char *path, struct report_file *f, int flags, double timeout_s, char *err, size_t errlen)
{
    int fds[2];
    memset(f, 0, sizeof *f);
    fflush(NULL); /* nothing buffered twice */
    if (pipe(fds) != 0) {
        snprintf(err, errlen, "cannot read it apart: pipe: %s", strerror(errno));
        return -1;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "cannot read it apart: fork: %s", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        close(fds[0]);
        child(fds[1], path, flags);
    }
    close(fds[1]);
    char *buf = NULL;
    size_t len = 0;
    const int late = read_until_eof(fds[0], now_s() + timeout_s, &buf, &len);
    close(fds[0]);
    if (late != 0) kill(pid, SIGKILL);
    int status = 0, rc = -1;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (late > 0) {
        snprintf(err, errlen, "reading it took longer than %g s (a damaged file can make HDF5 loop); skipped", timeout_s);
    } else if (late < 0) {
        snprintf(err, errlen, "out of memory reading it");
    } else if (WIFSIGNALED(status)) {
        snprintf(err, errlen, "damaged: reading it crashed the HDF5 library (signal %d, %s); skipped", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || unpack(buf, len, f, err, errlen, &rc) != 0) {
        rc = -1;
        snprintf(err, errlen, "reading it failed (the reader ended with status %d)", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
    free(buf);
    if (rc != 0) {
        report_free(f);
        memset(f, 0, sizeof *f);
        utf8_copy(f->path, sizeof f->path, path);
    }
    return rc;
}

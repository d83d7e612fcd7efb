/* report_plot.c — speedup and efficiency against GPU count, one line per system
 * (file, library and path), through gnuplot (PNG or SVG by the output's extension).
 *
 * The ideal is drawn where it is true and as straight as it is: speedup on log-log
 * axes, where speedup = GPUs is the diagonal through the measured GPU counts;
 * efficiency 1 as a level line. (Throughput against a log axis made the ideal
 * N x throughput(1) a curve that sagged below the straight segments between measured
 * points.) One legend serves both panels, each system once, named by what sets it
 * apart (report_doc_columns.c).
 *
 * The plot is written where nobody else can put a link in its way (safe_file.h):
 * gnuplot is never given a file name. It draws to its standard output, which is a
 * temporary created exclusively beside the plot (O_EXCL, never through a link), and
 * that temporary is fsync'ed and renamed over the plot: running the same command
 * twice replaces the plot, a failure leaves the previous one whole, and a link
 * planted at the plot's name, or at any name a temporary could take, is never
 * followed. gnuplot is started with posix_spawnp, its stdin a pipe of ours, not
 * through a shell. The data go to it inline; names from the files go in quoted and
 * escaped (report_gp_text: a quote doubled, a control character as \xNN), in single
 * quotes, inside which gnuplot expands no `command` and no @macro; gnuplot's SVG
 * terminal writes < and & in them as entities itself, but not >, and "]]>" is the one
 * place where XML needs it: the SVG is read back and "]]>" written "]]&gt;" (gnuplot's
 * own markup has no CDATA section that would end there), the same text to a viewer.
 *
 * gnuplot exits 0 after writes that failed (a full disk), so its exit status does not
 * say that the plot is whole: the temporary is read back before it is renamed, and
 * must end as its format ends (SVG "</svg>", PNG its IEND chunk); otherwise it is
 * removed and the plot there is left as it was. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report/report.h"
#include "report/doc/report_doc.h"
#include "base/safe_file.h"

extern char **environ;

#define MAX_SERIES 64

/* A series title, quoted and printed as given (noenhanced: no _ or ^ read as sub- and superscripts). */
static void gp_title(FILE *gp, const struct report_series *s)
{
    fputs(" title '", gp);
    report_gp_text(gp, s->label);
    fputs("' noenhanced", gp);
}

/* gnuplot's inline data: the series' rows, "GPUs value", in order of GPUs. */
static void data_block(FILE *gp, const struct report_series *s, int efficiency)
{
    int done[REPORT_MAX_ROWS] = {0};
    for (;;) {
        int next = -1;
        for (int r = 0; r < s->file->nrows; r++)
            if (!done[r] && report_same_system(&s->file->rows[r], s->sys) &&
                (next < 0 || s->file->rows[r].nranks < s->file->rows[next].nranks))
                next = r;
        if (next < 0) break;
        done[next] = 1;
        const struct report_row *row = &s->file->rows[next];
        const double v = efficiency ? row->efficiency : row->speedup;
        if (isfinite(v)) fprintf(gp, "%d %.10g\n", row->nranks, v);
    }
    fprintf(gp, "e\n");
}

/* Colours told apart on screen and in print (no yellow on white). */
static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                      "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};

/* The plot commands of one panel: the ideal, then every series. */
static void panel(FILE *gp, const struct report_series *s, int n, int efficiency, const int *counts, int ncounts)
{
    fputs("plot '-' using 1:2 with lines dt 2 lw 1.5 lc rgb 'gray40' title 'ideal'", gp);
    for (int k = 0; k < n; k++) {
        const int c = s[k].color >= 0 ? s[k].color : k;
        fprintf(gp, ", '-' using 1:2 with linespoints lw 2 pt %d ps 1.2 lc rgb '%s' dt %d", 5 + 2 * (k % 6),
                palette[c % (int)(sizeof palette / sizeof palette[0])], s[k].projected ? 3 : s[k].dashed ? 4 : 1);
        gp_title(gp, &s[k]);
    }
    fputc('\n', gp);
    for (int i = 0; i < ncounts; i++) fprintf(gp, "%d %d\n", counts[i], efficiency ? 1 : counts[i]);
    fputs("e\n", gp);
    for (int k = 0; k < n; k++) data_block(gp, &s[k], efficiency);
}

/* gnuplot started with its stdin a pipe of ours and its stdout `out_fd`; the pipe's
 * end to write to (a stream), or NULL with err (gnuplot not found: the hint says so). */
static FILE *start_gnuplot(int out_fd, pid_t *pid, char *err, size_t errlen)
{
    int in[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "cannot start gnuplot: pipe: %s", strerror(errno));
        return NULL;
    }
    posix_spawn_file_actions_t fa;
    char *const argv[] = {"gnuplot", NULL};
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
    if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
    if (rc == 0) rc = posix_spawnp(pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    FILE *gp = rc == 0 ? fdopen(in[1], "w") : NULL;
    if (gp == NULL) {
        if (rc == ENOENT) snprintf(err, errlen, "drawing needs gnuplot, which is not on PATH: apt-get install gnuplot-nox");
        else snprintf(err, errlen, "cannot start gnuplot: %s", strerror(rc != 0 ? rc : errno));
        close(in[1]);
        if (rc == 0) { /* started, but no stream to it: it reads EOF and ends */
            while (waitpid(*pid, NULL, 0) < 0 && errno == EINTR) {
            }
        }
        return NULL;
    }
    return gp;
}

/* "folder/name" for messages. */
static void shown_name(const struct safe_dir *d, const char *name, char *buf, size_t len)
{
    const size_t n = strlen(d->path);
    if (strcmp(d->path, ".") == 0) snprintf(buf, len, "%s", name);
    else snprintf(buf, len, "%s%s%s", d->path, n > 0 && d->path[n - 1] == '/' ? "" : "/", name);
}

#define MAX_PLOT_BYTES (256u << 20) /* a plot of 64 lines is some 100 KB */

/* Whether the byte range ends as a whole plot of its format: an SVG with "</svg>" and
 * whitespace after it; a PNG with its IEND chunk (length 0, "IEND", its CRC). */
static int plot_ends_whole(const unsigned char *b, size_t len, int svg)
{
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
    if (!svg) return len >= sizeof iend && memcmp(b + len - sizeof iend, iend, sizeof iend) == 0;
    while (len > 0 && (b[len - 1] == '\n' || b[len - 1] == '\r' || b[len - 1] == ' ' || b[len - 1] == '\t')) len--;
    return len >= 6 && memcmp(b + len - 6, "</svg>", 6) == 0;
}

/* The temporary `tmpname` of d (fd: gnuplot's stdout, ours to write) read back: 0 when
 * it is a whole plot, its SVG's "]]>" rewritten "]]&gt;" through fd; -1 otherwise. */
static int plot_finish(const struct safe_dir *d, const char *tmpname, int fd, int svg)
{
    struct stat mine, read_back;
    unsigned char *b = NULL, *fixed = NULL;
    int rc = -1;
    /* the same file as fd: a name swapped for another file in between is not read */
    const int in = openat(d->fd, tmpname, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (in < 0 || fstat(fd, &mine) != 0 || fstat(in, &read_back) != 0 || mine.st_ino != read_back.st_ino ||
        mine.st_dev != read_back.st_dev || !S_ISREG(mine.st_mode) || mine.st_size <= 0 ||
        (unsigned long long)mine.st_size > MAX_PLOT_BYTES)
        goto done;
    const size_t len = (size_t)mine.st_size;
    size_t got = 0;
    if ((b = malloc(len)) == NULL) goto done;
    while (got < len) {
        const ssize_t k = pread(in, b + got, len - got, (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) goto done;
        got += (size_t)k;
    }
    if (!plot_ends_whole(b, len, svg)) goto done;
    size_t nends = 0;
    for (size_t i = 0; svg && i + 3 <= len; i++) nends += memcmp(b + i, "]]>", 3) == 0;
    if (nends > 0) { /* a name held "]]>": XML's one place for &gt; in text */
        if ((fixed = malloc(len + 3 * nends)) == NULL) goto done;
        size_t k = 0;
        for (size_t i = 0; i < len; i++) {
            if (i + 3 <= len && memcmp(b + i, "]]>", 3) == 0) {
                memcpy(fixed + k, "]]&gt;", 6);
                k += 6;
                i += 2;
            } else {
                fixed[k++] = b[i];
            }
        }
        if (lseek(fd, 0, SEEK_SET) != 0 || ftruncate(fd, 0) != 0 || safe_file_write_all(fd, fixed, k) != 0) goto done;
    }
    rc = 0;
done:
    if (in >= 0) close(in);
    free(b);
    free(fixed);
    return rc;
}

int report_plot_series_at(const struct safe_dir *d, const char *name, const char *title, const struct report_series *s,
                          int n, char *err, size_t errlen)
{
    const char *dot = strrchr(name, '.');
    const int svg = dot != NULL && strcmp(dot, ".svg") == 0, png = dot != NULL && strcmp(dot, ".png") == 0;
    char why[768], tmp[300], shown[4400];
    shown_name(d, name, shown, sizeof shown);
    if (!svg && !png) {
        snprintf(err, errlen, "the plot's name must end in .png or .svg");
        return -1;
    }
    if (safe_dir_check_target(d, name, "plot", 1, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    if (n > MAX_SERIES) n = MAX_SERIES;
    /* every GPU count measured, ascending: the ideal passes through each */
    int counts[REPORT_MAX_ROWS], ncounts = 0, max_gpus = 1;
    for (int k = 0; k < n; k++)
        for (int r = 0; r < s[k].file->nrows; r++) {
            const int g = s[k].file->rows[r].nranks;
            int seen = g < 1;
            for (int i = 0; i < ncounts && !seen; i++) seen = counts[i] == g;
            if (!seen && ncounts < REPORT_MAX_ROWS) counts[ncounts++] = g;
            if (g > max_gpus) max_gpus = g;
        }
    for (int i = 1; i < ncounts; i++)
        for (int j = i; j > 0 && counts[j - 1] > counts[j]; j--) {
            const int t = counts[j];
            counts[j] = counts[j - 1];
            counts[j - 1] = t;
        }
    const int fd = safe_dir_create_temp(d, name, tmp, sizeof tmp, why, sizeof why);
    if (fd < 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    pid_t pid;
    FILE *gp = start_gnuplot(fd, &pid, err, errlen); /* gnuplot holds its own copy of fd as its stdout */
    if (gp == NULL) {
        close(fd);
        safe_dir_discard(d, tmp);
        return -1;
    }
    /* gnuplot that stops early (a bad command) closes the pipe: a write then fails
     * with EPIPE, said by its exit status, instead of killing dpscale */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, before;
    sigemptyset(&ignore.sa_mask);
    sigaction(SIGPIPE, &ignore, &before);
    /* the panels above, the legend below them across the width, one entry a line */
    const int legend_px = 24 + 17 * n, height = 430 + legend_px;
    const double bottom = (double)(legend_px + 45) / height;
    fprintf(gp, "set terminal %s size 1100,%d font 'sans,10'\nset multiplot layout 1,2 title '", svg ? "svg" : "pngcairo",
            height);
    report_gp_text(gp, title);
    fputs("' noenhanced\n", gp);
    fprintf(gp, "set bmargin at screen %.4f\nset tmargin at screen 0.9\n", bottom);
    fprintf(gp, "set logscale x 2\nset xrange [%g:%g]\nset xlabel 'GPUs'\nset grid\nset xtics (", 0.8, max_gpus * 1.25);
    for (int i = 0; i < ncounts; i++) fprintf(gp, "%s'%d' %d", i ? ", " : "", counts[i], counts[i]);
    fputs(")\n", gp);
    fprintf(gp, "set key at screen 0.06,%.4f left top Left reverse samplen 3 spacing 1.1 noenhanced\n", (double)legend_px / height);
    fprintf(gp, "set logscale y 2\nset yrange [0.8:%g]\nset ytics (", max_gpus * 1.25);
    for (int i = 0; i < ncounts; i++) fprintf(gp, "%s'%d' %d", i ? ", " : "", counts[i], counts[i]);
    fputs(")\nset ylabel 'speedup (against 1 GPU of the same line)'\n", gp);
    panel(gp, s, n, 0, counts, ncounts);
    fputs("unset key\nunset logscale y\nset ytics auto\nset yrange [0:1.1]\nset ylabel 'scaling efficiency'\n", gp);
    panel(gp, s, n, 1, counts, ncounts);
    fprintf(gp, "unset multiplot\n");
    const int written = !ferror(gp) & (fclose(gp) == 0);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    sigaction(SIGPIPE, &before, NULL);
    if (!written || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        close(fd);
        safe_dir_discard(d, tmp);
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            snprintf(err, errlen, "gnuplot failed (status %d) drawing %s", WEXITSTATUS(status), shown);
        else if (WIFSIGNALED(status))
            snprintf(err, errlen, "gnuplot was killed (signal %d) drawing %s", WTERMSIG(status), shown);
        else
            snprintf(err, errlen, "gnuplot stopped reading drawing %s", shown);
        return -1;
    }
    const int whole = plot_finish(d, tmp, fd, svg) == 0;
    if ((close(fd) != 0) | !whole) {
        safe_dir_discard(d, tmp);
        snprintf(err, errlen, "the plot could not be written completely (disk full?); %s is left as it was", shown);
        return -1;
    }
    if (safe_dir_commit(d, tmp, name, SAFE_FILE_REPLACE, 0, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
}

int report_plot_series(const char *out_path, const char *title, const struct report_series *s, int n, char *err,
                       size_t errlen)
{
    struct safe_dir d;
    size_t at;
    if (safe_dir_open_parent(&d, out_path, &at, err, errlen) != 0) return -1;
    const int rc = report_plot_series_at(&d, out_path + at, title, s, n, err, errlen);
    safe_dir_close(&d);
    return rc;
}

int report_plot(const char *out_path, const struct report_file *files, int n, char *err, size_t errlen)
{
    static struct doc_column cols[MAX_SERIES];
    struct report_series s[MAX_SERIES] = {{0}};
    struct doc_info *infos = calloc(n > 0 ? (size_t)n : 1, sizeof *infos);
    int ns = 0;
    if (infos == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        int first[REPORT_MAX_ROWS];
        const int nt = report_distinct_systems(&files[i], first);
        doc_info_of(&files[i], &infos[i]);
        for (int t = 0; t < nt && ns < MAX_SERIES; t++)
            cols[ns++] = (struct doc_column){.file = &files[i], .info = &infos[i], .sys = &files[i].rows[first[t]]};
    }
    doc_label_columns(cols, ns);
    for (int k = 0; k < ns; k++)
        s[k] = (struct report_series){.file = cols[k].file, .sys = cols[k].sys, .label = cols[k].label, .color = k,
                                      .dashed = strncmp(cols[k].path_name, "host memory", 11) == 0 ||
                                                strncmp(cols[k].path_name, "network", 7) == 0,
                                      .projected = cols[k].file->projected};
    char title[512];
    report_describe(&files[0], title, sizeof title);
    const int rc = report_plot_series(out_path, title, s, ns, err, errlen);
    for (int i = 0; i < n; i++) doc_free_info(&infos[i]);
    free(infos);
    return rc;
}

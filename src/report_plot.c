/* report_plot.c — speedup and efficiency against GPU count, one line per system
 * (file, library and path), through gnuplot (PNG or SVG by the output's extension).
 *
 * The ideal is drawn where it is true and as straight as it is: speedup on log-log
 * axes, where speedup = GPUs is the diagonal through the measured GPU counts;
 * efficiency 1 as a level line. (Throughput against a log axis made the ideal
 * N x throughput(1) a curve that sagged below the straight segments between measured
 * points.) One legend serves both panels, each system once, named by what sets it
 * apart (report_doc_label.c).
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
 * terminal writes < and & in them as entities itself. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"
#include "report_doc.h"
#include "safe_file.h"

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

int report_plot_series(const char *out_path, const char *title, const struct report_series *s, int n, char *err, size_t errlen)
{
    const char *dot = strrchr(out_path, '.');
    const int svg = dot != NULL && strcmp(dot, ".svg") == 0, png = dot != NULL && strcmp(dot, ".png") == 0;
    char why[768], tmp[4200];
    if (!svg && !png) {
        snprintf(err, errlen, "the plot's name must end in .png or .svg");
        return -1;
    }
    if (safe_file_check_target(out_path, "plot", 1, why, sizeof why) != 0) {
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
    const int fd = safe_file_create_temp(out_path, tmp, sizeof tmp, why, sizeof why);
    if (fd < 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    pid_t pid;
    FILE *gp = start_gnuplot(fd, &pid, err, errlen);
    close(fd); /* gnuplot holds its own copy as its stdout */
    if (gp == NULL) {
        unlink(tmp);
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
        unlink(tmp);
        if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
            snprintf(err, errlen, "gnuplot failed (status %d) drawing %s", WEXITSTATUS(status), out_path);
        else if (WIFSIGNALED(status))
            snprintf(err, errlen, "gnuplot was killed (signal %d) drawing %s", WTERMSIG(status), out_path);
        else
            snprintf(err, errlen, "gnuplot stopped reading drawing %s", out_path);
        return -1;
    }
    if (safe_file_commit(tmp, out_path, SAFE_FILE_REPLACE, 0, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    return 0;
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

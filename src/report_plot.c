/* report_plot.c — speedup and efficiency against GPU count, one line per system
 * (file, library and path), through gnuplot (PNG or SVG by the output's extension).
 *
 * The ideal is drawn where it is true and as straight as it is: speedup on log-log
 * axes, where speedup = GPUs is the diagonal through the measured GPU counts;
 * efficiency 1 as a level line. (Throughput against a log axis made the ideal
 * N x throughput(1) a curve that sagged below the straight segments between measured
 * points.) One legend serves both panels, each system once, named by what sets it
 * apart (report_doc_label.c). The plot is drawn into a temporary file beside the
 * output and renamed over it: running the same command twice replaces the plot, and
 * a failure leaves the previous one whole. The data go to gnuplot inline; names
 * from the files go in quoted (gp_text), so none can end a gnuplot command, and
 * single quotes, inside which gnuplot expands no `command` and no @macro. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "report.h"
#include "report_doc.h"

#define MAX_SERIES 64

/* Text inside a gnuplot single-quoted string: a quote doubled, a line break (which
 * would end the command, and let a name in a result file start another) a space. */
static void gp_text(FILE *gp, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\'') fputc('\'', gp);
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, gp);
    }
}

/* A series title, quoted and printed as given (noenhanced: no _ or ^ read as sub- and superscripts). */
static void gp_title(FILE *gp, const struct report_series *s)
{
    fputs(" title '", gp);
    gp_text(gp, s->label);
    fputs("' noenhanced", gp);
}

static int has_gnuplot(void) { return system("command -v gnuplot >/dev/null 2>&1") == 0; }

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

int report_plot_series(const char *out_path, const char *title, const struct report_series *s, int n, char *err, size_t errlen)
{
    const char *dot = strrchr(out_path, '.');
    const int svg = dot != NULL && strcmp(dot, ".svg") == 0, png = dot != NULL && strcmp(dot, ".png") == 0;
    if (!svg && !png) {
        snprintf(err, errlen, "--plot %s: the name must end in .png or .svg", out_path);
        return -1;
    }
    if (!has_gnuplot()) {
        snprintf(err, errlen, "drawing %s needs gnuplot, which is not on PATH: apt-get install gnuplot-nox", out_path);
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
    char tmp[4200];
    /* gnuplot writes to a command, not a file, whose name starts with | */
    snprintf(tmp, sizeof tmp, "%s%s.tmp-%ld", out_path[0] == '|' ? "./" : "", out_path, (long)getpid());
    FILE *probe = fopen(tmp, "w");
    if (probe == NULL) {
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
        return -1;
    }
    fclose(probe);
    FILE *gp = popen("gnuplot", "w");
    if (gp == NULL) {
        remove(tmp);
        snprintf(err, errlen, "cannot start gnuplot: %s", strerror(errno));
        return -1;
    }
    /* the panels above, the legend below them across the width, one entry a line */
    const int legend_px = 24 + 17 * n, height = 430 + legend_px;
    const double bottom = (double)(legend_px + 45) / height;
    fprintf(gp, "set terminal %s size 1100,%d font 'sans,10'\nset output '", svg ? "svg" : "pngcairo", height);
    gp_text(gp, tmp);
    fputs("'\nset multiplot layout 1,2 title '", gp);
    gp_text(gp, title);
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
    const int status = pclose(gp);
    if (status != 0) {
        remove(tmp);
        snprintf(err, errlen, "gnuplot failed (status %d) drawing %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out_path);
        return -1;
    }
    if (rename(tmp, out_path) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", out_path, strerror(errno));
        remove(tmp);
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

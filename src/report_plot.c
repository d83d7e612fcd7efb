/* report_plot.c — efficiency and throughput against GPU count, one line per
 * system (file, library and path), with the ideal drawn, through gnuplot (PNG or SVG by the
 * output's extension). The data go to gnuplot inline, so nothing is left behind;
 * names from the files go in quoted (gp_text), so none can end a gnuplot command. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "report.h"

/* Text inside a gnuplot single-quoted string: a quote doubled, a line break (which
 * would end the command, and let a name in a result file start another) a space. */
static void gp_text(FILE *gp, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\'') fputc('\'', gp);
        fputc(*p == '\n' || *p == '\r' ? ' ' : *p, gp);
    }
}

/* A series title: the system's label and the file's tag, quoted, printed as given
 * (noenhanced: no _ or ^ read as sub- and superscripts). */
static void gp_title(FILE *gp, const char *label, const char *tag)
{
    fputs(" title '", gp);
    gp_text(gp, label);
    if (tag[0]) fputs(", ", gp);
    gp_text(gp, tag);
    fputs("' noenhanced", gp);
}

static int has_gnuplot(void) { return system("command -v gnuplot >/dev/null 2>&1") == 0; }

/* gnuplot's inline data: one block per system (the rows of f like `sys`), "GPUs value". */
static void data_block(FILE *gp, const struct report_file *f, const struct report_row *sys, int column)
{
    for (int r = 0; r < f->nrows; r++)
        if (report_same_system(&f->rows[r], sys))
            fprintf(gp, "%d %.10g\n", f->rows[r].nranks, column == 1 ? f->rows[r].samples_per_s : f->rows[r].efficiency);
    fprintf(gp, "e\n");
}

int report_plot(const char *out_path, const struct report_file *files, int n, char *err, size_t errlen)
{
    const char *dot = strrchr(out_path, '.');
    const int svg = dot != NULL && strcmp(dot, ".svg") == 0, png = dot != NULL && strcmp(dot, ".png") == 0;
    if (!svg && !png) {
        snprintf(err, errlen, "--plot %s: the name must end in .png or .svg", out_path);
        return -1;
    }
    if (!has_gnuplot()) {
        snprintf(err, errlen, "--plot needs gnuplot, which is not on PATH: apt-get install gnuplot-nox");
        return -1;
    }
    FILE *probe = fopen(out_path, "wx"); /* never overwrite a plot */
    if (probe == NULL) {
        snprintf(err, errlen, "cannot create %s: %s", out_path, strerror(errno));
        return -1;
    }
    fclose(probe);
    FILE *gp = popen("gnuplot", "w");
    if (gp == NULL) {
        remove(out_path);
        snprintf(err, errlen, "cannot start gnuplot: %s", strerror(errno));
        return -1;
    }
    /* the series: every library and path of every file */
    struct { const struct report_file *f; const struct report_row *sys; char label[256]; } series[64];
    int ns = 0;
    for (int i = 0; i < n; i++)
        for (int r = 0; r < files[i].nrows && ns < 64; r++) {
            int seen = 0;
            for (int k = 0; k < ns; k++) seen |= series[k].f == &files[i] && report_same_system(series[k].sys, &files[i].rows[r]);
            if (seen) continue;
            series[ns].f = &files[i];
            series[ns].sys = &files[i].rows[r];
            report_system_label(&files[i], &files[i].rows[r], series[ns].label, sizeof series[ns].label);
            ns++;
        }
    int max_gpus = 1;
    double thr1 = NAN;
    for (int k = 0; k < ns; k++)
        for (int r = 0; r < series[k].f->nrows; r++) {
            const struct report_row *row = &series[k].f->rows[r];
            if (!report_same_system(row, series[k].sys)) continue;
            if (row->nranks > max_gpus) max_gpus = row->nranks;
            if (k == 0 && row->nranks == 1) thr1 = row->samples_per_s;
        }
    fprintf(gp, "set terminal %s size 1100,450 font 'sans,10'\nset output '", svg ? "svg" : "pngcairo");
    gp_text(gp, out_path);
    fputs("'\nset multiplot layout 1,2 title 'dpscale: ", gp);
    gp_text(gp, files[0].model);
    fputs(", ", gp);
    gp_text(gp, files[0].precision);
    fputs("' noenhanced\n", gp);
    fprintf(gp, "set logscale x 2\nset xrange [0.8:%g]\nset xlabel 'GPUs'\nset grid\nset key bottom left\n", max_gpus * 1.25);
    fprintf(gp, "set ylabel 'scaling efficiency'\nset yrange [0:1.1]\nplot 1 with lines dt 2 lc rgb 'gray' title 'ideal'");
    for (int k = 0; k < ns; k++) {
        fputs(", '-' using 1:2 with linespoints lw 2", gp);
        gp_title(gp, series[k].label, series[k].f->tag);
    }
    fputc('\n', gp);
    for (int k = 0; k < ns; k++) data_block(gp, series[k].f, series[k].sys, 2);
    fprintf(gp, "set ylabel 'samples/s'\nset autoscale y\nset yrange [0:*]\nset key top left\nplot ");
    if (!isnan(thr1)) fprintf(gp, "x * %.10g with lines dt 2 lc rgb 'gray' title 'ideal (first system x GPUs)', ", thr1);
    for (int k = 0; k < ns; k++) {
        fprintf(gp, "%s'-' using 1:2 with linespoints lw 2", k ? ", " : "");
        gp_title(gp, series[k].label, series[k].f->tag);
    }
    fputc('\n', gp);
    for (int k = 0; k < ns; k++) data_block(gp, series[k].f, series[k].sys, 1);
    fprintf(gp, "unset multiplot\n");
    const int status = pclose(gp);
    if (status != 0) {
        remove(out_path);
        snprintf(err, errlen, "gnuplot failed (status %d) drawing %s", WIFEXITED(status) ? WEXITSTATUS(status) : -1, out_path);
        return -1;
    }
    return 0;
}

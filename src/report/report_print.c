/* report_print.c — the scaling table of run files (report.h): one table per system
 * (file, library, path), as Markdown, CSV (csv.h) or JSON records (jansson); and
 * what the comparison shares with it (systems, units, the description of a run).
 * Every figure is read from the file's /summary; nothing is recomputed but the
 * exposed share of the step. Also the notes on a file that the tables of every
 * kind share: read without checksums, partial, diverged. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/csv.h"
#include "report/report.h"

static const char *const columns[] = {"gpus", "nodes", "samples_per_s", "samples_per_s_per_gpu", "speedup", "efficiency",
                                      "exposed_comm_pct", "allreduce_busbw_gbps", "mfu", "joules_per_sample"};
#define NCOLUMNS (int)(sizeof columns / sizeof columns[0])
/* the text columns before them, in CSV and JSON */
static const char *const text_columns[] = {"file", "device", "model", "precision", "scaling", "library", "path", "unit"};
#define NTEXT (int)(sizeof text_columns / sizeof text_columns[0])

void report_note_unsealed(FILE *out, const struct report_file *f)
{
    report_message(out, "dpscale: note: %s has no checksums (written before dpscale sealed its files, schema %d): a "
                        "damaged byte in it could change a figure unnoticed; seal a copy you trust with `dpscale seal %s`",
                   f->path, f->schema, f->path);
}

void report_note_partial(FILE *out, const struct report_file *f)
{
    report_message(out, "dpscale: note: %s is partial: its launch ended after %d of the %d sweep points planned (root "
                        "attribute complete = 0); it holds those measured", f->path, f->points_done, f->points_planned);
}

void report_note_diverged(FILE *out, const struct report_file *f)
{
    report_message(out, "dpscale: note: %s: the training diverged, and the sweep stopped there (root attribute diverged): "
                        "%s; the points before it are reported", f->path, f->diverged);
}

void report_md_diverged(FILE *out, const struct report_file *f)
{
    if (!f->diverged[0]) return;
    fputs("**The training diverged:** ", out);
    report_md_text(out, f->diverged);
    fputs(" (", out);
    report_md_text(out, f->path);
    fputs("; the sweep stopped there, and its points before it are shown).\n\n", out);
}

void report_unit_of(const struct report_file *f, char *many, char *one, size_t len)
{
    snprintf(many, len, "%s", f->unit[0] ? f->unit : "samples");
    snprintf(one, len, "%s", many);
    const size_t n = strlen(one);
    if (n > 1 && one[n - 1] == 's') one[n - 1] = '\0';
}

/* The row's figures; u: units per sample, by which the Markdown tables scale the
 * throughput and the energy per unit (1: per sample, as CSV and JSON keep them). */
static void values_of(const struct report_row *r, double *v, int u)
{
    v[0] = r->nranks;
    v[1] = r->nodes;
    v[2] = r->samples_per_s * u;
    v[3] = r->samples_per_s_per_rank * u;
    v[4] = r->speedup;
    v[5] = r->efficiency;
    v[6] = 100.0 * r->comm_exposed_s / r->step_s;
    v[7] = r->allreduce_busbw_gbps;
    v[8] = r->mfu;
    v[9] = r->joules_per_sample / u;
}

/* Markdown cell: a number with sensible digits, or "-" for unknown. */
static void md_cell(FILE *out, double v, int column)
{
    if (isnan(v)) fprintf(out, " - |");
    else if (column <= 1) fprintf(out, " %.0f |", v);
    else if (column <= 3) fprintf(out, " %.1f |", v);
    else if (column == 6 || column == 7) fprintf(out, " %.1f |", v);
    else if (column == 9) fprintf(out, " %.4g |", v);
    else fprintf(out, " %.3f |", v);
}

void report_describe(const struct report_file *f, char *buf, size_t len)
{
    char batch[64];
    if (strcmp(f->scaling, "strong") == 0) snprintf(batch, sizeof batch, "global batch %lld", f->global_batch);
    else snprintf(batch, sizeof batch, "batch %lld per GPU", f->batch_per_gpu);
    char precision[32];
    if (strcmp(f->grad_dtype, "compute") == 0 && strcmp(f->precision, "fp32") != 0 && strcmp(f->precision, "tf32") != 0)
        snprintf(precision, sizeof precision, "%s, %s gradients", f->precision, f->precision);
    else
        snprintf(precision, sizeof precision, "%s", f->precision);
    snprintf(buf, len, "%s (%s, %s), %s scaling, %s", f->model, f->shape, precision, f->scaling, batch);
}

const char *report_path_words(const char *path)
{
    if (strcmp(path, "host") == 0) return "host memory (P2P off)";
    if (strcmp(path, "pcie") == 0) return "PCIe (P2P)";
    return path;
}

void report_system_label(const struct report_file *f, const struct report_row *r, char *buf, size_t len)
{
    if (f->projected) /* never to be read as a measurement */
        snprintf(buf, len, "PROJECTED, not measured: %s's step onto %.100s", f->device, f->projection_target);
    else /* the user's run.system_label first, where one was given */
        snprintf(buf, len, "%s%s%s, %s over %s", f->system_label, f->system_label[0] ? ": " : "", f->device, r->library,
                 report_path_words(r->path));
}

int report_same_system(const struct report_row *a, const struct report_row *b)
{
    return strcmp(a->library, b->library) == 0 && strcmp(a->path, b->path) == 0;
}

int report_distinct_systems(const struct report_file *f, int first_rows[])
{
    int n = 0;
    for (int i = 0; i < f->nrows; i++) {
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= report_same_system(&f->rows[first_rows[k]], &f->rows[i]);
        if (!seen) first_rows[n++] = i;
    }
    return n;
}

void report_label(struct report_file *files, int n)
{
    const struct report_file *first = NULL; /* the tags set run files apart; comm and topo files have none */
    int overlaps_differ = 0;
    for (int i = 0; i < n; i++) {
        if (files[i].kind != REPORT_RUNS) continue;
        if (first == NULL) first = &files[i];
        overlaps_differ |= strcmp(files[i].overlap, first->overlap) != 0;
    }
    for (int i = 0; i < n; i++)
        snprintf(files[i].tag, sizeof files[i].tag, "%s%.7s", overlaps_differ && files[i].kind == REPORT_RUNS ? "overlap " : "",
                 overlaps_differ && files[i].kind == REPORT_RUNS ? files[i].overlap : "");
}

/* The rows of a file grouped by system, in the order the Markdown tables show them. */
static int rows_in_order(const struct report_file *f, int order[REPORT_MAX_ROWS])
{
    int systems[REPORT_MAX_ROWS], n = 0;
    const int nt = report_distinct_systems(f, systems);
    for (int t = 0; t < nt; t++)
        for (int r = 0; r < f->nrows; r++)
            if (report_same_system(&f->rows[r], &f->rows[systems[t]])) order[n++] = r;
    return n;
}

/* The heading, provenance and header of one system's Markdown table. */
static void md_heading(FILE *out, const struct report_file *f, const struct report_row *sys)
{
    char what[448], label[256], many[16], one[16], rate[32], per_gpu[48], energy[32];
    report_describe(f, what, sizeof what);
    report_system_label(f, sys, label, sizeof label);
    fputs("### ", out);
    report_md_text(out, label);
    fputs(": ", out);
    report_md_text(out, what);
    fputs("\n\n", out);
    report_md_text(out, f->path);
    fputs(", host ", out);
    report_md_text(out, f->host);
    fputs(", ", out);
    report_md_text(out, f->created);
    fputs("\n\n", out);
    report_md_diverged(out, f);
    if (f->projected) {
        fputs("Projected by `dpscale project` (docs/PROJECTION.md); ", out);
        report_md_text(out, f->projection_compute);
        fputs(".\n\n", out);
    }
    report_unit_of(f, many, one, sizeof many);
    snprintf(rate, sizeof rate, "%s/s", many);
    snprintf(per_gpu, sizeof per_gpu, "%s/s per GPU", many);
    snprintf(energy, sizeof energy, "J/%s", one);
    const char *const heads[] = {"GPUs", "nodes", rate, per_gpu, "speedup", "efficiency", "exposed comm %",
                                 "allreduce busbw GB/s", "MFU", energy};
    fputc('|', out);
    for (int c = 0; c < NCOLUMNS; c++) {
        fputc(' ', out);
        report_md_text(out, heads[c]);
        fputs(" |", out);
    }
    fprintf(out, "\n|");
    for (int c = 0; c < NCOLUMNS; c++) fprintf(out, "---:|");
    fputc('\n', out);
}

void report_runs_markdown(FILE *out, const struct report_file *files, int n)
{
    for (int i = 0; i < n; i++) {
        const struct report_file *f = &files[i];
        int systems[REPORT_MAX_ROWS];
        const int nt = report_distinct_systems(f, systems);
        for (int t = 0; t < nt; t++) {
            const struct report_row *sys = &f->rows[systems[t]];
            md_heading(out, f, sys);
            for (int r = 0; r < f->nrows; r++) {
                if (!report_same_system(&f->rows[r], sys)) continue;
                double v[NCOLUMNS];
                values_of(&f->rows[r], v, f->units_per_sample);
                fputc('|', out);
                for (int c = 0; c < NCOLUMNS; c++) md_cell(out, v[c], c);
                fputc('\n', out);
            }
            fputc('\n', out);
        }
    }
    if (n > 0)
        fprintf(out, "efficiency = samples/s / (GPUs x samples/s at 1 GPU); exposed comm = share of the step "
                     "spent waiting for the allreduce after backward; busbw: nccl-tests definition.\n\n");
}

/* The text fields of a row, in text_columns' order. */
static void text_of(const struct report_file *f, const struct report_row *r, const char *text[NTEXT])
{
    const char *v[NTEXT] = {f->path, f->device, f->model, f->precision, f->scaling, r->library, r->path,
                            f->unit[0] ? f->unit : "samples"};
    memcpy(text, v, sizeof v);
}

void report_runs_csv(FILE *out, const struct report_file *files, int n)
{
    struct csv c;
    csv_start(&c, out);
    for (int k = 0; k < NTEXT; k++) csv_text(&c, text_columns[k]);
    csv_text(&c, "units_per_sample");
    for (int k = 0; k < NCOLUMNS; k++) csv_text(&c, columns[k]);
    csv_end_row(&c);
    for (int i = 0; i < n; i++) {
        int order[REPORT_MAX_ROWS];
        const int nr = rows_in_order(&files[i], order);
        for (int o = 0; o < nr; o++) {
            const char *text[NTEXT];
            double v[NCOLUMNS];
            text_of(&files[i], &files[i].rows[order[o]], text);
            values_of(&files[i].rows[order[o]], v, 1);
            for (int k = 0; k < NTEXT; k++) csv_text(&c, text[k]);
            csv_int(&c, files[i].units_per_sample);
            for (int k = 0; k < NCOLUMNS; k++) csv_number(&c, v[k]);
            csv_end_row(&c);
        }
    }
}

json_t *report_runs_json(const struct report_file *files, int n)
{
    json_t *rows = json_array();
    for (int i = 0; i < n; i++) {
        int order[REPORT_MAX_ROWS];
        const int nr = rows_in_order(&files[i], order);
        for (int o = 0; o < nr; o++) {
            const char *text[NTEXT];
            double v[NCOLUMNS];
            text_of(&files[i], &files[i].rows[order[o]], text);
            values_of(&files[i].rows[order[o]], v, 1);
            json_t *row = json_object();
            for (int k = 0; k < NTEXT; k++) report_json_set(row, text_columns[k], report_json_text(text[k]));
            report_json_set(row, "units_per_sample", json_integer(files[i].units_per_sample));
            for (int k = 0; k < NCOLUMNS; k++)
                report_json_set(row, columns[k], k <= 1 ? report_json_count(v[k]) : report_json_number(v[k]));
            json_array_append_new(rows, row);
        }
    }
    return rows;
}

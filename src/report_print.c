/* report_print.c — the report's tables (report.h): one scaling table per
 * system (file, library, path), and the comparison of systems side by side, as Markdown,
 * CSV or JSON. Every figure is read from the file's /summary; nothing is
 * recomputed but the ratios and the per-watt and per-dollar figures. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

static const char *const columns[] = {"gpus", "nodes", "samples_per_s", "samples_per_s_per_gpu", "speedup", "efficiency",
                                      "exposed_comm_pct", "allreduce_busbw_gbps", "mfu", "joules_per_sample"};
#define NCOLUMNS (int)(sizeof columns / sizeof columns[0])

/* The unit a file's Markdown tables count in: "tokens" (a sample is a sequence of
 * units_per_sample of them), or "samples"; `one` is its singular. CSV and JSON keep
 * per-sample figures and name the unit in their columns. */
static void unit_of(const struct report_file *f, char *many, char *one, size_t len)
{
    snprintf(many, len, "%s", f->unit[0] ? f->unit : "samples");
    snprintf(one, len, "%s", many);
    const size_t n = strlen(one);
    if (n > 1 && one[n - 1] == 's') one[n - 1] = '\0';
}

/* The row's figures; u: units per sample, by which the Markdown tables scale the
 * throughput and the energy per unit (1: per sample). */
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

/* A CSV text field, quoted (RFC 4180) when it holds a comma, a quote or a line break:
 * system labels do ("NVIDIA H200, nccl over nvlink"). */
static void csv_text(FILE *out, const char *v)
{
    if (strpbrk(v, ",\"\r\n") == NULL) {
        fputs(v, out);
        return;
    }
    fputc('"', out);
    for (const char *c = v; *c; c++) {
        if (*c == '"') fputc('"', out);
        fputc(*c, out);
    }
    fputc('"', out);
}

static void json_number(FILE *out, double v)
{
    if (isnan(v) || isinf(v)) fprintf(out, "null");
    else fprintf(out, "%.10g", v);
}

static void describe(const struct report_file *f, char *buf, size_t len)
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

void report_system_label(const struct report_file *f, const struct report_row *r, char *buf, size_t len)
{
    if (f->projected) /* never to be read as a measurement */
        snprintf(buf, len, "PROJECTED, not measured: %s's step onto %.100s", f->device, f->projection_target);
    else
        snprintf(buf, len, "%s, %s over %s", f->device, r->library, r->path);
}

int report_same_system(const struct report_row *a, const struct report_row *b)
{
    return strcmp(a->library, b->library) == 0 && strcmp(a->path, b->path) == 0;
}

/* The systems of a file, in the order of their first row: the index of that row. */
static int distinct_systems(const struct report_file *f, int first_rows[])
{
    int n = 0;
    for (int i = 0; i < f->nrows; i++) {
        int seen = 0;
        for (int k = 0; k < n; k++) seen |= report_same_system(&f->rows[first_rows[k]], &f->rows[i]);
        if (!seen) first_rows[n++] = i;
    }
    return n;
}

void report_print_tables(FILE *out, const struct report_file *files, int n, int format)
{
    if (format == REPORT_CSV) {
        fprintf(out, "file,device,model,precision,scaling,library,path,unit,units_per_sample");
        for (int c = 0; c < NCOLUMNS; c++) fprintf(out, ",%s", columns[c]);
        fputc('\n', out);
    }
    if (format == REPORT_JSON) fprintf(out, "[");
    int first_json = 1;
    for (int i = 0; i < n; i++) {
        const struct report_file *f = &files[i];
        int systems[REPORT_MAX_ROWS];
        char what[448], label[256];
        const int nt = distinct_systems(f, systems);
        describe(f, what, sizeof what);
        for (int t = 0; t < nt; t++) {
            const struct report_row *sys = &f->rows[systems[t]];
            report_system_label(f, sys, label, sizeof label);
            if (format == REPORT_MARKDOWN) {
                fprintf(out, "### %s: %s\n\n%s, host %s, %s\n\n", label, what, f->path, f->host, f->created);
                if (f->projected) fprintf(out, "Projected by `dpscale project` (docs/PROJECTION.md); %s.\n\n", f->projection_compute);
                fputc('|', out);
                char many[16], one[16], rate[32], per_gpu[48], energy[32];
                unit_of(f, many, one, sizeof many);
                snprintf(rate, sizeof rate, "%s/s", many);
                snprintf(per_gpu, sizeof per_gpu, "%s/s per GPU", many);
                snprintf(energy, sizeof energy, "J/%s", one);
                const char *const heads[] = {"GPUs", "nodes", rate, per_gpu, "speedup", "efficiency", "exposed comm %",
                                             "allreduce busbw GB/s", "MFU", energy};
                for (int c = 0; c < NCOLUMNS; c++) fprintf(out, " %s |", heads[c]);
                fprintf(out, "\n|");
                for (int c = 0; c < NCOLUMNS; c++) fprintf(out, "---:|");
                fputc('\n', out);
            }
            for (int r = 0; r < f->nrows; r++) {
                if (!report_same_system(&f->rows[r], sys)) continue;
                double v[NCOLUMNS];
                values_of(&f->rows[r], v, format == REPORT_MARKDOWN ? f->units_per_sample : 1);
                if (format == REPORT_MARKDOWN) {
                    fputc('|', out);
                    for (int c = 0; c < NCOLUMNS; c++) md_cell(out, v[c], c);
                    fputc('\n', out);
                } else if (format == REPORT_CSV) {
                    const char *text[] = {f->path, f->device, f->model, f->precision, f->scaling, sys->library, sys->path,
                                          f->unit[0] ? f->unit : "samples"};
                    for (int k = 0; k < 8; k++) {
                        if (k) fputc(',', out);
                        csv_text(out, text[k]);
                    }
                    fprintf(out, ",%d", f->units_per_sample);
                    for (int c = 0; c < NCOLUMNS; c++) isnan(v[c]) ? fprintf(out, ",") : fprintf(out, ",%.10g", v[c]);
                    fputc('\n', out);
                } else {
                    fprintf(out, "%s\n {\"file\": \"%s\", \"device\": \"%s\", \"model\": \"%s\", \"precision\": \"%s\", "
                                 "\"scaling\": \"%s\", \"library\": \"%s\", \"path\": \"%s\", \"unit\": \"%s\", "
                                 "\"units_per_sample\": %d",
                            first_json ? "" : ",", f->path, f->device, f->model, f->precision, f->scaling, sys->library,
                            sys->path, f->unit[0] ? f->unit : "samples", f->units_per_sample);
                    for (int c = 0; c < NCOLUMNS; c++) {
                        fprintf(out, ", \"%s\": ", columns[c]);
                        json_number(out, v[c]);
                    }
                    fputc('}', out);
                    first_json = 0;
                }
            }
            if (format == REPORT_MARKDOWN) fputc('\n', out);
        }
    }
    if (format == REPORT_JSON) fprintf(out, "\n]\n");
    if (format == REPORT_MARKDOWN)
        fprintf(out, "efficiency = samples/s / (GPUs x samples/s at 1 GPU); exposed comm = share of the step "
                     "spent waiting for the allreduce after backward; busbw: nccl-tests definition.\n");
}

void report_comparability(const struct report_file *a, const struct report_file *b, char *why, size_t len)
{
    why[0] = '\0';
    if (strcmp(a->model_type, b->model_type) != 0 || a->parameters != b->parameters || strcmp(a->unit, b->unit) != 0)
        snprintf(why, len, "another model (%s, %.3f M parameters, in %s vs %s, %.3f M, in %s)", b->model_type,
                 b->parameters / 1e6, b->unit, a->model_type, a->parameters / 1e6, a->unit);
    else if (strcmp(a->precision, b->precision) != 0)
        snprintf(why, len, "another precision (%s vs %s)", b->precision, a->precision);
    else if (strcmp(a->scaling, b->scaling) != 0)
        snprintf(why, len, "another scaling (%s vs %s)", b->scaling, a->scaling);
    else if (strcmp(a->scaling, "weak") == 0 ? a->batch_per_gpu != b->batch_per_gpu : a->global_batch != b->global_batch)
        snprintf(why, len, "another batch (%lld vs %lld)", strcmp(a->scaling, "weak") == 0 ? b->batch_per_gpu : b->global_batch,
                 strcmp(a->scaling, "weak") == 0 ? a->batch_per_gpu : a->global_batch);
}

/* A system: one library and path of one file (`first` is its first row). */
struct system {
    const struct report_file *file;
    const struct report_row *first;
    char label[256]; /* "NVIDIA H200, nccl over nvlink" */
};

static const struct report_row *row_for(const struct system *s, int gpus)
{
    for (int r = 0; r < s->file->nrows; r++)
        if (s->file->rows[r].nranks == gpus && report_same_system(&s->file->rows[r], s->first))
            return &s->file->rows[r];
    return NULL;
}

void report_print_compare(FILE *out, const struct report_file *files, int n, int format)
{
    struct system sys[64];
    int ns = 0;
    for (int i = 0; i < n; i++) {
        int systems[REPORT_MAX_ROWS];
        const int nt = distinct_systems(&files[i], systems);
        for (int t = 0; t < nt && ns < 64; t++) {
            sys[ns].file = &files[i];
            sys[ns].first = &files[i].rows[systems[t]];
            report_system_label(&files[i], sys[ns].first, sys[ns].label, sizeof sys[ns].label);
            ns++;
        }
    }
    if (ns == 0) return;
    char what[448];
    describe(sys[0].file, what, sizeof what);
    int comparable[64];
    if (format == REPORT_MARKDOWN) fprintf(out, "### Comparison: %s\n\nreference: %s (%s)\n\n", what, sys[0].label,
                                           sys[0].file->path);
    for (int s = 0; s < ns; s++) {
        char why[160];
        report_comparability(sys[0].file, sys[s].file, why, sizeof why);
        comparable[s] = why[0] == '\0';
        if (!comparable[s])
            fprintf(out, "%snot comparable: %s (%s) has %s; it is left out of the comparison\n",
                    format == REPORT_MARKDOWN ? "**" : "# ", sys[s].file->path, sys[s].label, why);
    }
    char many[16], one[16];
    unit_of(sys[0].file, many, one, sizeof many); /* comparable systems count in one unit */
    const int u = format == REPORT_MARKDOWN ? sys[0].file->units_per_sample : 1;
    if (format == REPORT_MARKDOWN) {
        fprintf(out, "| GPUs | system | %s/s | %s/s per GPU | efficiency | %s/J | %s/$ | "
                     "vs reference |\n|---:|---|---:|---:|---:|---:|---:|---:|\n", many, many, many, many);
    } else if (format == REPORT_CSV) {
        fprintf(out, "gpus,system,file,samples_per_s,samples_per_s_per_gpu,efficiency,samples_per_joule,samples_per_dollar,"
                     "ratio_to_reference\n");
    } else {
        fprintf(out, "[");
    }
    /* every GPU count any system measured, in order */
    int counts[REPORT_MAX_ROWS * 4], ncounts = 0;
    for (int s = 0; s < ns; s++)
        for (int r = 0; r < sys[s].file->nrows; r++) {
            int c = sys[s].file->rows[r].nranks, seen = 0;
            for (int k = 0; k < ncounts; k++) seen |= counts[k] == c;
            if (!seen && ncounts < (int)(sizeof counts / sizeof counts[0])) counts[ncounts++] = c;
        }
    for (int i = 1; i < ncounts; i++)
        for (int j = i; j > 0 && counts[j - 1] > counts[j]; j--) {
            int tmp = counts[j];
            counts[j] = counts[j - 1];
            counts[j - 1] = tmp;
        }
    int first = 1;
    for (int k = 0; k < ncounts; k++) {
        const int gpus = counts[k];
        const struct report_row *ref = row_for(&sys[0], gpus);
        for (int s = 0; s < ns; s++) {
            const struct report_row *r = row_for(&sys[s], gpus);
            if (!comparable[s] || r == NULL) continue;
            const double per_joule = r->joules_per_sample > 0 ? u / r->joules_per_sample : NAN;
            const double price = sys[s].file->price_per_gpu_hour;
            const double per_dollar = price > 0 ? u * r->samples_per_s * 3600.0 / (price * gpus) : NAN;
            const double ratio = ref != NULL ? r->samples_per_s / ref->samples_per_s : NAN;
            char name[224];
            snprintf(name, sizeof name, "%s%s%s", sys[s].label, sys[s].file->tag[0] ? ", " : "", sys[s].file->tag);
            if (format == REPORT_MARKDOWN) {
                fprintf(out, "| %d | %s | %.1f | %.1f |", gpus, name, u * r->samples_per_s, u * r->samples_per_s_per_rank);
                md_cell(out, r->efficiency, 5);
                isnan(per_joule) ? fprintf(out, " - |") : fprintf(out, " %.1f |", per_joule);
                isnan(per_dollar) ? fprintf(out, " - |") : fprintf(out, " %.4g |", per_dollar);
                isnan(ratio) ? fprintf(out, " - |\n") : fprintf(out, " %.3f |\n", ratio);
            } else if (format == REPORT_CSV) {
                fprintf(out, "%d,", gpus);
                csv_text(out, name);
                fputc(',', out);
                csv_text(out, sys[s].file->path);
                fprintf(out, ",%.10g,%.10g,%.10g,", r->samples_per_s, r->samples_per_s_per_rank, r->efficiency);
                isnan(per_joule) ? 0 : fprintf(out, "%.10g", per_joule);
                fputc(',', out);
                isnan(per_dollar) ? 0 : fprintf(out, "%.10g", per_dollar);
                fputc(',', out);
                isnan(ratio) ? 0 : fprintf(out, "%.10g", ratio);
                fputc('\n', out);
            } else {
                fprintf(out, "%s\n {\"gpus\": %d, \"system\": \"%s\", \"file\": \"%s\", \"samples_per_s\": ", first ? "" : ",",
                        gpus, name, sys[s].file->path);
                json_number(out, r->samples_per_s);
                fprintf(out, ", \"efficiency\": ");
                json_number(out, r->efficiency);
                fprintf(out, ", \"samples_per_joule\": ");
                json_number(out, per_joule);
                fprintf(out, ", \"samples_per_dollar\": ");
                json_number(out, per_dollar);
                fprintf(out, ", \"ratio_to_reference\": ");
                json_number(out, ratio);
                fputc('}', out);
                first = 0;
            }
        }
    }
    if (format == REPORT_JSON) fprintf(out, "\n]\n");
    if (format == REPORT_MARKDOWN)
        fprintf(out, "\n%s/J = %s per joule of GPU energy (NVML); %s/$ = %s per dollar at the given price per "
                     "GPU-hour; vs reference = %s/s over the reference's at the same GPU count.\n", many, many, many, many,
                many);
}

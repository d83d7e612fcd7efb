/* report_compare.c — `dpscale report --compare` (report.h): every (file, library,
 * path) of the run files is a system; the first is the reference. One row per GPU
 * count and system: throughput, per GPU, efficiency, per joule, per dollar (with
 * prices) and the ratio to the reference at the same GPU count. Systems that cannot
 * be compared to the reference (another model, precision, scaling or batch) are left
 * out and named: in the Markdown text, and beside the CSV and JSON data (never in
 * the CSV stream, which stays one header and its rows). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/csv.h"
#include "report/report.h"

#define MAX_SYSTEMS 64

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
    char name[288];  /* the label and the file's tag: "NVIDIA H200, nccl over nvlink, overlap off" */
    char why[224];   /* "" when comparable to the reference; else what differs */
};

struct comparison {
    int nsystems;
    struct system sys[MAX_SYSTEMS];
    int ncounts;
    int counts[REPORT_MAX_ROWS * 4]; /* every GPU count any system measured, ascending */
};

/* One row of the comparison: a comparable system at one GPU count. */
struct row {
    int gpus;
    const struct system *sys;
    double samples_per_s, per_gpu, efficiency, per_joule, per_dollar, ratio; /* per unit when u > 1 */
};

static const struct report_row *row_for(const struct system *s, int gpus)
{
    for (int r = 0; r < s->file->nrows; r++)
        if (s->file->rows[r].nranks == gpus && report_same_system(&s->file->rows[r], s->first)) return &s->file->rows[r];
    return NULL;
}

static void build(struct comparison *c, const struct report_file *files, int n)
{
    c->nsystems = c->ncounts = 0;
    for (int i = 0; i < n; i++) {
        int systems[REPORT_MAX_ROWS];
        const int nt = report_distinct_systems(&files[i], systems);
        for (int t = 0; t < nt && c->nsystems < MAX_SYSTEMS; t++) {
            struct system *s = &c->sys[c->nsystems++];
            s->file = &files[i];
            s->first = &files[i].rows[systems[t]];
            report_system_label(s->file, s->first, s->label, sizeof s->label);
            char name[sizeof s->name];
            snprintf(name, sizeof name, "%s%s%s", s->label, s->file->tag[0] ? ", " : "", s->file->tag);
            memcpy(s->name, name, sizeof name);
            report_comparability(c->sys[0].file, s->file, s->why, sizeof s->why);
        }
    }
    const int max = (int)(sizeof c->counts / sizeof c->counts[0]);
    for (int s = 0; s < c->nsystems; s++)
        for (int r = 0; r < c->sys[s].file->nrows; r++) {
            int gpus = c->sys[s].file->rows[r].nranks, seen = 0;
            for (int k = 0; k < c->ncounts; k++) seen |= c->counts[k] == gpus;
            if (!seen && c->ncounts < max) c->counts[c->ncounts++] = gpus;
        }
    for (int i = 1; i < c->ncounts; i++)
        for (int j = i; j > 0 && c->counts[j - 1] > c->counts[j]; j--) {
            const int tmp = c->counts[j];
            c->counts[j] = c->counts[j - 1];
            c->counts[j - 1] = tmp;
        }
}

/* The rows, in order of GPU count then system; u: units per sample (1 for CSV and JSON). */
static int rows_of(const struct comparison *c, int u, struct row *rows, int max)
{
    int n = 0;
    for (int k = 0; k < c->ncounts; k++) {
        const int gpus = c->counts[k];
        const struct report_row *ref = row_for(&c->sys[0], gpus);
        for (int s = 0; s < c->nsystems && n < max; s++) {
            const struct report_row *r = row_for(&c->sys[s], gpus);
            if (c->sys[s].why[0] || r == NULL) continue;
            const double price = c->sys[s].file->price_per_gpu_hour;
            rows[n++] = (struct row){
                .gpus = gpus, .sys = &c->sys[s], .samples_per_s = u * r->samples_per_s,
                .per_gpu = u * r->samples_per_s_per_rank, .efficiency = r->efficiency,
                .per_joule = r->joules_per_sample > 0 ? u / r->joules_per_sample : NAN,
                .per_dollar = price > 0 ? u * r->samples_per_s * 3600.0 / (price * gpus) : NAN,
                .ratio = ref != NULL ? r->samples_per_s / ref->samples_per_s : NAN,
            };
        }
    }
    return n;
}

static void warn_not_comparable(FILE *warn, const struct comparison *c)
{
    for (int s = 0; s < c->nsystems; s++)
        if (c->sys[s].why[0])
            report_message(warn, "dpscale: warning: not comparable: %s (%s) has %s; it is left out of the comparison",
                           c->sys[s].file->path, c->sys[s].label, c->sys[s].why);
}

#define MAX_COMPARE_ROWS (MAX_SYSTEMS * REPORT_MAX_ROWS)

static void md_number(FILE *out, double v, const char *format)
{
    if (isnan(v)) fprintf(out, " - |");
    else fprintf(out, format, v);
}

void report_compare_markdown(FILE *out, const struct report_file *files, int n)
{
    static struct comparison c;
    static struct row rows[MAX_COMPARE_ROWS];
    build(&c, files, n);
    if (c.nsystems == 0) return;
    char what[448], many[16], one[16];
    report_describe(c.sys[0].file, what, sizeof what);
    fputs("### Comparison: ", out);
    report_md_text(out, what);
    fputs("\n\nreference: ", out);
    report_md_text(out, c.sys[0].label);
    fputs(" (", out);
    report_md_text(out, c.sys[0].file->path);
    fputs(")\n\n", out);
    for (int s = 0; s < c.nsystems; s++) {
        if (!c.sys[s].why[0]) continue;
        fputs("**not comparable:** ", out);
        report_md_text(out, c.sys[s].file->path);
        fputs(" (", out);
        report_md_text(out, c.sys[s].label);
        fputs(") has ", out);
        report_md_text(out, c.sys[s].why);
        fputs("; it is left out of the comparison\n\n", out);
    }
    for (int s = 0; s < c.nsystems; s++) /* once per file, for the first of its systems */
        if (!c.sys[s].why[0] && (s == 0 || c.sys[s - 1].file != c.sys[s].file)) report_md_diverged(out, c.sys[s].file);
    report_unit_of(c.sys[0].file, many, one, sizeof many); /* comparable systems count in one unit */
    const char *const heads[] = {"/s", "/s per GPU", NULL, "/J", "/$"}; /* each after the unit, which is the file's */
    fputs("| GPUs | system |", out);
    for (int k = 0; k < 5; k++) {
        fputc(' ', out);
        if (heads[k] != NULL) report_md_text(out, many);
        fputs(heads[k] != NULL ? heads[k] : "efficiency", out);
        fputs(" |", out);
    }
    fputs(" vs reference |\n|---:|---|---:|---:|---:|---:|---:|---:|\n", out);
    const int nr = rows_of(&c, c.sys[0].file->units_per_sample, rows, MAX_COMPARE_ROWS);
    for (int i = 0; i < nr; i++) {
        fprintf(out, "| %d | ", rows[i].gpus);
        report_md_text(out, rows[i].sys->name);
        fputs(" |", out);
        md_number(out, rows[i].samples_per_s, " %.1f |");
        md_number(out, rows[i].per_gpu, " %.1f |");
        md_number(out, rows[i].efficiency, " %.3f |");
        md_number(out, rows[i].per_joule, " %.1f |");
        md_number(out, rows[i].per_dollar, " %.4g |");
        md_number(out, rows[i].ratio, " %.3f |");
        fputc('\n', out);
    }
    char note[512];
    snprintf(note, sizeof note, "%s/J = %s per joule of GPU energy (NVML); %s/$ = %s per dollar at the given price per "
             "GPU-hour; vs reference = %s/s over the reference's at the same GPU count.", many, many, many, many, many);
    fputc('\n', out);
    report_md_text(out, note);
    fputs("\n\n", out);
}

static const char *const compare_columns[] = {"gpus", "system", "file", "samples_per_s", "samples_per_s_per_gpu", "efficiency",
                                              "samples_per_joule", "samples_per_dollar", "ratio_to_reference"};
#define NCOMPARE (int)(sizeof compare_columns / sizeof compare_columns[0])

void report_compare_csv(FILE *out, FILE *warn, const struct report_file *files, int n)
{
    static struct comparison c;
    static struct row rows[MAX_COMPARE_ROWS];
    build(&c, files, n);
    warn_not_comparable(warn, &c);
    struct csv w;
    csv_start(&w, out);
    csv_header(&w, compare_columns, NCOMPARE);
    const int nr = rows_of(&c, 1, rows, MAX_COMPARE_ROWS);
    for (int i = 0; i < nr; i++) {
        csv_int(&w, rows[i].gpus);
        csv_text(&w, rows[i].sys->name);
        csv_text(&w, rows[i].sys->file->path);
        const double v[] = {rows[i].samples_per_s, rows[i].per_gpu, rows[i].efficiency, rows[i].per_joule, rows[i].per_dollar,
                            rows[i].ratio};
        for (int k = 0; k < 6; k++) csv_number(&w, v[k]);
        csv_end_row(&w);
    }
}

void report_compare_json(json_t *doc, FILE *warn, const struct report_file *files, int n)
{
    static struct comparison c;
    static struct row rows[MAX_COMPARE_ROWS];
    build(&c, files, n);
    warn_not_comparable(warn, &c);
    json_t *ref = json_null(), *list = json_array(), *left_out = json_array();
    if (c.nsystems > 0) {
        ref = json_object();
        report_json_set(ref, "system", report_json_text(c.sys[0].name));
        report_json_set(ref, "file", report_json_text(c.sys[0].file->path));
    }
    const int nr = rows_of(&c, 1, rows, MAX_COMPARE_ROWS);
    for (int i = 0; i < nr; i++) {
        json_t *o = json_object();
        report_json_set(o, "gpus", json_integer(rows[i].gpus));
        report_json_set(o, "system", report_json_text(rows[i].sys->name));
        report_json_set(o, "file", report_json_text(rows[i].sys->file->path));
        const double v[] = {rows[i].samples_per_s, rows[i].per_gpu, rows[i].efficiency, rows[i].per_joule, rows[i].per_dollar,
                            rows[i].ratio};
        for (int k = 0; k < 6; k++) report_json_set(o, compare_columns[3 + k], report_json_number(v[k]));
        json_array_append_new(list, o);
    }
    for (int s = 0; s < c.nsystems; s++) {
        if (!c.sys[s].why[0]) continue;
        json_t *o = json_object();
        report_json_set(o, "system", report_json_text(c.sys[s].name));
        report_json_set(o, "file", report_json_text(c.sys[s].file->path));
        report_json_set(o, "reason", report_json_text(c.sys[s].why));
        json_array_append_new(left_out, o);
    }
    report_json_set(doc, "reference", ref);
    report_json_set(doc, "comparison", list);
    report_json_set(doc, "not_comparable", left_out);
}

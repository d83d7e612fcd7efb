/* report_doc.c — `dpscale report --doc OUT.md`: a procurement document in
 * Markdown from result files of every kind (report.h, report_doc.h).
 *
 * For each model (files that report_comparability finds comparable), tables with
 * one column per system and one row per GPU count: throughput per GPU, efficiency,
 * the step's median and p05-p95 spread, average power, work per joule and, where a
 * price was given, per dollar; a legend that says which file each column comes from
 * and how its path is known; a figure of speedup and efficiency with their ideal.
 * Projections get their own tables, never a column beside measured ones. Then the
 * allreduce busbw of the comm files (report_doc_busbw.c) and the provenance appendix
 * (report_doc_provenance.c).
 * The figures go to OUT-figs/ (OUT without .md);
 * the document and each figure are written to a temporary file and renamed, so the
 * same command can run again and a failure leaves the previous document whole.
 *
 * Where nobody else can put a link in the way (safe_file.h): OUT's folder is opened
 * once, and everything below happens inside its descriptor. The document's temporary
 * is created exclusively in it (never through a link, never a name that was there),
 * and OUT itself may be a regular file or nothing, never a link, a FIFO or a device.
 * OUT-figs is made with mkdirat, or, when it is there, must be a folder of this
 * user's, not a link; it is then opened once (O_NOFOLLOW, checked again with fstat)
 * and every figure is created and renamed inside that descriptor: a folder renamed
 * and replaced by a link to another afterwards changes nothing written. A document
 * or figure that could not be written whole (a full disk) is removed, and the one
 * there is left as it was. Every string from a file goes through report_md_text
 * (report_format.c). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/report.h"
#include "report/doc/report_doc.h"
#include "base/safe_file.h"

#define MAX_GROUPS 64

/* --- one model: its columns and their tables ------------------------------------ */

struct model {
    const struct report_file *first;
    int nmeasured, nprojected;
    struct doc_column measured[DOC_MAX_COLUMNS], projected[DOC_MAX_COLUMNS];
    int ncounts;
    int counts[REPORT_MAX_ROWS]; /* every GPU count of the model's columns, ascending */
    int u;                       /* units per sample (tokens per sequence, or 1) */
    char many[16], one[16];      /* "tokens", "token" */
};

static const struct report_row *row_at(const struct doc_column *c, int gpus)
{
    for (int r = 0; r < c->file->nrows; r++)
        if (c->file->rows[r].nranks == gpus && report_same_system(&c->file->rows[r], c->sys)) return &c->file->rows[r];
    return NULL;
}

static void add_columns(struct model *m, const struct report_file *f, const struct doc_info *info)
{
    int first[REPORT_MAX_ROWS];
    const int nt = report_distinct_systems(f, first);
    for (int t = 0; t < nt; t++) {
        struct doc_column *c = f->projected ? (m->nprojected < DOC_MAX_COLUMNS ? &m->projected[m->nprojected++] : NULL)
                                            : (m->nmeasured < DOC_MAX_COLUMNS ? &m->measured[m->nmeasured++] : NULL);
        if (c != NULL) *c = (struct doc_column){.file = f, .info = info, .sys = &f->rows[first[t]]};
        for (int r = 0; r < f->nrows; r++) {
            int seen = 0;
            for (int k = 0; k < m->ncounts; k++) seen |= m->counts[k] == f->rows[r].nranks;
            if (!seen && m->ncounts < REPORT_MAX_ROWS) m->counts[m->ncounts++] = f->rows[r].nranks;
        }
    }
}

enum metric { PER_GPU, EFFICIENCY, STEP, POWER, PER_JOULE, PER_DOLLAR };

/* A cell of a metric, or "-" where the column has no such figure. */
static void cell(FILE *out, const struct model *m, const struct doc_column *c, int gpus, enum metric what)
{
    const struct report_row *r = row_at(c, gpus);
    const double price = c->file->price_per_gpu_hour;
    double v = NAN;
    if (r != NULL) {
        if (what == PER_GPU) v = m->u * r->samples_per_s_per_rank;
        else if (what == EFFICIENCY) v = r->efficiency;
        else if (what == STEP) v = 1e3 * r->step_s;
        else if (what == POWER) v = r->avg_power_w;
        else if (what == PER_JOULE) v = r->joules_per_sample > 0 ? m->u / r->joules_per_sample : NAN;
        else v = price > 0 ? m->u * r->samples_per_s * 3600.0 / (price * gpus) : NAN;
    }
    if (!isfinite(v)) fputs(" - |", out);
    else if (what == PER_GPU) fprintf(out, v >= 1000 ? " %.0f |" : " %.1f |", v);
    else if (what == EFFICIENCY) fprintf(out, " %.3f |", v);
    else if (what == STEP && isfinite(r->step_p05_s) && isfinite(r->step_p95_s))
        fprintf(out, " %.4g (%.4g–%.4g) |", v, 1e3 * r->step_p05_s, 1e3 * r->step_p95_s);
    else if (what == STEP) fprintf(out, " %.4g |", v);
    else if (what == POWER) fprintf(out, " %.0f |", v);
    else if (what == PER_JOULE) fprintf(out, " %.4g |", v);
    else fprintf(out, " %.4g |", v);
}

static int has_figure(const struct doc_column *c, int n, enum metric what)
{
    for (int k = 0; k < n; k++)
        for (int r = 0; r < c[k].file->nrows; r++) {
            const struct report_row *row = &c[k].file->rows[r];
            if (!report_same_system(row, c[k].sys)) continue;
            if (what == POWER ? isfinite(row->avg_power_w) : what == PER_JOULE ? row->joules_per_sample > 0 : 1) return 1;
        }
    return 0;
}

/* One table: the caption, a header of the columns' labels, a row per GPU count. A
 * table of energy without a figure in any column is one sentence instead. */
static void table(FILE *out, const struct model *m, const struct doc_column *c, int n, enum metric what, const char *caption)
{
    if (!has_figure(c, n, what)) {
        report_md_text(out, caption); /* it names the file's unit */
        fputs(": not recorded in these files (no GPU energy counter).\n\n", out);
        return;
    }
    report_md_text(out, caption);
    fputs("\n\n| GPUs |", out);
    for (int k = 0; k < n; k++) {
        fputc(' ', out);
        report_md_text(out, c[k].label);
        fputs(" |", out);
    }
    fputs("\n|---:|", out);
    for (int k = 0; k < n; k++) fputs("---:|", out);
    fputc('\n', out);
    for (int i = 0; i < m->ncounts; i++) {
        int any = 0;
        for (int k = 0; k < n; k++) any |= row_at(&c[k], m->counts[i]) != NULL;
        if (!any) continue;
        fprintf(out, "| %d |", m->counts[i]);
        for (int k = 0; k < n; k++) cell(out, m, &c[k], m->counts[i], what);
        fputc('\n', out);
    }
    fputc('\n', out);
}

/* The note of each file of the columns whose training diverged, once per file. */
static void diverged_notes(FILE *out, const struct doc_column *c, int n)
{
    for (int k = 0; k < n; k++) {
        int seen = 0;
        for (int j = 0; j < k && !seen; j++) seen = c[j].file == c[k].file;
        if (!seen) report_md_diverged(out, c[k].file);
    }
}

/* A file name from the model's label: letters, digits, '-' and '.'. */
static void slug_of(const char *name, char *out, size_t len)
{
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < len; p++) {
        const char ch = *p;
        const int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' || ch == '-';
        if (ok || (k > 0 && out[k - 1] != '-')) out[k++] = ok ? ch : '-';
    }
    while (k > 0 && out[k - 1] == '-') k--;
    out[k] = '\0';
    if (k == 0) snprintf(out, len, "model");
}

struct figures {
    char dir[4096];  /* OUT-figs, as it is written */
    char link[4096]; /* the same, relative to the document */
    char name[300];  /* the same, inside OUT's folder */
    const struct safe_dir *parent; /* OUT's folder */
    struct safe_dir held;          /* OUT-figs once made and opened (fd -1 before) */
    int tried;                     /* opened, or failed with why */
    char why[1024];
    int failures;
    char names[MAX_GROUPS][160];
    int nnames;
};

/* 0 when `name` in d is a folder of this user's or is not there yet; -1 with the
 * reason in err when it is a link, not a folder, or someone else's. `shown`: its path. */
static int figures_folder_check(const struct safe_dir *d, const char *name, const char *shown, char *err, size_t errlen)
{
    struct stat st;
    if (fstatat(d->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "cannot look at %.300s: %s", shown, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%.300s is %s, not the figures' folder; remove it or choose another --doc name", shown,
                 S_ISLNK(st.st_mode) ? "a symbolic link" : "not a folder");
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen, "%.300s belongs to another user (uid %ld), and figures are written only into a folder of "
                 "one's own; remove it or choose another --doc name", shown, (long)st.st_uid);
        return -1;
    }
    return 0;
}

/* OUT-figs made (when it is not there) and opened once, inside OUT's folder: 0, or -1
 * with the reason in figs->why (kept: every figure says it). */
static int figures_folder_open(struct figures *figs)
{
    if (figs->tried) return figs->held.fd >= 0 ? 0 : -1;
    figs->tried = 1;
    const struct safe_dir *d = figs->parent;
    if (mkdirat(d->fd, figs->name, 0777) != 0 && errno != EEXIST) {
        snprintf(figs->why, sizeof figs->why, "cannot create %.300s: %s", figs->dir, strerror(errno));
        return -1;
    }
    if (figures_folder_check(d, figs->name, figs->dir, figs->why, sizeof figs->why) != 0) return -1;
    /* O_NOFOLLOW, then fstat: what is opened is the folder just checked, or is refused */
    struct stat st;
    const int fd = openat(d->fd, figs->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        snprintf(figs->why, sizeof figs->why, "%.300s changed while it was opened (%s); run the command again",
                 figs->dir, fd < 0 ? strerror(errno) : "no longer a folder of this user's");
        if (fd >= 0) close(fd);
        return -1;
    }
    figs->held.fd = fd;
    snprintf(figs->held.path, sizeof figs->held.path, "%s", figs->dir);
    return 0;
}

/* OUT-figs of OUT (OUT without .md). */
static void figures_folder_of(const char *out_path, char *dir, size_t len)
{
    const size_t n = strlen(out_path);
    const size_t stem = n > 3 && strcmp(out_path + n - 3, ".md") == 0 ? n - 3 : n;
    snprintf(dir, len, "%.*s-figs", (int)stem, out_path);
}

/* The document's name (one component of d) and its OUT-figs, as report_doc_check_targets says. */
static int check_targets_in(const struct safe_dir *d, const char *name, const char *out_path, char *err, size_t errlen)
{
    char figs_name[300], figs_dir[4400];
    if (safe_dir_check_target(d, name, "document", 1, err, errlen) != 0) return -1;
    figures_folder_of(name, figs_name, sizeof figs_name);
    figures_folder_of(out_path, figs_dir, sizeof figs_dir);
    return figures_folder_check(d, figs_name, figs_dir, err, errlen);
}

int report_doc_check_targets(const char *out_path, char *err, size_t errlen)
{
    struct safe_dir d;
    size_t at;
    if (safe_dir_open_parent(&d, out_path, &at, err, errlen) != 0) return -1;
    const int rc = check_targets_in(&d, out_path + at, out_path, err, errlen);
    safe_dir_close(&d);
    return rc;
}

/* Draw the model's figure; the Markdown that shows it, or says why it is missing. */
static void figure(FILE *out, FILE *warn, struct figures *figs, const struct model *m, const char *title)
{
    struct report_series s[2 * DOC_MAX_COLUMNS];
    int ns = 0, colors = 0, color[DOC_MAX_COLUMNS];
    for (int k = 0; k < m->nmeasured; k++) { /* a colour per setting: its paths side by side in one colour */
        const struct doc_column *c = &m->measured[k];
        color[k] = colors;
        for (int j = 0; j < k; j++)
            if (strcmp(doc_label_rest(&m->measured[j]), doc_label_rest(c)) == 0) {
                color[k] = color[j];
                break;
            }
        if (color[k] == colors) colors++;
        const int rank = doc_path_rank(c->path_name);
        s[ns++] = (struct report_series){.file = c->file, .sys = c->sys, .label = c->label, .color = color[k],
                                         .dashed = rank == DOC_PATH_HOST || rank == DOC_PATH_NET};
    }
    for (int k = 0; k < m->nprojected; k++)
        s[ns++] = (struct report_series){.file = m->projected[k].file, .sys = m->projected[k].sys, .label = m->projected[k].label,
                                         .color = colors + k, .projected = 1};
    char slug[128], name[160], path[4400], err[1024];
    slug_of(m->first->model, slug, sizeof slug);
    snprintf(name, sizeof name, "%s.svg", slug);
    for (int k = 2, taken = 1; taken; k++) { /* one figure per model, whatever their labels */
        taken = 0;
        for (int i = 0; i < figs->nnames; i++) taken |= strcmp(figs->names[i], name) == 0;
        if (taken) snprintf(name, sizeof name, "%s-%d.svg", slug, k);
    }
    if (figs->nnames < MAX_GROUPS) snprintf(figs->names[figs->nnames++], sizeof figs->names[0], "%s", name);
    snprintf(path, sizeof path, "%s/%s", figs->dir, name);
    if (figures_folder_open(figs) != 0) {
        snprintf(err, sizeof err, "%s", figs->why);
    } else if (report_plot_series_at(&figs->held, name, title, s, ns, err, sizeof err) == 0) {
        fputs("![speedup and efficiency against GPUs, with the ideal: ", out);
        report_md_text(out, title);
        fprintf(out, "](%s/%s)\n\n", figs->link, name);
        return;
    }
    figs->failures++;
    report_message(warn, "dpscale: error: figure %s: %s", path, err);
    fputs("*The figure could not be drawn: ", out);
    report_md_text(out, err);
    fputs(".*\n\n", out);
}

static void model_section(FILE *out, FILE *warn, struct figures *figs, struct model *m)
{
    char title[448], caption[256];
    report_describe(m->first, title, sizeof title);
    fputs("## ", out);
    report_md_text(out, title);
    fputs("\n\n", out);
    const struct doc_column *c = m->measured;
    const int n = m->nmeasured;
    if (n > 0) {
        fprintf(out, "Measured: %d column%s, one per system (path, library, and what else differs between the runs); "
                     "one row per GPU count.\n\n", n, n == 1 ? "" : "s");
        doc_legend(out, c, n, 1);
        diverged_notes(out, c, n);
        snprintf(caption, sizeof caption, "**%s/s per GPU** (higher is better)", m->many);
        table(out, m, c, n, PER_GPU, caption);
        table(out, m, c, n, EFFICIENCY, "**Scaling efficiency** against 1 GPU of the same column (1.000 is linear)");
        table(out, m, c, n, STEP, "**Step time, ms**: median over the timed steps (p05–p95) of the slowest rank");
        table(out, m, c, n, POWER, "**Average power per GPU, W** (NVML energy counter over the timed steps)");
        snprintf(caption, sizeof caption, "**%s/s per watt** of GPU power (= %s per joule)", m->many, m->many);
        table(out, m, c, n, PER_JOULE, caption);
        int priced = 0;
        for (int k = 0; k < n; k++) priced |= c[k].file->price_per_gpu_hour > 0;
        if (priced) {
            snprintf(caption, sizeof caption, "**%s per dollar** at the price per GPU-hour of the legend", m->many);
            table(out, m, c, n, PER_DOLLAR, caption);
        } else {
            fputs("No price was given: `--price-per-gpu-hour P[,P...]` adds ", out);
            report_md_text(out, m->many);
            fputs(" per dollar.\n\n", out);
        }
    }
    if (m->nprojected > 0) {
        fputs("### Projected, not measured\n\n`dpscale project` (docs/PROJECTION.md): the measured 1-GPU step of the source "
              "file onto another system's allreduce curves. Never a measurement; kept out of the measured tables.\n\n", out);
        doc_legend(out, m->projected, m->nprojected, 1);
        diverged_notes(out, m->projected, m->nprojected);
        snprintf(caption, sizeof caption, "**%s/s per GPU, PROJECTED**", m->many);
        table(out, m, m->projected, m->nprojected, PER_GPU, caption);
        table(out, m, m->projected, m->nprojected, EFFICIENCY, "**Scaling efficiency, PROJECTED**");
        table(out, m, m->projected, m->nprojected, STEP, "**Step time, ms, PROJECTED**");
    }
    figure(out, warn, figs, m, title);
}

/* --- the document ---------------------------------------------------------------- */

/* A column's path for the summary: doc_path_rank, but NCCL's unproven choice among "other paths". */
static int glance_class(const struct doc_column *c)
{
    const int rank = doc_path_rank(c->path_name);
    return rank == DOC_PATH_NVLINK && strncmp(c->path_name, "NVLink", 6) != 0 ? DOC_PATH_OTHER : rank;
}

static void at_a_glance(FILE *out, struct model *models, int ngroups)
{
    static const char *const classes[DOC_PATH_RANKS] = {"NVLink", "PCIe (P2P)", "host memory (P2P off)", "network",
                                                        "not NVLink", "other paths"};
    int present[DOC_PATH_RANKS] = {0}, old_baseline = 0;
    for (int g = 0; g < ngroups; g++)
        for (int k = 0; k < models[g].nmeasured; k++) present[glance_class(&models[g].measured[k])] = 1;
    fputs("## At a glance\n\nThe best scaling efficiency of each path at each GPU count, and the setting that gave it "
          "(the model's section has every setting).\n\n| model | GPUs |", out);
    for (int p = 0; p < DOC_PATH_RANKS; p++)
        if (present[p]) fprintf(out, " %s |", classes[p]);
    fputs("\n|---|---:|", out);
    for (int p = 0; p < DOC_PATH_RANKS; p++)
        if (present[p]) fputs("---:|", out);
    fputc('\n', out);
    for (int g = 0; g < ngroups; g++)
        for (int i = 0; i < models[g].ncounts; i++) {
            const struct model *m = &models[g];
            const int gpus = m->counts[i];
            if (gpus < 2 || m->nmeasured == 0) continue;
            fputs("| ", out);
            report_md_text(out, m->first->model);
            fprintf(out, ", batch %lld | %d |",
                    strcmp(m->first->scaling, "strong") == 0 ? m->first->global_batch : m->first->batch_per_gpu, gpus);
            for (int p = 0; p < DOC_PATH_RANKS; p++) {
                if (!present[p]) continue;
                const struct doc_column *from = NULL;
                double best = NAN;
                for (int k = 0; k < m->nmeasured; k++) {
                    const struct report_row *row = row_at(&m->measured[k], gpus);
                    if (glance_class(&m->measured[k]) != p || row == NULL || !isfinite(row->efficiency)) continue;
                    if (from == NULL || row->efficiency > best) best = row->efficiency, from = &m->measured[k];
                }
                if (from == NULL) {
                    fputs(" - |", out);
                    continue;
                }
                fprintf(out, " %.3f", best);
                if (doc_label_rest(from)[0]) {
                    fputs(" (", out);
                    report_md_text(out, doc_label_rest(from));
                    fputc(')', out);
                }
                old_baseline |= from->info->schema == 1;
                fputs(from->info->schema == 1 ? "† |" : " |", out);
            }
            fputc('\n', out);
        }
    fputc('\n', out);
    if (old_baseline)
        fputs("† from a schema 1 file, whose 1-GPU run still did a 1-rank allreduce every step: its efficiency is against "
              "a slower 1-GPU baseline than the other files'.\n\n", out);
}

static void preamble(FILE *out, const struct report_doc_request *req, int nfiles)
{
    fputs("# Data-parallel training scaling: procurement report\n\n", out);
    fprintf(out, "Written by `dpscale report --doc` from %d result file%s", nfiles, nfiles == 1 ? "" : "s");
    if (req->command != NULL) {
        fputs(" (`", out);
        report_md_code(out, req->command);
        fputs("`)", out);
    }
    fputs("; run the same command again to bring it up to date. Every figure is read from the files' `/summary`; "
          "each file's provenance is in the appendix.\n\n"
          "How to read it:\n\n"
          "- Each model has its own section. Its tables have **one column per system** and **one row per GPU count**. A "
          "column names the path and the library that carried the gradients, then whatever else differs between the "
          "runs of that model (machine, overlap, NCCL CTAs, NCCL environment, file schema).\n"
          "- Paths: **NVLink**: GPU to GPU over NVLink (`comm.path = nvlink`, NCCL_P2P_LEVEL=NVL, checked on the NVLink "
          "counters where the file recorded them). **PCIe (P2P)**: GPU to GPU over PCIe, through switches and the CPU "
          "(`comm.path = pcie`, NCCL_P2P_LEVEL=SYS, on GPUs without NVLink between them). **host memory (P2P off)**: "
          "NCCL with peer-to-peer access turned off (`comm.path = host`, NCCL_P2P_DISABLE=1; files before schema 6 "
          "say `pcie`): every transfer is staged through host memory over PCIe, as on a machine without NVLink or "
          "peer access. **network**: NCCL's network transport. **auto**: NCCL's own choice, "
          "named by what the NVLink counters saw where they were recorded.\n"
          "- Libraries: **NCCL** reduces GPU buffers; **MPI** reduces host buffers.\n"
          "- Efficiency(N) = throughput(N) / (N x throughput(1)), the 1-GPU run of the same column. The step time is the "
          "slowest rank's, its median over the timed steps with the 5th and 95th percentiles.\n"
          "- Columns marked **PROJECTED** come from `dpscale project`: estimates, in their own tables, never beside "
          "measured columns.\n\n", out);
}

int report_doc_write(const char *out_path, FILE *warn, const struct report_file *files, int n,
                     const struct report_doc_request *req, char *err, size_t errlen)
{
    static struct figures figs;
    struct doc_info *infos = calloc(n > 0 ? (size_t)n : 1, sizeof *infos);
    struct model *models = calloc(MAX_GROUPS, sizeof *models);
    int group[MAX_GROUPS], ngroups = 0, rc = -1;
    char tmp[300];
    FILE *out = NULL;
    struct safe_dir parent = {.fd = -1};
    size_t at = 0;
    memset(&figs, 0, sizeof figs);
    figs.held.fd = -1;
    tmp[0] = '\0';
    if (infos == NULL || models == NULL) {
        snprintf(err, errlen, "out of memory for %d files", n);
        goto done;
    }
    /* OUT's folder, once: the document, OUT-figs and its figures are all inside it */
    if (safe_dir_open_parent(&parent, out_path, &at, err, errlen) != 0) goto done;
    figs.parent = &parent;
    figures_folder_of(out_path, figs.dir, sizeof figs.dir);
    figures_folder_of(out_path + at, figs.name, sizeof figs.name);
    snprintf(figs.link, sizeof figs.link, "%s", doc_base_name(figs.dir));
    if (check_targets_in(&parent, out_path + at, out_path, err, errlen) != 0) goto done;
    const int fd = safe_dir_create_temp(&parent, out_path + at, tmp, sizeof tmp, err, errlen);
    if (fd < 0) goto done;
    if ((out = fdopen(fd, "w")) == NULL) {
        snprintf(err, errlen, "cannot open the document's temporary: %s", strerror(errno));
        close(fd);
        goto done;
    }
    for (int i = 0; i < n; i++) doc_info_of(&files[i], &infos[i]);
    /* the models: each run file joins the first group it is comparable to */
    for (int i = 0; i < n; i++) {
        if (files[i].kind != REPORT_RUNS) continue;
        int g = 0;
        char why[256] = "x";
        for (; g < ngroups; g++) {
            report_comparability(&files[group[g]], &files[i], why, sizeof why);
            if (why[0] == '\0') break;
        }
        if (g == ngroups) {
            if (ngroups == MAX_GROUPS) continue;
            group[ngroups] = i;
            models[ngroups].first = &files[i];
            ngroups++;
        }
        add_columns(&models[g], &files[i], &infos[i]);
    }
    for (int g = 0; g < ngroups; g++) {
        struct model *m = &models[g];
        for (int i = 1; i < m->ncounts; i++)
            for (int j = i; j > 0 && m->counts[j - 1] > m->counts[j]; j--) {
                const int t = m->counts[j];
                m->counts[j] = m->counts[j - 1];
                m->counts[j - 1] = t;
            }
        m->u = m->first->units_per_sample > 0 ? m->first->units_per_sample : 1;
        report_unit_of(m->first, m->many, m->one, sizeof m->many);
        doc_label_columns(m->measured, m->nmeasured);
        doc_order_columns(m->measured, m->nmeasured);
        doc_label_columns(m->projected, m->nprojected);
    }
    preamble(out, req, n);
    if (ngroups > 0) at_a_glance(out, models, ngroups);
    for (int g = 0; g < ngroups; g++) model_section(out, warn, &figs, &models[g]);
    doc_write_busbw(out, files, n, infos);
    doc_write_provenance(out, files, n, infos);
    if (req->nbad > 0) {
        fputs("## Files that could not be read\n\n", out);
        for (int i = 0; i < req->nbad; i++) {
            fputs("- ", out);
            report_md_text(out, req->unreadable[i]);
            fputc('\n', out);
        }
        fputc('\n', out);
    }
    /* a full disk shows in a write, the flush or the close: never a short document renamed over a whole one */
    const int werr = ferror(out) | (fflush(out) != 0);
    const int cerr = fclose(out) != 0;
    out = NULL;
    if (werr | cerr) {
        snprintf(err, errlen, "the document could not be written completely (disk full?); %s is left as it was", out_path);
        goto done;
    }
    if (safe_dir_commit(&parent, tmp, out_path + at, SAFE_FILE_REPLACE, 0, err, errlen) != 0) {
        tmp[0] = '\0'; /* removed by the commit */
        goto done;
    }
    tmp[0] = '\0';
    rc = figs.failures > 0 ? 1 : 0;
done:
    if (out != NULL) fclose(out);
    if (tmp[0] != '\0') safe_dir_discard(&parent, tmp);
    safe_dir_close(&figs.held);
    safe_dir_close(&parent);
    for (int i = 0; infos != NULL && i < n; i++) doc_free_info(&infos[i]);
    free(infos);
    free(models);
    return rc;
}

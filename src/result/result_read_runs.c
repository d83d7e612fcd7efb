/* result_read_runs.c — the scaling runs of a result file (dpscale run, or a
 * projection): /config, /model and the /summary table (result_read_internal.h).
 * Schema 2 names each run by library and path (/summary columns `library`, `path`);
 * schema 1 (the files measured before, which cannot be measured again) by one
 * `transport` column (result_schema1_transport). Each figure is checked against its
 * meaning in schema.h before it is kept (figures[] below). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "result/h5read.h"
#include "result/result_read_internal.h"
#include "base/utf8.h"

/* A count attribute, or 0 when absent (a NaN is no long long). */
static long long attr_count(hid_t obj, const char *name)
{
    const double v = h5_attr_double(obj, name);
    return isfinite(v) && fabs(v) < 9e18 ? (long long)v : 0;
}

/* The `parameters` attribute of the first group at any depth under /runs that has
 * one (the run groups, in files before /model); 0 when none does. Hard links only
 * (an external link would open another file), and no deeper than dpscale writes
 * (a damaged file can link a group into itself). */
struct parameters_search {
    long long n;
    int depth;
};

static herr_t parameters_of(hid_t parent, const char *name, const H5L_info_t *info, void *data)
{
    struct parameters_search *p = data;
    if (info->type != H5L_TYPE_HARD || p->depth >= 4) return 0;
    hid_t g = H5Oopen(parent, name, H5P_DEFAULT);
    if (g < 0) return 0;
    if (H5Iget_type(g) == H5I_GROUP) {
        if (H5Aexists(g, "parameters") > 0) {
            p->n = attr_count(g, "parameters");
        } else {
            p->depth++;
            H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, parameters_of, p);
            p->depth--;
        }
    }
    H5Oclose(g);
    return p->n > 0; /* found: stop */
}

static long long first_run_parameters(hid_t file)
{
    struct parameters_search p = {0, 0};
    if (H5Lexists(file, "runs", H5P_DEFAULT) <= 0) return 0;
    hid_t runs = H5Gopen2(file, "runs", H5P_DEFAULT);
    if (runs < 0) return 0;
    H5Literate(runs, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, parameters_of, &p);
    H5Gclose(runs);
    return p.n;
}

/* Whether the compound dataset has a member of that name (HDF5 reads a missing
 * member as untouched memory, without an error); *vlen: it is a variable-length string. */
static int has_column(hid_t dset, const char *name, int *vlen)
{
    hid_t ft = H5Dget_type(dset);
    const int idx = ft >= 0 && H5Tget_class(ft) == H5T_COMPOUND ? H5Tget_member_index(ft, name) : -1;
    if (idx >= 0 && vlen != NULL) {
        hid_t mt = H5Tget_member_type(ft, (unsigned)idx);
        *vlen = H5Tget_class(mt) == H5T_STRING && H5Tis_variable_str(mt) > 0;
        H5Tclose(mt);
    }
    if (ft >= 0) H5Tclose(ft);
    return idx >= 0;
}

/* One column of /summary by name, as doubles. */
static int read_column(hid_t dset, const char *name, double *out)
{
    name = result_name_in(-1, dset, name);
    if (!has_column(dset, name, NULL)) return -1;
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(double));
    H5Tinsert(t, name, 0, H5T_NATIVE_DOUBLE);
    int rc = H5Dread(dset, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0 ? -1 : 0;
    H5Tclose(t);
    return rc;
}

/* The figures of /summary the report shows, and what each may be (schema.h): a time,
 * a throughput, a bandwidth, a power or an energy is finite and not negative, and
 * below a ceiling no measurement reaches (a step of 11 days, 1e15 samples/s, 1e7
 * GB/s); NaN only where the schema says it is unknown: speedup and efficiency without
 * a 1-rank run, busbw on 1 rank, MFU without a peak, energy without a counter. The
 * step's spread is NaN where a file has none. */
#define MAX_TIME_S 1e6
#define MAX_RATE 1e15
static const struct {
    const char *column;
    struct result_figure rule;
} figures[] = {
    {"samples_per_s", {0, 1, MAX_RATE}},         {"samples_per_s_per_rank", {0, 1, MAX_RATE}},
    {"speedup", {1, 1, 1e6}},                    {"efficiency", {1, 1, 1e6}},
    {"step_median_s", {0, 1, MAX_TIME_S}},       {"comm_exposed_median_s", {0, 0, MAX_TIME_S}},
    {"allreduce_busbw_GBps", {1, 0, 1e7}},       {"mfu", {1, 0, 1e3}},
    {"joules_per_sample", {1, 0, 1e9}},          {"avg_power_w", {1, 0, 1e7}},
    {"step_p05_s", {1, 0, MAX_TIME_S}},          {"step_p95_s", {1, 0, MAX_TIME_S}},
};

/* Every figure of every row checked; -1 with the first that is not one in err. */
static int check_figures(const struct report_file *f, char *err, size_t errlen)
{
    for (int i = 0; i < f->nrows; i++) {
        const struct report_row *r = &f->rows[i];
        const double v[] = {r->samples_per_s, r->samples_per_s_per_rank, r->speedup, r->efficiency, r->step_s,
                            r->comm_exposed_s, r->allreduce_busbw_gbps, r->mfu, r->joules_per_sample, r->avg_power_w,
                            r->step_p05_s, r->step_p95_s};
        _Static_assert(sizeof v / sizeof v[0] == sizeof figures / sizeof figures[0], "one rule per figure");
        for (size_t k = 0; k < sizeof figures / sizeof figures[0]; k++) {
            char what[96];
            snprintf(what, sizeof what, "/summary's %s of row %d", figures[k].column, i + 1);
            if (result_check_figure(what, v[k], figures[k].rule, err, errlen) != 0) return -1;
        }
    }
    return 0;
}

#define TEXT_LEN 16 /* the text columns of /summary: 16 bytes in schema 1, 8 in schema 2 to 4, any length from 5 */

/* One text column of /summary by name, each entry NUL-terminated and well-formed UTF-8
 * (fixed-length strings before schema 5, variable-length UTF-8 from it). */
static int read_text_column(hid_t dset, const char *name, int n, char out[][TEXT_LEN])
{
    char buf[REPORT_MAX_ROWS][TEXT_LEN];
    char *vbuf[REPORT_MAX_ROWS] = {NULL};
    int vlen = 0;
    if (!has_column(dset, name, &vlen)) return -1;
    hid_t str = H5Tcopy(H5T_C_S1);
    if (vlen) H5Tset_cset(str, H5T_CSET_UTF8);
    H5Tset_size(str, vlen ? H5T_VARIABLE : TEXT_LEN - 1);
    hid_t t = H5Tcreate(H5T_COMPOUND, vlen ? sizeof(char *) : TEXT_LEN);
    H5Tinsert(t, name, 0, str);
    memset(buf, 0, sizeof buf);
    int rc = H5Dread(dset, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, vlen ? (void *)vbuf : (void *)buf) < 0 ? -1 : 0;
    for (int i = 0; i < n; i++) {
        if (vlen) {
            utf8_copy(out[i], TEXT_LEN, vbuf[i] != NULL ? vbuf[i] : "");
            if (vbuf[i] != NULL) H5free_memory(vbuf[i]);
        } else {
            buf[i][TEXT_LEN - 1] = '\0';
            utf8_copy(out[i], TEXT_LEN, buf[i]);
        }
    }
    H5Tclose(t);
    H5Tclose(str);
    return rc;
}

/* /model from schema 4; before, an MLP, whose parameters every run group holds. */
static void read_model(hid_t file, hid_t cfg, struct report_file *f)
{
    if (H5Lexists(file, "model", H5P_DEFAULT) > 0) {
        hid_t mg = H5Gopen2(file, "model", H5P_DEFAULT);
        h5_attr_str(mg, "type", f->model_type, sizeof f->model_type);
        h5_attr_str(mg, "shape", f->shape, sizeof f->shape);
        h5_attr_str(mg, "unit", f->unit, sizeof f->unit);
        f->parameters = attr_count(mg, "parameters");
        f->units_per_sample = h5_attr_int(mg, "units_per_sample", 1);
        H5Gclose(mg);
    } else {
        snprintf(f->model_type, sizeof f->model_type, "mlp");
        snprintf(f->unit, sizeof f->unit, "samples");
        snprintf(f->shape, sizeof f->shape, "%d x %d wide", h5_attr_int(cfg, "model.layers", 0),
                 h5_attr_int(cfg, "model.hidden_dim", 0));
        f->parameters = first_run_parameters(file);
    }
    if (f->units_per_sample < 1) f->units_per_sample = 1;
}

#define MAX_UNITS_PER_SAMPLE (1 << 24) /* tokens of one sequence: 16 M, past any model's context */

int result_read_runs(hid_t file, int schema, struct report_file *f, char *err, size_t errlen)
{
    int rc = -1;
    hid_t cfg = H5Gopen2(file, "config", H5P_DEFAULT), sum = H5Dopen2(file, "summary", H5P_DEFAULT), space = -1;
    if (cfg < 0 || sum < 0) {
        snprintf(err, errlen, "damaged: /config or /summary cannot be read");
        goto done;
    }
    h5_attr_str(cfg, "model.name", f->model, sizeof f->model);
    h5_attr_str(cfg, "train.precision", f->precision, sizeof f->precision);
    h5_attr_str(cfg, "train.scaling", f->scaling, sizeof f->scaling);
    h5_attr_str(cfg, "train.grad_dtype", f->grad_dtype, sizeof f->grad_dtype);
    h5_attr_str(cfg, "comm.overlap", f->overlap, sizeof f->overlap);
    if (H5Lexists(file, "projection", H5P_DEFAULT) > 0) {
        hid_t pg = H5Gopen2(file, "projection", H5P_DEFAULT);
        f->projected = 1;
        h5_attr_str(pg, "target", f->projection_target, sizeof f->projection_target);
        h5_attr_str(pg, "compute", f->projection_compute, sizeof f->projection_compute);
        H5Gclose(pg);
    }
    read_model(file, cfg, f);
    if (f->units_per_sample > MAX_UNITS_PER_SAMPLE) {
        snprintf(err, errlen, "damaged: /model's units_per_sample is %d; it must be from 1 to %d", f->units_per_sample,
                 MAX_UNITS_PER_SAMPLE);
        goto done;
    }
    f->batch_per_gpu = attr_count(cfg, "train.batch_per_gpu");
    f->global_batch = attr_count(cfg, "train.global_batch");
    space = H5Dget_space(sum);
    hssize_t n = H5Sget_simple_extent_npoints(space);
    if (n <= 0 || n > REPORT_MAX_ROWS) {
        snprintf(err, errlen, "damaged: /summary has %lld rows (this report reads 1 to %d)", (long long)n, REPORT_MAX_ROWS);
        goto done;
    }
    f->nrows = (int)n;
    double col[REPORT_MAX_ROWS];
    char names[REPORT_MAX_ROWS][TEXT_LEN], paths[REPORT_MAX_ROWS][TEXT_LEN];
#define COLUMN(field, name)                                                           \
    if (read_column(sum, name, col) != 0) {                                          \
        snprintf(err, errlen, "damaged: /summary has no readable column %s", name); \
        goto done;                                                                    \
    }                                                                                 \
    for (int i = 0; i < f->nrows; i++) f->rows[i].field = col[i];
/* a count becomes an int only once it is known to be one */
#define COUNT(field, name, least)                                                                                   \
    if (read_column(sum, name, col) != 0) {                                                                        \
        snprintf(err, errlen, "damaged: /summary has no readable column %s", name);                               \
        goto done;                                                                                                  \
    }                                                                                                               \
    for (int i = 0; i < f->nrows; i++) {                                                                           \
        if (!(col[i] >= least && col[i] <= REPORT_MAX_COUNT) || col[i] != floor(col[i])) {                         \
            snprintf(err, errlen, "damaged: /summary's %s of row %d is %g, not a count from %d to %d", name, i + 1, \
                     col[i], least, REPORT_MAX_COUNT);                                                              \
            goto done;                                                                                              \
        }                                                                                                           \
        f->rows[i].field = (int)col[i];                                                                            \
    }
    COLUMN(samples_per_s, "samples_per_s")
    COLUMN(samples_per_s_per_rank, "samples_per_s_per_rank")
    COLUMN(speedup, "speedup")
    COLUMN(efficiency, "efficiency")
    COLUMN(step_s, "step_median_s")
    COLUMN(comm_exposed_s, "comm_exposed_median_s")
    COLUMN(allreduce_busbw_gbps, "allreduce_busbw_GBps")
    COLUMN(mfu, "mfu")
    COLUMN(joules_per_sample, "joules_per_sample")
    COLUMN(avg_power_w, "avg_power_w")
    COUNT(nranks, "nranks", 1)
    COUNT(nodes, "nodes", 0)
    COUNT(global_batch, "global_batch", 0)
#undef COLUMN
#undef COUNT
    /* the step's spread: in every schema so far, but not needed to read a file */
    const int spread = read_column(sum, "step_p05_s", col) == 0;
    for (int i = 0; i < f->nrows; i++) f->rows[i].step_p05_s = spread ? col[i] : NAN;
    const int spread95 = read_column(sum, "step_p95_s", col) == 0;
    for (int i = 0; i < f->nrows; i++) f->rows[i].step_p95_s = spread95 ? col[i] : NAN;
    if (check_figures(f, err, errlen) != 0) goto done;
    if (schema >= 2) {
        if (read_text_column(sum, "library", f->nrows, names) != 0 || read_text_column(sum, "path", f->nrows, paths) != 0) {
            snprintf(err, errlen, "damaged: /summary has no readable library and path columns");
            goto done;
        }
        for (int i = 0; i < f->nrows; i++) {
            utf8_copy(f->rows[i].library, sizeof f->rows[i].library, names[i]);
            result_path_in(schema, paths[i], f->rows[i].path, sizeof f->rows[i].path);
        }
    } else {
        if (read_text_column(sum, "transport", f->nrows, names) != 0) {
            snprintf(err, errlen, "damaged: /summary has no readable transport column");
            goto done;
        }
        for (int i = 0; i < f->nrows; i++)
            result_schema1_transport(names[i], f->rows[i].library, sizeof f->rows[i].library, f->rows[i].path,
                                     sizeof f->rows[i].path);
    }
    rc = 0;
done:
    if (space >= 0) H5Sclose(space);
    if (sum >= 0) H5Dclose(sum);
    if (cfg >= 0) H5Gclose(cfg);
    return rc;
}

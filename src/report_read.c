/* report_read.c — read what the report needs from one result file (report.h),
 * refusing with a clear reason a file that is not HDF5, that dpscale did not
 * write, that a newer dpscale wrote, or that is damaged. Schema 2 names each run
 * by library and path (/summary columns `library`, `path`); schema 1 (the files
 * measured before, which cannot be measured again) by one `transport` column that
 * held either: "mpi"/"nccl" (the library, path auto) or "nvlink"/"pcie"/"net" (a
 * path, always through NCCL). */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "h5out.h"
#include "h5read.h"
#include "report.h"

static int attr_exists(hid_t obj, const char *name) { return H5Aexists(obj, name) > 0; }


static double read_attr_num(hid_t obj, const char *name);

/* The `parameters` attribute of the first group at any depth under `obj` that has
 * one (the run groups under /runs, in files before /model); 0 when none does. */
static herr_t parameters_of(hid_t parent, const char *name, const H5L_info_t *info, void *out)
{
    (void)info;
    hid_t g = H5Oopen(parent, name, H5P_DEFAULT);
    if (g < 0) return 0;
    long long *n = out;
    if (H5Iget_type(g) == H5I_GROUP) {
        if (H5Aexists(g, "parameters") > 0) *n = (long long)read_attr_num(g, "parameters");
        else H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, parameters_of, out);
    }
    H5Oclose(g);
    return *n > 0; /* found: stop */
}

static long long first_run_parameters(hid_t file)
{
    long long n = 0;
    if (H5Lexists(file, "runs", H5P_DEFAULT) <= 0) return 0;
    hid_t runs = H5Gopen2(file, "runs", H5P_DEFAULT);
    H5Literate(runs, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, parameters_of, &n);
    H5Gclose(runs);
    return n;
}

static double read_attr_num(hid_t obj, const char *name)
{
    double v = NAN;
    if (!attr_exists(obj, name)) return NAN;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (H5Aread(a, H5T_NATIVE_DOUBLE, &v) < 0) v = NAN;
    H5Aclose(a);
    return v;
}

/* Whether the compound dataset has a member of that name (HDF5 reads a missing
 * member as untouched memory, without an error). */
static int has_column(hid_t dset, const char *name)
{
    hid_t ft = H5Dget_type(dset);
    const int found = ft >= 0 && H5Tget_class(ft) == H5T_COMPOUND && H5Tget_member_index(ft, name) >= 0;
    if (ft >= 0) H5Tclose(ft);
    return found;
}

/* One column of /summary by name, as doubles. */
static int read_column(hid_t dset, const char *name, int n, double *out)
{
    if (!has_column(dset, name)) return -1;
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(double));
    H5Tinsert(t, name, 0, H5T_NATIVE_DOUBLE);
    int rc = H5Dread(dset, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0 ? -1 : 0;
    H5Tclose(t);
    (void)n;
    return rc;
}

#define TEXT_LEN 16 /* the text columns of /summary: 16 bytes in schema 1, 8 in schema 2 */

/* One text column of /summary by name, each entry NUL-terminated. */
static int read_text_column(hid_t dset, const char *name, int n, char out[][TEXT_LEN])
{
    char buf[REPORT_MAX_ROWS][TEXT_LEN];
    if (!has_column(dset, name)) return -1;
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, TEXT_LEN - 1);
    hid_t t = H5Tcreate(H5T_COMPOUND, TEXT_LEN);
    H5Tinsert(t, name, 0, str);
    memset(buf, 0, sizeof buf);
    int rc = H5Dread(dset, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0 ? -1 : 0;
    H5Tclose(t);
    H5Tclose(str);
    for (int i = 0; i < n; i++) snprintf(out[i], TEXT_LEN, "%.*s", TEXT_LEN - 1, buf[i]);
    return rc;
}

/* Schema 1's `transport` column: a library ("mpi", "nccl": path auto) or a path
 * that only NCCL took ("nvlink", "pcie", "net"). */
static void schema1_transport(const char *transport, struct report_row *r)
{
    const int is_path = strcmp(transport, "nvlink") == 0 || strcmp(transport, "pcie") == 0 || strcmp(transport, "net") == 0;
    snprintf(r->library, sizeof r->library, "%.15s", is_path ? "nccl" : transport);
    snprintf(r->path, sizeof r->path, "%.15s", is_path ? transport : "auto");
}

int report_read(const char *path, struct report_file *f, char *err, size_t errlen)
{
    memset(f, 0, sizeof *f);
    snprintf(f->path, sizeof f->path, "%s", path);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    FILE *probe = fopen(path, "rb");
    if (probe == NULL) {
        snprintf(err, errlen, "%s: cannot open it", path);
        return -1;
    }
    fclose(probe);
    if (H5Fis_hdf5(path) <= 0) {
        snprintf(err, errlen, "%s: not an HDF5 file (truncated, or not a dpscale result)", path);
        return -1;
    }
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) {
        snprintf(err, errlen, "%s: HDF5 cannot open it; it is damaged or truncated", path);
        return -1;
    }
    int rc = -1;
    char writer[32] = "";
    h5_attr_str(file, "writer", writer, sizeof writer);
    const double schema = read_attr_num(file, "schema_version");
    hid_t cfg = -1, sys = -1, sum = -1, space = -1;
    if (strcmp(writer, "dpscale") != 0 || isnan(schema)) {
        snprintf(err, errlen, "%s: not a dpscale result file (no writer = dpscale, schema_version attributes)", path);
        goto done;
    }
    if (schema != floor(schema) || schema < 1 || schema > H5OUT_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s: schema version %.0f, but this dpscale reads versions 1 to %d; %s", path, schema,
                 H5OUT_SCHEMA_VERSION, schema > H5OUT_SCHEMA_VERSION ? "update dpscale to read it" : "an unknown version");
        goto done;
    }
    if (H5Lexists(file, "summary", H5P_DEFAULT) <= 0) {
        snprintf(err, errlen, "%s: no /summary table: a dpscale comm or topo file has no scaling runs to report", path);
        goto done;
    }
    h5_attr_str(file, "created_utc", f->created, sizeof f->created);
    cfg = H5Gopen2(file, "config", H5P_DEFAULT);
    sys = H5Gopen2(file, "system", H5P_DEFAULT);
    sum = H5Dopen2(file, "summary", H5P_DEFAULT);
    if (cfg < 0 || sys < 0 || sum < 0) {
        snprintf(err, errlen, "%s: damaged: /config, /system or /summary cannot be read", path);
        goto done;
    }
    h5_attr_str(sys, "device_name", f->device, sizeof f->device);
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
    /* the model: /model from schema 4; before, an MLP, whose parameters every run group holds */
    if (H5Lexists(file, "model", H5P_DEFAULT) > 0) {
        hid_t mg = H5Gopen2(file, "model", H5P_DEFAULT);
        h5_attr_str(mg, "type", f->model_type, sizeof f->model_type);
        h5_attr_str(mg, "shape", f->shape, sizeof f->shape);
        h5_attr_str(mg, "unit", f->unit, sizeof f->unit);
        f->parameters = (long long)read_attr_num(mg, "parameters");
        f->units_per_sample = (int)read_attr_num(mg, "units_per_sample");
        H5Gclose(mg);
    } else {
        snprintf(f->model_type, sizeof f->model_type, "mlp");
        snprintf(f->unit, sizeof f->unit, "samples");
        snprintf(f->shape, sizeof f->shape, "%d x %d wide", (int)read_attr_num(cfg, "model.layers"),
                 (int)read_attr_num(cfg, "model.hidden_dim"));
        f->parameters = first_run_parameters(file);
    }
    if (f->units_per_sample < 1) f->units_per_sample = 1;
    f->batch_per_gpu = (long long)read_attr_num(cfg, "train.batch_per_gpu");
    f->global_batch = (long long)read_attr_num(cfg, "train.global_batch");
    if (H5Lexists(sys, "hosts", H5P_DEFAULT) > 0) {
        hid_t h = H5Dopen2(sys, "hosts", H5P_DEFAULT), ht = H5Dget_type(h), hs = H5Dget_space(h);
        char first[64 * 4] = "";
        hsize_t one = 1, zero = 0;
        hid_t ms = H5Screate_simple(1, &one, NULL);
        H5Sselect_hyperslab(hs, H5S_SELECT_SET, &zero, NULL, &one, NULL);
        if (H5Tget_size(ht) <= 64 && H5Dread(h, ht, ms, hs, H5P_DEFAULT, first) >= 0) snprintf(f->host, sizeof f->host, "%.63s", first);
        H5Sclose(ms);
        H5Sclose(hs);
        H5Tclose(ht);
        H5Dclose(h);
    }
    space = H5Dget_space(sum);
    hssize_t n = H5Sget_simple_extent_npoints(space);
    if (n <= 0 || n > REPORT_MAX_ROWS) {
        snprintf(err, errlen, "%s: damaged: /summary has %lld rows", path, (long long)n);
        goto done;
    }
    f->nrows = (int)n;
    double col[REPORT_MAX_ROWS];
    char names[REPORT_MAX_ROWS][TEXT_LEN], paths[REPORT_MAX_ROWS][TEXT_LEN];
#define COLUMN(field, name)                                                                 \
    if (read_column(sum, name, f->nrows, col) != 0) {                                      \
        snprintf(err, errlen, "%s: damaged: /summary has no readable column %s", path, name); \
        goto done;                                                                          \
    }                                                                                       \
    for (int i = 0; i < f->nrows; i++) f->rows[i].field = col[i];
    COLUMN(samples_per_s, "samples_per_s")
    COLUMN(samples_per_s_per_rank, "samples_per_s_per_rank")
    COLUMN(speedup, "speedup")
    COLUMN(efficiency, "efficiency")
    COLUMN(step_s, "step_median_s")
    COLUMN(comm_exposed_s, "comm_exposed_median_s")
    COLUMN(allreduce_busbw_gbps, "allreduce_busbw_gbps")
    COLUMN(mfu, "mfu")
    COLUMN(joules_per_sample, "joules_per_sample")
    COLUMN(avg_power_w, "avg_power_w")
    COLUMN(nranks, "nranks")
    COLUMN(nodes, "nodes")
    COLUMN(global_batch, "global_batch")
#undef COLUMN
    if (schema >= 2) {
        if (read_text_column(sum, "library", f->nrows, names) != 0 || read_text_column(sum, "path", f->nrows, paths) != 0) {
            snprintf(err, errlen, "%s: damaged: /summary has no readable library and path columns", path);
            goto done;
        }
        for (int i = 0; i < f->nrows; i++) {
            snprintf(f->rows[i].library, sizeof f->rows[i].library, "%.15s", names[i]);
            snprintf(f->rows[i].path, sizeof f->rows[i].path, "%.15s", paths[i]);
        }
    } else {
        if (read_text_column(sum, "transport", f->nrows, names) != 0) {
            snprintf(err, errlen, "%s: damaged: /summary has no readable transport column", path);
            goto done;
        }
        for (int i = 0; i < f->nrows; i++) schema1_transport(names[i], &f->rows[i]);
    }
    rc = 0;
done:
    if (space >= 0) H5Sclose(space);
    if (sum >= 0) H5Dclose(sum);
    if (sys >= 0) H5Gclose(sys);
    if (cfg >= 0) H5Gclose(cfg);
    H5Fclose(file);
    return rc;
}

void report_label(struct report_file *files, int n)
{
    int overlaps_differ = 0;
    for (int i = 1; i < n; i++) overlaps_differ |= strcmp(files[i].overlap, files[0].overlap) != 0;
    for (int i = 0; i < n; i++)
        snprintf(files[i].tag, sizeof files[i].tag, "%s%.7s", overlaps_differ ? "overlap " : "", overlaps_differ ? files[i].overlap : "");
}

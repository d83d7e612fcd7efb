/* cmd_project.c — `dpscale project RESULT.h5 --comm COMM.h5 | --system SYSTEM.ini`: the
 * step of RESULT's 1-GPU run projected onto every GPU count of a target's allreduce
 * curves (a dpscale comm file measured there, or a catalog entry of configs/systems/),
 * beside RESULT's own measured runs where it has the same count (docs/PROJECTION.md).
 * Reads files only; needs no GPU and no MPI launch. */
#include <hdf5.h>
#include <math.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "base/error.h"
#include "result/h5out.h"
#include "result/h5read.h"
#include "base/log.h"
#include "result/model_table.h"
#include "project/project.h"
#include "report/report_read.h"
#include "base/safe_file.h"
#include "cli/session.h"
#include "project/systems.h"
#include "train/stats.h"

#define MAX_GROUPS 16
#define MAX_CALIBRATIONS 8
#define NSETTINGS 8

/* A dataset of figures, whole: NULL when absent, or NULL with the reason in err (when err
 * is still "") when it is not what dpscale writes: 1 to max_rank dimensions, none empty,
 * numbers that are finite and not negative (times, sizes, counts). dims: its extent,
 * padded with 1s to 3; *n its element count. A damaged dataset is one line naming it,
 * never a read past a buffer sized by another dataset's shape. */
#define READ_MAX_ELEMENTS ((size_t)1 << 27) /* 1 GiB of doubles: more iterations x ranks than any run */
static double *read_doubles(hid_t loc, const char *name, int max_rank, size_t *n, hsize_t dims[3], char *err,
                            size_t errlen)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) <= 0) return NULL;
    char where[200] = "?", why[96] = "";
    H5Iget_name(loc, where, sizeof where);
    const hid_t d = H5Dopen2(loc, name, H5P_DEFAULT);
    const hid_t sp = d >= 0 ? H5Dget_space(d) : H5I_INVALID_HID, ty = d >= 0 ? H5Dget_type(d) : H5I_INVALID_HID;
    const int r = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    const H5T_class_t cls = ty >= 0 ? H5Tget_class(ty) : H5T_NO_CLASS;
    hsize_t dd[H5S_MAX_RANK] = {1, 1, 1};
    size_t count = 1;
    double *v = NULL;
    if (r < 0) snprintf(why, sizeof why, "cannot be read");
    else if (cls != H5T_FLOAT && cls != H5T_INTEGER) snprintf(why, sizeof why, "does not hold numbers");
    else if (r < 1 || r > max_rank)
        snprintf(why, sizeof why, "has %d dimensions; it must have 1 to %d", r, max_rank);
    else if (H5Sget_simple_extent_dims(sp, dd, NULL) != r) snprintf(why, sizeof why, "cannot be read");
    for (int i = 0; why[0] == '\0' && i < r; i++) {
        if (dd[i] == 0) snprintf(why, sizeof why, "is empty (dimension %d is 0)", i + 1);
        else if (dd[i] > READ_MAX_ELEMENTS / count) snprintf(why, sizeof why, "has more than %zu elements", READ_MAX_ELEMENTS);
        else count *= (size_t)dd[i];
    }
    if (why[0] == '\0') {
        v = malloc(count * sizeof *v);
        CHECK_ALLOC(v);
        if (H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) snprintf(why, sizeof why, "cannot be read");
        for (size_t i = 0; why[0] == '\0' && i < count; i++)
            if (!isfinite(v[i]) || v[i] < 0)
                snprintf(why, sizeof why, "holds %g at element %zu; it must hold finite figures from 0", v[i], i);
    }
    if (ty >= 0) H5Tclose(ty);
    if (sp >= 0) H5Sclose(sp);
    if (d >= 0) H5Dclose(d);
    if (why[0] != '\0') {
        if (err[0] == '\0') snprintf(err, errlen, "damaged: %s/%s %s", where, name, why);
        free(v);
        return NULL;
    }
    *n = count;
    if (dims != NULL) memcpy(dims, dd, 3 * sizeof *dd);
    return v;
}

/* 0 when the datasets a and b have the same extent, else -1 with why in err */
static int same_shape(hid_t loc, const char *a, const hsize_t da[3], const char *b, const hsize_t db[3], char *err,
                      size_t errlen)
{
    if (da[0] == db[0] && da[1] == db[1] && da[2] == db[2]) return 0;
    char where[200] = "?";
    H5Iget_name(loc, where, sizeof where);
    if (err[0] == '\0')
        snprintf(err, errlen, "damaged: %s/%s is [%llu x %llu x %llu], but %s is [%llu x %llu x %llu]; they must be "
                 "the same iterations x ranks", where, a, (unsigned long long)da[0], (unsigned long long)da[1],
                 (unsigned long long)da[2], b, (unsigned long long)db[0], (unsigned long long)db[1],
                 (unsigned long long)db[2]);
    return -1;
}


/* median over the first dimension of the per-row maximum over the second ([rows x cols]) */
static double median_of_max(const double *v, hsize_t rows, hsize_t cols)
{
    double *m = malloc(rows * sizeof *m);
    CHECK_ALLOC(m);
    stats_max_over_ranks(v, (int)rows, (int)cols, m);
    const double r = stats_percentile(m, (int)rows, 50);
    free(m);
    return r;
}

/* the names of the groups under loc ("nvlink", "n2", ...) */
struct names {
    int n;
    char name[MAX_GROUPS][64];
};
static herr_t add_name(hid_t g, const char *name, const H5L_info_t *info, void *out)
{
    (void)g;
    (void)info;
    struct names *ns = out;
    if (ns->n < MAX_GROUPS) snprintf(ns->name[ns->n++], sizeof ns->name[0], "%s", name);
    return 0;
}
static void list_groups(hid_t loc, const char *path, struct names *ns)
{
    ns->n = 0;
    hid_t g = H5Gopen2(loc, path, H5P_DEFAULT);
    if (g < 0) return;
    H5Literate(g, H5_INDEX_NAME, H5_ITER_NATIVE, NULL, add_name, ns);
    H5Gclose(g);
}

struct group_paths {
    int n;
    char path[MAX_GROUPS][160];
};

static int is_count_group(const char *name) /* "n1", "n16": a run or curve of that many GPUs */
{
    if (name[0] != 'n' || name[1] == '\0') return 0;
    for (const char *c = name + 1; *c; c++)
        if (*c < '0' || *c > '9') return 0;
    return 1;
}

/* Every group of a result file that holds runs or curves by GPU count (n1, n2, ...), in
 * order: "<top>/<library>/<path>" (schema 2 on), or "<top>/<path>" (schema 1, before the
 * library was a level of its own). */
static void library_paths(hid_t f, const char *top, struct group_paths *out)
{
    struct names libs, paths;
    out->n = 0;
    list_groups(f, top, &libs);
    for (int i = 0; i < libs.n; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s/%.60s", top, libs.name[i]);
        list_groups(f, p, &paths);
        int counts = 0;
        for (int j = 0; j < paths.n; j++) counts += is_count_group(paths.name[j]);
        if (counts > 0) { /* schema 1 */
            if (out->n < MAX_GROUPS) snprintf(out->path[out->n++], sizeof out->path[0], "%s", p);
            continue;
        }
        for (int j = 0; j < paths.n && out->n < MAX_GROUPS; j++)
            snprintf(out->path[out->n++], sizeof out->path[0], "%.90s/%.60s", p, paths.name[j]);
    }
}

/* What RESULT says: its 1-GPU profile, and its measured multi-GPU runs. */
struct source {
    char where[256]; /* "runs/<library>/<path>" */
    struct step_profile prof;
    double *ready, *bytes;
    int ready_measured; /* 0: spread over backward in proportion to the bytes */
    double step1_s;
    double peak_tflops; /* of the GPU it ran on, in its precision (0: unknown) */
    int batch_per_rank;
    char device[96], precision[16];
    int nmeasured, measured_n[MAX_GROUPS];
    double measured_eff[MAX_GROUPS], measured_alone_s[MAX_GROUPS]; /* the allreduce alone: NaN if not recorded */
    char update_note[200]; /* how prof.update_comm_s was had, or why it was not ("": nothing to say) */
    double interference, imbalance_s; /* from the largest measured run, 0 without one */
    double forward_interference;      /* that run's forward against the 1-GPU run's, less 1 (0: not measured) */
    int forward_measured;             /* 0: schema 1-2 (no compute-only backward) or ZeRO-1 */
    double interference_share; /* that run's share of backward with communication beside it (overlap on; else 0) */
    int interference_from;
    const char *interference_approx; /* how an older file's compute-only backward was derived (NULL: measured) */
    char settings[NSETTINGS][32];    /* the communication settings that shape NCCL's work beside backward */
};

/* What decides how much NCCL's kernels slow backward, beyond the time they run: a
 * calibration (--interference-from) carries over only between runs that agree on these. */
static const char *const setting_names[NSETTINGS] = {"path", "comm.shm_copy", "comm.nccl_max_ctas", "comm.symmetric",
                                                     "comm.register", "comm.allreduce_dtype", "comm.shard_optimizer",
                                                     "comm.overlap"};

static void read_settings(hid_t f, struct source *src)
{
    const char *path = strrchr(src->where, '/');
    report_path_in(h5_attr_int(f, "schema_version", 1), path != NULL ? path + 1 : src->where, src->settings[0],
                   sizeof src->settings[0]);
    hid_t cfg = H5Gopen2(f, "config", H5P_DEFAULT);
    for (int i = 1; i < NSETTINGS; i++) {
        if (cfg < 0 || h5_attr_str(cfg, setting_names[i], src->settings[i], sizeof src->settings[i]) == 0) continue;
        const double v = cfg < 0 ? NAN : h5_attr_double(cfg, setting_names[i]);
        snprintf(src->settings[i], sizeof src->settings[i], isnan(v) ? "?" : "%g", v);
    }
    if (cfg >= 0) H5Gclose(cfg);
}

/* The settings on which RESULT and its calibration differ, "name A here, B there; ...",
 * into out ("" when they agree). comm.shm_copy (setting 1) is left out between two NVLink
 * runs: no copy goes through host memory there. */
static void settings_differ(const struct source *a, const struct source *b, char *out, size_t len)
{
    out[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < NSETTINGS && used < len; i++) {
        if (strcmp(a->settings[i], b->settings[i]) == 0) continue;
        if (i == 1 && strcmp(a->settings[0], "nvlink") == 0 && strcmp(b->settings[0], "nvlink") == 0) continue;
        used += (size_t)snprintf(out + used, len - used, "%s%s %s here, %s there", used ? "; " : "", setting_names[i],
                                 a->settings[i], b->settings[i]);
    }
}

/* Forward's change in a multi-GPU run: its forward against the 1-GPU run's, less 1.
 * Beside a long exposed allreduce the GPUs idle under their power cap and the next
 * forward runs at higher clocks (2 x H200: up to 16 % faster through host memory); a
 * latency-bound step's forward waits on its rank's launches. Not for ZeRO-1, whose
 * forward also waits for the all-gathers (not a term of this model). */
static double forward_change(hid_t gn, double forward_1gpu_s, char *err, size_t errlen)
{
    size_t n;
    hsize_t df[3];
    double *fw = read_doubles(gn, "forward_s", 2, &n, df, err, errlen);
    const double change = fw != NULL && forward_1gpu_s > 0 ? median_of_max(fw, df[0], df[1]) / forward_1gpu_s - 1.0 : 0.0;
    free(fw);
    return change;
}

/* The update left after communication at N > 1: a 1-GPU run updates each stage as
 * backward finishes it (train.overlap_update), leaving only the last stage's after
 * backward; with several GPUs the last bucket's follows the allreduce (overlap on) or
 * the whole update does (off). Its time per element is the last stage's, the update
 * being element-wise and memory-bound, where that stage's update takes long enough
 * (UPDATE_RATE_MIN_S) to be its bandwidth and not a launch. ZeRO-1 is left as measured. */
#define UPDATE_RATE_MIN_S 20e-6
static void update_after_comm(hid_t f, hid_t n1, double last_bucket_elements, struct source *src)
{
    char on[8] = "", sharded[8] = "";
    h5_attr_str(n1, "overlap_update", on, sizeof on);
    h5_attr_str(n1, "shard_optimizer", sharded, sizeof sharded);
    double last = 0, total = 0;
    const double u = src->prof.update_left_s;
    if (strcmp(on, "on") != 0 || strcmp(sharded, "on") == 0) return; /* already the whole update, or ZeRO-1 */
    if (model_table_last_stage(f, &last, &total) != 0) {
        snprintf(src->update_note, sizeof src->update_note, "update after communication: as at 1 GPU (the file has no "
                 "/model/tensors to size the whole update by)");
        return;
    }
    if (u < UPDATE_RATE_MIN_S) {
        snprintf(src->update_note, sizeof src->update_note, "update after communication: as at 1 GPU (the last stage's "
                 "update, %.0f elements in %.1f us, is a launch, not a rate: the whole update is not known)", last, u * 1e6);
        return;
    }
    const double elements = src->prof.overlap ? last_bucket_elements : total;
    src->prof.update_comm_s = u / last * elements;
    snprintf(src->update_note, sizeof src->update_note, "update after communication %.3f ms: %s, %.0f elements at the "
             "1-GPU run's rate for its last stage (%.0f in %.3f ms)", src->prof.update_comm_s * 1e3,
             src->prof.overlap ? "the last bucket's" : "the whole update (overlap off)", elements, last, u * 1e3);
}

/* RESULT's 1-GPU profile, its measured runs, and the interference and imbalance of
 * one of them: the run at `terms_from` GPUs, or (0) the largest. */
static int read_source(hid_t f, struct source *src, int terms_from, char *err, size_t errlen)
{
    struct group_paths gp;
    library_paths(f, "runs", &gp);
    int k = 0;
    for (char n1[200]; k < gp.n; k++) {
        snprintf(n1, sizeof n1, "%s/n1", gp.path[k]);
        if (H5Lexists(f, n1, H5P_DEFAULT) > 0) break;
    }
    if (k == gp.n) {
        snprintf(err, errlen, "it has no 1-GPU run (runs/<library>/<path>/n1); run it with --sweep including 1");
        return -1;
    }
    snprintf(src->where, sizeof src->where, "%s", gp.path[k]);
    read_settings(f, src); /* before the runs: ZeRO-1 decides the forward term */
    hid_t g = H5Gopen2(f, src->where, H5P_DEFAULT), n1 = H5Gopen2(g, "n1", H5P_DEFAULT);
    size_t n;
    hsize_t d[3], dfw[3], dbw[3], dup[3], dnb[3];
    err[0] = '\0';
    double *fw = read_doubles(n1, "forward_s", 2, &n, dfw, err, errlen);
    double *bw = read_doubles(n1, "backward_s", 2, &n, dbw, err, errlen);
    double *up = read_doubles(n1, "update_s", 2, &n, dup, err, errlen);
    double *st = read_doubles(n1, "step_s", 2, &n, d, err, errlen);
    const hsize_t iters = d[0], ranks1 = d[1];
    size_t nb = 0;
    double *elems = read_doubles(n1, "bucket_elements", 1, &nb, dnb, err, errlen);
    if (err[0] == '\0' && (fw == NULL || bw == NULL || up == NULL || st == NULL || elems == NULL))
        snprintf(err, errlen, "%s/n1 lacks forward_s, backward_s, update_s, step_s or bucket_elements: not a run file", src->where);
    if (err[0] == '\0') {
        /* each is [iterations x ranks]: one read with another's row count would run past it */
        same_shape(n1, "forward_s", dfw, "step_s", d, err, errlen);
        same_shape(n1, "backward_s", dbw, "step_s", d, err, errlen);
        same_shape(n1, "update_s", dup, "step_s", d, err, errlen);
    }
    if (err[0] != '\0') {
        free(fw), free(bw), free(up), free(st), free(elems);
        H5Gclose(n1), H5Gclose(g);
        return -1;
    }
    src->prof.forward_s = median_of_max(fw, iters, ranks1);
    src->prof.backward_s = median_of_max(bw, iters, ranks1);
    src->prof.update_left_s = median_of_max(up, iters, ranks1);
    src->step1_s = median_of_max(st, iters, ranks1);
    double elements = 0;
    for (size_t k = 0; k < nb; k++) elements += elems[k];
    /* peak_tflops: NaN or 0 is unknown (a CPU, a GPU not in the table) */
    const struct report_figure time = {0, 0, 1e6}, step = {0, 1, 1e6}, tflops = {1, 0, 1e5}, count = {0, 1, 1e15};
    if (H5Aexists(n1, "peak_tflops") > 0) {
        hid_t a = H5Aopen(n1, "peak_tflops", H5P_DEFAULT);
        if (a < 0 || H5Aread(a, H5T_NATIVE_DOUBLE, &src->peak_tflops) < 0) src->peak_tflops = NAN;
        if (a >= 0) H5Aclose(a);
    }
    /* the figures the projection is made of, as the report checks its own: a file sealed
     * after it was changed reads as sealed */
    if (report_check_figure("the 1-GPU run's median forward_s", src->prof.forward_s, time, err, errlen) != 0 ||
        report_check_figure("the 1-GPU run's median backward_s", src->prof.backward_s, time, err, errlen) != 0 ||
        report_check_figure("the 1-GPU run's median update_s", src->prof.update_left_s, time, err, errlen) != 0 ||
        report_check_figure("the 1-GPU run's median step_s", src->step1_s, step, err, errlen) != 0 ||
        report_check_figure("the 1-GPU run's bucket_elements in all", elements, count, err, errlen) != 0 ||
        report_check_figure("the 1-GPU run's peak_tflops", src->peak_tflops, tflops, err, errlen) != 0) {
        free(fw), free(bw), free(up), free(st), free(elems);
        H5Gclose(n1), H5Gclose(g);
        return -1;
    }
    hid_t sys = H5Gopen2(f, "system", H5P_DEFAULT);
    h5_attr_str(sys, "device_name", src->device, sizeof src->device);
    H5Gclose(sys);
    /* bytes an element travels: the allreduce dtype of the file's configuration */
    char ar[16] = "", prec[16] = "", overlap[8] = "";
    hid_t cfg = H5Gopen2(f, "config", H5P_DEFAULT);
    h5_attr_str(cfg, "comm.allreduce_dtype", ar, sizeof ar);
    h5_attr_str(cfg, "train.precision", prec, sizeof prec);
    snprintf(src->precision, sizeof src->precision, "%s", prec);
    h5_attr_str(cfg, "comm.overlap", overlap, sizeof overlap);
    if (H5Aexists(cfg, "train.batch_per_gpu") > 0) {
        hid_t a = H5Aopen(cfg, "train.batch_per_gpu", H5P_DEFAULT);
        double b = 0;
        H5Aread(a, H5T_NATIVE_DOUBLE, &b);
        H5Aclose(a);
        src->batch_per_rank = isfinite(b) && b >= 1 && b <= REPORT_MAX_COUNT ? (int)b : 0;
        if (src->batch_per_rank == 0 || src->batch_per_rank != b)
            snprintf(err, errlen, "damaged: /config train.batch_per_gpu is %g; it must be a whole number from 1 to %d", b,
                     REPORT_MAX_COUNT);
    }
    H5Gclose(cfg);
    if (err[0] != '\0') {
        free(fw), free(bw), free(up), free(st), free(elems);
        H5Gclose(n1), H5Gclose(g);
        return -1;
    }
    const double per = strcmp(ar, "compute") == 0 && (strcmp(prec, "bf16") == 0 || strcmp(prec, "fp16") == 0) ? 2 : 4;
    src->prof.nbuckets = (int)nb;
    src->prof.overlap = strcmp(overlap, "off") != 0;
    src->bytes = malloc(nb * sizeof(double));
    src->ready = malloc(nb * sizeof(double));
    CHECK_ALLOC(src->bytes);
    CHECK_ALLOC(src->ready);
    double total = 0;
    for (size_t k = 0; k < nb; k++) total += (src->bytes[k] = elems[k] * per);
    size_t nr = 0;
    hsize_t dr[3];
    double *ready = read_doubles(n1, "bucket_ready_compute_only_s", 3, &nr, dr, err, errlen);
    if (ready != NULL && (dr[0] != iters || nr != iters * nb) && err[0] == '\0')
        snprintf(err, errlen, "damaged: %s/n1/bucket_ready_compute_only_s holds %zu figures; %llu iterations x %zu "
                 "buckets expected", src->where, nr, (unsigned long long)iters, nb);
    if (err[0] != '\0') {
        free(fw), free(bw), free(up), free(st), free(elems), free(ready);
        free(src->bytes), free(src->ready);
        src->bytes = src->ready = NULL;
        H5Gclose(n1), H5Gclose(g);
        return -1;
    }
    src->ready_measured = ready != NULL;
    double cum = 0, *col = malloc(iters * sizeof(double));
    CHECK_ALLOC(col);
    for (size_t k = 0; k < nb; k++) {
        cum += src->bytes[k];
        if (src->ready_measured) { /* from the step's start: less that step's forward */
            for (hsize_t i = 0; i < iters; i++) col[i] = ready[i * nb + k] - fw[i];
            src->ready[k] = stats_percentile(col, (int)iters, 50);
        } else {
            src->ready[k] = src->prof.backward_s * cum / total;
        }
    }
    free(col);
    update_after_comm(f, n1, nb > 0 ? elems[nb - 1] : 0.0, src);
    src->prof.ready_s = src->ready;
    src->prof.bytes = src->bytes;
    free(fw), free(bw), free(up), free(st), free(elems), free(ready);
    H5Gclose(n1);
    /* the measured runs at N > 1: their efficiency, and the largest one's interference and imbalance */
    struct names ns;
    list_groups(g, ".", &ns);
    int largest = 0;
    for (int i = 0; i < ns.n && err[0] == '\0'; i++) {
        const long N = is_count_group(ns.name[i]) ? strtol(ns.name[i] + 1, NULL, 10) : 0;
        if (N < 2 || N > REPORT_MAX_COUNT || src->nmeasured == MAX_GROUPS) continue;
        hid_t gn = H5Gopen2(g, ns.name[i], H5P_DEFAULT);
        double *s = read_doubles(gn, "step_s", 2, &n, d, err, errlen);
        if (s != NULL) {
            size_t na;
            hsize_t dn[3];
            double *alone = read_doubles(gn, "allreduce_alone_s", 2, &na, dn, err, errlen);
            const double alone_s = alone != NULL ? median_of_max(alone, dn[0], dn[1]) : NAN;
            free(alone);
            const double step_n = median_of_max(s, d[0], d[1]);
            if (err[0] == '\0' && step_n <= 0)
                snprintf(err, errlen, "damaged: %s/%s/step_s has a median of 0 s", src->where, ns.name[i]);
            src->measured_alone_s[src->nmeasured] = alone_s;
            src->measured_n[src->nmeasured] = (int)N;
            src->measured_eff[src->nmeasured++] = src->step1_s / step_n;
            if (err[0] == '\0' && (terms_from > 0 ? N == terms_from : N > largest)) {
                size_t m2;
                hsize_t d2[3], dc[3], dx[3];
                double *b = read_doubles(gn, "backward_s", 2, &m2, d2, err, errlen);
                double *cb = read_doubles(gn, "compute_only_backward_s", 2, &m2, dc, err, errlen);
                double *co = read_doubles(gn, "compute_only_s", 2, &m2, dx, err, errlen);
                if (cb != NULL) same_shape(gn, "compute_only_backward_s", dc, "backward_s", d2, err, errlen);
                if (co != NULL && b != NULL) same_shape(gn, "compute_only_s", dx, "backward_s", d2, err, errlen);
                if (cb == NULL && b != NULL && err[0] == '\0') { /* schema 2: forward and backward of the compute-only
                                                                  * pass together, less the real pass's forward */
                    hsize_t df[3], dr[3], du[3];
                    double *fb = read_doubles(gn, "compute_only_fwd_bwd_s", 2, &m2, df, err, errlen);
                    double *fr = read_doubles(gn, "forward_s", 2, &m2, dr, err, errlen);
                    double *up = read_doubles(gn, "update_s", 2, &m2, du, err, errlen);
                    if (fb != NULL) same_shape(gn, "compute_only_fwd_bwd_s", df, "backward_s", d2, err, errlen);
                    if (fr != NULL) same_shape(gn, "forward_s", dr, "backward_s", d2, err, errlen);
                    if (up != NULL) same_shape(gn, "update_s", du, "backward_s", d2, err, errlen);
                    m2 = (size_t)(d2[0] * d2[1]);
                    if (err[0] != '\0') {
                        /* refused below */
                    } else if (fb != NULL && fr != NULL) {
                        for (size_t e = 0; e < m2; e++) fb[e] -= fr[e];
                        cb = fb, fb = NULL;
                        src->interference_approx = "schema 2: its compute-only backward is its forward and backward "
                                                   "less the real pass's forward";
                    } else if (co != NULL && fr != NULL && up != NULL) { /* schema 1: the whole compute-only step */
                        for (size_t e = 0; e < m2; e++) fr[e] = co[e] - fr[e] - up[e];
                        cb = fr, fr = NULL;
                        src->interference_approx = "schema 1: its compute-only backward is its compute-only step less "
                                                   "the real pass's forward and update";
                    }
                    free(fb), free(fr), free(up);
                }
                if (err[0] == '\0' && b != NULL && cb != NULL && co != NULL) {
                    largest = (int)N;
                    src->interference = median_of_max(b, d2[0], d2[1]) / median_of_max(cb, d2[0], d2[1]) - 1.0;
                    src->interference_share = 0.0;
                    if (!isnan(alone_s) && src->prof.overlap)
                        src->interference_share = fmin(1.0, alone_s / median_of_max(cb, d2[0], d2[1]));
                    double *mean = malloc(d2[0] * sizeof(double));
                    CHECK_ALLOC(mean);
                    for (hsize_t it = 0; it < d2[0]; it++) {
                        mean[it] = 0;
                        for (hsize_t rk = 0; rk < d2[1]; rk++) mean[it] += co[it * d2[1] + rk] / (double)d2[1];
                    }
                    src->imbalance_s = median_of_max(co, d2[0], d2[1]) - stats_percentile(mean, (int)d2[0], 50);
                    free(mean);
                    src->forward_measured = src->interference_approx == NULL && strcmp(src->settings[6], "on") != 0;
                    src->forward_interference =
                        src->forward_measured ? forward_change(gn, src->prof.forward_s, err, errlen) : 0.0;
                    const struct report_figure ratio = {0, 0, 1e6}, share = {0, 0, 1.0};
                    if (err[0] == '\0') /* err says which, when one is not */
                        (void)(report_check_figure("the measured interference + 1", src->interference + 1.0, ratio, err,
                                                   errlen) != 0 ||
                               report_check_figure("the measured forward change + 1", src->forward_interference + 1.0,
                                                   ratio, err, errlen) != 0 ||
                               report_check_figure("the measured imbalance", src->imbalance_s, ratio, err, errlen) != 0 ||
                               report_check_figure("the measured share of backward beside communication",
                                                   src->interference_share, share, err, errlen) != 0);
                }
                free(b), free(cb), free(co);
            }
            free(s);
        }
        H5Gclose(gn);
    }
    if (err[0] != '\0') {
        H5Gclose(g);
        return -1;
    }
    src->interference_from = largest;
    H5Gclose(g);
    return 0;
}

/* the target's curves: collectives/<library>/<path>/n<N> of a dpscale comm file */
static int read_curves(hid_t f, struct allreduce_curve *c, int max, char *where, size_t wlen, char *err, size_t errlen)
{
    struct group_paths gp;
    struct names ns;
    err[0] = '\0';
    library_paths(f, "collectives", &gp);
    for (int j = 0; j < gp.n; j++) {
        const char *q = gp.path[j];
        list_groups(f, q, &ns);
        int nc = 0;
        for (int k = 0; k < ns.n && nc < max; k++) {
            hid_t g = H5Gopen2(f, q, H5P_DEFAULT), gn = H5Gopen2(g, ns.name[k], H5P_DEFAULT);
            size_t n = 0, nt = 0;
            hsize_t ds[3], d[3];
            double *sz = NULL, *t = NULL;
            const long gpus = is_count_group(ns.name[k]) ? strtol(ns.name[k] + 1, NULL, 10) : 0;
            if (gpus >= 1 && gpus <= REPORT_MAX_COUNT) {
                sz = read_doubles(gn, "size_bytes", 1, &n, ds, err, errlen);
                t = read_doubles(gn, "time_s", 2, &nt, d, err, errlen);
            }
            if (sz != NULL && t != NULL && err[0] == '\0' && d[0] != n)
                snprintf(err, errlen, "damaged: %s/%s/time_s has %llu rows for %zu size_bytes; one row per size", q,
                         ns.name[k], (unsigned long long)d[0], n);
            for (size_t s = 1; sz != NULL && err[0] == '\0' && s < n; s++)
                if (sz[s] <= sz[s - 1])
                    snprintf(err, errlen, "damaged: %s/%s/size_bytes do not ascend (%g after %g)", q, ns.name[k], sz[s],
                             sz[s - 1]);
            if (err[0] != '\0') {
                free(sz), free(t);
                H5Gclose(gn);
                H5Gclose(g);
                return -1;
            }
            if (sz != NULL && t != NULL && n > 0 && n <= PROJECT_MAX_POINTS) {
                struct allreduce_curve *cv = &c[nc++];
                memset(cv, 0, sizeof *cv);
                cv->gpus = (int)gpus;
                cv->nodes = 1;
                cv->npoints = (int)n;
                const hsize_t ranks = d[1];
                for (size_t s = 0; s < n; s++) { /* the slowest rank's time of each size */
                    cv->size_bytes[s] = sz[s];
                    cv->time_s[s] = 0;
                    for (hsize_t rk = 0; rk < ranks; rk++)
                        if (t[s * ranks + rk] > cv->time_s[s]) cv->time_s[s] = t[s * ranks + rk];
                    if (cv->time_s[s] <= 0 && err[0] == '\0') /* the curve is interpolated in log-log */
                        snprintf(err, errlen, "damaged: %s/%s/time_s is 0 at %g bytes; a measured time is above 0", q,
                                 ns.name[k], sz[s]);
                }
            }
            free(sz), free(t);
            H5Gclose(gn);
            H5Gclose(g);
            if (err[0] != '\0') return -1;
        }
        if (nc > 0) {
            snprintf(where, wlen, "%s", q);
            return nc;
        }
    }
    snprintf(err, errlen, "it has no allreduce curves (collectives/<library>/<path>/n<N>): make it with dpscale comm");
    return -1;
}

/* A projected row in /summary's terms: what the projection does not know is NaN. */
static void fill_row(struct run_summary *r, int gpus, int nodes, int batch, const struct projected_step *s, double step1_s)
{
#define NOT_KNOWN(name, ...) r->name = NAN;
    RUN_SUMMARY_DOUBLES(NOT_KNOWN)
#undef NOT_KNOWN
    snprintf(r->library, sizeof r->library, "proj");
    snprintf(r->path, sizeof r->path, "sim");
    r->nranks = gpus;
    r->nnodes = nodes;
    r->batch_per_rank = batch;
    r->global_batch = batch * gpus;
    r->step_median_s = s->step_s;
    r->forward_median_s = s->forward_s;
    r->backward_median_s = s->backward_s;
    r->comm_exposed_median_s = s->exposed_s;
    r->update_median_s = s->update_s;
    r->compute_only_s = s->forward_s + s->backward_s + s->update_s;
    r->allreduce_alone_s = s->comm_s;
    r->samples_per_s = batch * gpus / s->step_s;
    r->samples_per_s_per_rank = batch / s->step_s;
    r->speedup = gpus * step1_s / s->step_s;
    r->efficiency = step1_s / s->step_s;
}

/* Every result file project reads is read once through the report's reader first, in a
 * process of its own (report_read_isolated): what `dpscale report` refuses (checksums
 * that do not match, or removed; a figure negative, infinite or past any measurement; a
 * file that crashes the HDF5 library) is not projected either, nor copied into a
 * freshly sealed projection file (h5out_write_projection copies /config, /system and
 * /model from the source). 0, or -1 with "PATH: why" in err. */
#define PROJECT_READ_TIMEOUT_S 120.0
static int check_as_report(const char *path, char *err, size_t errlen)
{
    struct report_file *f = calloc(1, sizeof *f);
    CHECK_ALLOC(f);
    char why[700];
    const int rc = report_read_isolated(path, f, REPORT_READ_SEALED, PROJECT_READ_TIMEOUT_S, why, sizeof why);
    if (rc != 0) snprintf(err, errlen, "%.300s: %s", f->path[0] ? f->path : path, why);
    report_free(f);
    free(f);
    return rc != 0 ? -1 : 0;
}

/* A result file to read, opened read-only; a FIFO or a device is refused first (HDF5
 * would block on one). H5I_INVALID_HID when it cannot be opened, with why. */
static hid_t open_result(const char *path, char *why, size_t len)
{
    if (safe_file_check_input(path, "result file", why, len) != 0) return H5I_INVALID_HID;
    if (check_as_report(path, why, len) != 0) return H5I_INVALID_HID;
    const hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) snprintf(why, len, "%s cannot be opened as HDF5; give a dpscale result file", path);
    return f;
}

/* --interference-from: other result files' measured interference and imbalance. -1 when
 * all were read, else the index of the one that was not (err says why). */
static int read_calibrations(const char *const *paths, int n, int terms_from, struct source *cal, char *err,
                             size_t errlen)
{
    for (int k = 0; k < n; k++) {
        hid_t f = open_result(paths[k], err, errlen);
        if (f < 0) {
            return k;
        }
        const int rc = read_source(f, &cal[k], terms_from, err, errlen);
        H5Fclose(f);
        free(cal[k].ready), free(cal[k].bytes);
        cal[k].ready = cal[k].bytes = NULL;
        if (rc != 0) return k;
        if (cal[k].interference_from == 0) {
            if (terms_from > 0)
                snprintf(err, errlen, "it has no %d-GPU run with a compute-only pass to measure interference by; give "
                         "--interference-gpus a count it ran", terms_from);
            else
                snprintf(err, errlen, "it has no multi-GPU run with a compute-only pass to measure interference by");
            return k;
        }
    }
    return -1;
}

/* The terms the calibrations give RESULT: each term the median over them. Backward's
 * slowdown per share of backward with communication beside it, over those whose
 * communication ran beside a measurable share of backward (> 2 %: overlap on), else as a
 * fraction; the imbalance as a share of the 1-GPU step. */
struct calibration {
    double per_share, interference, imbalance_share;
};

static double median(const double *v, int n) { return stats_percentile(v, (size_t)n, 50); }

static struct calibration combine_calibrations(const struct source *cal, int n)
{
    double ps[MAX_CALIBRATIONS], in[MAX_CALIBRATIONS], im[MAX_CALIBRATIONS];
    int shared = 0;
    for (int k = 0; k < n; k++) {
        if (cal[k].interference_share > 0.02) ps[shared++] = cal[k].interference / cal[k].interference_share;
        in[k] = cal[k].interference;
        im[k] = cal[k].step1_s > 0 ? cal[k].imbalance_s / cal[k].step1_s : 0.0;
    }
    return (struct calibration){shared > 0 ? median(ps, shared) : 0.0, median(in, n), median(im, n)};
}

/* --output's rules are dpscale run's: a name ending in .h5, without control characters,
 * and nothing at it yet (a projection is never written over a file, nor through a link,
 * even a dangling one). Checked before anything is read, so that a bad name costs no
 * work; h5out_write_projection checks again as it writes. 0, or -1 with the fix in err. */
static int check_output(const char *output, char *err, size_t errlen)
{
    const char *base = strrchr(output, '/');
    base = base != NULL ? base + 1 : output;
    const size_t len = strlen(base);
    if (output[0] == '\0') {
        snprintf(err, errlen, "--output is empty; give the name of a new projection file, e.g. --output=projection.h5");
        return -1;
    }
    if (safe_file_has_control(output)) {
        snprintf(err, errlen, "--output holds a control character (a newline, ESC); give a plain name ending in .h5");
        return -1;
    }
    if (len <= 3 || strcmp(base + len - 3, ".h5") != 0) {
        snprintf(err, errlen, "--output %s: a projection file's name ends in .h5 after a name of its own; e.g. "
                 "--output=projection.h5", output);
        return -1;
    }
    char why[900];
    if (safe_file_check_target(output, "projection file", 0, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s; choose another --output", why);
        return -1;
    }
    return 0;
}

static void usage(FILE *out)
{
    if (log_rank() != 0) return; /* once per launch */
    fprintf(out,
            "usage: dpscale project RESULT.h5 --comm COMM.h5 | --system SYSTEM.ini [--no-interference]\n"
            "                       [--interference-from OTHER.h5 ...] [--interference-gpus N] [--output FILE.h5]\n\n"
            "RESULT's 1-GPU step projected onto each GPU count of a target's allreduce curves, beside\n"
            "RESULT's measured runs of the same count (docs/PROJECTION.md). Reads files only: no MPI,\n"
            "no GPU, no configuration keys. stdout: the projected step, communication and efficiency\n"
            "per GPU count, each labelled projected, with its inputs' sources.\n\n"
            "options:\n"
            "  --comm COMM.h5            the target's curves: a dpscale comm file measured there\n"
            "  --system SYSTEM.ini       or a catalog entry (configs/systems/): its busbw curves, and the\n"
            "                            compute scaled by the ratio of peak TFLOP/s when its GPU is not\n"
            "                            RESULT's (labelled so in every row)\n"
            "  --no-interference         leave out the slowdown and imbalance RESULT's multi-GPU run measured\n"
            "  --interference-from OTHER.h5\n"
            "                            take them from OTHER's multi-GPU run instead (another model measured\n"
            "                            on the same transport): its slowdown per share of backward with\n"
            "                            communication beside it, and its imbalance as a share of the step;\n"
            "                            up to 8 times: the median of their terms\n"
            "  --interference-gpus N     take them from the measured run at N GPUs (of RESULT, or of OTHER)\n"
            "                            instead of the largest: to predict a larger count from a smaller one\n"
            "  --output FILE.h5          also write the projection to a new HDF5 file (/summary and\n"
            "                            /projection) that dpscale report shows as projected, never beside\n"
            "                            measured rows of the same table; never overwritten\n"
            "  -h, --help                this help\n\n"
            "exit status: 0 projected (and written); 1 the output could not be written; 2 bad arguments,\n"
            "or a file that cannot be read as what it should be\n");
}

int cmd_project(int argc, char **argv)
{
    const char *result = NULL, *comm = NULL, *system = NULL, *output = NULL, *calibrations[MAX_CALIBRATIONS];
    const char *calibration = NULL; /* the first */
    int measured_terms = 1, terms_from = 0, ncal = 0;
    for (int i = 1; i < argc; i++) {
        const char *gpus_arg = NULL;
        if (strcmp(argv[i], "--interference-gpus") == 0 && i + 1 < argc) gpus_arg = argv[++i];
        else if (strncmp(argv[i], "--interference-gpus=", 20) == 0) gpus_arg = argv[i] + 20;
        if (gpus_arg != NULL) {
            char *end;
            const long v = strtol(gpus_arg, &end, 10);
            if (end == gpus_arg || *end != '\0' || v < 2 || v > 1 << 20) {
                report_message(stderr, "dpscale: error: project: --interference-gpus '%s' is not a GPU count of 2 or "
                               "more; give the count of the measured run to take the interference from, e.g. 2", gpus_arg);
                return EXIT_BAD_INPUT;
            }
            terms_from = (int)v;
        } else if (strcmp(argv[i], "--no-interference") == 0) measured_terms = 0;
        else if (strcmp(argv[i], "--comm") == 0 && i + 1 < argc) comm = argv[++i];
        else if (strncmp(argv[i], "--comm=", 7) == 0) comm = argv[i] + 7;
        else if ((strcmp(argv[i], "--interference-from") == 0 && i + 1 < argc) ||
                 strncmp(argv[i], "--interference-from=", 20) == 0) {
            if (ncal == MAX_CALIBRATIONS) {
                fprintf(stderr, "dpscale: error: project: more than %d --interference-from files; give at most %d\n",
                        MAX_CALIBRATIONS, MAX_CALIBRATIONS);
                return EXIT_BAD_INPUT;
            }
            calibrations[ncal++] = argv[i][19] == '=' ? argv[i] + 20 : argv[++i];
            calibration = calibrations[0];
        }
        else if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) output = argv[++i];
        else if (strncmp(argv[i], "--output=", 9) == 0) output = argv[i] + 9;
        else if (strcmp(argv[i], "--system") == 0 && i + 1 < argc) system = argv[++i];
        else if (strncmp(argv[i], "--system=", 9) == 0) system = argv[i] + 9;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        } else if (argv[i][0] != '-' && result == NULL) result = argv[i];
        else {
            report_message(stderr, "dpscale: error: project: unknown argument '%s'; usage: dpscale project RESULT.h5 --comm "
                           "COMM.h5", argv[i]);
            return EXIT_BAD_INPUT;
        }
    }
    if (result == NULL || (comm == NULL) == (system == NULL)) {
        fprintf(stderr, "dpscale: error: project needs a result file and one target, --comm FILE (a dpscale comm file "
                        "measured there) or --system FILE.ini (configs/systems/); usage: dpscale project RESULT.h5 "
                        "--comm COMM.h5 | --system SYSTEM.ini\n");
        return EXIT_BAD_INPUT;
    }
    char err[1024];
    if (output != NULL && check_output(output, err, sizeof err) != 0) {
        report_message(stderr, "dpscale: error: project: %s", err);
        return EXIT_BAD_INPUT;
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct system_desc *sysd = NULL;
    if (system != NULL) {
        sysd = calloc(1, sizeof *sysd);
        CHECK_ALLOC(sysd);
        if (system_read(system, sysd, err, sizeof err) != 0) {
            report_message(stderr, "dpscale: error: project: %s", err);
            free(sysd);
            return EXIT_BAD_INPUT;
        }
        comm = NULL;
    }
    char why[600];
    hid_t rf = open_result(result, why, sizeof why);
    hid_t cf = rf >= 0 && comm != NULL ? open_result(comm, why, sizeof why) : H5I_INVALID_HID;
    if (rf < 0 || (comm != NULL && cf < 0)) {
        report_message(stderr, "dpscale: error: project: %s", why);
        if (rf >= 0) H5Fclose(rf);
        if (cf >= 0) H5Fclose(cf);
        free(sysd);
        return EXIT_BAD_INPUT;
    }
    struct source src = {0};
    struct allreduce_curve curves[MAX_GROUPS];
    char where[240];
    int rc = EXIT_OK, nc = 0, bad_cal = -1;
    struct source cal[MAX_CALIBRATIONS];
    memset(cal, 0, sizeof cal);
    if (read_source(rf, &src, calibration == NULL ? terms_from : 0, err, sizeof err) != 0) {
        report_message(stderr, "dpscale: error: project: %s: %s", result, err);
        rc = EXIT_BAD_INPUT;
    } else if (calibration == NULL && terms_from > 0 && measured_terms && src.interference_from != terms_from) {
        report_message(stderr, "dpscale: error: project: %s has no %d-GPU run with a compute-only pass to measure "
                       "interference by; give --interference-gpus a count it ran", result, terms_from);
        rc = EXIT_BAD_INPUT;
    } else if ((bad_cal = read_calibrations(calibrations, ncal, terms_from, cal, err, sizeof err)) >= 0) {
        report_message(stderr, "dpscale: error: project: --interference-from %s: %s", calibrations[bad_cal], err);
        rc = EXIT_BAD_INPUT;
    } else if (sysd != NULL) {
        nc = sysd->ncurves;
        for (int i = 0; i < nc; i++) curves[i] = sysd->curves[i].curve;
        snprintf(where, sizeof where, "%s: %s", sysd->name, sysd->gpu);
    } else if ((nc = read_curves(cf, curves, MAX_GROUPS, where, sizeof where, err, sizeof err)) < 0) {
        report_message(stderr, "dpscale: error: project: %s: %s", comm, err);
        rc = EXIT_BAD_INPUT;
    }
    /* the compute on another GPU: scaled by the ratio of peak TFLOP/s, and said so */
    double scale = 1.0;
    char compute_note[512] = "the compute as measured";
    if (rc == EXIT_OK && sysd != NULL && strstr(src.device, sysd->gpu) == NULL && strstr(sysd->gpu, src.device) == NULL) {
        const int fp32 = strcmp(src.precision, "fp32") == 0 || strcmp(src.precision, "tf32") == 0;
        const double target = fp32 ? sysd->peak_tflops_fp32 : sysd->peak_tflops_bf16;
        if (src.peak_tflops <= 0 || target <= 0 || strcmp(src.precision, "tf32") == 0) {
            report_message(stderr, "dpscale: error: project: no peak TFLOP/s to scale the compute from %s to %s in %s; "
                           "give a %s with peak_tflops_%s", src.device, sysd->gpu, src.precision, system, fp32 ? "fp32" : "bf16");
            rc = EXIT_BAD_INPUT;
        } else {
            scale = src.peak_tflops / target;
            if (scale != 1.0) src.forward_interference = 0.0; /* the source GPU's: its clocks under its power cap */
            snprintf(compute_note, sizeof compute_note, "the compute SCALED by peak TFLOP/s, %s %.1f -> %s %.1f (x %.3f "
                     "the time): no 1-GPU run on that GPU", src.device, src.peak_tflops, sysd->gpu, target, scale);
        }
    }
    if (rc == EXIT_OK) {
        /* every text from a file or the catalog goes out escaped (report_message): a device name
         * or a curve's source with ESC or BEL in it never drives the terminal */
        report_message(stdout, "projection of %s (%s/n1) onto the allreduce curves of %s (%s)", result, src.where,
               comm != NULL ? comm : system, where);
        report_message(stdout, "  %s", compute_note);
        printf("  1-GPU step %.3f ms: forward %.3f, backward %.3f, update left %.3f; %d buckets, overlap %s, ready times %s\n",
               src.step1_s * 1e3, src.prof.forward_s * 1e3, src.prof.backward_s * 1e3, src.prof.update_left_s * 1e3,
               src.prof.nbuckets, src.prof.overlap ? "on" : "off", src.ready_measured ? "measured (bucket_ready_compute_only_s)"
                                                     : "assumed: spread over backward in proportion to the bytes");
        if (src.update_note[0]) printf("  %s\n", src.update_note);
        double per_share = 0.0;
        if (!measured_terms) {
            src.interference = src.imbalance_s = src.forward_interference = 0;
            printf("  interference and imbalance: left out (--no-interference)\n");
        } else if (ncal > 0) {
            const struct calibration c = combine_calibrations(cal, ncal);
            per_share = c.per_share;
            src.interference = per_share > 0.0 ? 0.0 : c.interference;
            /* forward's change is the power cap's (a GPU idling beside a long allreduce runs its
             * next forward faster): as much a property of the model's compute as of the transport,
             * it did not carry over between the presets (session 7: 19 of 24 with it, 20 without) */
            src.forward_interference = 0.0;
            src.imbalance_s = c.imbalance_share * src.step1_s;
            char by[160];
            if (ncal > 1) snprintf(by, sizeof by, "the median over the multi-GPU runs of %d --interference-from files", ncal);
            else snprintf(by, sizeof by, "measured by %.100s's %d-GPU run", calibration, cal[0].interference_from);
            if (per_share > 0.0)
                report_message(stdout, "  interference %.3f x the share of backward with communication beside it, "
                               "imbalance %.3f ms: %s; forward as at 1 GPU", per_share, src.imbalance_s * 1e3, by);
            else
                report_message(stdout, "  interference %.3f (backward) and imbalance %.3f ms: %s; forward as at 1 GPU",
                       src.interference, src.imbalance_s * 1e3, by);
            for (int k = 0; k < ncal; k++) {
                char differ[400];
                settings_differ(&src, &cal[k], differ, sizeof differ);
                if (differ[0])
                    report_message(stdout, "  NOTE: the calibration %s ran with other communication settings (%s): its "
                                   "interference may not carry over; calibrate with a run of the same settings",
                                   calibrations[k], differ);
            }
        } else if (src.interference_from > 0) {
            char fwd[96];
            if (scale != 1.0) snprintf(fwd, sizeof fwd, "forward as at 1 GPU (its change was measured on another GPU)");
            else if (!src.forward_measured) snprintf(fwd, sizeof fwd, "forward as at 1 GPU (not measured: %s)",
                                                     src.interference_approx ? "no compute-only backward" : "ZeRO-1");
            else snprintf(fwd, sizeof fwd, "forward %+.3f", src.forward_interference);
            printf("  interference %.3f (backward), %s, imbalance %.3f ms: measured by the file's %d-GPU run%s%s\n",
                   src.interference, fwd, src.imbalance_s * 1e3, src.interference_from,
                   src.interference_approx ? "; " : "", src.interference_approx ? src.interference_approx : "");
        } else {
            printf("  interference and imbalance: none measured (the file has no multi-GPU run): 0\n");
        }
        printf("GPUs    step_ms    comm_ms exposed_ms  projected  measured     error\n");
        struct run_summary *rows = calloc((size_t)nc + 1, sizeof *rows);
        char (*csrc)[H5OUT_PROJECTION_TEXT] = calloc((size_t)nc + 1, sizeof *csrc);
        char (*alone_note)[200] = calloc((size_t)nc + 1, sizeof *alone_note);
        CHECK_ALLOC(alone_note);
        CHECK_ALLOC(rows);
        CHECK_ALLOC(csrc);
        struct projected_step one;
        const struct projection_terms none = {scale, 0.0, 0.0, 0.0, 0.0};
        project_step(&src.prof, &none, NULL, &one);
        fill_row(&rows[0], 1, 1, src.batch_per_rank, &one, one.step_s);
        snprintf(csrc[0], sizeof csrc[0], "1 GPU: no communication");
        const struct projection_terms terms = {scale, src.interference, src.imbalance_s * scale, per_share,
                                               src.forward_interference};
        for (int i = 0; i < nc; i++) {
            struct projected_step s;
            project_step(&src.prof, &terms, &curves[i], &s);
            const double eff = one.step_s / s.step_s;
            fill_row(&rows[i + 1], curves[i].gpus, curves[i].nodes, src.batch_per_rank, &s, one.step_s);
            snprintf(csrc[i + 1], sizeof csrc[i + 1], "%d GPUs: %.150s%s%.80s", curves[i].gpus,
                     sysd != NULL ? sysd->curves[i].source : where, sysd != NULL && sysd->curves[i].derived[0] ? "; DERIVED: " : "",
                     sysd != NULL ? sysd->curves[i].derived : "");
            printf("%4d %10.3f %10.3f %10.3f %10.3f", curves[i].gpus, s.step_s * 1e3, s.comm_s * 1e3,
                   s.exposed_s * 1e3, eff);
            int found = 0;
            for (int k = 0; k < src.nmeasured && scale == 1.0; k++) /* a measurement of another GPU is no check */
                if (src.measured_n[k] == curves[i].gpus) {
                    printf(" %9.3f %+9.3f\n", src.measured_eff[k], eff - src.measured_eff[k]);
                    found = 1;
                    if (!isnan(src.measured_alone_s[k]) && src.measured_alone_s[k] > 0 && strcmp(src.settings[6], "on") != 0)
                        /* the curve's error, apart (ZeRO-1's reduce-scatter and all-gathers are not an allreduce) */
                        snprintf(alone_note[i], sizeof alone_note[i], "  the allreduces alone at %d GPUs: %.3f ms on "
                                 "the curve; %.3f ms measured by the file's run (x %.2f)\n",
                                 curves[i].gpus, s.comm_s * 1e3, src.measured_alone_s[k] * 1e3,
                                 s.comm_s / src.measured_alone_s[k]);
                }
            if (!found) printf("         -         -\n");
        }
        for (int i = 0; i < nc; i++) fputs(alone_note[i], stdout);
        free(alone_note);
        for (int i = 0; sysd != NULL && i < nc; i++)
            report_message(stdout, "  %d GPUs (%d node%s): %s%s%s", curves[i].gpus, curves[i].nodes, curves[i].nodes > 1 ? "s" : "",
                   sysd->curves[i].source, sysd->curves[i].derived[0] ? "; DERIVED: " : "", sysd->curves[i].derived);
        printf("efficiency = the projected 1-GPU step (%.3f ms) / the projected N-GPU step; measured = the file's own run\n",
               one.step_s * 1e3);
        if (output != NULL) { /* its provenance (version, command line, times) the writer collects */
            char target[600];
            snprintf(target, sizeof target, "%s (%s)", comm != NULL ? comm : system, where);
            const struct h5out_projection hp = {
                result, target, compute_note,
                src.ready_measured ? "measured (bucket_ready_compute_only_s)" : "assumed: spread over backward in proportion to the bytes",
                src.interference, src.imbalance_s * scale, rows, nc + 1, &csrc[0][0]};
            if (h5out_write_projection(output, &hp, err, sizeof err) != 0) {
                report_message(stderr, "dpscale: error: project: %s", err);
                rc = EXIT_FAILURE_RUN;
            } else {
                report_message(stdout, "wrote %s", output);
            }
        }
        free(rows);
        free(csrc);
    }
    free(src.ready);
    free(src.bytes);
    H5Fclose(rf);
    if (cf >= 0) H5Fclose(cf);
    free(sysd);
    return rc;
}

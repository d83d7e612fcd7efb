/* project_source.c — what a projection takes from RESULT (project_read.h): its 1-GPU
 * run's forward, backward, update and step, its buckets and when each was ready, the
 * update left after communication, and its measured multi-GPU runs: their efficiency,
 * and one run's interference (backward's slowdown beside communication, against the
 * compute-only pass), imbalance and change of forward. Files of schema 1 and 2, whose
 * runs have no compute-only backward, have it derived (interference_approx). The same
 * of each --interference-from file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/safe_file.h"
#include "project/project_read.h"
#include "report/report.h"
#include "result/result_in.h"
#include "train/stats.h"

const char *const project_setting_names[PROJECT_NSETTINGS] = {"path", "comm.shm_copy", "comm.nccl_max_ctas",
                                                              "comm.symmetric", "comm.register", "comm.allreduce_dtype",
                                                              "comm.shard_optimizer", "comm.overlap"};

#define GROUP_LEN 400 /* a run group's path: where, then n<N> */

/* median over the first dimension of the per-row maximum over the second ([rows x cols]) */
static double median_of_max(const double *v, size_t rows, size_t cols)
{
    double *m = malloc(rows * sizeof *m);
    CHECK_ALLOC(m);
    stats_max_over_ranks(v, (int)rows, (int)cols, m);
    const double r = stats_percentile(m, (int)rows, 50);
    free(m);
    return r;
}

/* 0 when the datasets a and b of the group have the same extent, else -1 with why in err */
static int same_shape(const struct result_in *f, const char *group, const char *a, const size_t da[3], const char *b,
                      const size_t db[3], char *err, size_t errlen)
{
    if (da[0] == db[0] && da[1] == db[1] && da[2] == db[2]) return 0;
    char where[200] = "?";
    result_in_name(f, group, where, sizeof where);
    if (err[0] == '\0')
        snprintf(err, errlen, "damaged: %s/%s is [%llu x %llu x %llu], but %s is [%llu x %llu x %llu]; they must be "
                 "the same iterations x ranks", where, a, (unsigned long long)da[0], (unsigned long long)da[1],
                 (unsigned long long)da[2], b, (unsigned long long)db[0], (unsigned long long)db[1],
                 (unsigned long long)db[2]);
    return -1;
}

static void read_settings(const struct result_in *f, struct project_source *src)
{
    const char *path = strrchr(src->where, '/');
    result_path_in(result_in_attr_int(f, "", "schema_version", 1), path != NULL ? path + 1 : src->where, src->settings[0],
                   sizeof src->settings[0]);
    const int has_config = result_in_is_group(f, "config");
    for (int i = 1; i < PROJECT_NSETTINGS; i++) {
        if (!has_config ||
            result_in_attr_str(f, "config", project_setting_names[i], src->settings[i], sizeof src->settings[i]) == 0)
            continue;
        const double v = result_in_attr_double(f, "config", project_setting_names[i]);
        snprintf(src->settings[i], sizeof src->settings[i], isnan(v) ? "?" : "%g", v);
    }
}

void project_settings_differ(const struct project_source *a, const struct project_source *b, char *out, size_t len)
{
    out[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < PROJECT_NSETTINGS && used < len; i++) {
        if (strcmp(a->settings[i], b->settings[i]) == 0) continue;
        if (i == 1 && strcmp(a->settings[0], "nvlink") == 0 && strcmp(b->settings[0], "nvlink") == 0) continue;
        used += (size_t)snprintf(out + used, len - used, "%s%s %s here, %s there", used ? "; " : "", project_setting_names[i],
                                 a->settings[i], b->settings[i]);
    }
}

const char *project_ready_words(const struct project_source *src)
{
    return src->ready_measured ? "measured (bucket_ready_compute_only_s)"
                               : "assumed: spread over backward in proportion to the bytes";
}

/* Forward's change in a multi-GPU run: its forward against the 1-GPU run's, less 1.
 * Beside a long exposed allreduce the GPUs idle under their power cap and the next
 * forward runs at higher clocks (2 x H200: up to 16 % faster through host memory); a
 * latency-bound step's forward waits on its rank's launches. Not for ZeRO-1, whose
 * forward also waits for the all-gathers (not a term of this model). */
static double forward_change(const struct result_in *f, const char *gn, double forward_1gpu_s, char *err, size_t errlen)
{
    size_t n, df[3];
    double *fw = result_in_figures(f, gn, "forward_s", 2, &n, df, err, errlen);
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
static void update_after_comm(const struct result_in *f, const char *n1, double last_bucket_elements,
                              struct project_source *src)
{
    char on[8] = "", sharded[8] = "";
    result_in_attr_str(f, n1, "overlap_update", on, sizeof on);
    result_in_attr_str(f, n1, "shard_optimizer", sharded, sizeof sharded);
    double last = 0, total = 0;
    const double u = src->prof.update_left_s;
    if (strcmp(on, "on") != 0 || strcmp(sharded, "on") == 0) return; /* already the whole update, or ZeRO-1 */
    if (result_in_model_last_stage(f, &last, &total) != 0) {
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

/* The 1-GPU run's figures, whole: [iterations x ranks] each, the buckets' elements and,
 * where measured, when each bucket was ready. */
struct one_gpu {
    double *fw, *bw, *up, *st, *elems, *ready;
    size_t iters, ranks, nb;
};

static void free_one_gpu(struct one_gpu *r)
{
    free(r->fw), free(r->bw), free(r->up), free(r->st), free(r->elems), free(r->ready);
}

/* The /system and /config the profile needs: the device, the precision, the overlap,
 * the batch and what an element of a bucket weighs in bytes (*per). -1 with err. */
static int read_launch(const struct result_in *f, struct project_source *src, double *per, char *err, size_t errlen)
{
    result_in_attr_str(f, "system", "device_name", src->device, sizeof src->device);
    /* bytes an element travels: the allreduce dtype of the file's configuration */
    char ar[16] = "", prec[16] = "", overlap[8] = "";
    result_in_attr_str(f, "config", "comm.allreduce_dtype", ar, sizeof ar);
    result_in_attr_str(f, "config", "train.precision", prec, sizeof prec);
    snprintf(src->precision, sizeof src->precision, "%s", prec);
    result_in_attr_str(f, "config", "comm.overlap", overlap, sizeof overlap);
    double b = 0;
    if (result_in_attr_first(f, "config", "train.batch_per_gpu", &b) != 0) { /* 0 when it cannot be read */
        src->batch_per_rank = isfinite(b) && b >= 1 && b <= REPORT_MAX_COUNT ? (int)b : 0;
        if (src->batch_per_rank == 0 || src->batch_per_rank != b)
            snprintf(err, errlen, "damaged: /config train.batch_per_gpu is %g; it must be a whole number from 1 to %d", b,
                     REPORT_MAX_COUNT);
    }
    if (err[0] != '\0') return -1;
    *per = strcmp(ar, "compute") == 0 && (strcmp(prec, "bf16") == 0 || strcmp(prec, "fp16") == 0) ? 2 : 4;
    src->prof.overlap = strcmp(overlap, "off") != 0;
    return 0;
}

/* The 1-GPU profile of group n1: the medians of its phases, its peak, its buckets and
 * their ready times, the update after communication. -1 with err. */
static int read_profile(const struct result_in *f, const char *n1, struct project_source *src, char *err, size_t errlen)
{
    struct one_gpu r = {0};
    size_t n, d[3] = {0}, dfw[3], dbw[3], dup[3], dnb[3];
    err[0] = '\0';
    r.fw = result_in_figures(f, n1, "forward_s", 2, &n, dfw, err, errlen);
    r.bw = result_in_figures(f, n1, "backward_s", 2, &n, dbw, err, errlen);
    r.up = result_in_figures(f, n1, "update_s", 2, &n, dup, err, errlen);
    r.st = result_in_figures(f, n1, "step_s", 2, &n, d, err, errlen);
    r.iters = d[0], r.ranks = d[1];
    r.elems = result_in_figures(f, n1, "bucket_elements", 1, &r.nb, dnb, err, errlen);
    if (err[0] == '\0' && (r.fw == NULL || r.bw == NULL || r.up == NULL || r.st == NULL || r.elems == NULL))
        snprintf(err, errlen, "%s/n1 lacks forward_s, backward_s, update_s, step_s or bucket_elements: not a run file", src->where);
    if (err[0] == '\0') {
        /* each is [iterations x ranks]: one read with another's row count would run past it */
        same_shape(f, n1, "forward_s", dfw, "step_s", d, err, errlen);
        same_shape(f, n1, "backward_s", dbw, "step_s", d, err, errlen);
        same_shape(f, n1, "update_s", dup, "step_s", d, err, errlen);
    }
    if (err[0] != '\0') goto fail;
    src->prof.forward_s = median_of_max(r.fw, r.iters, r.ranks);
    src->prof.backward_s = median_of_max(r.bw, r.iters, r.ranks);
    src->prof.update_left_s = median_of_max(r.up, r.iters, r.ranks);
    src->step1_s = median_of_max(r.st, r.iters, r.ranks);
    double elements = 0;
    for (size_t k = 0; k < r.nb; k++) elements += r.elems[k];
    /* peak_tflops: NaN or 0 is unknown (a CPU, a GPU not in the table) */
    const struct result_figure time = {0, 0, 1e6}, step = {0, 1, 1e6}, tflops = {1, 0, 1e5}, count = {0, 1, 1e15};
    if (result_in_attr_first(f, n1, "peak_tflops", &src->peak_tflops) < 0) src->peak_tflops = NAN;
    /* the figures the projection is made of, as the report checks its own: a file sealed
     * after it was changed reads as sealed */
    if (result_check_figure("the 1-GPU run's median forward_s", src->prof.forward_s, time, err, errlen) != 0 ||
        result_check_figure("the 1-GPU run's median backward_s", src->prof.backward_s, time, err, errlen) != 0 ||
        result_check_figure("the 1-GPU run's median update_s", src->prof.update_left_s, time, err, errlen) != 0 ||
        result_check_figure("the 1-GPU run's median step_s", src->step1_s, step, err, errlen) != 0 ||
        result_check_figure("the 1-GPU run's bucket_elements in all", elements, count, err, errlen) != 0 ||
        result_check_figure("the 1-GPU run's peak_tflops", src->peak_tflops, tflops, err, errlen) != 0)
        goto fail;
    double per;
    if (read_launch(f, src, &per, err, errlen) != 0) goto fail;
    src->prof.nbuckets = (int)r.nb;
    src->bytes = malloc(r.nb * sizeof(double));
    src->ready = malloc(r.nb * sizeof(double));
    CHECK_ALLOC(src->bytes);
    CHECK_ALLOC(src->ready);
    double total = 0;
    for (size_t k = 0; k < r.nb; k++) total += (src->bytes[k] = r.elems[k] * per);
    size_t nr = 0, dr[3];
    r.ready = result_in_figures(f, n1, "bucket_ready_compute_only_s", 3, &nr, dr, err, errlen);
    if (r.ready != NULL && (dr[0] != r.iters || nr != r.iters * r.nb) && err[0] == '\0')
        snprintf(err, errlen, "damaged: %s/n1/bucket_ready_compute_only_s holds %zu figures; %llu iterations x %zu "
                 "buckets expected", src->where, nr, (unsigned long long)r.iters, r.nb);
    if (err[0] != '\0') {
        project_source_free(src);
        goto fail;
    }
    src->ready_measured = r.ready != NULL;
    double cum = 0, *col = malloc(r.iters * sizeof(double));
    CHECK_ALLOC(col);
    for (size_t k = 0; k < r.nb; k++) {
        cum += src->bytes[k];
        if (src->ready_measured) { /* from the step's start: less that step's forward */
            for (size_t i = 0; i < r.iters; i++) col[i] = r.ready[i * r.nb + k] - r.fw[i];
            src->ready[k] = stats_percentile(col, (int)r.iters, 50);
        } else {
            src->ready[k] = src->prof.backward_s * cum / total;
        }
    }
    free(col);
    update_after_comm(f, n1, r.nb > 0 ? r.elems[r.nb - 1] : 0.0, src);
    src->prof.ready_s = src->ready;
    src->prof.bytes = src->bytes;
    free_one_gpu(&r);
    return 0;
fail:
    free_one_gpu(&r);
    return -1;
}

/* A schema 1 or 2 run's compute-only backward, derived from what it measured (NULL
 * when it cannot be): schema 2's compute-only forward and backward together, less the
 * real pass's forward; or schema 1's whole compute-only step `co`, less the real pass's
 * forward and update. Each of the shape of backward_s (db); *approx says which. */
static double *derived_backward(const struct result_in *f, const char *gn, const double *co, const size_t db[3],
                                const char **approx, char *err, size_t errlen)
{
    size_t m, df[3], dr[3], du[3];
    double *fb = result_in_figures(f, gn, "compute_only_fwd_bwd_s", 2, &m, df, err, errlen);
    double *fr = result_in_figures(f, gn, "forward_s", 2, &m, dr, err, errlen);
    double *up = result_in_figures(f, gn, "update_s", 2, &m, du, err, errlen);
    double *cb = NULL;
    if (fb != NULL) same_shape(f, gn, "compute_only_fwd_bwd_s", df, "backward_s", db, err, errlen);
    if (fr != NULL) same_shape(f, gn, "forward_s", dr, "backward_s", db, err, errlen);
    if (up != NULL) same_shape(f, gn, "update_s", du, "backward_s", db, err, errlen);
    m = db[0] * db[1];
    if (err[0] != '\0') {
        /* refused by the caller */
    } else if (fb != NULL && fr != NULL) {
        for (size_t e = 0; e < m; e++) fb[e] -= fr[e];
        cb = fb, fb = NULL;
        *approx = "schema 2: its compute-only backward is its forward and backward less the real pass's forward";
    } else if (co != NULL && fr != NULL && up != NULL) {
        for (size_t e = 0; e < m; e++) fr[e] = co[e] - fr[e] - up[e];
        cb = fr, fr = NULL;
        *approx = "schema 1: its compute-only backward is its compute-only step less the real pass's forward and update";
    }
    free(fb), free(fr), free(up);
    return cb;
}

/* The interference, imbalance and forward change of the run at group gn (N GPUs,
 * allreduce alone alone_s or NaN), when it has a compute-only pass: *measured 1 then. */
static void read_interference(const struct result_in *f, const char *gn, double alone_s, struct project_source *src,
                              int *measured, char *err, size_t errlen)
{
    size_t m, d2[3] = {0}, dc[3], dx[3];
    double *b = result_in_figures(f, gn, "backward_s", 2, &m, d2, err, errlen);
    double *cb = result_in_figures(f, gn, "compute_only_backward_s", 2, &m, dc, err, errlen);
    double *co = result_in_figures(f, gn, "compute_only_s", 2, &m, dx, err, errlen);
    *measured = 0;
    if (cb != NULL) same_shape(f, gn, "compute_only_backward_s", dc, "backward_s", d2, err, errlen);
    if (co != NULL && b != NULL) same_shape(f, gn, "compute_only_s", dx, "backward_s", d2, err, errlen);
    if (cb == NULL && b != NULL && err[0] == '\0') cb = derived_backward(f, gn, co, d2, &src->interference_approx, err, errlen);
    if (err[0] == '\0' && b != NULL && cb != NULL && co != NULL) {
        *measured = 1;
        src->interference = median_of_max(b, d2[0], d2[1]) / median_of_max(cb, d2[0], d2[1]) - 1.0;
        src->interference_share = 0.0;
        if (!isnan(alone_s) && src->prof.overlap)
            src->interference_share = fmin(1.0, alone_s / median_of_max(cb, d2[0], d2[1]));
        double *mean = malloc(d2[0] * sizeof(double));
        CHECK_ALLOC(mean);
        for (size_t it = 0; it < d2[0]; it++) {
            mean[it] = 0;
            for (size_t rk = 0; rk < d2[1]; rk++) mean[it] += co[it * d2[1] + rk] / (double)d2[1];
        }
        src->imbalance_s = median_of_max(co, d2[0], d2[1]) - stats_percentile(mean, (int)d2[0], 50);
        free(mean);
        src->forward_measured = src->interference_approx == NULL && strcmp(src->settings[6], "on") != 0;
        src->forward_interference = src->forward_measured ? forward_change(f, gn, src->prof.forward_s, err, errlen) : 0.0;
        const struct result_figure ratio = {0, 0, 1e6}, share = {0, 0, 1.0};
        if (err[0] == '\0') /* err says which, when one is not */
            (void)(result_check_figure("the measured interference + 1", src->interference + 1.0, ratio, err, errlen) != 0 ||
                   result_check_figure("the measured forward change + 1", src->forward_interference + 1.0, ratio, err,
                                       errlen) != 0 ||
                   result_check_figure("the measured imbalance", src->imbalance_s, ratio, err, errlen) != 0 ||
                   result_check_figure("the measured share of backward beside communication", src->interference_share,
                                       share, err, errlen) != 0);
    }
    free(b), free(cb), free(co);
}

/* The measured runs at N > 1: their efficiency, and the interference and imbalance of
 * the run at terms_from GPUs or (0) the largest. -1 with err. */
static int read_measured(const struct result_in *f, struct project_source *src, int terms_from, char *err, size_t errlen)
{
    char names[PROJECT_MAX_GROUPS][RESULT_NAME_LEN];
    const int nnames = result_in_children(f, src->where, names, PROJECT_MAX_GROUPS);
    int largest = 0;
    for (int i = 0; i < nnames && err[0] == '\0'; i++) {
        const long N = result_count_of(names[i]);
        if (N < 2 || N > REPORT_MAX_COUNT || src->nmeasured == PROJECT_MAX_GROUPS) continue;
        char gn[GROUP_LEN];
        snprintf(gn, sizeof gn, "%.255s/%.63s", src->where, names[i]); /* each as long as it can be */
        size_t n, d[3];
        double *s = result_in_figures(f, gn, "step_s", 2, &n, d, err, errlen);
        if (s == NULL) continue;
        size_t na, dn[3];
        double *alone = result_in_figures(f, gn, "allreduce_alone_s", 2, &na, dn, err, errlen);
        const double alone_s = alone != NULL ? median_of_max(alone, dn[0], dn[1]) : NAN;
        free(alone);
        const double step_n = median_of_max(s, d[0], d[1]);
        free(s);
        if (err[0] == '\0' && step_n <= 0) snprintf(err, errlen, "damaged: %s/%s/step_s has a median of 0 s", src->where, names[i]);
        src->measured_alone_s[src->nmeasured] = alone_s;
        src->measured_n[src->nmeasured] = (int)N;
        src->measured_eff[src->nmeasured++] = src->step1_s / step_n;
        int measured = 0;
        if (err[0] == '\0' && (terms_from > 0 ? N == terms_from : N > largest))
            read_interference(f, gn, alone_s, src, &measured, err, errlen);
        if (measured) largest = (int)N;
    }
    if (err[0] != '\0') return -1;
    src->interference_from = largest;
    return 0;
}

int project_read_source(const struct result_in *f, struct project_source *src, int terms_from, char *err, size_t errlen)
{
    char groups[PROJECT_MAX_GROUPS][RESULT_GROUP_LEN];
    const int ngroups = result_in_count_groups(f, "runs", groups, PROJECT_MAX_GROUPS);
    int k = 0;
    for (char n1[200]; k < ngroups; k++) {
        snprintf(n1, sizeof n1, "%.159s/n1", groups[k]); /* as long as it can be */
        if (result_in_exists(f, n1)) break;
    }
    if (k == ngroups) {
        snprintf(err, errlen, "it has no 1-GPU run (runs/<library>/<path>/n1); run it with --sweep including 1");
        return -1;
    }
    snprintf(src->where, sizeof src->where, "%s", groups[k]);
    read_settings(f, src); /* before the runs: ZeRO-1 decides the forward term */
    char n1[GROUP_LEN];
    snprintf(n1, sizeof n1, "%s/n1", src->where);
    if (read_profile(f, n1, src, err, errlen) != 0) return -1;
    return read_measured(f, src, terms_from, err, errlen);
}

void project_source_free(struct project_source *src)
{
    free(src->ready), free(src->bytes);
    src->ready = src->bytes = NULL;
}

/* Every file is read as the report reads it first (project_read.h). 0, or -1 with
 * "PATH: why" in err. */
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

struct result_in *project_open(const char *path, char *why, size_t len)
{
    if (safe_file_check_input(path, "result file", why, len) != 0) return NULL;
    if (check_as_report(path, why, len) != 0) return NULL;
    char err[512];
    struct result_in *f = result_in_open(path, err, sizeof err);
    if (f == NULL) snprintf(why, len, "%s cannot be opened as HDF5; give a dpscale result file", path);
    return f;
}

int project_read_calibrations(const char *const *paths, int n, int terms_from, struct project_source *cal, char *err,
                              size_t errlen)
{
    for (int k = 0; k < n; k++) {
        struct result_in *f = project_open(paths[k], err, errlen);
        if (f == NULL) return k;
        const int rc = project_read_source(f, &cal[k], terms_from, err, errlen);
        result_in_close(f);
        project_source_free(&cal[k]);
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

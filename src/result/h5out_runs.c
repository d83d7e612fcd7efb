/* h5out_runs.c — what a launch measured (h5out_internal.h): each training run under
 * /runs/<library>/<path>/n<N> (its settings and figures as attributes, its timings per
 * step and rank as datasets), the /summary table of them all, and each allreduce sweep
 * of dpscale comm under /collectives/<library>/<path>/n<N>. Groups are named after the
 * library in force and the path asked for (comm.path, "auto" included). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "result/h5out_internal.h"
#include "model/step.h"

hid_t h5out_run_group(struct h5w *w, hid_t parent, const char *library, const char *path, int nranks)
{
    char name[32];
    hid_t lg = group_open_or_create(w, parent, library);
    hid_t pg = group_open_or_create(w, lg, path);
    snprintf(name, sizeof name, "n%d", nranks);
    hid_t g = h5_group_create(w, pg, name);
    h5_close(pg);
    h5_close(lg);
    return g;
}

/* A count held as a double (a byte count, an element count): an int64 in the file. */
static int64_t *as_int64(const double *v, size_t n)
{
    int64_t *out = calloc(n + 1, sizeof *out);
    CHECK_ALLOC(out);
    for (size_t i = 0; i < n; i++) out[i] = (int64_t)llround(v[i]);
    return out;
}

void h5out_run(struct h5w *w, hid_t runs_group, const struct config *cfg, const struct run_result *r,
               const struct run_summary *s)
{
    hid_t g = h5out_run_group(w, runs_group, r->library, r->path, r->nranks);
    attr_i64(w, g, "nranks", r->nranks);
    attr_i64(w, g, "nodes", r->nnodes);
    attr_str(w, g, "library", r->library);
    attr_str(w, g, "path", r->path);
    attr_i64(w, g, "communicates", r->communicates);
    attr_str(w, g, "overlap_update", cfg->overlap_update ? "on" : "off");
    attr_str(w, g, "shard_optimizer", cfg->shard_optimizer ? "on" : "off");
    attr_str(w, g, "register", cfg->register_buffers ? "on" : "off");
    attr_str(w, g, "symmetric", cfg->symmetric ? "on" : "off");
    attr_str(w, g, "cta_policy", config_value_name(cfg, "comm", "cta_policy"));
    attr_i64(w, g, "gemm_sm_margin", cfg->gemm_sm_margin);
    attr_str(w, g, "scaling", config_value_name(cfg, "train", "scaling"));
    attr_str(w, g, "precision", config_value_name(cfg, "train", "precision"));
    attr_str(w, g, "overlap", cfg->overlap ? "on" : "off");
    attr_f64(w, g, "bucket_mb", cfg->bucket_mb);
    attr_f64(w, g, "first_bucket_mb", cfg->first_bucket_mb);
    attr_i64(w, g, "nbuckets", r->nbuckets);
    attr_i64(w, g, "nccl_max_ctas", cfg->nccl_max_ctas);
    attr_f64(w, g, "nvlink_tx_bytes", r->nvlink_tx_bytes);
    attr_f64(w, g, "nvlink_expected_bytes", r->nvlink_expected_bytes);
    attr_str(w, g, "path_proof", r->path_proof);
    attr_str(w, g, "allreduce_dtype", r->allreduce_dtype);
    attr_str(w, g, "allreduce_op", config_value_name(cfg, "comm", "allreduce_op"));
    attr_i64(w, g, "batch_per_rank", r->batch_per_rank);
    attr_i64(w, g, "global_batch", r->global_batch);
    attr_i64(w, g, "warmup_steps", r->steps - r->iters);
    attr_i64(w, g, "timed_steps", r->iters);
    attr_i64(w, g, "parameters", (long long)r->nparams);
    attr_f64(w, g, "gemm_flops_per_step", r->gemm_flops_per_step);
    attr_i64(w, g, "allreduce_bytes", llround(r->allreduce_bytes));
    attr_i64(w, g, "gather_bytes", llround(r->gather_bytes));
    attr_f64(w, g, "peak_tflops", r->peak_tflops > 0 ? r->peak_tflops : NAN);
    attr_f64(w, g, "energy_j", r->energy_j);
    attr_f64(w, g, "timed_wall_s", r->timed_wall_s);
    attr_f64(w, g, "host_enqueue_s", r->host_enqueue_s);
#define RUN_ATTR(name, ...) attr_f64(w, g, #name, s->name);
    RUN_SUMMARY_DOUBLES(RUN_ATTR)
#undef RUN_ATTR
    attr_f64(w, g, "params_abs_sum", r->params_abs_sum);
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->params_hash);
    attr_str(w, g, "params_hash", hash);
    attr_f64(w, g, "replica_max_abs_diff", r->replica_max_abs_diff);

    const enum schema_table t = SCHEMA_RUN;
    hsize_t dims[2] = {(hsize_t)r->iters, (hsize_t)r->nranks};
    for (int p = 0; p < NPHASES; p++) dataset_write(w, g, t, phase_names[p], H5T_NATIVE_DOUBLE, 2, dims, r->times[p]);
    hsize_t steps[1] = {(hsize_t)r->steps};
    dataset_write(w, g, t, "loss", H5T_NATIVE_DOUBLE, 1, steps, r->loss);
    hsize_t reps[2] = {(hsize_t)r->allreduce_reps, (hsize_t)r->nranks};
    dataset_write(w, g, t, "allreduce_alone_s", H5T_NATIVE_DOUBLE, 2, reps, r->allreduce_alone);
    dataset_write(w, g, t, "compute_only_s", H5T_NATIVE_DOUBLE, 2, dims, r->compute_only);
    dataset_write(w, g, t, "compute_only_backward_s", H5T_NATIVE_DOUBLE, 2, dims, r->compute_only_backward);
    hsize_t nb[1] = {(hsize_t)r->nbuckets}, ib[3] = {(hsize_t)r->iters, (hsize_t)r->nranks, (hsize_t)r->nbuckets};
    int64_t *elements = as_int64(r->bucket_count, (size_t)r->nbuckets);
    dataset_write(w, g, t, "bucket_elements", H5T_NATIVE_INT64, 1, nb, elements);
    free(elements);
    dataset_write(w, g, t, "bucket_start_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_start);
    dataset_write(w, g, t, "bucket_end_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_end);
    dataset_write(w, g, t, "bucket_ready_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_ready);
    dataset_write(w, g, t, "bucket_ready_compute_only_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_ready_compute_only);
    if (r->params != NULL) {
        hsize_t np[1] = {(hsize_t)r->nparams};
        dataset_write(w, g, t, "params", H5T_NATIVE_FLOAT, 1, np, r->params);
    }
    h5_close(g);
}

/* /summary: one row per run, a compound table (one call in pandas or h5py), its
 * columns schema.h's SCHEMA_SUMMARY_* in that order. */
void h5out_summary(struct h5w *w, hid_t file, const struct run_summary *s, int n, const struct h5out_labels *l)
{
    struct h5w_table tb = {.rows = n > 0 ? (size_t)n : 0};
    /* each column's value for row r, by its name in schema.h: a column added there without one here does not compile */
#define library_of r->library
#define path_of r->path
#define model_of l->model
#define precision_of l->precision
#define overlap_of l->overlap
#define shard_optimizer_of l->shard_optimizer
#define system_label_of l->system_label
#define nranks_of r->nranks
#define nodes_of r->nnodes
#define gpus_per_node_of (r->nnodes <= 1 || l->ranks_per_node <= 0 ? r->nranks : r->nranks < l->ranks_per_node ? r->nranks : l->ranks_per_node)
#define batch_per_rank_of r->batch_per_rank
#define global_batch_of r->global_batch
#define COLUMN(type, kind, name, value)                                                                             \
    {                                                                                                               \
        type *col = h5w_table_column(&tb, #name, kind);                                                             \
        for (size_t k = 0; k < tb.rows; k++) {                                                                      \
            const struct run_summary *r = &s[k];                                                                    \
            (void)r; /* the labels' columns are the same on every row */                                            \
            col[k] = value;                                                                                         \
        }                                                                                                           \
    }
#define TEXT_COLUMN(name, ...) COLUMN(const char *, H5W_TEXT, name, name##_of)
#define INT_COLUMN(name, ...) COLUMN(int64_t, H5W_I64, name, name##_of)
#define REAL_COLUMN(name, ...) COLUMN(double, H5W_F64, name, r->name)
    SCHEMA_SUMMARY_TEXT(TEXT_COLUMN)
    SCHEMA_SUMMARY_INTS(INT_COLUMN)
    SCHEMA_SUMMARY_REALS(REAL_COLUMN)
#undef TEXT_COLUMN
#undef INT_COLUMN
#undef REAL_COLUMN
#undef COLUMN
    h5w_table_write(w, file, "summary", SCHEMA_SUMMARY, &tb);
}

/* /collectives/<library>/<path>/n<N>: one allreduce sweep of dpscale comm. */
void h5out_collective(struct h5w *w, hid_t parent, const struct collective_result *r)
{
    hid_t g = h5out_run_group(w, parent, r->library, r->path, r->nranks);
    attr_str(w, g, "collective", "allreduce");
    attr_str(w, g, "op", "sum");
    attr_str(w, g, "dtype", r->dtype);
    attr_i64(w, g, "nranks", r->nranks);
    attr_i64(w, g, "nodes", r->nnodes);
    attr_i64(w, g, "in_place", r->in_place);
    attr_i64(w, g, "iters", r->iters);
    attr_i64(w, g, "warmup", r->warmup);
    const enum schema_table t = SCHEMA_COLLECTIVE;
    hsize_t ns[1] = {(hsize_t)r->nsizes}, nr[2] = {(hsize_t)r->nsizes, (hsize_t)r->nranks};
    int64_t *sizes = as_int64(r->size_bytes, (size_t)r->nsizes), *wrong = as_int64(r->wrong, (size_t)r->nsizes);
    dataset_write(w, g, t, "size_bytes", H5T_NATIVE_INT64, 1, ns, sizes);
    dataset_write(w, g, t, "time_s", H5T_NATIVE_DOUBLE, 2, nr, r->time_s);
    dataset_write(w, g, t, "algbw_GBps", H5T_NATIVE_DOUBLE, 1, ns, r->algbw_gbps);
    dataset_write(w, g, t, "busbw_GBps", H5T_NATIVE_DOUBLE, 1, ns, r->busbw_gbps);
    dataset_write(w, g, t, "wrong_elements", H5T_NATIVE_INT64, 1, ns, wrong);
    free(sizes);
    free(wrong);
    h5_close(g);
}

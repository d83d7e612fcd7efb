/* h5out.c — the layout of the result file (h5out.h): root, /system, /config, /model,
 * /runs, /summary, /collectives, /dump, and a projection's file, written through h5w.h
 * (sticky errors, the file built in memory and written out all-or-nothing). */
#include "h5out.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "h5w.h"
#include "step.h"

/* parent/<library>/<path>/n<N>, created (the library and path groups shared). */
static hid_t run_group_create(struct h5w *w, hid_t parent, const char *library, const char *path, int nranks)
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

static void write_root(struct h5w *w, hid_t file, const struct h5out_system *sys)
{
    attr_i64(w, file, "schema_version", H5OUT_SCHEMA_VERSION);
    attr_str(w, file, "dpscale_version", sys->dpscale_version);
    attr_str(w, file, "created_utc", sys->created_utc);
    attr_str(w, file, "command_line", sys->command_line);
    attr_str(w, file, "job_id", sys->job_id);
    attr_str(w, file, "writer", "dpscale");
}
static void matrix_write(struct h5w *w, hid_t g, const char *name, const double (*m)[TOPO_MAX_GPUS], int n,
                         const char *units)
{
    double flat[TOPO_MAX_GPUS * TOPO_MAX_GPUS];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) flat[i * n + j] = m[i][j];
    hsize_t dims[2] = {(hsize_t)n, (hsize_t)n};
    dataset_write(w, g, name, H5T_NATIVE_DOUBLE, 2, dims, flat, units);
}

/* /system/topology: the link matrix, each GPU's PCIe, NUMA and NVLinks, the network
 * adapters, and the peer copy matrices when they were measured. */
static void write_topology(struct h5w *w, hid_t system, const struct topo_node *t, const struct peer_matrix *p)
{
    hid_t g = h5_group_create(w, system, "topology");
    const int n = t->ngpus;
    attr_str(w, g, "source", t->source);
    attr_i64(w, g, "ngpus", n);
    static char links[TOPO_MAX_GPUS * TOPO_MAX_GPUS][8], names[TOPO_MAX_GPUS][96], buses[TOPO_MAX_GPUS][32],
        cpus[TOPO_MAX_GPUS][128], nic_names[TOPO_MAX_NICS][32], nic_layers[TOPO_MAX_NICS][16], nic_states[TOPO_MAX_NICS][16];
    int64_t nv[TOPO_MAX_GPUS * TOPO_MAX_GPUS], gen[TOPO_MAX_GPUS], width[TOPO_MAX_GPUS], numa[TOPO_MAX_GPUS],
        up[TOPO_MAX_GPUS], nic_numa[TOPO_MAX_NICS];
    double rate[TOPO_MAX_NICS];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < n; j++) {
            topo_link_label(t, i, j, links[i * n + j], sizeof links[0]);
            nv[i * n + j] = t->nvlinks[i][j];
        }
        snprintf(names[i], sizeof names[i], "%s", t->gpu[i].name);
        snprintf(buses[i], sizeof buses[i], "%s", t->gpu[i].bus_id);
        snprintf(cpus[i], sizeof cpus[i], "%s", t->gpu[i].cpu_affinity);
        gen[i] = t->gpu[i].pcie_gen;
        width[i] = t->gpu[i].pcie_width;
        numa[i] = t->gpu[i].numa_node;
        up[i] = t->gpu[i].nvlinks_up;
    }
    hsize_t nn[2] = {(hsize_t)n, (hsize_t)n}, n1[1] = {(hsize_t)n};
    hid_t type = CHECK_H5(w, H5Tcopy(H5T_C_S1));
    CHECK_H5(w, H5Tset_size(type, sizeof links[0]));
    dataset_write(w, g, "link", type, 2, nn, links, NULL);
    h5_close(type);
    dataset_write(w, g, "nvlink_count", H5T_NATIVE_INT64, 2, nn, nv, NULL);
    strings_write(w, g, "gpu_name", &names[0][0], n, sizeof names[0]);
    strings_write(w, g, "gpu_bus_id", &buses[0][0], n, sizeof buses[0]);
    strings_write(w, g, "gpu_cpu_affinity", &cpus[0][0], n, sizeof cpus[0]);
    dataset_write(w, g, "gpu_pcie_gen", H5T_NATIVE_INT64, 1, n1, gen, NULL);
    dataset_write(w, g, "gpu_pcie_width", H5T_NATIVE_INT64, 1, n1, width, NULL);
    dataset_write(w, g, "gpu_numa_node", H5T_NATIVE_INT64, 1, n1, numa, NULL);
    dataset_write(w, g, "gpu_nvlinks_up", H5T_NATIVE_INT64, 1, n1, up, NULL);
    for (int i = 0; i < t->nnics; i++) {
        snprintf(nic_names[i], sizeof nic_names[i], "%s", t->nic[i].name);
        snprintf(nic_layers[i], sizeof nic_layers[i], "%s", t->nic[i].link_layer);
        snprintf(nic_states[i], sizeof nic_states[i], "%s", t->nic[i].state);
        rate[i] = t->nic[i].rate_gbps;
        nic_numa[i] = t->nic[i].numa_node;
    }
    hsize_t nk[1] = {(hsize_t)t->nnics};
    strings_write(w, g, "nic_name", &nic_names[0][0], t->nnics, sizeof nic_names[0]);
    strings_write(w, g, "nic_link_layer", &nic_layers[0][0], t->nnics, sizeof nic_layers[0]);
    strings_write(w, g, "nic_state", &nic_states[0][0], t->nnics, sizeof nic_states[0]);
    dataset_write(w, g, "nic_rate_gbps", H5T_NATIVE_DOUBLE, 1, nk, rate, "Gb/s");
    dataset_write(w, g, "nic_numa_node", H5T_NATIVE_INT64, 1, nk, nic_numa, NULL);
    if (p != NULL) {
        matrix_write(w, g, "peer_unidir_gbps", p->unidir_gbps, p->n, "GB/s");
        matrix_write(w, g, "peer_bidir_gbps", p->bidir_gbps, p->n, "GB/s");
        matrix_write(w, g, "peer_host_gbps", p->host_gbps, p->n, "GB/s");
        matrix_write(w, g, "peer_latency_us", p->latency_us, p->n, "us");
    }
    h5_close(g);
}

static void write_system(struct h5w *w, hid_t file, const struct h5out_system *sys)
{
    hid_t g = h5_group_create(w, file, "system");
    attr_str(w, g, "backend", sys->backend);
    attr_str(w, g, "device_name", sys->device_name);
    attr_str(w, g, "backend_library", sys->backend_library);
    attr_str(w, g, "mpi_library", sys->mpi_library);
    attr_str(w, g, "driver", sys->driver);
    attr_i64(w, g, "threads_per_rank", sys->threads_per_rank);
    attr_i64(w, g, "world_size", sys->world_size);
    attr_i64(w, g, "nodes", sys->nnodes);
    hid_t type = CHECK_H5(w, H5Tcopy(H5T_C_S1));
    CHECK_H5(w, H5Tset_size(type, 64));
    hsize_t dims[1] = {(hsize_t)sys->world_size};
    dataset_write(w, g, "hosts", type, 1, dims, sys->hosts, NULL);
    h5_close(type);
    attr_str(w, g, "library", sys->library);
    attr_str(w, g, "path", sys->path);
    attr_str(w, g, "nccl_env", sys->nccl_env);
    if (sys->topo != NULL) write_topology(w, g, sys->topo, sys->peers);
    h5_close(g);
}

static void write_config(struct h5w *w, hid_t file, const struct config *cfg)
{
    hid_t g = h5_group_create(w, file, "config");
    attr_str(w, g, "config_file", cfg->config_path);
    for (size_t i = 0; i < config_nkeys; i++) {
        const struct config_key *k = &config_keys[i];
        const char *field = (const char *)cfg + k->offset;
        char name[80], text[CONFIG_STR_LEN];
        snprintf(name, sizeof name, "%s.%s", k->section, k->name);
        if (k->type == KEY_INT) attr_i64(w, g, name, *(const int *)field);
        else if (k->type == KEY_INT64) attr_i64(w, g, name, *(const long long *)field);
        else if (k->type == KEY_DOUBLE) attr_f64(w, g, name, *(const double *)field);
        else {
            config_format_value(cfg, k, text, sizeof text);
            attr_str(w, g, name, text);
        }
    }
    h5_close(g);
}

static void write_run(struct h5w *w, hid_t runs_group, const struct config *cfg, const struct run_result *r,
                      const struct run_summary *s)
{
    hid_t g = run_group_create(w, runs_group, r->library, r->path, r->nranks);
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
    attr_f64(w, g, "allreduce_bytes", r->allreduce_bytes);
    attr_f64(w, g, "gather_bytes", r->gather_bytes);
    attr_f64(w, g, "peak_tflops", r->peak_tflops > 0 ? r->peak_tflops : NAN);
    attr_f64(w, g, "energy_j", r->energy_j);
    attr_f64(w, g, "timed_wall_s", r->timed_wall_s);
    attr_f64(w, g, "host_enqueue_s", r->host_enqueue_s);
#define RUN_ATTR(name) attr_f64(w, g, #name, s->name);
    RUN_SUMMARY_DOUBLES(RUN_ATTR)
#undef RUN_ATTR
    attr_f64(w, g, "params_abs_sum", r->params_abs_sum);
    char hash[24];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)r->params_hash);
    attr_str(w, g, "params_hash", hash);
    attr_f64(w, g, "replica_max_abs_diff", r->replica_max_abs_diff);

    hsize_t dims[2] = {(hsize_t)r->iters, (hsize_t)r->nranks};
    for (int p = 0; p < NPHASES; p++) dataset_write(w, g, phase_names[p], H5T_NATIVE_DOUBLE, 2, dims, r->times[p], "s");
    hsize_t steps[1] = {(hsize_t)r->steps};
    dataset_write(w, g, "loss", H5T_NATIVE_DOUBLE, 1, steps, r->loss, "nats");
    hsize_t reps[2] = {(hsize_t)r->allreduce_reps, (hsize_t)r->nranks};
    dataset_write(w, g, "allreduce_alone_s", H5T_NATIVE_DOUBLE, 2, reps, r->allreduce_alone, "s");
    dataset_write(w, g, "compute_only_s", H5T_NATIVE_DOUBLE, 2, dims, r->compute_only, "s");
    dataset_write(w, g, "compute_only_backward_s", H5T_NATIVE_DOUBLE, 2, dims, r->compute_only_backward, "s");
    hsize_t nb[1] = {(hsize_t)r->nbuckets}, ib[3] = {(hsize_t)r->iters, (hsize_t)r->nranks, (hsize_t)r->nbuckets};
    dataset_write(w, g, "bucket_elements", H5T_NATIVE_DOUBLE, 1, nb, r->bucket_count, NULL);
    dataset_write(w, g, "bucket_start_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_start, "s");
    dataset_write(w, g, "bucket_end_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_end, "s");
    dataset_write(w, g, "bucket_ready_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_ready, "s");
    dataset_write(w, g, "bucket_ready_compute_only_s", H5T_NATIVE_DOUBLE, 3, ib, r->bucket_ready_compute_only, "s");
    if (r->params != NULL) {
        hsize_t np[1] = {(hsize_t)r->nparams};
        dataset_write(w, g, "params", H5T_NATIVE_FLOAT, 1, np, r->params, NULL);
    }
    h5_close(g);
}

/* One row of /model/tensors: the model's table (model.h). */
struct tensor_row {
    char name[TENSOR_NAME_LEN];
    char kind[8]; /* "matrix" or "vector" */
    int32_t rows, cols, stage;
    uint64_t offset, count;
};

/* /model: what was trained, as the rest of dpscale sees it: its type, preset label,
 * parameters, FLOPs per sample, sample unit, the one-line shape, and the tensor table
 * in arena (backward) order. */
static void write_model(struct h5w *w, hid_t file, const struct config *cfg, const struct model *m)
{
    hid_t g = h5_group_create(w, file, "model");
    char shape[256];
    m->ops->summary(m, shape, sizeof shape);
    attr_str(w, g, "type", model_type_name(m->type));
    attr_str(w, g, "name", cfg->model_name);
    attr_str(w, g, "shape", shape);
    attr_i64(w, g, "parameters", (long long)m->nparams);
    attr_f64(w, g, "gemm_flops_per_sample", m->flops_per_sample);
    attr_str(w, g, "unit", model_unit_name(m->unit));
    attr_i64(w, g, "units_per_sample", m->units_per_sample);
    attr_i64(w, g, "stages", m->nstages);
    struct tensor_row *rows = calloc((size_t)m->ntensors + 1, sizeof *rows);
    CHECK_ALLOC(rows);
    for (int i = 0; i < m->ntensors; i++) {
        const struct param_tensor *t = &m->tensors[i];
        snprintf(rows[i].name, sizeof rows[i].name, "%s", t->name);
        snprintf(rows[i].kind, sizeof rows[i].kind, "%s", t->kind == TENSOR_MATRIX ? "matrix" : "vector");
        rows[i].rows = t->rows;
        rows[i].cols = t->cols;
        rows[i].stage = t->stage;
        rows[i].offset = t->offset;
        rows[i].count = t->count;
    }
    hid_t name_t = CHECK_H5(w, H5Tcopy(H5T_C_S1)), kind_t = CHECK_H5(w, H5Tcopy(H5T_C_S1));
    CHECK_H5(w, H5Tset_size(name_t, sizeof rows->name));
    CHECK_H5(w, H5Tset_size(kind_t, sizeof rows->kind));
    hid_t t = CHECK_H5(w, H5Tcreate(H5T_COMPOUND, sizeof(struct tensor_row)));
#define FIELD(name, type) CHECK_H5(w, H5Tinsert(t, #name, HOFFSET(struct tensor_row, name), type));
    FIELD(name, name_t)
    FIELD(kind, kind_t)
    FIELD(rows, H5T_NATIVE_INT32)
    FIELD(cols, H5T_NATIVE_INT32)
    FIELD(stage, H5T_NATIVE_INT32)
    FIELD(offset, H5T_NATIVE_UINT64)
    FIELD(count, H5T_NATIVE_UINT64)
#undef FIELD
    hsize_t dims[1] = {(hsize_t)m->ntensors};
    dataset_write(w, g, "tensors", t, 1, dims, rows, NULL);
    h5_close(t);
    h5_close(name_t);
    h5_close(kind_t);
    free(rows);
    h5_close(g);
}

/* /dump: one step of one rank, for an independent implementation to recompute. */
static void write_dump(struct h5w *w, hid_t file, const struct h5out_dump *d)
{
    hid_t g = h5_group_create(w, file, "dump");
    attr_i64(w, g, "batch", d->batch);
    attr_f64(w, g, "loss", d->loss);
    hsize_t n[1] = {(hsize_t)d->nparams};
    dataset_write(w, g, "params", H5T_NATIVE_FLOAT, 1, n, d->params, NULL);
    dataset_write(w, g, "grads", H5T_NATIVE_FLOAT, 1, n, d->grads, NULL);
    hid_t in = h5_group_create(w, g, "inputs");
    for (int i = 0; i < d->ninputs; i++) {
        const struct h5out_array *a = &d->inputs[i];
        hsize_t c[1] = {(hsize_t)a->count};
        dataset_write(w, in, a->name, a->is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT, 1, c, a->data, NULL);
    }
    h5_close(in);
    h5_close(g);
}

/* One row of /summary, a compound table (one call in pandas or h5py). */
struct summary_row {
    char library[8], path[8];
    int32_t nranks, nodes, batch_per_rank, global_batch;
#define ROW_DECLARE(name) double name;
    RUN_SUMMARY_DOUBLES(ROW_DECLARE)
#undef ROW_DECLARE
};

static void write_summary(struct h5w *w, hid_t file, const struct run_summary *s, int n)
{
    struct summary_row *rows = calloc(n > 0 ? (size_t)n : 1, sizeof *rows);
    CHECK_ALLOC(rows);
    for (int i = 0; i < n; i++) {
        struct summary_row *r = &rows[i];
        snprintf(r->library, sizeof r->library, "%s", s[i].library);
        snprintf(r->path, sizeof r->path, "%s", s[i].path);
        r->nranks = s[i].nranks;
        r->nodes = s[i].nnodes;
        r->batch_per_rank = s[i].batch_per_rank;
        r->global_batch = s[i].global_batch;
#define ROW_COPY(name) r->name = s[i].name;
        RUN_SUMMARY_DOUBLES(ROW_COPY)
#undef ROW_COPY
    }
    hid_t str = CHECK_H5(w, H5Tcopy(H5T_C_S1));
    CHECK_H5(w, H5Tset_size(str, sizeof rows->library));
    hid_t t = CHECK_H5(w, H5Tcreate(H5T_COMPOUND, sizeof(struct summary_row)));
#define FIELD(name, type) CHECK_H5(w, H5Tinsert(t, #name, HOFFSET(struct summary_row, name), type));
#define DOUBLE_FIELD(name) FIELD(name, H5T_NATIVE_DOUBLE)
    FIELD(library, str)
    FIELD(path, str)
    FIELD(nranks, H5T_NATIVE_INT32)
    FIELD(nodes, H5T_NATIVE_INT32)
    FIELD(batch_per_rank, H5T_NATIVE_INT32)
    FIELD(global_batch, H5T_NATIVE_INT32)
    RUN_SUMMARY_DOUBLES(DOUBLE_FIELD)
#undef DOUBLE_FIELD
#undef FIELD
    hsize_t dims[1] = {(hsize_t)n};
    dataset_write(w, file, "summary", t, 1, dims, rows, NULL);
    h5_close(t);
    h5_close(str);
    free(rows);
}

/* /collectives/<library>/<path>/n<N>: one allreduce sweep of dpscale comm. */
static void write_collective(struct h5w *w, hid_t parent, const struct collective_result *r)
{
    hid_t g = run_group_create(w, parent, r->library, r->path, r->nranks);
    attr_str(w, g, "collective", "allreduce");
    attr_str(w, g, "op", "sum");
    attr_str(w, g, "dtype", r->dtype);
    attr_i64(w, g, "nranks", r->nranks);
    attr_i64(w, g, "nodes", r->nnodes);
    attr_i64(w, g, "in_place", r->in_place);
    attr_i64(w, g, "iters", r->iters);
    attr_i64(w, g, "warmup", r->warmup);
    hsize_t ns[1] = {(hsize_t)r->nsizes}, nr[2] = {(hsize_t)r->nsizes, (hsize_t)r->nranks};
    dataset_write(w, g, "size_bytes", H5T_NATIVE_DOUBLE, 1, ns, r->size_bytes, "B");
    dataset_write(w, g, "time_s", H5T_NATIVE_DOUBLE, 2, nr, r->time_s, "s");
    dataset_write(w, g, "algbw_gbps", H5T_NATIVE_DOUBLE, 1, ns, r->algbw_gbps, "GB/s");
    dataset_write(w, g, "busbw_gbps", H5T_NATIVE_DOUBLE, 1, ns, r->busbw_gbps, "GB/s");
    dataset_write(w, g, "wrong_elements", H5T_NATIVE_DOUBLE, 1, ns, r->wrong, NULL);
    h5_close(g);
}

static int make_dirs(const char *dir)
{
    char buf[CONFIG_STR_LEN];
    snprintf(buf, sizeof buf, "%s", dir);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

int h5out_choose_path(const struct config *cfg, const char *utc_stamp, const char *job_id, char *path, size_t len,
                      char *err, size_t errlen)
{
    const char *dir = cfg->output_dir[0] ? cfg->output_dir : ".";
    if (make_dirs(dir) != 0 || access(dir, W_OK) != 0) {
        snprintf(err, errlen, "cannot write to output folder %s: %s; set run.output_dir to a writable folder", dir,
                 strerror(errno));
        return -1;
    }
    int n = cfg->output[0] ? snprintf(path, len, "%s/%s", dir, cfg->output)
                           : snprintf(path, len, "%s/dpscale-%s-%s.h5", dir, utc_stamp, job_id);
    if (n < 0 || (size_t)n + 5 >= len) {
        snprintf(err, errlen, "output path is too long: %s", path);
        return -1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    if (access(path, F_OK) == 0) {
        snprintf(err, errlen, "result file %s already exists and is never overwritten; choose another run.output or move it", path);
        return -1;
    }
    if (access(tmp, F_OK) == 0) {
        snprintf(err, errlen, "%s exists: another launch is writing %s, or one crashed; remove it if no launch is running", tmp, path);
        return -1;
    }
    return 0;
}
int h5out_write(const char *path, const struct config *cfg, const struct h5out_system *sys,
                const struct h5out_contents *contents, char *err, size_t errlen)
{
    struct h5w w = {0};
    hid_t fapl = -1;
    hid_t file = image_open(&w, path, &fapl);
    if (file >= 0) {
        write_root(&w, file, sys);
        write_system(&w, file, sys);
        write_config(&w, file, cfg);
        if (contents->model != NULL) write_model(&w, file, cfg, contents->model);
        if (contents->nruns > 0) {
            hid_t rg = h5_group_create(&w, file, "runs");
            for (int i = 0; i < contents->nruns; i++)
                write_run(&w, rg, cfg, &contents->runs[i], &contents->summaries[i]);
            h5_close(rg);
            write_summary(&w, file, contents->summaries, contents->nruns);
        }
        if (contents->dump != NULL) write_dump(&w, file, contents->dump);
        if (contents->ncollectives > 0) {
            hid_t cg = h5_group_create(&w, file, "collectives");
            for (int i = 0; i < contents->ncollectives; i++) write_collective(&w, cg, &contents->collectives[i]);
            h5_close(cg);
        }
    }
    return image_close_and_write(&w, path, file, fapl, err, errlen);
}

int h5out_write_projection(const char *path, const struct h5out_projection *p, char *err, size_t errlen)
{
    struct h5w w = {0};
    hid_t fapl = -1;
    hid_t src = H5Fopen(p->source, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (src < 0) {
        snprintf(err, errlen, "%s cannot be opened again to copy its /config, /system and /model", p->source);
        return -1;
    }
    hid_t file = image_open(&w, path, &fapl);
    if (file >= 0) {
        attr_i64(&w, file, "schema_version", H5OUT_SCHEMA_VERSION);
        attr_str(&w, file, "dpscale_version", p->dpscale_version);
        attr_str(&w, file, "created_utc", p->created_utc);
        attr_str(&w, file, "command_line", p->command_line);
        attr_str(&w, file, "job_id", "");
        attr_str(&w, file, "writer", "dpscale");
        const char *copied[] = {"config", "system", "model"};
        for (int i = 0; i < 3; i++)
            if (H5Lexists(src, copied[i], H5P_DEFAULT) > 0)
                CHECK_H5(&w, H5Ocopy(src, copied[i], file, copied[i], H5P_DEFAULT, H5P_DEFAULT));
        write_summary(&w, file, p->rows, p->nrows);
        hid_t g = h5_group_create(&w, file, "projection");
        attr_str(&w, g, "source", p->source);
        attr_str(&w, g, "target", p->target);
        attr_str(&w, g, "compute", p->compute);
        attr_str(&w, g, "ready_times", p->ready_times);
        attr_f64(&w, g, "interference", p->interference);
        attr_f64(&w, g, "imbalance_s", p->imbalance_s);
        attr_str(&w, g, "note", "projected by dpscale project (docs/PROJECTION.md), not measured: /summary holds its rows, "
                                "library = projected");
        if (p->nrows > 0) strings_write(&w, g, "curve_source", p->curve_sources, p->nrows, H5OUT_PROJECTION_TEXT);
        h5_close(g);
    }
    H5Fclose(src);
    return image_close_and_write(&w, path, file, fapl, err, errlen);
}

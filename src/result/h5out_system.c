/* h5out_system.c — what a launch ran on (h5out_internal.h): /system (the backend, the
 * libraries built with and loaded, the hosts), /system/ranks (each rank's host, CPU,
 * GPU and environment), /system/environment (rank 0's NCCL_* and CUDA_* variables as
 * attributes), /system/topology (rank 0's node), and /config (every resolved key). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "result/h5out_internal.h"

static void matrix_write(struct h5w *w, hid_t g, const char *name, const double (*m)[TOPO_MAX_GPUS], int n)
{
    double flat[TOPO_MAX_GPUS * TOPO_MAX_GPUS];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) flat[i * n + j] = m[i][j];
    hsize_t dims[2] = {(hsize_t)n, (hsize_t)n};
    dataset_write(w, g, SCHEMA_TOPOLOGY, name, H5T_NATIVE_DOUBLE, 2, dims, flat);
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
    strings_write(w, g, SCHEMA_TOPOLOGY, "link", &links[0][0], sizeof links[0], 2, nn);
    dataset_write(w, g, SCHEMA_TOPOLOGY, "nvlink_count", H5T_NATIVE_INT64, 2, nn, nv);
    strings_write(w, g, SCHEMA_TOPOLOGY, "gpu_name", &names[0][0], sizeof names[0], 1, n1);
    strings_write(w, g, SCHEMA_TOPOLOGY, "gpu_bus_id", &buses[0][0], sizeof buses[0], 1, n1);
    strings_write(w, g, SCHEMA_TOPOLOGY, "gpu_cpu_affinity", &cpus[0][0], sizeof cpus[0], 1, n1);
    dataset_write(w, g, SCHEMA_TOPOLOGY, "gpu_pcie_gen", H5T_NATIVE_INT64, 1, n1, gen);
    dataset_write(w, g, SCHEMA_TOPOLOGY, "gpu_pcie_width", H5T_NATIVE_INT64, 1, n1, width);
    dataset_write(w, g, SCHEMA_TOPOLOGY, "gpu_numa_node", H5T_NATIVE_INT64, 1, n1, numa);
    dataset_write(w, g, SCHEMA_TOPOLOGY, "gpu_nvlinks_up", H5T_NATIVE_INT64, 1, n1, up);
    for (int i = 0; i < t->nnics; i++) {
        snprintf(nic_names[i], sizeof nic_names[i], "%s", t->nic[i].name);
        snprintf(nic_layers[i], sizeof nic_layers[i], "%s", t->nic[i].link_layer);
        snprintf(nic_states[i], sizeof nic_states[i], "%s", t->nic[i].state);
        rate[i] = t->nic[i].rate_gbps;
        nic_numa[i] = t->nic[i].numa_node;
    }
    hsize_t nk[1] = {(hsize_t)t->nnics};
    strings_write(w, g, SCHEMA_TOPOLOGY, "nic_name", &nic_names[0][0], sizeof nic_names[0], 1, nk);
    strings_write(w, g, SCHEMA_TOPOLOGY, "nic_link_layer", &nic_layers[0][0], sizeof nic_layers[0], 1, nk);
    strings_write(w, g, SCHEMA_TOPOLOGY, "nic_state", &nic_states[0][0], sizeof nic_states[0], 1, nk);
    dataset_write(w, g, SCHEMA_TOPOLOGY, "nic_rate_Gbps", H5T_NATIVE_DOUBLE, 1, nk, rate);
    dataset_write(w, g, SCHEMA_TOPOLOGY, "nic_numa_node", H5T_NATIVE_INT64, 1, nk, nic_numa);
    if (p != NULL) {
        matrix_write(w, g, "peer_unidir_GBps", p->unidir_gbps, p->n);
        matrix_write(w, g, "peer_bidir_GBps", p->bidir_gbps, p->n);
        matrix_write(w, g, "peer_host_GBps", p->host_gbps, p->n);
        matrix_write(w, g, "peer_latency_us", p->latency_us, p->n);
    }
    h5_close(g);
}

/* /system/ranks: one row per rank, as each saw itself (provenance_rank.c). */
static void write_ranks(struct h5w *w, hid_t system, const struct provenance_rank *r, int n)
{
    struct h5w_table tb = {.rows = n > 0 ? (size_t)n : 0};
#define COLUMN(type, kind, name)                                                                                    \
    {                                                                                                               \
        type *col = h5w_table_column(&tb, #name, kind);                                                             \
        for (size_t k = 0; k < tb.rows; k++) col[k] = r[k].name;                                                    \
    }
#define TEXT_COLUMN(name, ...) COLUMN(const char *, H5W_TEXT, name)
#define INT_COLUMN(name, ...) COLUMN(int64_t, H5W_I64, name)
#define REAL_COLUMN(name, ...) COLUMN(double, H5W_F64, name)
    SCHEMA_RANK_INTS(INT_COLUMN)
    SCHEMA_RANK_TEXT(TEXT_COLUMN)
    SCHEMA_RANK_REALS(REAL_COLUMN)
#undef TEXT_COLUMN
#undef INT_COLUMN
#undef REAL_COLUMN
#undef COLUMN
    h5w_table_write(w, system, "ranks", SCHEMA_RANKS, &tb);
}

/* /system/environment: rank 0's NCCL_* and CUDA_* variables, one attribute each. */
static void write_environment(struct h5w *w, hid_t system, const char *env)
{
    hid_t g = h5_group_create(w, system, "environment");
    attr_str(w, g, "note", "every NCCL_* and CUDA_* variable of rank 0 as launched (each rank's: /system/ranks "
                           "environment); what NCCL saw after comm.path: /system nccl_env");
    char *copy = strdup(env != NULL ? env : "");
    CHECK_ALLOC(copy);
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (eq == NULL || eq == line) continue; /* " ...": more than the record holds */
        *eq = '\0';
        if (H5Aexists(g, line) <= 0) attr_str(w, g, line, eq + 1);
    }
    free(copy);
    h5_close(g);
}

void h5out_system(struct h5w *w, hid_t file, const struct h5out_system *sys)
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
    attr_i64(w, g, "ranks_per_node", sys->ranks_per_node);
    hsize_t dims[1] = {(hsize_t)sys->world_size};
    strings_write(w, g, SCHEMA_SYSTEM, "hosts", sys->hosts, 64, 1, dims);
    attr_str(w, g, "library", sys->library);
    attr_str(w, g, "path", sys->path);
    attr_str(w, g, "nccl_env", sys->nccl_env);
    const struct provenance *p = sys->prov;
#define LIBRARY_ATTR(name, bytes, meaning) attr_str(w, g, #name, p->libs.name);
    SCHEMA_LIBRARY_ATTRS(LIBRARY_ATTR)
#undef LIBRARY_ATTR
    write_ranks(w, g, p->ranks, p->nranks);
    write_environment(w, g, p->nranks > 0 ? p->ranks[0].environment : "");
    if (sys->topo != NULL) write_topology(w, g, sys->topo, sys->peers);
    h5_close(g);
}

void h5out_config(struct h5w *w, hid_t file, const struct config *cfg)
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

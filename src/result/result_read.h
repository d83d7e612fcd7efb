/* result_read.h — a result file of any kind read whole and checked, for `dpscale
 * report`, `dpscale project` and `dpscale seal`: refused with a clear reason when it is
 * missing, not HDF5, truncated, not written by dpscale, written by a newer dpscale, or
 * changed since it was written (its checksums, checksum.h); else what every kind shares
 * (device, first host, creation time, whether its sweep ended early or diverged) and
 * the table of its kind: /summary (a run, or a projection), /collectives (dpscale
 * comm), /system/topology alone (dpscale topo). Schema 1 files are still read
 * (result_read_compat.c). Every figure is checked against what the schema says it can
 * be (finite, not negative, below a ceiling no measurement reaches; NaN only where the
 * schema lets it be unknown): a file sealed or not, since anyone can seal one.
 *   result_read.c          the file opened and checked, what every kind shares;
 *   result_read_runs.c     /config, /model and /summary;
 *   result_read_comm.c     /collectives;
 *   result_read_topo.c     /system/topology.
 * The structures are named for the report, which shows them; a system is one
 * (library, path) of one file: "NVIDIA H200, nccl over nvlink". */
#ifndef DPSCALE_RESULT_READ_H
#define DPSCALE_RESULT_READ_H

#include <stddef.h>

#define REPORT_MAX_ROWS 64
#define REPORT_MAX_SWEEPS 32 /* allreduce sweeps of one comm file */
#define REPORT_MAX_SIZES 64  /* message sizes of one sweep */
#define REPORT_MAX_GPUS 16   /* GPUs of one topology (TOPO_MAX_GPUS) */
#define REPORT_MAX_NICS 16
#define REPORT_MAX_COUNT (1 << 30) /* the most ranks, nodes or samples a count read from a file may say */
#define REPORT_MAX_RANKS 65536     /* ranks of one comm sweep */

struct doc_info;

enum report_kind {
    REPORT_RUNS, /* /summary: dpscale run, or a projection */
    REPORT_COMM, /* /collectives: dpscale comm */
    REPORT_TOPO, /* /system/topology alone: dpscale topo */
    REPORT_NONE, /* a dpscale file without a table (dpscale dump) */
};

struct report_row {
    char library[16]; /* who reduces: mpi, nccl */
    char path[16];    /* the path NCCL's bytes take: auto, nvlink, pcie, host, net ("pcie" before schema 6 read as host) */
    int nranks, nodes, global_batch;
    double samples_per_s, samples_per_s_per_rank, speedup, efficiency;
    double step_s, comm_exposed_s, allreduce_busbw_gbps, mfu, joules_per_sample, avg_power_w;
    double step_p05_s, step_p95_s; /* the spread of the step over iterations; NaN where the file has none */
};

/* One allreduce sweep of a comm file: /collectives/<library>/<path>/n<N>. */
struct report_sweep {
    char library[16], path[16];
    char dtype[8]; /* fp32, bf16, fp16 */
    char op[8];    /* the reduction: sum */
    int nranks, nodes, in_place, iters, warmup;
    int nsizes;
    double size_bytes[REPORT_MAX_SIZES];
    double time_s[REPORT_MAX_SIZES]; /* mean time of one allreduce on the slowest rank */
    double algbw_gbps[REPORT_MAX_SIZES], busbw_gbps[REPORT_MAX_SIZES], wrong[REPORT_MAX_SIZES];
};

struct report_comm {
    int nsweeps;
    struct report_sweep sweep[REPORT_MAX_SWEEPS]; /* by library, path, then ranks */
};

/* /system/topology of a topo file. */
struct report_topo {
    char source[160]; /* nvml+sysfs, or the nvidia-smi fixture read */
    int ngpus;
    char link[REPORT_MAX_GPUS][REPORT_MAX_GPUS][8]; /* "X", "NV18", "PIX", ... */
    double nvlinks[REPORT_MAX_GPUS][REPORT_MAX_GPUS];
    char gpu_name[REPORT_MAX_GPUS][96], bus_id[REPORT_MAX_GPUS][32], cpu_affinity[REPORT_MAX_GPUS][128];
    double pcie_gen[REPORT_MAX_GPUS], pcie_width[REPORT_MAX_GPUS], numa_node[REPORT_MAX_GPUS], nvlinks_up[REPORT_MAX_GPUS];
    int nnics;
    char nic_name[REPORT_MAX_NICS][32], nic_link_layer[REPORT_MAX_NICS][16], nic_state[REPORT_MAX_NICS][16];
    double nic_rate_gbps[REPORT_MAX_NICS], nic_numa_node[REPORT_MAX_NICS];
    int has_copies; /* the copy matrices were measured (dpscale topo on a GPU node, one process) */
    double unidir_gbps[REPORT_MAX_GPUS][REPORT_MAX_GPUS], bidir_gbps[REPORT_MAX_GPUS][REPORT_MAX_GPUS];
    double host_gbps[REPORT_MAX_GPUS][REPORT_MAX_GPUS], latency_us[REPORT_MAX_GPUS][REPORT_MAX_GPUS];
};

struct report_file {
    int kind;           /* enum report_kind */
    char path[512];     /* as given, made well-formed UTF-8 for printing */
    char device[96];    /* /system device_name */
    char host[64];      /* first host of the launch */
    char created[32];
    int schema;            /* its schema_version */
    int sealed;            /* 1: its checksums match (checksum.h); 0: it has none, and nothing tells a changed byte */
    int points_done, points_planned; /* a sweep that ended early (root complete = 0): its points written, of those planned */
    char diverged[256];    /* root diverged: why the sweep stopped ("the 2-GPU point diverged at step 7 ..."), or "" */
    char system_label[96]; /* run.system_label (schema 5), "" when none was given */
    /* what must match for two files to be compared */
    char model[48];       /* the preset's label (model.name) */
    char model_type[16];  /* /model type (schema 4); "mlp" before */
    char shape[192];      /* /model shape, or the MLP's "L x W wide" before schema 4 */
    char unit[12];        /* what a sample is: samples, tokens, images */
    long long parameters; /* the model's parameter count */
    int units_per_sample; /* tokens per sequence; 1 for samples and images */
    char precision[8], scaling[8];
    char grad_dtype[8]; /* train.grad_dtype: fp32, or compute (16-bit gradients) */
    int projected;      /* a file of dpscale project: its rows are projected, not measured */
    char projection_target[160], projection_compute[256];
    char overlap[8];    /* comm.overlap of the launch */
    char tag[24];       /* what sets the file apart from the others of the report ("overlap off"), or "" */
    long long batch_per_gpu, global_batch;
    double price_per_gpu_hour; /* 0 = none given */
    int nrows;
    struct report_row rows[REPORT_MAX_ROWS];
    struct report_comm *comm; /* REPORT_COMM: its sweeps; NULL otherwise */
    struct report_topo *topo; /* REPORT_TOPO: its topology; NULL otherwise */
    struct doc_info *info;    /* its attributes as text (report_doc.h), which the report reads beside it; NULL here */
};

/* Read a result file of any kind. Returns 0, or -1 with a one-line reason (without
 * the path) in err, REPORT_CHANGED when that reason is its checksums. Strings are kept
 * as the file holds them (made UTF-8): each output escapes them its own way.
 * result_free releases what the read holds (f->comm, f->topo; f->info is its reader's). */
#define REPORT_CHANGED (-2)
int result_read(const char *path, struct report_file *f, char *err, size_t errlen);
void result_free(struct report_file *f);
/* 0 when f may be reported: sealed, or of a schema older than CHECKSUM_SINCE_SCHEMA
 * (checksum.h), written before dpscale sealed its files. A later file without
 * checksums lost them: REPORT_CHANGED with the reason and the fix in err. */
int result_require_seal(const struct report_file *f, char *err, size_t errlen);

/* A path as a file of `schema` wrote it, in today's names: "pcie" before schema 6 was
 * the path through host memory (NCCL_P2P_DISABLE=1), now "host" (result_read_compat.c). */
void result_path_in(int schema, const char *written, char *path, size_t pathlen);

/* Schema 1 named a run or sweep by one `transport`: a library ("mpi", "nccl": path
 * auto) or a path that only NCCL took ("nvlink", "pcie" = host memory, "net"). */
void result_schema1_transport(const char *transport, char *library, size_t liblen, char *path, size_t pathlen);

#endif

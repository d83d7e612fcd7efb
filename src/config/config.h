/* config.h — the resolved configuration of one launch.
 *
 * Every key lives in one table (config_keys.c) that says its section, type, range,
 * default and help text. The same table drives the INI parser (libinih), the
 * command-line parser (getopt_long, one --section.key option per entry), the
 * validation messages, `dpscale run --help`, and the /config group of the HDF5
 * file, so a key added there is parsed, checked, documented and recorded at once.
 *
 * Precedence: built-in defaults < INI file (--config) < command line. */
#ifndef DPSCALE_CONFIG_H
#define DPSCALE_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/kernel_types.h" /* enum activation, enum optimizer: the kernels' too */

#define CONFIG_MAX_SWEEP 32
/* the longest text value, the same on the command line and in an INI file (a line
 * of a config file holds its key too: CONFIG_MAX_LINE) */
#define CONFIG_STR_LEN 4096
#define CONFIG_MAX_LINE (CONFIG_STR_LEN + 128)

enum scaling { SCALING_WEAK = 0, SCALING_STRONG = 1 };
enum precision { PREC_FP32 = 0, PREC_TF32 = 1, PREC_BF16 = 2, PREC_FP16 = 3 };
enum backend_kind { BACKEND_AUTO = 0, BACKEND_CPU = 1, BACKEND_CUDA = 2 };
enum comm_library { LIBRARY_AUTO = 0, LIBRARY_MPI = 1, LIBRARY_NCCL = 2 };
/* comm.path: host is what pcie was before schema 6 (NCCL_P2P_DISABLE=1); pcie is now peer-to-peer over PCIe */
enum comm_path { PATH_AUTO = 0, PATH_NVLINK = 1, PATH_PCIE = 2, PATH_HOST = 3, PATH_NET = 4 };
enum allreduce_dtype { ALLREDUCE_FP32 = 0, ALLREDUCE_COMPUTE = 1 };
enum allreduce_op { ALLREDUCE_AVG = 0, ALLREDUCE_SUM = 1 }; /* = enum reduce_op of dtype.h */
/* model.type: every family's value, its name, and the function of its family
 * (src/model/families/) that describes the model, in the order of the values. The one
 * list of them: the key's accepted values (config_keys.c) and the registry of families
 * (src/model/registry.c, the only caller of the functions) are made from it, so a new
 * family is one line here. */
#define MODEL_TYPES(X)                                                                                  \
    X(MODEL_MLP, "mlp", mlp_describe)                                                                   \
    X(MODEL_GPT, "gpt", transformer_describe)                                                           \
    X(MODEL_BERT, "bert", transformer_describe)                                                         \
    X(MODEL_RESNET, "resnet", resnet_describe)
#define MODEL_TYPE_VALUE(type, name, describe) type,
enum model_type { MODEL_TYPES(MODEL_TYPE_VALUE) MODEL_NTYPES };
#undef MODEL_TYPE_VALUE
enum batchnorm_mode { BATCHNORM_BATCH = 0, BATCHNORM_FROZEN = 1 }; /* model.batchnorm (resnet) */
enum master_weights { MASTER_FP32 = 0, MASTER_OFF = 1 }; /* train.master_weights */
enum optimizer_state { STATE_FP32 = 0, STATE_COMPUTE = 1 }; /* train.optimizer_state */
enum shm_copy { SHM_COPY_SM = 0, SHM_COPY_CE = 1 }; /* comm.shm_copy */
enum epilogue_use { EPILOGUE_OFF = 0, EPILOGUE_FORWARD = 1, EPILOGUE_ON = 2 }; /* train.gemm_epilogue */
enum attention_impl { ATTENTION_AUTO = 0, ATTENTION_FLASH = 1, ATTENTION_UNFUSED = 2 }; /* train.attention */
enum bias_grad_impl { BIAS_GRAD_KERNEL = 0, BIAS_GRAD_EPILOGUE = 1 }; /* train.bias_grad */

struct config {
    char config_path[CONFIG_STR_LEN]; /* "" when no file was given */

    /* [model] */
    char model_name[CONFIG_STR_LEN];
    int model_type; /* enum model_type */
    int heads, seq_len, vocab; /* the transformers' attention heads, sequence length, vocabulary */
    double mask_fraction;      /* BERT: the share of positions whose tokens are masked and predicted */
    int layers;
    int input_dim;
    int hidden_dim;
    int classes;
    int activation; /* enum activation */
    int image_size;  /* resnet: images of image_size x image_size x 3 */
    int blocks[CONFIG_MAX_SWEEP]; /* resnet: bottleneck blocks per stage (a KEY_INTLIST: the count follows) */
    int nblocks;     /* resnet: stages */
    int width;       /* resnet: channels of the stem and of the first stage's bottlenecks */
    int batchnorm;   /* enum batchnorm_mode */

    /* [train] */
    int scaling; /* enum scaling */
    int batch_per_gpu;
    int global_batch; /* strong scaling; 0 = batch_per_gpu x largest N of the sweep */
    int warmup;
    int iters;
    int optimizer; /* enum optimizer */
    double lr;
    double momentum;
    double weight_decay;
    double beta1;
    double beta2;
    double eps;
    long long seed;
    int precision; /* enum precision */
    double loss_scale; /* fp16: static loss scale; 0 = 1024 in fp16, 1 otherwise */
    int overlap_update; /* each bucket's update as soon as its gradients are reduced */
    int grad_dtype;      /* enum allreduce_dtype's values: fp32, or the compute dtype */
    int update_priority; /* 0 low, 1 high: the update stream against the compute stream */
    int gemm_sm_margin;  /* SMs the backward GEMMs leave to the work beside them */
    int gemm_autotune;   /* time cuBLASLt's candidates per shape */
    int master_weights;  /* enum master_weights: an fp32 master copy of the weights, or none (pure 16-bit) */
    int optimizer_state; /* enum optimizer_state: momentum / Adam moments in fp32 or the compute dtype */
    int gemm_epilogue;   /* enum epilogue_use: bias and GELU in cuBLASLt epilogues */
    int attention;       /* enum attention_impl: the transformers' attention fused (flash) or not */
    int bias_grad;       /* enum bias_grad_impl: the linear layers' bias gradients in the weight-gradient GEMM or not */

    /* [run] */
    int backend; /* enum backend_kind */
    int sweep[CONFIG_MAX_SWEEP];
    int nsweep; /* 0 = powers of two up to the world size */
    char output_dir[CONFIG_STR_LEN];
    char output[CONFIG_STR_LEN]; /* "" = dpscale-<utc>-<job>.h5 in output_dir */
    char system_label[CONFIG_STR_LEN]; /* the user's name for the system measured, in the file and the report */
    int save_params;
    int threads; /* BLAS threads per rank on the CPU backend; 0 = cores / local ranks */
    double peak_tflops; /* peak of the GPU in the run's precision for MFU; 0 = from the table */
    double timeout_s;   /* the watchdog's deadline for a step or a collective; 0 = automatic (src/base/watchdog.h) */

    /* [comm] */
    int library;         /* enum comm_library: who reduces the gradients */
    int path;            /* enum comm_path: the path NCCL must take */
    char paths[CONFIG_STR_LEN]; /* "nvlink,host": one launch each, through jobs/lib/sweep.sh */
    int overlap;         /* allreduce each bucket as backward produces it; off = one allreduce after backward */
    double bucket_mb;    /* gradient bucket size (MB = 1e6 bytes of fp32 gradient) */
    double first_bucket_mb;
    int allreduce_dtype; /* enum allreduce_dtype */
    int allreduce_op;    /* enum allreduce_op */
    int nccl_max_ctas;   /* NCCL's maxCTAs: SMs its kernels may take from the overlapped backward; 0 = NCCL's choice */
    int last_layer_chunks; /* row blocks of the last weight gradient of backward, each its own bucket */
    int shard_optimizer; /* ZeRO-1: reduce-scatter, 1/N update, all-gather */
    int register_buffers; /* NCCL user buffer registration */
    int symmetric;       /* NCCL symmetric windows */
    int cta_policy;      /* NCCL CTAPolicy: 0 default, 1 efficiency, 2 zero */
    int shm_copy;        /* enum shm_copy: who copies through host memory on the host path */

    /* [topo] */
    char topo_fixture[CONFIG_STR_LEN]; /* a recorded `nvidia-smi topo -m` instead of detection */
    int topo_peer_bandwidth;           /* dpscale topo: measure the GPU-to-GPU copy matrix */

    /* [collective]: dpscale comm, the allreduce bandwidth sweep */
    double coll_min_mib, coll_max_mib;
    int coll_factor;
    int coll_dtype; /* enum dtype */
    int coll_iters, coll_warmup;
    int coll_in_place;
};

enum key_type { KEY_INT, KEY_INT64, KEY_DOUBLE, KEY_ENUM, KEY_BOOL, KEY_STRING, KEY_INTLIST };

struct config_key {
    const char *section;
    const char *name;
    enum key_type type;
    size_t offset;              /* into struct config */
    double min, max;            /* inclusive range for numbers; list entries for KEY_INTLIST; KEY_STRING: max > 0, its longest */
    const char *const *choices; /* KEY_ENUM: NULL-terminated */
    const char *default_value;  /* parsed like any other value */
    const char *help;
};

extern const struct config_key config_keys[];
extern const size_t config_nkeys;

/* The accepted names of an enum value, for messages and the HDF5 file. */
const char *config_enum_name(const struct config_key *key, int value);
/* The name of an enum key's current value in cfg: config_value_name(cfg, "train", "precision") -> "bf16". */
const char *config_value_name(const struct config *cfg, const char *section, const char *name);
const struct config_key *config_find_key(const char *section, const char *name);

/* Strict numbers, for the INI file and the command line alike. An integer is an
 * optional sign and decimal digits, nothing else ("0x10", " 7", "1e3" are refused),
 * compared with its bounds as an integer. A number is a finite decimal ("0.5",
 * "-2.", ".5", "1e-3"): no hex float, inf or nan, no overflow or underflow.
 * Return 0 with the value in *out, or -1 (out untouched). */
int config_parse_int(const char *text, long long min, long long max, long long *out);
int config_parse_double(const char *text, double min, double max, double *out);

/* Parse `argv` (without the subcommand) into `cfg`: defaults, then the file named by
 * --config, then every --section.key=value (or --section.key value). Returns 0, 1
 * for --help, or -1 with a one-line message in `err` naming the file:line or the
 * flag and the accepted values. The file must be a regular file of text (no NUL
 * byte), each line that is not a comment at most libinih's line length; an
 * indented line is read as if it were not indented. A value that starts with
 * "--" is refused (the option before it lacks its value), and so is an
 * abbreviated option name. */
int config_load(struct config *cfg, int argc, char **argv, char *err, size_t errlen);

/* Checks that need the size of the launch: the sweep against the world size, the
 * batch against every N. Fills cfg->sweep when it was left empty. */
int config_resolve_for_world(struct config *cfg, int world_size, char *err, size_t errlen);

/* The loss scale in force: train.loss_scale, or its default for the precision. */
double config_loss_scale(const struct config *cfg);

/* Check comm.paths; a single entry sets cfg->path. Returns the number of entries,
 * or -1 with a message. */
int config_count_paths(struct config *cfg, char *err, size_t errlen);
/* The items of a comma-separated list in `text` (cut in place), each trimmed of
 * spaces, into items[]: their count, 0 for an empty list, or -1 when an item is
 * empty ("1,,2", "1,2,", ",1"), holds a space, or there are more than max: a typo or
 * a cut list must not run as a smaller experiment. */
int config_split_list(char *text, char **items, int max);
/* libinih's line limit set to CONFIG_MAX_LINE, for every INI file dpscale reads. */
void config_ini_set_line_limit(void);

/* Batch on each rank and across ranks for a run on `n` ranks. */
int config_batch_per_rank(const struct config *cfg, int n);

/* Write "section.key = value" of every key to `out` through `emit`. */
void config_format_value(const struct config *cfg, const struct config_key *key, char *buf, size_t len);

/* The keys named in `only` ("model train run.backend": whole sections or single
 * keys; NULL = every key), by section, with their help, default and accepted values:
 * what a subcommand's --help lists. */
void config_print_keys(FILE *out, const char *only);

#endif

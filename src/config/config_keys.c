/* config_keys.c — the table of every configuration key: section, type, range,
 * default and help. Parsing, validation, --help and the HDF5 /config group all
 * read this one table (see config.h). */
#include <stddef.h>

#include "config/config.h"

#define MODEL_TYPE_NAME(type, name, describe) name,
static const char *const model_type_names[] = {MODEL_TYPES(MODEL_TYPE_NAME) NULL};
#undef MODEL_TYPE_NAME
static const char *const batchnorm_names[] = {"batch", "frozen", NULL};
static const char *const activation_names[] = {"gelu", "relu", NULL};
static const char *const scaling_names[] = {"weak", "strong", NULL};
static const char *const optimizer_names[] = {"sgd", "adamw", NULL};
static const char *const precision_names[] = {"fp32", "tf32", "bf16", "fp16", NULL};
static const char *const backend_names[] = {"auto", "cpu", "cuda", NULL};
static const char *const library_names[] = {"auto", "mpi", "nccl", NULL};
static const char *const path_names[] = {"auto", "nvlink", "pcie", "host", "net", NULL};
static const char *const cta_policy_names[] = {"default", "efficiency", "zero", NULL};
static const char *const priority_names[] = {"low", "high", NULL};
static const char *const grad_dtype_names[] = {"fp32", "compute", NULL};
static const char *const allreduce_dtype_names[] = {"fp32", "compute", NULL};
static const char *const allreduce_op_names[] = {"avg", "sum", NULL};
static const char *const master_weights_names[] = {"fp32", "off", NULL};
static const char *const optimizer_state_names[] = {"fp32", "compute", NULL};
static const char *const shm_copy_names[] = {"sm", "ce", NULL};
static const char *const epilogue_names[] = {"off", "forward", "on", NULL};
static const char *const attention_names[] = {"auto", "flash", "unfused", NULL};
static const char *const bias_grad_names[] = {"kernel", "epilogue", NULL};
static const char *const dtype_names[] = {"fp32", "bf16", "fp16", NULL}; /* enum dtype */

#define OFF(field) offsetof(struct config, field)
#define BIG 1073741824.0 /* 2^30: no dimension or count is larger */

const struct config_key config_keys[] = {
    {"model", "name", KEY_STRING, OFF(model_name), 0, 255, NULL, "mlp", "label of the model preset"},
    {"model", "type", KEY_ENUM, OFF(model_type), 0, 0, model_type_names, "mlp",
     "the model family: mlp (dense layers on a synthetic classification task: model.layers, input_dim, hidden_dim, "
     "classes, activation); gpt (pre-LN decoder, causal, loss on every position) or bert (post-LN encoder, masked-LM "
     "loss on mask_fraction of the positions): model.layers blocks of width hidden_dim, heads, seq_len, vocab, FFN "
     "4 x hidden_dim, GELU, the head tied to the token embedding; resnet (ResNet v1.5 on synthetic images, NHWC: "
     "model.image_size, blocks, width, classes, batchnorm)"},
    {"model", "layers", KEY_INT, OFF(layers), 1, 4096, NULL, "4", "number of dense layers"},
    {"model", "input_dim", KEY_INT, OFF(input_dim), 1, 1048576, NULL, "512", "features of a sample"},
    {"model", "hidden_dim", KEY_INT, OFF(hidden_dim), 1, 1048576, NULL, "1024", "width of the hidden layers"},
    {"model", "classes", KEY_INT, OFF(classes), 2, 1048576, NULL, "16", "output classes"},
    {"model", "heads", KEY_INT, OFF(heads), 1, 4096, NULL, "4", "transformers: attention heads (hidden_dim a multiple)"},
    {"model", "seq_len", KEY_INT, OFF(seq_len), 2, 1048576, NULL, "64", "transformers: tokens per sequence (a sample)"},
    {"model", "vocab", KEY_INT, OFF(vocab), 3, 16777216, NULL, "512", "transformers: vocabulary size"},
    {"model", "mask_fraction", KEY_DOUBLE, OFF(mask_fraction), 0.0001, 1, NULL, "0.15",
     "bert: the share of positions masked and predicted (gathered before the head); 1 = every position"},
    {"model", "activation", KEY_ENUM, OFF(activation), 0, 0, activation_names, "gelu", "activation after each hidden layer"},
    {"model", "image_size", KEY_INT, OFF(image_size), 1, 65536, NULL, "224",
     "resnet: the synthetic images are image_size x image_size x 3 (224 for ImageNet's)"},
    {"model", "blocks", KEY_INTLIST, OFF(blocks), 1, 1024, NULL, "3,4,6,3",
     "resnet: bottleneck blocks of each stage, 1 to 8 stages (3,4,6,3: ResNet-50; 3,4,23,3: ResNet-101); stage s is "
     "width x 2^s wide inside its bottlenecks, 4 x that outside, and halves the image from the second stage on"},
    {"model", "width", KEY_INT, OFF(width), 1, 65536, NULL, "64",
     "resnet: channels of the stem and of the first stage's bottlenecks (64 for ResNet-50)"},
    {"model", "batchnorm", KEY_ENUM, OFF(batchnorm), 0, 0, batchnorm_names, "batch",
     "resnet: batch = training-mode batch norm over each rank's own batch (as DDP without SyncBatchNorm), the running "
     "statistics kept with momentum 0.1; frozen = the running statistics (mean 0, variance 1) held fixed, as in eval "
     "mode: the loss is then a sum over samples, and N ranks train what one rank trains on their batch (a test mode)"},

    {"train", "scaling", KEY_ENUM, OFF(scaling), 0, 0, scaling_names, "weak",
     "weak: batch per GPU fixed; strong: global batch fixed"},
    {"train", "batch_per_gpu", KEY_INT, OFF(batch_per_gpu), 1, BIG, NULL, "64", "samples per rank per step (weak scaling)"},
    {"train", "global_batch", KEY_INT, OFF(global_batch), 0, BIG, NULL, "0",
     "samples per step over all ranks (strong scaling); 0 = batch_per_gpu x largest N"},
    {"train", "warmup", KEY_INT, OFF(warmup), 0, 1000000, NULL, "3", "untimed steps before the timed ones"},
    {"train", "iters", KEY_INT, OFF(iters), 1, 1000000, NULL, "20", "timed steps"},
    {"train", "optimizer", KEY_ENUM, OFF(optimizer), 0, 0, optimizer_names, "sgd", "sgd (with momentum) or adamw"},
    {"train", "lr", KEY_DOUBLE, OFF(lr), 1e-12, 10, NULL, "0.05", "learning rate"},
    {"train", "momentum", KEY_DOUBLE, OFF(momentum), 0, 0.999999, NULL, "0.9", "SGD momentum"},
    {"train", "weight_decay", KEY_DOUBLE, OFF(weight_decay), 0, 1, NULL, "0", "decoupled weight decay"},
    {"train", "beta1", KEY_DOUBLE, OFF(beta1), 0, 0.999999, NULL, "0.9", "AdamW beta1"},
    {"train", "beta2", KEY_DOUBLE, OFF(beta2), 0, 0.999999999, NULL, "0.999", "AdamW beta2"},
    {"train", "eps", KEY_DOUBLE, OFF(eps), 1e-30, 1, NULL, "1e-8", "AdamW epsilon"},
    {"train", "seed", KEY_INT64, OFF(seed), 0, 4611686018427387904.0, NULL, "1234", "seed of weights and synthetic data"},
    {"train", "precision", KEY_ENUM, OFF(precision), 0, 0, precision_names, "fp32",
     "GEMM precision (the CPU backend runs fp32 only)"},

    {"train", "overlap_update", KEY_BOOL, OFF(overlap_update), 0, 0, NULL, "on",
     "update a bucket's parameters as soon as its gradients are reduced (1 rank: as soon as backward produced a "
     "layer's), on a stream of its own; off = one update of the whole arena after backward and communication"},
    {"train", "grad_dtype", KEY_ENUM, OFF(grad_dtype), 0, 0, grad_dtype_names, "fp32",
     "the gradients' type: fp32, or the compute dtype (bf16/fp16: backward writes 16-bit gradients, which travel "
     "and reach the optimizer as they are, with no cast; needs comm.allreduce_dtype = compute)"},
    {"train", "master_weights", KEY_ENUM, OFF(master_weights), 0, 0, master_weights_names, "fp32",
     "fp32: the optimizer updates an fp32 master copy and writes the compute copy the GEMMs read; off: it updates "
     "the bf16 weights in place, as a framework's pure-bf16 model does (6 bytes a parameter less per step; small "
     "updates round away); bf16 only, no effect in fp32 or tf32"},
    {"train", "optimizer_state", KEY_ENUM, OFF(optimizer_state), 0, 0, optimizer_state_names, "fp32",
     "the optimizer's state (SGD momentum, AdamW moments): fp32, or the compute dtype (bf16: 4 bytes a parameter "
     "less to read and write per step; the weights' fp32 master copy stays)"},
    {"train", "update_priority", KEY_ENUM, OFF(update_priority), 0, 0, priority_names, "low",
     "priority of the overlapped update's stream: low fills the SMs the GEMMs leave idle; high goes first"},
    {"train", "gemm_sm_margin", KEY_INT, OFF(gemm_sm_margin), 0, 128, NULL, "0",
     "SMs the backward GEMMs leave to the work beside them (NCCL, the overlapped update): cuBLASLt "
     "SM_COUNT_TARGET = SMs - margin; 0 = all SMs"},
    {"train", "gemm_epilogue", KEY_ENUM, OFF(gemm_epilogue), 0, 0, epilogue_names, "off",
     "GELU layers' bias and activation in cuBLASLt GEMM epilogues instead of our element-wise kernels (cuda only): "
     "forward = GELU_AUX_BIAS in the forward GEMMs; on = also DGELU_BGRAD in backward's input-gradient GEMMs when "
     "the gradients are in the compute dtype; off = none"},
    {"train", "bias_grad", KEY_ENUM, OFF(bias_grad), 0, 0, bias_grad_names, "kernel",
     "the transformers' linear-layer bias gradients: kernel = our column-sum kernel beside the weight-gradient GEMM; "
     "epilogue = in that GEMM's epilogue (cuBLASLt BGRADB, with train.gemm_epilogue = on, cuda; measured no faster "
     "on an H200: the GEMMs lose what the kernel costs)"},
    {"train", "attention", KEY_ENUM, OFF(attention), 0, 0, attention_names, "auto",
     "the transformers' attention: flash = our fused kernels (the probabilities never reach memory; cuda, bf16 or "
     "fp16, head dimension 32 or 64); unfused = cuBLAS GEMMs around our softmax kernels, the B x H x T x T "
     "probabilities kept for backward; auto = flash where it applies"},
    {"train", "gemm_autotune", KEY_BOOL, OFF(gemm_autotune), 0, 0, NULL, "on",
     "time cuBLASLt's candidate algorithms of each GEMM shape on first use (a warm-up step) and keep the fastest; "
     "off = its first heuristic"},
    {"train", "loss_scale", KEY_DOUBLE, OFF(loss_scale), 0, 16777216, NULL, "0",
     "static loss scale of fp16 training; 0 = 1024 in fp16, 1 otherwise"},

    {"run", "backend", KEY_ENUM, OFF(backend), 0, 0, backend_names, "auto", "cpu, cuda, or auto (cuda when a GPU is visible)"},
    {"run", "sweep", KEY_INTLIST, OFF(sweep), 1, 1048576, NULL, "",
     "rank counts to run, e.g. 1,2,4; empty = powers of two up to the world size"},
    {"run", "output_dir", KEY_STRING, OFF(output_dir), 0, 0, NULL, "out", "folder of the result file"},
    {"run", "output", KEY_STRING, OFF(output), 0, 255, NULL, "", "result file name; empty = dpscale-<utc>-<job>.h5"},
    {"run", "system_label", KEY_STRING, OFF(system_label), 0, 255, NULL, "",
     "your name for the system measured (\"4 x H200 SXM, rack 12\"): in the result file and the report's labels"},
    {"run", "save_params", KEY_BOOL, OFF(save_params), 0, 0, NULL, "off", "store the final parameters of every run"},
    {"run", "timeout_s", KEY_DOUBLE, OFF(timeout_s), 0, 1e7, NULL, "0",
     "seconds a step or a collective may make no progress before the watchdog ends the job; 0 = automatic: "
     "600 until a step is done, then 20 x the slowest step, at least 120"},
    {"run", "threads", KEY_INT, OFF(threads), 0, 4096, NULL, "0", "BLAS threads per rank (cpu); 0 = cores / ranks on the node"},

    {"run", "peak_tflops", KEY_DOUBLE, OFF(peak_tflops), 0, 1e6, NULL, "0",
     "GPU peak TFLOP/s in train.precision for MFU; 0 = the built-in table"},

    {"comm", "library", KEY_ENUM, OFF(library), 0, 0, library_names, "auto",
     "who reduces the gradients: mpi (host buffers), nccl (GPU buffers); auto = nccl on cuda, mpi on cpu"},
    {"comm", "path", KEY_ENUM, OFF(path), 0, 0, path_names, "auto",
     "the path NCCL's bytes must take: nvlink (NVLink only, an error without it), pcie (peer-to-peer over PCIe, "
     "NCCL_P2P_LEVEL=SYS; an error where the GPUs are NVLink-connected, since NCCL would take NVLink), host (no peer "
     "access: through host memory; what pcie meant before schema 6), net (the network transport even inside a node: "
     "InfiniBand/RoCE if present, else sockets)"},
    {"comm", "paths", KEY_STRING, OFF(paths), 0, 0, NULL, "",
     "paths to compare, e.g. nvlink,host: jobs/lib/sweep.sh (and the Slurm jobs) run one launch per entry and "
     "compare them; a single entry is the same as comm.path"},
    {"comm", "overlap", KEY_BOOL, OFF(overlap), 0, 0, NULL, "on",
     "allreduce each gradient bucket as soon as backward produced it; off = one allreduce after backward"},
    {"comm", "bucket_mb", KEY_DOUBLE, OFF(bucket_mb), 0.001, 1e6, NULL, "25", "gradient bucket size in MB (PyTorch DDP: 25)"},
    {"comm", "first_bucket_mb", KEY_DOUBLE, OFF(first_bucket_mb), 0.001, 1e6, NULL, "1",
     "size of the first bucket (the last layer's gradients), small so that communication starts early"},
    {"comm", "allreduce_dtype", KEY_ENUM, OFF(allreduce_dtype), 0, 0, allreduce_dtype_names, "fp32",
     "gradients travel in fp32, or in the compute precision (bf16/fp16 halve the bytes)"},
    {"comm", "nccl_max_ctas", KEY_INT, OFF(nccl_max_ctas), 0, 64, NULL, "0",
     "most thread blocks (SMs) an NCCL collective may use, so that it slows the overlapped backward less; 0 = NCCL's choice"},
    {"comm", "last_layer_chunks", KEY_INT, OFF(last_layer_chunks), 1, 64, NULL, "1",
     "cut the weight gradient of the layer backward ends with into this many row blocks, each its own GEMM and "
     "bucket, so that its reduction starts while the rest of it is computed (the exposed tail shrinks)"},
    {"comm", "shard_optimizer", KEY_BOOL, OFF(shard_optimizer), 0, 0, NULL, "off",
     "ZeRO-1: reduce-scatter the gradients, each rank updates its 1/N of the fp32 master weights, all-gather the "
     "compute copy before the next forward; off = allreduce, every rank updates everything"},
    {"comm", "register", KEY_BOOL, OFF(register_buffers), 0, 0, NULL, "off",
     "NCCL user buffers: gradients and weights in ncclMemAlloc memory registered with ncclCommRegister"},
    {"comm", "symmetric", KEY_BOOL, OFF(symmetric), 0, 0, NULL, "off",
     "register those buffers as NCCL symmetric windows (ncclCommWindowRegister: symmetric kernels); implies register"},
    {"comm", "cta_policy", KEY_ENUM, OFF(cta_policy), 0, 0, cta_policy_names, "default",
     "NCCL's CTA policy (ncclConfig_t CTAPolicy): efficiency uses fewer SMs; zero uses none where registered buffers allow"},
    {"comm", "shm_copy", KEY_ENUM, OFF(shm_copy), 0, 0, shm_copy_names, "sm",
     "who moves NCCL's bytes through host memory (the SHM transport of comm.path = host): sm = NCCL's kernels, "
     "ce = the copy engines on both sides (NCCL_SHM_USE_CUDA_MEMCPY=1, NCCL_SHM_MEMCPY_MODE=3), leaving the SMs "
     "to the overlapped backward"},
    {"comm", "allreduce_op", KEY_ENUM, OFF(allreduce_op), 0, 0, allreduce_op_names, "avg",
     "avg: NCCL's average (MPI: sum, then the optimizer scales); sum: sum, then the optimizer scales by 1/N"},

    {"topo", "fixture", KEY_STRING, OFF(topo_fixture), 0, 0, NULL, "",
     "read the topology from this `nvidia-smi topo -m` output instead of detecting it"},
    {"topo", "peer_bandwidth", KEY_BOOL, OFF(topo_peer_bandwidth), 0, 0, NULL, "on",
     "dpscale topo: measure copy bandwidth and latency between every pair of local GPUs"},

    {"collective", "min_mib", KEY_DOUBLE, OFF(coll_min_mib), 0.000001, 65536, NULL, "1", "dpscale comm: smallest size, MiB"},
    {"collective", "max_mib", KEY_DOUBLE, OFF(coll_max_mib), 0.000001, 65536, NULL, "1024", "dpscale comm: largest size, MiB"},
    {"collective", "factor", KEY_INT, OFF(coll_factor), 2, 1024, NULL, "4", "dpscale comm: each size is this times the last"},
    {"collective", "dtype", KEY_ENUM, OFF(coll_dtype), 0, 0, dtype_names, "fp32", "dpscale comm: element type"},
    {"collective", "iters", KEY_INT, OFF(coll_iters), 1, 100000, NULL, "20", "dpscale comm: timed allreduces per size"},
    {"collective", "warmup", KEY_INT, OFF(coll_warmup), 0, 100000, NULL, "5", "dpscale comm: untimed allreduces per size"},
    {"collective", "in_place", KEY_BOOL, OFF(coll_in_place), 0, 0, NULL, "on", "dpscale comm: recv buffer = send buffer"},
};

const size_t config_nkeys = sizeof config_keys / sizeof config_keys[0];

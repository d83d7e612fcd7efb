/* schema.h — the result file's vocabulary, defined once: the name, units and meaning
 * of every table column and dataset, and the provenance attributes. The writer
 * (h5out*.c) takes units from here and refuses a dataset that is not listed; the
 * readers (result_read*.c) take the names, and the names they had before schema 5;
 * tests/gpu/check.py and the tests parse this file, so Python cannot drift either.
 *
 * Units: SI, named in the field as well: `_s` seconds, `_bytes` bytes, `_GBps` 1e9
 * bytes per second, `_Gbps` 1e9 bits per second (link rates only), `_w` watts;
 * "1" is a count or a ratio, "" text. Keep one entry per line, in the form
 * X(name, "units", "meaning") (attributes: X(name, bytes, "meaning")), with no
 * double quote inside a meaning: tests/gpu/check.py reads them with one regex. */
#ifndef DPSCALE_SCHEMA_H
#define DPSCALE_SCHEMA_H

#include <stddef.h>

/* 2: /runs/<library>/<path>, the honest 1-rank run; 3: interference over backward alone;
 * 4: /model, the model's tensor table; 5: provenance (root attributes, /system library
 * versions, /system/ranks, /system/environment), UTF-8 variable-length strings, integer
 * counts, a units attribute on every dataset, GB/s named _GBps, /summary's label columns;
 * 6: the path through host memory (NCCL_P2P_DISABLE=1) is named "host" wherever a path is
 * written (/summary, run and collectives groups, /system path, /config comm.path), and
 * "pcie" names NCCL's peer-to-peer over PCIe (NCCL_P2P_LEVEL=SYS). Before 6, "pcie" was the
 * host-memory path: the readers take it as "host" (SCHEMA_PCIE_IS_P2P). A projection's
 * copied /config and /system keep their source's words; /projection/source's
 * schema_version says which schema those are. */
#define SCHEMA_VERSION 6
#define SCHEMA_PCIE_IS_P2P 6 /* the first schema whose path "pcie" is peer-to-peer over PCIe */

/* /summary, one row per run (a compound table: one call in pandas). Text first, then
 * integers (int64), then reals (float64); RUN_SUMMARY_DOUBLES of stats.h is the last list. */
#define SCHEMA_SUMMARY_TEXT(X) \
    X(library, "", "who reduces the gradients: mpi or nccl (comm.library in force); proj in a projection") \
    X(path, "", "the path asked for (comm.path): auto, nvlink, pcie, host, net; sim in a projection") \
    X(model, "", "the preset's label (model.name)") \
    X(precision, "", "train.precision: fp32, tf32, bf16, fp16") \
    X(overlap, "", "comm.overlap: on or off") \
    X(shard_optimizer, "", "comm.shard_optimizer (ZeRO-1): on or off") \
    X(system_label, "", "run.system_label: the user's name for the system measured")
#define SCHEMA_SUMMARY_INTS(X) \
    X(nranks, "1", "GPUs (ranks) of the run") \
    X(nodes, "1", "nodes the run spans") \
    X(gpus_per_node, "1", "ranks on the busiest node of the run") \
    X(batch_per_rank, "samples", "samples per rank per step") \
    X(global_batch, "samples", "samples per step, all ranks")
#define SCHEMA_SUMMARY_REALS(X) \
    X(step_median_s, "s", "median over timed steps of the max over ranks of the step") \
    X(step_p05_s, "s", "5th percentile of the same") \
    X(step_p95_s, "s", "95th percentile of the same") \
    X(forward_median_s, "s", "median of the max over ranks of forward") \
    X(backward_median_s, "s", "median of the max over ranks of backward") \
    X(comm_exposed_median_s, "s", "median of the max over ranks of the communication the step waited for") \
    X(update_median_s, "s", "median of the max over ranks of the update left after backward") \
    X(compute_only_s, "s", "the step without communication: median of the max over ranks") \
    X(compute_only_mean_s, "s", "the same, of the mean over ranks (a typical rank)") \
    X(compute_only_backward_s, "s", "backward without communication: median of the max over ranks") \
    X(allreduce_alone_s, "s", "the step's communication by itself, ranks lined up; 0 on 1 rank") \
    X(overlap_efficiency, "1", "1 - exposed communication / allreduce alone; NaN on 1 rank") \
    X(samples_per_s, "samples/s", "global batch / median step") \
    X(samples_per_s_per_rank, "samples/s", "batch per rank / median step") \
    X(speedup, "1", "samples_per_s against the 1-rank run of the launch; NaN without one") \
    X(efficiency, "1", "speedup / ranks; NaN without a 1-rank run") \
    X(loss_compute, "1", "(typical compute - ideal step) / step") \
    X(loss_imbalance, "1", "(slowest compute - typical compute) / step") \
    X(loss_interference, "1", "(backward - compute-only backward) / step: backward slowed by the communication beside it") \
    X(loss_comm, "1", "(step - slowest compute) / step - interference; the four losses add up to 1 - efficiency") \
    X(gemm_tflops, "TFLOP/s", "GEMM FLOP/s of all ranks at the median step") \
    X(mfu, "1", "GEMM FLOP/s per GPU over its datasheet peak; NaN when unknown") \
    X(allreduce_busbw_GBps, "GB/s", "nccl-tests busbw of the allreduce alone; NaN on 1 rank") \
    X(joules_per_sample, "J", "GPU energy per sample; NaN without an energy counter") \
    X(avg_power_w, "W", "mean GPU power of all ranks; NaN without an energy counter") \
    X(final_loss, "nats", "loss of the last step")

/* /runs/<library>/<path>/n<N>: datasets of one run. */
#define SCHEMA_RUN_DATASETS(X) \
    X(forward_s, "s", "[timed step x rank] forward with the loss") \
    X(backward_s, "s", "[timed step x rank] backward, collectives started as buckets fill") \
    X(comm_exposed_s, "s", "[timed step x rank] end of backward to the last reduction done") \
    X(update_s, "s", "[timed step x rank] the update left after that") \
    X(step_s, "s", "[timed step x rank] the whole step: the four phases add up to it") \
    X(compute_only_s, "s", "[timed step x rank] the same steps without communication") \
    X(compute_only_backward_s, "s", "[timed step x rank] backward of those steps") \
    X(allreduce_alone_s, "s", "[rep x rank] the step's communication by itself, buckets back to back") \
    X(loss, "nats", "[step] mean loss over the global batch, warm-up steps included") \
    X(bucket_elements, "1", "[bucket] gradient elements of each bucket, in launch order") \
    X(bucket_start_s, "s", "[timed step x rank x bucket] reduction start, from the step's start") \
    X(bucket_end_s, "s", "[timed step x rank x bucket] reduction end, from the step's start") \
    X(bucket_ready_s, "s", "[timed step x rank x bucket] gradients complete, from the step's start") \
    X(bucket_ready_compute_only_s, "s", "[timed step x rank x bucket] the same in the compute-only pass") \
    X(params, "1", "[parameter] final parameters (run.save_params = on)")

/* /collectives/<library>/<path>/n<N>: one allreduce sweep of dpscale comm. */
#define SCHEMA_COLLECTIVE_DATASETS(X) \
    X(size_bytes, "B", "[size] bytes reduced per allreduce") \
    X(time_s, "s", "[size x rank] one allreduce, mean over the timed iterations") \
    X(algbw_GBps, "GB/s", "[size] bytes / time of the slowest rank") \
    X(busbw_GBps, "GB/s", "[size] algbw x 2(n-1)/n, as nccl-tests") \
    X(wrong_elements, "1", "[size] elements of the checked result that differ from the exact sum, all ranks")

/* /system/topology: rank 0's node. */
#define SCHEMA_TOPOLOGY_DATASETS(X) \
    X(link, "", "[gpu x gpu] NV18, PIX, PXB, NODE, SYS, X as nvidia-smi topo -m") \
    X(nvlink_count, "1", "[gpu x gpu] NVLinks between two GPUs") \
    X(gpu_name, "", "[gpu] product name") \
    X(gpu_bus_id, "", "[gpu] PCI bus id") \
    X(gpu_cpu_affinity, "", "[gpu] the CPUs nearest the GPU") \
    X(gpu_pcie_gen, "1", "[gpu] PCIe generation of its link") \
    X(gpu_pcie_width, "1", "[gpu] PCIe lanes of its link") \
    X(gpu_numa_node, "1", "[gpu] NUMA node; -1 unknown") \
    X(gpu_nvlinks_up, "1", "[gpu] NVLinks up") \
    X(nic_name, "", "[adapter] network adapter") \
    X(nic_link_layer, "", "[adapter] InfiniBand or Ethernet") \
    X(nic_state, "", "[adapter] port state") \
    X(nic_rate_Gbps, "Gb/s", "[adapter] link rate in bits") \
    X(nic_numa_node, "1", "[adapter] NUMA node; -1 unknown") \
    X(peer_unidir_GBps, "GB/s", "[gpu x gpu] one-way copy bandwidth (dpscale topo)") \
    X(peer_bidir_GBps, "GB/s", "[gpu x gpu] copies both ways at once, their sum") \
    X(peer_host_GBps, "GB/s", "[gpu x gpu] the same copy staged through host memory") \
    X(peer_latency_us, "us", "[gpu x gpu] one small copy")

/* /system: the launch's hosts; /system/ranks: each rank as it saw itself, one row per
 * rank, its columns the integers, then the text, then the reals. */
#define SCHEMA_SYSTEM_DATASETS(X) \
    X(hosts, "", "[rank] host name of each rank")
#define SCHEMA_RANK_TEXT(X) \
    X(host, "", "host name") \
    X(cpu_model, "", "CPU model (/proc/cpuinfo)") \
    X(gpu_name, "", "GPU product name; empty on the cpu backend") \
    X(gpu_uuid, "", "GPU UUID (NVML); empty without NVML") \
    X(gpu_bus_id, "", "PCI bus id of the rank's GPU") \
    X(gpu_driver, "", "GPU driver version (NVML)") \
    X(environment, "", "every NCCL_* and CUDA_* variable as launched, one NAME=value a line")
#define SCHEMA_RANK_INTS(X) \
    X(rank, "1", "rank in MPI_COMM_WORLD") \
    X(local_rank, "1", "rank on its node") \
    X(cpus, "1", "online logical CPUs of the host") \
    X(gpu_index, "1", "CUDA device ordinal; -1 on the cpu backend") \
    X(gpu_memory_bytes, "B", "GPU memory (NVML, else CUDA); -1 unknown") \
    X(gpu_app_clock_graphics_mhz, "MHz", "application clock of the graphics domain (NVML); -1 unknown") \
    X(gpu_app_clock_memory_mhz, "MHz", "application clock of the memory (NVML); -1 unknown")
#define SCHEMA_RANK_REALS(X) \
    X(gpu_power_limit_w, "W", "enforced power limit (NVML); NaN unknown")

/* /model/tensors, /dump and /projection. */
#define SCHEMA_TENSOR_COLUMNS(X) \
    X(name, "", "the tensor's name") \
    X(kind, "", "matrix (sharded by ZeRO-1) or vector (a bias or norm)") \
    X(rows, "1", "rows") \
    X(cols, "1", "columns") \
    X(stage, "1", "the forward stage that first reads it") \
    X(offset, "1", "first element in the parameter, gradient and optimizer arenas") \
    X(count, "1", "elements")
#define SCHEMA_DUMP_DATASETS(X) \
    X(params, "1", "[parameter] initial parameters of rank 0") \
    X(grads, "1", "[parameter] gradients of its first step") \
    X(input, "1", "every /dump/inputs dataset: features, class or token ids of that step")
#define SCHEMA_PROJECTION_DATASETS(X) \
    X(curve_source, "", "[row] the allreduce curve of each projected row, and its source")

/* Provenance. Root attributes: who ran what, when, how it was started, X(name, bytes,
 * meaning); beside them, as before schema 5: schema_version, writer ("dpscale"),
 * dpscale_version, created_utc, command_line (quoted for a POSIX shell), argv (the same,
 * one string per argument) and job_id (SLURM_JOB_ID or ""). */
#define SCHEMA_LAUNCH_ATTRS(X) \
    X(git_commit, 64, "git describe --always --dirty of the source built; unknown outside git") \
    X(started_utc, 32, "when the launch started, UTC ISO 8601 (created_utc is the same)") \
    X(ended_utc, 32, "when the file was written, UTC ISO 8601") \
    X(launcher, 64, "what started the ranks: srun, mpirun (Open MPI), mpiexec (Hydra), or none") \
    X(launcher_command_line, 2048, "the launcher's command line, as rank 0's parent process (/proc) shows it; empty without a launcher") \
    X(system_label, 256, "run.system_label: the user's name for the system measured") \
    X(slurm_partition, 128, "SLURM_JOB_PARTITION; empty outside Slurm") \
    X(slurm_cluster, 128, "SLURM_CLUSTER_NAME") \
    X(slurm_nodelist, 1024, "SLURM_JOB_NODELIST")
/* /system attributes: the libraries dpscale was built with and runs with (rank 0's). */
#define SCHEMA_LIBRARY_ATTRS(X) \
    X(nccl_version, 32, "ncclGetVersion of the NCCL loaded; empty without CUDA") \
    X(nccl_version_built, 32, "NCCL_VERSION_CODE of the headers built with") \
    X(cuda_runtime_version, 32, "cudaRuntimeGetVersion (linked statically: the toolkit built with)") \
    X(cuda_driver_version, 32, "cudaDriverGetVersion: the newest CUDA the installed driver supports") \
    X(cublas_version, 32, "cublasLtGetVersion of the cuBLASLt loaded") \
    X(cublas_version_built, 32, "CUBLAS_VERSION of the headers built with") \
    X(gpu_driver_version, 64, "the GPU driver (NVML)") \
    X(mpi_library_version, 1024, "MPI_Get_library_version, whole") \
    X(mpi_standard_version, 16, "MPI_Get_version") \
    X(mpi_library_built, 64, "the MPI of the mpi.h built with") \
    X(hdf5_version, 32, "H5get_libversion of the HDF5 loaded") \
    X(hdf5_version_built, 32, "H5_VERSION of the headers built with") \
    X(blas_library, 256, "openblas_get_config of the OpenBLAS loaded") \
    X(compiler, 128, "the C compiler dpscale was built with")

/* Names of schema 4 and before, which readers still accept: X(former, current). */
#define SCHEMA_FORMER_NAMES(X) \
    X(allreduce_busbw_gbps, allreduce_busbw_GBps) \
    X(algbw_gbps, algbw_GBps) \
    X(busbw_gbps, busbw_GBps) \
    X(peer_unidir_gbps, peer_unidir_GBps) \
    X(peer_bidir_gbps, peer_bidir_GBps) \
    X(peer_host_gbps, peer_host_GBps) \
    X(nic_rate_gbps, nic_rate_Gbps)

/* The tables of names, for lookups at run time. */
enum schema_table {
    SCHEMA_SUMMARY,
    SCHEMA_RUN,
    SCHEMA_COLLECTIVE,
    SCHEMA_TOPOLOGY,
    SCHEMA_SYSTEM,
    SCHEMA_RANKS,
    SCHEMA_TENSORS,
    SCHEMA_DUMP,
    SCHEMA_PROJECTION,
    SCHEMA_NTABLES
};

struct schema_entry {
    const char *name, *units, *meaning;
};

/* The entry `name` of table t, or NULL when the schema does not define it. */
const struct schema_entry *schema_find(enum schema_table t, const char *name);
/* The name `name` had before schema 5, or NULL when it kept its name. */
const char *schema_former_name(const char *name);

#endif

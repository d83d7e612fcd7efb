/* topo.h — what connects the GPUs of a node, and the node to the network.
 *
 * Detected through NVML (opened with dlopen: GPUs, NVLink state and peers, PCIe
 * generation and width, the common PCIe ancestor of every pair) and /sys (NUMA
 * node and CPU affinity of each GPU, InfiniBand and RoCE adapters with their rate),
 * or read from a recorded `nvidia-smi topo -m` (tests, and nodes without NVML).
 * `dpscale topo` prints it; every result file stores it under /system/topology. */
#ifndef DPSCALE_TOPO_H
#define DPSCALE_TOPO_H

#include <stddef.h>
#include <stdio.h>

#define TOPO_MAX_GPUS 16
#define TOPO_MAX_NICS 16

/* How two GPUs reach each other, nearest first (nvidia-smi's legend). */
enum topo_link { TOPO_SELF, TOPO_NVLINK, TOPO_PIX, TOPO_PXB, TOPO_PHB, TOPO_NODE, TOPO_SYS, TOPO_UNKNOWN };

struct topo_gpu {
    char name[96];
    char bus_id[32];
    int pcie_gen, pcie_width; /* current link; 0 = unknown */
    int numa_node;            /* -1 = unknown */
    char cpu_affinity[128];
    int nvlinks_up;
    int nvlink_version; /* 0 = none or unknown */
};

struct topo_nic {
    char name[32];       /* mlx5_0 */
    char link_layer[16]; /* InfiniBand, or Ethernet (RoCE) */
    double rate_gbps;    /* 0 = unknown */
    char state[16];      /* ACTIVE, DOWN, ... */
    int numa_node;
};

struct topo_node {
    char source[160]; /* "nvml+sysfs" or the fixture's path */
    int ngpus;
    struct topo_gpu gpu[TOPO_MAX_GPUS];
    int link[TOPO_MAX_GPUS][TOPO_MAX_GPUS];    /* enum topo_link */
    int nvlinks[TOPO_MAX_GPUS][TOPO_MAX_GPUS]; /* NVLinks between the pair (NV18 = 18) */
    int nnics;
    struct topo_nic nic[TOPO_MAX_NICS];
};

/* NVML (if it loads) and sysfs under $DPSCALE_SYSFS_ROOT (default /sys). Never fails:
 * what cannot be read stays unknown. */
void topo_detect(struct topo_node *t);

/* Parse the output of `nvidia-smi topo -m`. Returns 0, or -1 with a message. */
int topo_parse_nvidia_smi(const char *text, struct topo_node *t, char *err, size_t errlen);
int topo_load_fixture(const char *path, struct topo_node *t, char *err, size_t errlen);

/* "NV18", "PIX", ... of a pair, as nvidia-smi prints it. */
void topo_link_label(const struct topo_node *t, int i, int j, char *buf, size_t len);
/* 1 when every pair among the GPUs in `gpus` is NVLink-connected. */
int topo_all_nvlink(const struct topo_node *t, const int *gpus, int n);
/* 1 when some pair among them is, with that pair's topology indices in *a and *b. */
int topo_nvlink_pair(const struct topo_node *t, const int *gpus, int n, int *a, int *b);
/* The GPU-to-GPU matrix as text, one line per GPU, for messages and the console. */
void topo_format_matrix(const struct topo_node *t, char *buf, size_t len);
void topo_print(FILE *out, const struct topo_node *t);

/* Pieces of topo_detect, shared between topo.c (sysfs) and topo_nvml.c. */
void topo_sysfs_pci(const char *bus_id, int *numa_node, char *cpus, size_t cpus_len);
void topo_sysfs_nics(struct topo_node *t);

#endif

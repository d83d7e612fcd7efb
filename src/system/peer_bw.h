/* peer_bw.h — the GPU-to-GPU copy matrix of one node, as the CUDA samples'
 * p2pBandwidthLatencyTest measures it: bandwidth one way and both ways with peer
 * access, through host memory, and the latency of a small copy, for every pair.
 * A degraded link stands out as one cell far below its row. */
#ifndef DPSCALE_PEER_BW_H
#define DPSCALE_PEER_BW_H

#include "system/topo.h"

struct peer_matrix {
    int n;
    int p2p[TOPO_MAX_GPUS][TOPO_MAX_GPUS];            /* peer access possible */
    double unidir_gbps[TOPO_MAX_GPUS][TOPO_MAX_GPUS]; /* i -> j, GB/s */
    double bidir_gbps[TOPO_MAX_GPUS][TOPO_MAX_GPUS];  /* i -> j and j -> i at once, both directions summed */
    double host_gbps[TOPO_MAX_GPUS][TOPO_MAX_GPUS];   /* i -> pinned host -> j */
    double latency_us[TOPO_MAX_GPUS][TOPO_MAX_GPUS];  /* one 4-byte copy i -> j */
};

/* Every visible GPU pair, `bytes` per copy. Returns 0, or -1 without CUDA or GPUs. */
int peer_measure(struct peer_matrix *m, size_t bytes);
void peer_print(FILE *out, const struct peer_matrix *m);

#endif

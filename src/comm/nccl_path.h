/* nccl_path.h — from comm.path (auto | nvlink | pcie | host | net) to the NCCL settings
 * that force that path, checked against the node's topology. NCCL reads
 * its settings once per process, so they are applied before its first
 * communicator and hold for the whole launch; comparing paths takes one launch
 * per path (jobs/lib/sweep.sh does that and merges the files). */
#ifndef DPSCALE_NCCL_PATH_H
#define DPSCALE_NCCL_PATH_H

#include <stddef.h>

#include "system/topo.h"

#define NCCL_PATH_MAX_SETTINGS 8

struct nccl_settings {
    int n;
    struct {
        char name[32];
        char value[16];
    } v[NCCL_PATH_MAX_SETTINGS];
};

/* The settings for `path` on a node with topology `t`, whose ranks use the GPUs
 * `gpus[0..ngpus)` (topology indices). Returns 0, or -1 with a message when the path
 * cannot be had (nvlink between GPUs that have none, pcie between GPUs that have NVLink,
 * which NCCL's peer-to-peer would take: the message shows the matrix). */
int nccl_path_settings(int path, const struct topo_node *t, const int *gpus, int ngpus,
                            struct nccl_settings *out, char *err, size_t errlen);

/* Add to `s` the settings of comm.shm_copy (enum shm_copy): ce moves the SHM
 * transport's copies onto the copy engines of both GPUs; sm adds nothing. */
void nccl_shm_copy_settings(int shm_copy, struct nccl_settings *s);

/* setenv() every setting (before NCCL starts); returns how many replaced a different
 * value the user had set, naming the first in `note`. */
int nccl_path_apply(const struct nccl_settings *s, char *note, size_t len);

/* Every NCCL_* variable in the environment, "NAME=value" joined by spaces: what NCCL saw. */
void nccl_effective_env(char *buf, size_t len);


#endif

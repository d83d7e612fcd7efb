/* nccl_path.c — the NCCL settings of each path (nccl_path.h).
 *
 *   nvlink: NCCL_P2P_LEVEL=NVL   peer-to-peer only where NVLink connects the GPUs
 *   pcie:   NCCL_P2P_LEVEL=SYS   peer-to-peer across PCIe switches and the CPU; NCCL has no
 *                                setting that keeps P2P off NVLink, so GPUs with NVLink between
 *                                them are refused (their pcie run would be an NVLink run)
 *   host:   NCCL_P2P_DISABLE=1   no peer access: intra-node traffic through host memory (SHM);
 *                                what pcie meant before schema 6
 *   net:    NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1, and NCCL_IB_DISABLE=1 when no InfiniBand or
 *           RoCE adapter is up: NCCL's network transport even between GPUs of one node
 * and, with comm.shm_copy = ce, NCCL_SHM_USE_CUDA_MEMCPY=1 and NCCL_SHM_MEMCPY_MODE=3: the
 * host-memory copies on the copy engines instead of SMs. */
#include "comm/nccl_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

extern char **environ;

static void add(struct nccl_settings *s, const char *name, const char *value)
{
    if (s->n == NCCL_PATH_MAX_SETTINGS) return;
    snprintf(s->v[s->n].name, sizeof s->v[s->n].name, "%s", name);
    snprintf(s->v[s->n].value, sizeof s->v[s->n].value, "%s", value);
    s->n++;
}

static int rdma_adapter_up(const struct topo_node *t)
{
    for (int i = 0; i < t->nnics; i++)
        if (strcmp(t->nic[i].state, "ACTIVE") == 0) return 1;
    return 0;
}

int nccl_path_settings(int path, const struct topo_node *t, const int *gpus, int ngpus,
                            struct nccl_settings *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    switch (path) {
    case PATH_NVLINK:
        if (ngpus > 1 && !topo_all_nvlink(t, gpus, ngpus)) {
            char matrix[1024];
            topo_format_matrix(t, matrix, sizeof matrix);
            snprintf(err, errlen, "comm.path = nvlink, but the GPUs of this node are not all NVLink-connected (%s); "
                     "use comm.path = pcie, host or auto", matrix);
            return -1;
        }
        add(out, "NCCL_P2P_LEVEL", "NVL");
        return 0;
    case PATH_PCIE: {
        int a, b;
        if (ngpus > 1 && topo_nvlink_pair(t, gpus, ngpus, &a, &b)) {
            const int all = topo_all_nvlink(t, gpus, ngpus);
            char matrix[1024], pair[48];
            topo_format_matrix(t, matrix, sizeof matrix);
            snprintf(pair, sizeof pair, "GPUs %d and %d are", a, b);
            snprintf(err, errlen, "comm.path = pcie, but %s NVLink-connected (%s): NCCL's peer-to-peer would take "
                     "NVLink; use comm.path = host to measure without NVLink (through host memory), or %s",
                     all ? "these GPUs are" : pair, matrix, all ? "nvlink" : "auto");
            return -1;
        }
        add(out, "NCCL_P2P_LEVEL", "SYS");
        return 0;
    }
    case PATH_HOST:
        add(out, "NCCL_P2P_DISABLE", "1");
        return 0;
    case PATH_NET:
        add(out, "NCCL_P2P_DISABLE", "1");
        add(out, "NCCL_SHM_DISABLE", "1");
        if (!rdma_adapter_up(t)) add(out, "NCCL_IB_DISABLE", "1");
        return 0;
    default:
        return 0;
    }
}

void nccl_shm_copy_settings(int shm_copy, struct nccl_settings *s)
{
    if (shm_copy != SHM_COPY_CE) return;
    add(s, "NCCL_SHM_USE_CUDA_MEMCPY", "1");
    add(s, "NCCL_SHM_MEMCPY_MODE", "3"); /* sender and receiver side */
}

int nccl_path_apply(const struct nccl_settings *s, char *note, size_t len)
{
    int replaced = 0;
    for (int i = 0; i < s->n; i++) {
        const char *old = getenv(s->v[i].name);
        if (old != NULL && strcmp(old, s->v[i].value) != 0 && replaced++ == 0)
            snprintf(note, len, "%s=%s replaced by %s", s->v[i].name, old, s->v[i].value);
        setenv(s->v[i].name, s->v[i].value, 1);
    }
    return replaced;
}

void nccl_effective_env(char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (char **e = environ; *e != NULL && used < len; e++)
        if (strncmp(*e, "NCCL_", 5) == 0) used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "", *e);
}

/* topo_nvml.c — topology detection through NVML and /sys (topo.h). NVLink pairs
 * are counted from each link's remote PCI bus id: a link to an NVSwitch names the
 * switch, not a GPU, so on NVSwitch systems every GPU pair with links up is taken
 * as connected through the switch with the GPU's link count, as nvidia-smi shows. */
#include <string.h>

#include "system/nvml.h"
#include "system/topo.h"

#define NVLINK_MAX 18

static int gpu_with_bus(const struct topo_node *t, const char *bus)
{
    for (int i = 0; i < t->ngpus; i++)
        if (strcasecmp(t->gpu[i].bus_id, bus) == 0) return i;
    return -1;
}

static int link_from_level(int level)
{
    /* NVML levels: 0 internal, 10 single switch, 20 multiple switches, 30 host bridge, 40 node, 50 system */
    switch (level) {
    case 0:
    case 10: return TOPO_PIX;
    case 20: return TOPO_PXB;
    case 30: return TOPO_PHB;
    case 40: return TOPO_NODE;
    case 50: return TOPO_SYS;
    default: return TOPO_UNKNOWN;
    }
}

void topo_detect(struct topo_node *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->source, sizeof t->source, "nvml+sysfs");
    struct nvml_gpu dev[TOPO_MAX_GPUS];
    int n = nvml_device_count();
    t->ngpus = n > TOPO_MAX_GPUS ? TOPO_MAX_GPUS : n;
    for (int i = 0; i < t->ngpus; i++) {
        struct topo_gpu *g = &t->gpu[i];
        nvml_open_index(&dev[i], i);
        nvml_name(&dev[i], g->name, sizeof g->name);
        nvml_bus_id(&dev[i], g->bus_id, sizeof g->bus_id);
        nvml_pcie_link(&dev[i], &g->pcie_gen, &g->pcie_width);
        topo_sysfs_pci(g->bus_id, &g->numa_node, g->cpu_affinity, sizeof g->cpu_affinity);
    }
    int switched[TOPO_MAX_GPUS] = {0}; /* links that end at something other than a GPU */
    for (int i = 0; i < t->ngpus; i++) {
        for (int l = 0; l < NVLINK_MAX; l++) {
            char remote[32];
            int version = 0;
            if (!nvml_nvlink(&dev[i], l, remote, sizeof remote, &version)) continue;
            t->gpu[i].nvlinks_up++;
            t->gpu[i].nvlink_version = version;
            int peer = gpu_with_bus(t, remote);
            if (peer >= 0 && peer != i) t->nvlinks[i][peer]++;
            else switched[i]++;
        }
    }
    for (int i = 0; i < t->ngpus; i++)
        for (int j = 0; j < t->ngpus; j++) {
            if (i == j) { t->link[i][j] = TOPO_SELF; continue; }
            if (t->nvlinks[i][j] == 0 && switched[i] > 0 && switched[j] > 0) /* both on the NVSwitch fabric */
                t->nvlinks[i][j] = switched[i] < switched[j] ? switched[i] : switched[j];
            t->link[i][j] = t->nvlinks[i][j] > 0 ? TOPO_NVLINK : link_from_level(nvml_common_ancestor(&dev[i], &dev[j]));
        }
    topo_sysfs_nics(t);
}

/* nvml.c — NVML through dlopen (nvml.h). We declare the handful of entry points
 * ourselves; their signatures are NVML's stable v2 ABI. */
#include "system/nvml.h"

#include <dlfcn.h>
#include <stdio.h>

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_bus_fn)(const char *, void **);
typedef int (*nvml_str_fn)(char *, unsigned);
typedef int (*nvml_dev_str_fn)(void *, char *, unsigned);
typedef int (*nvml_energy_fn)(void *, unsigned long long *);
typedef int (*nvml_count_fn)(unsigned *);
typedef int (*nvml_by_index_fn)(unsigned, void **);
typedef int (*nvml_uint_fn)(void *, unsigned *);
typedef int (*nvml_link_uint_fn)(void *, unsigned, unsigned *);

/* nvmlPciInfo_t (v3 layout) and nvmlFieldValue_t, as nvml.h declares them. */
struct nvml_pci_info {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
};
struct nvml_field_value {
    unsigned field_id, scope_id;
    long long timestamp, latency_usec;
    int value_type, nvml_return;
    unsigned long long value;
};
typedef int (*nvml_pci_fn)(void *, struct nvml_pci_info *);
typedef int (*nvml_remote_pci_fn)(void *, unsigned, struct nvml_pci_info *);
typedef int (*nvml_fields_fn)(void *, int, struct nvml_field_value *);
typedef int (*nvml_ancestor_fn)(void *, void *, int *);
struct nvml_memory { /* nvmlMemory_t */
    unsigned long long total, free, used;
};
typedef int (*nvml_memory_fn)(void *, struct nvml_memory *);

#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138
#define NVML_NVLINK_MAX_LINKS 18

static struct {
    int tried, ok;
    nvml_by_bus_fn by_bus;
    nvml_str_fn driver;
    nvml_dev_str_fn name;
    nvml_energy_fn energy;
    nvml_count_fn count;
    nvml_by_index_fn by_index;
    nvml_pci_fn pci;
    nvml_uint_fn pcie_gen, pcie_width;
    nvml_link_uint_fn link_state, link_version;
    nvml_remote_pci_fn remote_pci;
    nvml_fields_fn fields;
    nvml_ancestor_fn ancestor;
    nvml_dev_str_fn uuid;
    nvml_memory_fn memory;
    nvml_uint_fn power_limit;
    nvml_link_uint_fn app_clock;
} lib;

static int load(void)
{
    if (lib.tried) return lib.ok;
    lib.tried = 1;
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) return 0;
    nvml_init_fn init = (nvml_init_fn)dlsym(h, "nvmlInit_v2");
    lib.by_bus = (nvml_by_bus_fn)dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
    lib.driver = (nvml_str_fn)dlsym(h, "nvmlSystemGetDriverVersion");
    lib.name = (nvml_dev_str_fn)dlsym(h, "nvmlDeviceGetName");
    lib.energy = (nvml_energy_fn)dlsym(h, "nvmlDeviceGetTotalEnergyConsumption");
    lib.count = (nvml_count_fn)dlsym(h, "nvmlDeviceGetCount_v2");
    lib.by_index = (nvml_by_index_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
    lib.pci = (nvml_pci_fn)dlsym(h, "nvmlDeviceGetPciInfo_v3");
    lib.pcie_gen = (nvml_uint_fn)dlsym(h, "nvmlDeviceGetCurrPcieLinkGeneration");
    lib.pcie_width = (nvml_uint_fn)dlsym(h, "nvmlDeviceGetCurrPcieLinkWidth");
    lib.link_state = (nvml_link_uint_fn)dlsym(h, "nvmlDeviceGetNvLinkState");
    lib.link_version = (nvml_link_uint_fn)dlsym(h, "nvmlDeviceGetNvLinkVersion");
    lib.remote_pci = (nvml_remote_pci_fn)dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2");
    lib.fields = (nvml_fields_fn)dlsym(h, "nvmlDeviceGetFieldValues");
    lib.ancestor = (nvml_ancestor_fn)dlsym(h, "nvmlDeviceGetTopologyCommonAncestor");
    lib.uuid = (nvml_dev_str_fn)dlsym(h, "nvmlDeviceGetUUID");
    lib.memory = (nvml_memory_fn)dlsym(h, "nvmlDeviceGetMemoryInfo");
    lib.power_limit = (nvml_uint_fn)dlsym(h, "nvmlDeviceGetEnforcedPowerLimit");
    lib.app_clock = (nvml_link_uint_fn)dlsym(h, "nvmlDeviceGetApplicationsClock");
    lib.ok = init != NULL && lib.by_bus != NULL && init() == 0;
    return lib.ok;
}

int nvml_open(struct nvml_gpu *g, const char *pci_bus_id)
{
    g->available = 0;
    g->device = NULL;
    if (!load()) return -1;
    if (lib.by_bus(pci_bus_id, &g->device) != 0) return -1;
    g->available = 1;
    return 0;
}

void nvml_driver_version(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    if (load() && lib.driver != NULL && lib.driver(buf, (unsigned)len) != 0) snprintf(buf, len, "unknown");
}

void nvml_name(const struct nvml_gpu *g, char *buf, size_t len)
{
    if (!g->available || lib.name == NULL || lib.name(g->device, buf, (unsigned)len) != 0) snprintf(buf, len, "unknown");
}

double nvml_energy_j(const struct nvml_gpu *g)
{
    unsigned long long mj = 0;
    if (!g->available || lib.energy == NULL || lib.energy(g->device, &mj) != 0) return -1.0;
    return (double)mj / 1000.0;
}

double nvml_nvlink_tx_bytes(const struct nvml_gpu *g)
{
    if (!g->available || lib.fields == NULL) return -1.0;
    /* scope UINT_MAX: the sum over all links; the counter is in KiB */
    struct nvml_field_value v = {.field_id = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, .scope_id = 0xffffffffu};
    if (lib.fields(g->device, 1, &v) != 0 || v.nvml_return != 0) return -1.0;
    return (double)v.value * 1024.0;
}

int nvml_device_count(void)
{
    unsigned n = 0;
    if (!load() || lib.count == NULL || lib.count(&n) != 0) return 0;
    return (int)n;
}

int nvml_open_index(struct nvml_gpu *g, int index)
{
    g->available = 0;
    if (!load() || lib.by_index == NULL || lib.by_index((unsigned)index, &g->device) != 0) return -1;
    g->available = 1;
    return 0;
}

void nvml_bus_id(const struct nvml_gpu *g, char *buf, size_t len)
{
    struct nvml_pci_info info;
    if (g->available && lib.pci != NULL && lib.pci(g->device, &info) == 0) snprintf(buf, len, "%s", info.bus_id);
    else snprintf(buf, len, "unknown");
}

void nvml_pcie_link(const struct nvml_gpu *g, int *gen, int *width)
{
    unsigned v = 0;
    *gen = g->available && lib.pcie_gen != NULL && lib.pcie_gen(g->device, &v) == 0 ? (int)v : 0;
    *width = g->available && lib.pcie_width != NULL && lib.pcie_width(g->device, &v) == 0 ? (int)v : 0;
}

int nvml_nvlink(const struct nvml_gpu *g, int link, char *remote_bus_id, size_t len, int *version)
{
    unsigned active = 0, v = 0;
    struct nvml_pci_info info;
    if (!g->available || lib.link_state == NULL || link >= NVML_NVLINK_MAX_LINKS) return 0;
    if (lib.link_state(g->device, (unsigned)link, &active) != 0 || !active) return 0;
    *version = lib.link_version != NULL && lib.link_version(g->device, (unsigned)link, &v) == 0 ? (int)v : 0;
    if (lib.remote_pci != NULL && lib.remote_pci(g->device, (unsigned)link, &info) == 0)
        snprintf(remote_bus_id, len, "%s", info.bus_id);
    else
        snprintf(remote_bus_id, len, "unknown");
    return 1;
}

int nvml_common_ancestor(const struct nvml_gpu *a, const struct nvml_gpu *b)
{
    int level = -1;
    if (!a->available || !b->available || lib.ancestor == NULL) return -1;
    return lib.ancestor(a->device, b->device, &level) == 0 ? level : -1;
}

void nvml_uuid(const struct nvml_gpu *g, char *buf, size_t len)
{
    if (!g->available || lib.uuid == NULL || lib.uuid(g->device, buf, (unsigned)len) != 0) buf[0] = '\0';
}

long long nvml_memory_bytes(const struct nvml_gpu *g)
{
    struct nvml_memory m;
    return g->available && lib.memory != NULL && lib.memory(g->device, &m) == 0 ? (long long)m.total : -1;
}

double nvml_power_limit_w(const struct nvml_gpu *g)
{
    unsigned mw = 0;
    return g->available && lib.power_limit != NULL && lib.power_limit(g->device, &mw) == 0 ? mw / 1000.0 : -1.0;
}

int nvml_app_clock_mhz(const struct nvml_gpu *g, int memory)
{
    unsigned mhz = 0; /* nvmlClockType_t: NVML_CLOCK_GRAPHICS 0, NVML_CLOCK_MEM 2 */
    return g->available && lib.app_clock != NULL && lib.app_clock(g->device, memory ? 2u : 0u, &mhz) == 0 ? (int)mhz : -1;
}

/* nvml.c — NVML through dlopen (nvml.h). We declare the handful of entry points
 * ourselves; their signatures are NVML's stable v2 ABI. */
#include "nvml.h"

#include <dlfcn.h>
#include <stdio.h>

typedef int (*nvml_init_fn)(void);
typedef int (*nvml_by_bus_fn)(const char *, void **);
typedef int (*nvml_str_fn)(char *, unsigned);
typedef int (*nvml_dev_str_fn)(void *, char *, unsigned);
typedef int (*nvml_energy_fn)(void *, unsigned long long *);

static struct {
    int tried, ok;
    nvml_by_bus_fn by_bus;
    nvml_str_fn driver;
    nvml_dev_str_fn name;
    nvml_energy_fn energy;
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

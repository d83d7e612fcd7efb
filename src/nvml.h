/* nvml.h — the few NVML queries dpscale needs, loaded at run time with dlopen
 * (libnvidia-ml.so.1), so that the binary starts where no driver is installed and
 * builds where no nvml.h is. Every function degrades to "unknown". */
#ifndef DPSCALE_NVML_H
#define DPSCALE_NVML_H

#include <stddef.h>

struct nvml_gpu {
    int available;
    void *device; /* nvmlDevice_t */
};

/* Open NVML and find the GPU with this PCI bus id ("0000:1B:00.0"). */
int nvml_open(struct nvml_gpu *g, const char *pci_bus_id);
void nvml_driver_version(char *buf, size_t len);
void nvml_name(const struct nvml_gpu *g, char *buf, size_t len);
/* Energy since the driver loaded, in joules; negative when unavailable. */
double nvml_energy_j(const struct nvml_gpu *g);

#endif

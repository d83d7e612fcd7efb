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

/* Data bytes this GPU has sent over NVLink since the driver loaded (all links);
 * negative when the counter is unavailable. */
double nvml_nvlink_tx_bytes(const struct nvml_gpu *g);

/* For the provenance of a result file: the GPU's UUID ("" unknown), its memory in
 * bytes, its enforced power limit in watts and an application clock (graphics, or
 * memory when `memory`) in MHz, each negative when unknown. */
void nvml_uuid(const struct nvml_gpu *g, char *buf, size_t len);
long long nvml_memory_bytes(const struct nvml_gpu *g);
double nvml_power_limit_w(const struct nvml_gpu *g);
int nvml_app_clock_mhz(const struct nvml_gpu *g, int memory);

/* For topology detection: every GPU NVML sees, its links and its PCIe path. */
int nvml_device_count(void);
int nvml_open_index(struct nvml_gpu *g, int index);
void nvml_bus_id(const struct nvml_gpu *g, char *buf, size_t len);
void nvml_pcie_link(const struct nvml_gpu *g, int *gen, int *width);
/* Link `link`: 1 if up, with the remote end's PCI bus id and the NVLink version. */
int nvml_nvlink(const struct nvml_gpu *g, int link, char *remote_bus_id, size_t len, int *version);
/* NVML's topology level of the closest common ancestor (0 internal ... 50 system), or -1. */
int nvml_common_ancestor(const struct nvml_gpu *a, const struct nvml_gpu *b);

#endif

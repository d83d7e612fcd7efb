/* provenance_rank.c — one rank's description of itself (provenance.h): its host, its
 * CPU model and count, and its GPU (name, UUID, PCI bus id, driver, memory, enforced
 * power limit, application clocks) through NVML where it is present; empty (-1, NaN)
 * where it is not, as on the cpu backend. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "system/nvml.h"
#include "system/provenance.h"

/* The CPU's model: "model name" on x86, else what an Arm kernel says of its cores. */
static void cpu_model(char *buf, size_t len)
{
    char line[512], implementer[32] = "", part[32] = "";
    buf[0] = '\0';
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) return;
    while (fgets(line, sizeof line, f) != NULL && !buf[0]) {
        char *colon = strchr(line, ':');
        if (colon == NULL) continue;
        char *value = colon + 1 + strspn(colon + 1, " \t");
        value[strcspn(value, "\n")] = '\0';
        if (strncmp(line, "model name", 10) == 0) snprintf(buf, len, "%s", value);
        else if (strncmp(line, "CPU implementer", 15) == 0 && !implementer[0]) snprintf(implementer, sizeof implementer, "%s", value);
        else if (strncmp(line, "CPU part", 8) == 0 && !part[0]) snprintf(part, sizeof part, "%s", value);
    }
    fclose(f);
    if (!buf[0] && implementer[0]) snprintf(buf, len, "Arm implementer %s part %s", implementer, part);
}

void provenance_rank_collect(struct provenance_rank *r, int rank, int local_rank, const char *host, const char *bus_id,
                             const char *gpu_name, int gpu_index)
{
    r->rank = rank;
    r->local_rank = local_rank;
    snprintf(r->host, sizeof r->host, "%s", host);
    cpu_model(r->cpu_model, sizeof r->cpu_model);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    r->cpus = cpus > 0 ? cpus : -1;
    r->gpu_index = gpu_index;
    snprintf(r->gpu_bus_id, sizeof r->gpu_bus_id, "%s", bus_id != NULL ? bus_id : "");
    snprintf(r->gpu_name, sizeof r->gpu_name, "%s", gpu_name != NULL ? gpu_name : "");
    r->gpu_uuid[0] = r->gpu_driver[0] = '\0';
    r->gpu_memory_bytes = r->gpu_app_clock_graphics_mhz = r->gpu_app_clock_memory_mhz = -1;
    r->gpu_power_limit_w = NAN;
    if (gpu_index < 0 || !r->gpu_bus_id[0]) return;
    struct nvml_gpu g;
    if (nvml_open(&g, r->gpu_bus_id) == 0) {
        nvml_uuid(&g, r->gpu_uuid, sizeof r->gpu_uuid);
        nvml_driver_version(r->gpu_driver, sizeof r->gpu_driver);
        if (strcmp(r->gpu_driver, "unknown") == 0) r->gpu_driver[0] = '\0';
        r->gpu_memory_bytes = nvml_memory_bytes(&g);
        const double watts = nvml_power_limit_w(&g);
        r->gpu_power_limit_w = watts >= 0 ? watts : NAN;
        r->gpu_app_clock_graphics_mhz = nvml_app_clock_mhz(&g, 0);
        r->gpu_app_clock_memory_mhz = nvml_app_clock_mhz(&g, 1);
    }
    if (r->gpu_memory_bytes < 0) r->gpu_memory_bytes = provenance_cuda_memory_bytes(gpu_index);
}

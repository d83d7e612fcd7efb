/* gpu_peaks.c — the peak table (gpu_peaks.h). Figures are NVIDIA's datasheet and
 * architecture-whitepaper numbers for dense math (no sparsity) with fp32
 * accumulation, in TFLOP/s: {fp32, tf32, bf16, fp16}. More specific names come
 * first, since matching is by substring ("H100 PCIe" before "H100"). */
#include "system/gpu_peaks.h"

#include <stddef.h>
#include <string.h>

#include "config/config.h"

static const struct {
    const char *name;
    double tflops[4]; /* indexed by enum precision: fp32, tf32, bf16, fp16 */
} peaks[] = {
    {"H200", {66.9, 494.7, 989.4, 989.4}},      /* H200 SXM; the NVL part is lower */
    {"H100 PCIe", {51.2, 378.0, 756.0, 756.0}},
    {"H100 NVL", {60.0, 417.5, 835.0, 835.0}},
    {"H100", {66.9, 494.7, 989.4, 989.4}},      /* H100 SXM5 */
    {"A100", {19.5, 156.0, 312.0, 312.0}},
    {"L40S", {91.6, 183.0, 362.1, 362.1}},
    {"RTX 4090", {82.6, 82.6, 165.2, 165.2}},   /* fp16/bf16 with fp32 accumulate */
    {"RTX 5090", {104.8, 104.8, 209.5, 209.5}}, /* fp16/bf16 with fp32 accumulate */
};

double gpu_peak_tflops(const char *device_name, int precision)
{
    if (device_name == NULL || precision < 0 || precision > 3) return 0.0;
    for (size_t i = 0; i < sizeof peaks / sizeof peaks[0]; i++)
        if (strstr(device_name, peaks[i].name) != NULL) return peaks[i].tflops[precision];
    return 0.0;
}

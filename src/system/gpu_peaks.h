/* gpu_peaks.h — datasheet peak dense tensor/FMA throughput of known GPUs, per
 * precision, for MFU. Unknown GPUs have no entry: MFU is then left out rather
 * than invented (run.peak_tflops overrides the table). */
#ifndef DPSCALE_GPU_PEAKS_H
#define DPSCALE_GPU_PEAKS_H

/* Peak TFLOP/s of `device_name` in `precision` (enum precision), or 0 when unknown. */
double gpu_peak_tflops(const char *device_name, int precision);

#endif

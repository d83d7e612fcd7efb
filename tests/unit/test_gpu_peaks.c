/* test_gpu_peaks.c — the peak table behind MFU: known GPUs by name and precision,
 * the more specific name first, and nothing invented for an unknown GPU. */
#include "config/config.h"
#include "system/gpu_peaks.h"
#include "check.h"

TEST(h200_bf16_is_the_sxm_datasheet_figure)
{
    CHECK_NEAR(gpu_peak_tflops("NVIDIA H200", PREC_BF16), 989.4, 1e-9);
    CHECK_NEAR(gpu_peak_tflops("NVIDIA H200", PREC_TF32), 494.7, 1e-9);
}

TEST(h100_pcie_is_matched_before_h100)
{
    CHECK_NEAR(gpu_peak_tflops("NVIDIA H100 PCIe", PREC_BF16), 756.0, 1e-9);
    CHECK_NEAR(gpu_peak_tflops("NVIDIA H100 80GB HBM3", PREC_BF16), 989.4, 1e-9);
}

TEST(every_required_gpu_has_an_entry)
{
    const char *names[] = {"NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA L40S",
                           "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090"};
    for (int i = 0; i < 6; i++)
        for (int p = PREC_FP32; p <= PREC_FP16; p++) CHECK(gpu_peak_tflops(names[i], p) > 0);
}

TEST(unknown_gpu_has_no_peak)
{
    CHECK(gpu_peak_tflops("NVIDIA GeForce GTX 1080", PREC_FP32) == 0.0);
    CHECK(gpu_peak_tflops(NULL, PREC_BF16) == 0.0);
}

int main(void) { return test_main("gpu_peaks"); }

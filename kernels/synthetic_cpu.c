/* synthetic_cpu.c — a batch of the MLP's synthetic task on the CPU (synthetic.h; the
 * families' own tasks are beside their kernels: transformer_cpu.c, resnet_cpu.c). */
#include "kernels/kernels_cpu.h"
#include "kernels/synthetic.h"

void cpu_synth_batch(float *x, int *labels, uint64_t first_sample, int rows, int input_dim, int classes, uint64_t seed)
{
    const float mean_scale = synth_mean_scale(input_dim);
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        uint64_t sample = first_sample + (uint64_t)i;
        int label = synth_label(seed, sample, classes);
        labels[i] = label;
        float *xi = x + (size_t)i * input_dim;
        for (int f = 0; f < input_dim; f++) xi[f] = synth_feature(seed, sample, label, f, mean_scale);
    }
}

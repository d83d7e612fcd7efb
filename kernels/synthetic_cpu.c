/* synthetic_cpu.c — a batch of the synthetic tasks on the CPU (see synthetic.h and
 * synthetic_images.h). */
#include "kernels_cpu.h"
#include "resnet_cpu.h"
#include "synthetic.h"
#include "synthetic_images.h"
#include "transformer_cpu.h"

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

void cpu_synth_tokens(int *tokens, int *segments, int *targets, int *mask_rows, uint64_t first_sample, int B, int T,
                      int V, int nmask, int bert, uint64_t seed)
{
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const int row = b * T + t;
            int target, k;
            synth_position(seed, first_sample + (uint64_t)b, t, T, V, nmask, bert, &tokens[row], &segments[row], &target,
                           &k);
            if (!bert) targets[row] = target;
            else if (k >= 0) {
                targets[b * nmask + k] = target;
                mask_rows[b * nmask + k] = row;
            }
        }
}

void cpu_synth_images(float *x, int *labels, uint64_t first_sample, int B, int H, int W, int C, int classes,
                      uint64_t seed)
{
#pragma omp parallel for schedule(static)
    for (int b = 0; b < B; b++) {
        const uint64_t sample = first_sample + (uint64_t)b;
        const int label = synth_label(seed, sample, classes);
        labels[b] = label;
        float *img = x + (size_t)b * H * W * C;
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++)
                for (int c = 0; c < C; c++)
                    img[((size_t)h * W + w) * C + c] = synth_pixel(seed, sample, label, h, w, c, H, W, C);
    }
}

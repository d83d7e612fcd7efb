/* optimizer_cpu.c — SGD with momentum and AdamW over the whole flat parameter
 * arena, in one pass (the CUDA version is one fused kernel too). */
#include <math.h>

#include "kernels/kernel_types.h"
#include "kernels/kernels_cpu.h"

void cpu_optimizer_step(float *params, const float *grads, float *state1, float *state2, size_t n,
                        const struct optim_hparams *h)
{
    const float lr = h->lr, wd = h->weight_decay, scale = h->grad_scale;
    if (h->kind == OPT_SGD) {
        const float mu = h->momentum;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            float g = grads[i] * scale + wd * params[i];
            state1[i] = mu * state1[i] + g;
            params[i] -= lr * state1[i];
        }
    } else {
        const float b1 = h->beta1, b2 = h->beta2, eps = h->eps;
        const float c1 = 1.0f - powf(b1, (float)h->step), c2 = 1.0f - powf(b2, (float)h->step);
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) {
            float g = grads[i] * scale;
            state1[i] = b1 * state1[i] + (1.0f - b1) * g;
            state2[i] = b2 * state2[i] + (1.0f - b2) * g * g;
            float update = (state1[i] / c1) / (sqrtf(state2[i] / c2) + eps);
            params[i] -= lr * (update + wd * params[i]);
        }
    }
}

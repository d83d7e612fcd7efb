/* loss_cpu.c — softmax cross-entropy and its gradient on the CPU. */
#include <math.h>

#include "kernels/kernels_cpu.h"

void cpu_softmax_xent(float *dlogits, float *loss, const float *logits, const int *labels, int rows, int classes,
                      int ld, float grad_scale)
{
    double total = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : total)
    for (int i = 0; i < rows; i++) {
        const float *z = logits + (size_t)i * ld;
        float *dz = dlogits + (size_t)i * ld;
        const float zlabel = z[labels[i]]; /* before dz, which may be z, is written */
        float zmax = z[0];
        for (int j = 1; j < classes; j++) zmax = z[j] > zmax ? z[j] : zmax;
        float sum = 0.0f;
        for (int j = 0; j < classes; j++) {
            dz[j] = expf(z[j] - zmax);
            sum += dz[j];
        }
        float inv = 1.0f / sum;
        total += (double)(logf(sum) + zmax - zlabel);
        for (int j = 0; j < classes; j++) dz[j] *= inv * grad_scale;
        dz[labels[i]] -= grad_scale;
        for (int j = classes; j < ld; j++) dz[j] = 0.0f; /* the padding: masked */
    }
    *loss = (float)(total / rows);
}

/* activation_cpu.c — bias + activation forward and backward, and the bias
 * gradient, on the CPU. */
#include "kernels/activation.h"
#include "kernels/kernel_types.h"
#include "kernels/kernels_cpu.h"

void cpu_bias_act_forward(float *out, float *pre, const float *bias, int rows, int cols, int act)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        float *p = pre + (size_t)i * cols, *o = out + (size_t)i * cols;
        if (act == ACT_GELU) {
            for (int j = 0; j < cols; j++) { p[j] += bias[j]; o[j] = gelu_forward(p[j]); }
        } else if (act == ACT_RELU) {
            for (int j = 0; j < cols; j++) { p[j] += bias[j]; o[j] = p[j] > 0.0f ? p[j] : 0.0f; }
        } else {
            for (int j = 0; j < cols; j++) { p[j] += bias[j]; o[j] = p[j]; }
        }
    }
}

void cpu_act_backward(float *d, const float *pre, int rows, int cols, int act)
{
    if (act == ACT_NONE) return;
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        float *di = d + (size_t)i * cols;
        const float *p = pre + (size_t)i * cols;
        if (act == ACT_GELU)
            for (int j = 0; j < cols; j++) di[j] *= gelu_derivative(p[j]);
        else
            for (int j = 0; j < cols; j++) di[j] = p[j] > 0.0f ? di[j] : 0.0f;
    }
}

void cpu_bias_grad(float *dbias, const float *d, int rows, int cols)
{
    /* columns are split among threads; each sums its columns down the rows */
#pragma omp parallel
    {
#pragma omp for schedule(static)
        for (int j = 0; j < cols; j++) dbias[j] = 0.0f;
#pragma omp for schedule(static)
        for (int jb = 0; jb < cols; jb += 64) {
            int je = jb + 64 < cols ? jb + 64 : cols;
            for (int i = 0; i < rows; i++) {
                const float *di = d + (size_t)i * cols;
                for (int j = jb; j < je; j++) dbias[j] += di[j];
            }
        }
    }
}

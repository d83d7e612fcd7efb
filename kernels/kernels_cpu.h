/* kernels_cpu.h — the CPU versions of the element-wise operations of the step
 * (the CUDA versions live in the .cu files beside this one).
 * Plain C loops over row-major float arrays, parallel over rows with OpenMP. */
#ifndef DPSCALE_KERNELS_CPU_H
#define DPSCALE_KERNELS_CPU_H

#include <stddef.h>
#include <stdint.h>

struct optim_hparams;

void cpu_bias_act_forward(float *out, float *pre, const float *bias, int rows, int cols, int act);
void cpu_act_backward(float *d, const float *pre, int rows, int cols, int act);
void cpu_bias_grad(float *dbias, const float *d, int rows, int cols);
void cpu_softmax_xent(float *dlogits, float *loss, const float *logits, const int *labels, int rows, int classes, int ld,
                      float grad_scale);
void cpu_optimizer_step(float *params, const float *grads, float *state1, float *state2, size_t n,
                        const struct optim_hparams *h);
void cpu_synth_batch(float *x, int *labels, uint64_t first_sample, int rows, int input_dim, int classes, uint64_t seed);

#endif

/* kernel_types.h — the types the kernels take from their callers: element types,
 * activations, the optimizer's kind and hyperparameters (a model family's own types are
 * in headers of its own: conv_shape.h).
 * The kernels are the lowest layer and include nothing of src/; the backend seam
 * (backend.h), the element types (base/dtype.h) and the configuration (config.h)
 * take these from here. C and C++ (nvcc) alike. */
#ifndef DPSCALE_KERNEL_TYPES_H
#define DPSCALE_KERNEL_TYPES_H

#include <stddef.h>

/* Element types of the buffers. Master weights, gradients and optimizer state are
 * always fp32; activations and the compute copy of the weights are in the
 * backend's compute dtype. */
enum dtype { DT_F32 = 0, DT_BF16 = 1, DT_F16 = 2 };

static inline size_t dtype_size(int dt) { return dt == DT_F32 ? 4 : 2; }

enum activation { ACT_GELU = 0, ACT_RELU = 1, ACT_NONE = 2 };
enum optimizer { OPT_SGD = 0, OPT_ADAMW = 1 };

struct optim_hparams {
    int kind; /* enum optimizer */
    float lr, momentum, weight_decay, beta1, beta2, eps;
    float grad_scale; /* multiplies every gradient first: 1/N (the allreduce sum to a mean) x 1/loss_scale */
    long long step;   /* 1-based, for AdamW's bias correction */
};

#endif

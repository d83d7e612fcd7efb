/* bn_operands.h — one batch norm's operands, for the operation that applies two in one
 * element-wise pass (a bottleneck's last batch norm and its projection shortcut's:
 * resnet_cpu.h, resnet_kernels.h, the backend's table rn_ops.h). What each means is
 * batch norm forward's (resnet_cpu.h). C and C++ (nvcc) alike. */
#ifndef DPSCALE_BN_OPERANDS_H
#define DPSCALE_BN_OPERANDS_H

struct bn_partials;

/* x [rows x C] and the gains [C] in the compute dtype (fp32 on the CPU); the statistics
 * [C] fp32: mean and rstd written (for backward), the running ones updated in training
 * and read when frozen. */
struct bn_operands {
    const void *x, *gamma, *beta;
    float *mean, *rstd, *run_mean, *run_var;
    const struct bn_partials *pre; /* NULL, or x's partial sums from its producer (bn_partials.h; the GPU's) */
};

#endif

/* resnet_cuda.h — the CUDA backend's ResNet operations (struct rn_ops, rn_ops.h), in
 * resnet_cuda.c: thin calls of the kernels of kernels/resnet/resnet.cu and
 * kernels/resnet/batchnorm.cu on the current stream, and batch norm's scratch. */
#ifndef DPSCALE_RESNET_CUDA_H
#define DPSCALE_RESNET_CUDA_H

#include "backend/rn_ops.h"

extern const struct rn_ops cuda_rn_ops;

#endif

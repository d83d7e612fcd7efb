/* transformer_cuda.h — the CUDA backend's transformer operations (struct tf_ops,
 * tf_ops.h), in transformer_cuda.c: our kernels (kernels/transformer/transformer.cu,
 * kernels/transformer/flash_attention.cu) and the attention's GEMMs as cuBLAS strided-batched
 * calls. What they need of the backend's state is in cuda_state.h. */
#ifndef DPSCALE_TRANSFORMER_CUDA_H
#define DPSCALE_TRANSFORMER_CUDA_H

#include "backend/tf_ops.h"

extern const struct tf_ops cuda_tf_ops;

#endif

/* backend_cuda.h — what the CUDA backend's operation files (transformer_cuda.c,
 * resnet_cuda.c) need of its state, which backend_cuda.c keeps: the stream the calls go
 * to, the GEMMs' compute type and element type (cublasComputeType_t, cudaDataType_t),
 * a slot per model family for its own state (freed by its release function at
 * shutdown), and scratch that grows on first use. */
#ifndef DPSCALE_BACKEND_CUDA_H
#define DPSCALE_BACKEND_CUDA_H

#include <stddef.h>

#include "backend/backend.h"

void *cuda_backend_current_stream(struct backend *b);
int cuda_backend_compute_type(struct backend *b);
int cuda_backend_ab_type(struct backend *b);
void **cuda_backend_tf_slot(struct backend *b); /* the transformer's (cuda_tf_release) */
void **cuda_backend_rn_slot(struct backend *b); /* the ResNet's (cuda_rn_release) */
/* *buf holds at least `need` bytes: reallocated, the current stream drained first, when
 * it grows (during the warm-up steps, which see every size the step needs). */
void *cuda_backend_grow(struct backend *b, void **buf, size_t *have, size_t need);

#endif

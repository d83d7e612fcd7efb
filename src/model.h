/* model.h — the MLP that every rank trains: its layer shapes, where each
 * parameter lives in the flat arenas, its FLOPs, and the memory plan.
 *
 * The parameter arena and the gradient arena share one layout, in the order the
 * backward pass produces gradients: the last layer first, bias then weight. A
 * gradient bucket is therefore a contiguous slice that is complete as soon as
 * backward has passed its layers (no packing copy), and the optimizer is a single
 * pass over matching offsets. Every size is computed with overflow checks. */
#ifndef DPSCALE_MODEL_H
#define DPSCALE_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define MODEL_MAX_LAYERS 4096

struct layer_shape {
    int in, out;
    int act;         /* enum activation; ACT_NONE for the output layer */
    size_t w_offset; /* floats into the arena: weight [out x in], row-major */
    size_t b_offset; /* bias [out] */
};

struct model {
    int nlayers;
    struct layer_shape layers[MODEL_MAX_LAYERS];
    size_t nparams;
    int input_dim, classes, max_dim;
};

struct memory_plan {
    size_t params_bytes, grads_bytes, optimizer_bytes, activations_bytes, data_bytes, total_bytes;
};

/* Shapes and offsets from cfg. Returns 0, or -1 with a message when a size overflows. */
int model_describe(const struct config *cfg, struct model *m, char *err, size_t errlen);

/* Bytes one rank needs to train with `batch` samples, activations of act_elem bytes
 * (4 in fp32; 2 in bf16/fp16, plus a 2-byte compute copy of the weights). Returns -1
 * on overflow. */
int model_plan_memory(const struct model *m, int optimizer, size_t act_elem, int batch, int steps,
                      struct memory_plan *plan, char *err, size_t errlen);

/* GEMM FLOPs of one training step per sample: forward 2*in*out per layer, backward
 * twice that (the input gradient of layer 0 is not computed). */
double model_gemm_flops_per_sample(const struct model *m);

/* Deterministic initial parameters (LeCun uniform weights, zero biases). */
void model_init_params(const struct model *m, uint64_t seed, float *host_params);

/* FNV-1a over the 32-bit words of the parameters: equal replicas have equal hashes. */
uint64_t model_params_hash(const float *params, size_t n);

#endif

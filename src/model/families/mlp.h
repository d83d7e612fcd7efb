/* mlp.h — the multi-layer perceptron (model.type = mlp): its layer shapes, behind the
 * model seam (model.h). Dense layers input_dim -> hidden_dim x (layers-1) -> classes,
 * an activation after each hidden layer, softmax cross-entropy over the classes, on
 * a synthetic classification task. In the arena, backward order: the last layer's
 * bias, then its weight [out x in], ..., then layer 0's bias and weight. Layer l is
 * stage l of the table. */
#ifndef DPSCALE_MODELS_MLP_H
#define DPSCALE_MODELS_MLP_H

#include "model/model.h"

struct mlp_layer {
    int in, out;
    int act;         /* enum activation; ACT_NONE for the output layer */
    size_t w_offset; /* weight [out x in], row-major, in the arenas */
    size_t b_offset; /* bias [out] */
};

struct mlp {
    int nlayers;
    struct mlp_layer *layers;
    int input_dim, classes, max_dim;
};

/* The MLP of cfg into m (model_describe calls it for model.type = mlp). */
model_describe_fn mlp_describe;
/* The layer shapes of an MLP model. */
static inline const struct mlp *mlp_of(const struct model *m) { return (const struct mlp *)m->impl; }

#endif

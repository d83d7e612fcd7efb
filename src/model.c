/* model.c — layer shapes, arena offsets, FLOPs and the memory plan (model.h). */
#include "model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../kernels/synthetic.h"
#include "error.h"

int model_describe(const struct config *cfg, struct model *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->nlayers = cfg->layers;
    m->input_dim = cfg->input_dim;
    m->classes = cfg->classes;
    m->max_dim = cfg->input_dim;
    if (cfg->hidden_dim > m->max_dim) m->max_dim = cfg->hidden_dim;
    if (cfg->classes > m->max_dim) m->max_dim = cfg->classes;

    for (int l = 0; l < m->nlayers; l++) {
        struct layer_shape *s = &m->layers[l];
        s->in = l == 0 ? cfg->input_dim : cfg->hidden_dim;
        s->out = l == m->nlayers - 1 ? cfg->classes : cfg->hidden_dim;
        s->act = l == m->nlayers - 1 ? ACT_NONE : cfg->activation;
    }
    /* Backward order: the last layer's bias and weight come first. */
    size_t offset = 0;
    for (int l = m->nlayers - 1; l >= 0; l--) {
        struct layer_shape *s = &m->layers[l];
        size_t wcount;
        s->b_offset = offset;
        if (dp_size_add_checked(offset, (size_t)s->out, &offset) != 0 ||
            dp_size_mul_checked((size_t)s->out, (size_t)s->in, &wcount) != 0) goto overflow;
        s->w_offset = offset;
        if (dp_size_add_checked(offset, wcount, &offset) != 0) goto overflow;
    }
    m->nparams = offset;
    size_t bytes;
    if (dp_size_mul_checked(m->nparams, 4 * sizeof(float), &bytes) != 0) goto overflow;
    return 0;
overflow:
    snprintf(err, errlen, "the model's parameter count overflows a 64-bit size; lower model.layers or model.hidden_dim");
    return -1;
}

/* total += a * b * elem, with every step checked */
static int add_product(size_t *total, size_t a, size_t b, size_t elem)
{
    size_t p;
    if (dp_size_mul_checked(a, b, &p) != 0 || dp_size_mul_checked(p, elem, &p) != 0) return -1;
    return dp_size_add_checked(*total, p, total);
}

int model_plan_memory(const struct model *m, int optimizer, size_t act_elem, int batch, int steps,
                      struct memory_plan *plan, char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    const size_t B = (size_t)batch, F = sizeof(float), E = act_elem;
    int bad = 0;
    bad |= add_product(&plan->params_bytes, m->nparams, 1, F);
    if (E != F) bad |= add_product(&plan->params_bytes, m->nparams, 1, E); /* compute copy */
    bad |= add_product(&plan->grads_bytes, m->nparams, 1, F);
    bad |= add_product(&plan->optimizer_bytes, m->nparams, optimizer == OPT_ADAMW ? 2 : 1, F);
    /* Per layer: the pre-activation (kept for backward) and the activation. The
     * output layer's pre-activation is the logits; its gradient is dlogits. */
    for (int l = 0; l < m->nlayers; l++) {
        const struct layer_shape *s = &m->layers[l];
        bad |= add_product(&plan->activations_bytes, B, (size_t)s->out, 2 * E);
    }
    bad |= add_product(&plan->activations_bytes, B, (size_t)m->max_dim, 2 * E); /* two gradient scratch buffers */
    bad |= add_product(&plan->data_bytes, B, (size_t)m->input_dim, E);
    bad |= add_product(&plan->data_bytes, B, 1, sizeof(int));
    bad |= add_product(&plan->data_bytes, (size_t)steps, 1, F); /* per-step loss */
    size_t total = 0;
    bad |= dp_size_add_checked(total, plan->params_bytes, &total);
    bad |= dp_size_add_checked(total, plan->grads_bytes, &total);
    bad |= dp_size_add_checked(total, plan->optimizer_bytes, &total);
    bad |= dp_size_add_checked(total, plan->activations_bytes, &total);
    bad |= dp_size_add_checked(total, plan->data_bytes, &total);
    plan->total_bytes = total;
    if (bad) {
        snprintf(err, errlen, "the memory plan for batch %d overflows a 64-bit size; lower train.batch_per_gpu or the model size",
                 batch);
        return -1;
    }
    return 0;
}

double model_gemm_flops_per_sample(const struct model *m)
{
    double flops = 0.0;
    for (int l = 0; l < m->nlayers; l++) {
        double mac = (double)m->layers[l].in * (double)m->layers[l].out;
        flops += 2.0 * mac;                 /* forward: Y = X W^T */
        flops += 2.0 * mac;                 /* backward: dW = dY^T X */
        if (l > 0) flops += 2.0 * mac;      /* backward: dX = dY W */
    }
    return flops;
}

void model_init_params(const struct model *m, uint64_t seed, float *params)
{
    for (int l = 0; l < m->nlayers; l++) {
        const struct layer_shape *s = &m->layers[l];
        const float bound = sqrtf(3.0f / (float)s->in); /* variance 1/fan_in */
        const size_t count = (size_t)s->out * (size_t)s->in;
        float *w = params + s->w_offset;
        for (size_t i = 0; i < count; i++) w[i] = bound * synth_uniform(synth_hash3(seed ^ 0x776569676874ULL, (uint64_t)l, i));
        memset(params + s->b_offset, 0, (size_t)s->out * sizeof(float));
    }
}

uint64_t model_params_hash(const float *params, size_t n)
{
    /* FNV-1a over 32-bit words: one multiply per float keeps a 2 GiB model under a second */
    uint64_t h = 0xcbf29ce484222325ULL;
    const uint32_t *w = (const uint32_t *)(const void *)params;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

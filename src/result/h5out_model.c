/* h5out_model.c — what was trained (h5out_internal.h): /model, the model as the rest
 * of dpscale sees it with its tensor table in arena (backward) order, and /dump, one
 * step of one rank laid open for an independent implementation to recompute. */
#include <stdio.h>
#include <stdlib.h>

#include "base/error.h"
#include "result/h5out_internal.h"
#include "model/registry.h"
#include "model/step.h"

void h5out_model(struct h5w *w, hid_t file, const struct config *cfg, const struct model *m)
{
    hid_t g = h5_group_create(w, file, "model");
    char shape[256];
    m->ops->summary(m, shape, sizeof shape);
    attr_str(w, g, "type", model_type_name(m->type));
    attr_str(w, g, "name", cfg->model_name);
    attr_str(w, g, "shape", shape);
    attr_i64(w, g, "parameters", (long long)m->nparams);
    attr_f64(w, g, "gemm_flops_per_sample", m->flops_per_sample);
    attr_str(w, g, "unit", model_unit_name(m->unit));
    attr_i64(w, g, "units_per_sample", m->units_per_sample);
    attr_i64(w, g, "stages", m->nstages);
    const size_t n = m->ntensors > 0 ? (size_t)m->ntensors : 0;
    const char **names = calloc(n + 1, sizeof *names), **kinds = calloc(n + 1, sizeof *kinds);
    int64_t *ints = calloc(5 * n + 1, sizeof *ints);
    CHECK_ALLOC(names);
    CHECK_ALLOC(kinds);
    CHECK_ALLOC(ints);
    for (size_t i = 0; i < n; i++) {
        const struct param_tensor *t = &m->tensors[i];
        names[i] = t->name;
        kinds[i] = t->kind == TENSOR_MATRIX ? "matrix" : "vector";
        ints[i] = t->rows;
        ints[n + i] = t->cols;
        ints[2 * n + i] = t->stage;
        ints[3 * n + i] = (int64_t)t->offset;
        ints[4 * n + i] = (int64_t)t->count;
    }
    const struct h5w_column cols[] = {
        {"name", H5W_TEXT, names},        {"kind", H5W_TEXT, kinds},           {"rows", H5W_I64, ints},
        {"cols", H5W_I64, ints + n},      {"stage", H5W_I64, ints + 2 * n},    {"offset", H5W_I64, ints + 3 * n},
        {"count", H5W_I64, ints + 4 * n},
    };
    table_write(w, g, "tensors", SCHEMA_TENSORS, cols, (int)(sizeof cols / sizeof cols[0]), n);
    free(names);
    free(kinds);
    free(ints);
    h5_close(g);
}

void h5out_dump(struct h5w *w, hid_t file, const struct h5out_dump *d)
{
    hid_t g = h5_group_create(w, file, "dump");
    attr_i64(w, g, "batch", d->batch);
    attr_f64(w, g, "loss", d->loss);
    hsize_t n[1] = {(hsize_t)d->nparams};
    dataset_write(w, g, SCHEMA_DUMP, "params", H5T_NATIVE_FLOAT, 1, n, d->params);
    dataset_write(w, g, SCHEMA_DUMP, "grads", H5T_NATIVE_FLOAT, 1, n, d->grads);
    hid_t in = h5_group_create(w, g, "inputs");
    for (int i = 0; i < d->ninputs; i++) {
        const struct h5out_array *a = &d->inputs[i];
        hsize_t c[1] = {(hsize_t)a->count};
        dataset_write_as(w, in, SCHEMA_DUMP, "input", a->name, a->is_int ? H5T_NATIVE_INT32 : H5T_NATIVE_FLOAT, 1, c,
                         a->data);
    }
    h5_close(in);
    h5_close(g);
}

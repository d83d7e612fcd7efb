/* test_model_of.h — the MLP of a unit test, described through the real config and
 * model code: `layers` dense layers, in -> width x (layers-1) -> classes. */
#ifndef DPSCALE_TEST_MODEL_OF_H
#define DPSCALE_TEST_MODEL_OF_H

#include <stdio.h>

#include "config/config.h"
#include "model/model.h"
#include "model/registry.h"

/* A static model: valid until the next call, which frees it (a leak otherwise, that
 * make test-sanitize reports). */
static inline struct model *test_model_of(int layers, int in, int width, int classes)
{
    static struct model m;
    struct config c;
    char err[256], l[32], w[32], i[32], cl[32];
    snprintf(l, sizeof l, "--model.layers=%d", layers);
    snprintf(w, sizeof w, "--model.hidden_dim=%d", width);
    snprintf(i, sizeof i, "--model.input_dim=%d", in);
    snprintf(cl, sizeof cl, "--model.classes=%d", classes);
    char *argv[] = {"run", l, w, i, cl, NULL};
    config_load(&c, 5, argv, err, sizeof err);
    model_free(&m);
    model_describe(&c, &m, err, sizeof err);
    return &m;
}

#endif

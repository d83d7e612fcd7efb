/* registry.h — the registry of model families: which family describes the model a
 * configuration asks for (model.type), and the name of each type. It sits above the
 * families (src/model/families/), which build on model.h and step.h alone. */
#ifndef DPSCALE_MODEL_REGISTRY_H
#define DPSCALE_MODEL_REGISTRY_H

#include <stddef.h>

#include "config/config.h"
#include "model/model.h"

/* The model cfg asks for (model.type), its table and figures. Returns 0, or -1 with a
 * message when a size overflows or the shape is impossible. model_free releases what
 * it holds (NULL: nothing). */
int model_describe(const struct config *cfg, struct model *m, char *err, size_t errlen);
/* The name of a model type ("mlp"), as model.type spells it; "unknown" for no type. */
const char *model_type_name(int type);

#endif

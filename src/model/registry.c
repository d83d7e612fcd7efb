/* registry.c — the registry of model families (registry.h): one table, every type of
 * config.h's MODEL_TYPES with its name there and the family function that describes
 * it. */
#include "model/registry.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"
#include "model/families/mlp.h"
#include "model/families/resnet.h"
#include "model/families/transformer.h"

struct model_family {
    int type;         /* enum model_type */
    const char *name; /* model.type's */
    int (*describe)(const struct config *cfg, struct model *m, char *err, size_t errlen);
};

/* Each type's family (a type of MODEL_TYPES without one here does not compile). */
#define FAMILY_OF_MODEL_MLP mlp_describe
#define FAMILY_OF_MODEL_GPT transformer_describe
#define FAMILY_OF_MODEL_BERT transformer_describe
#define FAMILY_OF_MODEL_RESNET resnet_describe
#define FAMILY(type, name) {type, name, FAMILY_OF_##type},
static const struct model_family families[] = {MODEL_TYPES(FAMILY)};
#undef FAMILY
#define NFAMILIES (sizeof families / sizeof families[0])

static const struct model_family *family_of(int type)
{
    for (size_t i = 0; i < NFAMILIES; i++)
        if (families[i].type == type) return &families[i];
    return NULL;
}

int model_describe(const struct config *cfg, struct model *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->type = cfg->model_type;
    const struct model_family *f = family_of(cfg->model_type);
    if (f == NULL) {
        snprintf(err, errlen, "model.type %d is not known to this build; use mlp", cfg->model_type);
        return -1;
    }
    if (f->describe(cfg, m, err, errlen) != 0) return -1;
    size_t bytes;
    if (dp_size_mul_checked(m->nparams, 4 * sizeof(float), &bytes) != 0) {
        snprintf(err, errlen, "the model's parameter count overflows a 64-bit size; make the model smaller");
        return -1;
    }
    return 0;
}

const char *model_type_name(int type)
{
    const struct model_family *f = family_of(type);
    return f != NULL ? f->name : "unknown";
}

/* registry.c — the registry of model families (registry.h): one table, made from
 * config.h's MODEL_TYPES, of every type with its name and the family function that
 * describes it. A new family adds its line there, none here. */
#include "model/registry.h"

#include <stdio.h>
#include <string.h>

#include "base/error.h"

struct model_family {
    int type;         /* enum model_type */
    const char *name; /* model.type's */
    model_describe_fn *describe;
};

/* Each family's describe function, declared as model.h's model_describe_fn (its own
 * header declares it so too, and its definition is checked against that). */
#define FAMILY_DECLARE(type, name, describe) model_describe_fn describe;
MODEL_TYPES(FAMILY_DECLARE)
#undef FAMILY_DECLARE

#define FAMILY(type, name, describe) {type, name, describe},
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

/* env_switch.h — the developers' A/B switches: a DPSCALE_* environment variable that names
 * the other variant of a kernel or a schedule (DPSCALE_BN_ORDER=ascending,
 * DPSCALE_CONV=im2col, ...), read once and kept. docs/PERFORMANCE.md says which change each
 * was measured for. C and CUDA C++ alike; header-only. */
#ifndef DPSCALE_ENV_SWITCH_H
#define DPSCALE_ENV_SWITCH_H

#include <stdlib.h>
#include <string.h>

/* Whether the variable `name` holds `value`, read on the first call into *cached (which
 * starts at -1) and taken from there after. */
static inline int env_switch(int *cached, const char *name, const char *value)
{
    if (*cached < 0) {
        const char *e = getenv(name);
        *cached = e != NULL && strcmp(e, value) == 0;
    }
    return *cached;
}

#endif

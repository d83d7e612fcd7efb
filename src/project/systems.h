/* systems.h — a target system of the catalog (configs/systems/<name>.ini): its GPU, its peak
 * compute and its allreduce curves (busbw by size per GPU count), each with its source
 * (configs/systems/README.md says where every figure comes from). */
#ifndef DPSCALE_SYSTEMS_H
#define DPSCALE_SYSTEMS_H

#include <stddef.h>

#include "project/project.h"

#define SYSTEM_MAX_CURVES 8
#define SYSTEM_TEXT 200

struct system_curve {
    struct allreduce_curve curve; /* time = 2 (N-1)/N S / busbw(S): busbw already holds the per-call cost */
    char source[SYSTEM_TEXT];
    char derived[SYSTEM_TEXT];    /* "" when the curve was measured */
    char label[32];               /* <label> of its [curve.<label>] section */
};

struct system_desc {
    char name[64], gpu[96], interconnect[32];
    int gpus_per_node;
    double peak_tflops_bf16, peak_tflops_fp32;
    int ncurves;                  /* by GPU count, ascending */
    struct system_curve curves[SYSTEM_MAX_CURVES];
};

/* Returns 0, or -1 with a one-line reason in err: "FILE:LINE: ..." naming the key and
 * what it accepts. Unknown sections and keys, numbers that are not wholly numbers or
 * out of their key's range, and text with control characters or not UTF-8 are refused:
 * every text of the entry may be printed as read. */
int system_read(const char *path, struct system_desc *s, char *err, size_t errlen);

#endif

/* systems.c — reading a catalog entry (systems.h) with libinih: [system] and one
 * [curve.<label>] section per GPU count, sizes in MiB and busbw in GB/s. */
#include "systems.h"

#include <ini.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "safe_file.h"

struct reading {
    struct system_desc *s;
    double busbw[SYSTEM_MAX_CURVES][PROJECT_MAX_POINTS];
    int nbusbw[SYSTEM_MAX_CURVES];
    char section[64];
    int cur;   /* the curve being read, -1 outside one */
    char err[256];
};

/* "1, 4, 16" into v; the count, or -1 past max or on a bad number */
static int parse_list(const char *text, double *v, int max)
{
    int n = 0;
    const char *p = text;
    while (*p != '\0') {
        char *end;
        const double x = strtod(p, &end);
        if (end == p || n == max) return -1;
        v[n++] = x;
        p = end;
        while (*p == ' ' || *p == ',' || *p == '\t') p++;
    }
    return n;
}

static int on_entry(void *user, const char *section, const char *key, const char *value)
{
    struct reading *r = user;
    struct system_desc *s = r->s;
    if (strcmp(section, r->section) != 0) { /* a new section */
        snprintf(r->section, sizeof r->section, "%s", section);
        r->cur = -1;
        if (strncmp(section, "curve.", 6) == 0) {
            if (s->ncurves == SYSTEM_MAX_CURVES) {
                snprintf(r->err, sizeof r->err, "more than %d [curve.*] sections", SYSTEM_MAX_CURVES);
                return 0;
            }
            r->cur = s->ncurves++;
        }
    }
    if (strcmp(section, "system") == 0) {
        if (strcmp(key, "name") == 0) snprintf(s->name, sizeof s->name, "%s", value);
        else if (strcmp(key, "gpu") == 0) snprintf(s->gpu, sizeof s->gpu, "%s", value);
        else if (strcmp(key, "interconnect") == 0) snprintf(s->interconnect, sizeof s->interconnect, "%s", value);
        else if (strcmp(key, "gpus_per_node") == 0) s->gpus_per_node = atoi(value);
        else if (strcmp(key, "peak_tflops_bf16") == 0) s->peak_tflops_bf16 = atof(value);
        else if (strcmp(key, "peak_tflops_fp32") == 0) s->peak_tflops_fp32 = atof(value);
        return 1;
    }
    if (r->cur < 0) return 1; /* other sections: not ours */
    struct system_curve *c = &s->curves[r->cur];
    if (strcmp(key, "gpus") == 0) c->curve.gpus = atoi(value);
    else if (strcmp(key, "nodes") == 0) c->curve.nodes = atoi(value);
    else if (strcmp(key, "sizes_mib") == 0) {
        c->curve.npoints = parse_list(value, c->curve.size_bytes, PROJECT_MAX_POINTS);
        for (int i = 0; i < c->curve.npoints; i++) c->curve.size_bytes[i] *= 1024.0 * 1024.0;
    } else if (strcmp(key, "busbw_gbps") == 0) r->nbusbw[r->cur] = parse_list(value, r->busbw[r->cur], PROJECT_MAX_POINTS);
    else if (strcmp(key, "source") == 0) snprintf(c->source, sizeof c->source, "%s", value);
    else if (strcmp(key, "derived") == 0) snprintf(c->derived, sizeof c->derived, "%s", value);
    return 1;
}

static int by_gpus(const void *a, const void *b)
{
    return ((const struct system_curve *)a)->curve.gpus - ((const struct system_curve *)b)->curve.gpus;
}

int system_read(const char *path, struct system_desc *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    struct reading *r = calloc(1, sizeof *r);
    if (r == NULL) {
        snprintf(err, errlen, "out of memory reading %s", path);
        return -1;
    }
    r->s = s;
    r->cur = -1;
    char *text = NULL, why[512] = "out of memory";
    size_t len;
    int rc = -1;
    if (safe_file_read_text(path, "system description", 1 << 20, &text, &len, why, sizeof why) == 0) {
        config_ini_set_line_limit();
        rc = ini_parse_string(text, on_entry, r);
    }
    free(text);
    int bad = 0;
    if (rc < 0) {
        snprintf(err, errlen, "%s cannot be read (%s); give a file of configs/systems/", path, why);
        bad = 1;
    } else if (rc > 0 || r->err[0] != '\0') {
        snprintf(err, errlen, "%s: line %d: %s", path, rc, r->err[0] ? r->err : "not INI");
        bad = 1;
    } else if (s->ncurves == 0 || s->gpu[0] == '\0') {
        snprintf(err, errlen, "%s has no [system] gpu or no [curve.*] section; see configs/systems/README.md", path);
        bad = 1;
    }
    for (int i = 0; i < s->ncurves && !bad; i++) {
        struct allreduce_curve *c = &s->curves[i].curve;
        if (c->gpus < 2 || c->npoints < 1 || r->nbusbw[i] != c->npoints) {
            snprintf(err, errlen, "%s: curve %d: needs gpus >= 2 and as many busbw_gbps as sizes_mib (%d and %d)", path,
                     i + 1, r->nbusbw[i], c->npoints);
            bad = 1;
            break;
        }
        if (c->nodes < 1) c->nodes = 1;
        for (int k = 0; k < c->npoints; k++) {
            if (r->busbw[i][k] <= 0 || (k > 0 && c->size_bytes[k] <= c->size_bytes[k - 1])) {
                snprintf(err, errlen, "%s: curve of %d GPUs: sizes must ascend and busbw be positive", path, c->gpus);
                bad = 1;
                break;
            }
            c->time_s[k] = allreduce_time_from_busbw(c->gpus, c->size_bytes[k], r->busbw[i][k], 0.0);
        }
    }
    if (!bad) qsort(s->curves, (size_t)s->ncurves, sizeof s->curves[0], by_gpus);
    free(r);
    return bad ? -1 : 0;
}

/* result_read_comm.c — the allreduce sweeps of a dpscale comm file
 * (result_read_internal.h): /collectives/<library>/<path>/n<N> from schema 2,
 * /collectives/<transport>/n<N> in schema 1. Each sweep keeps per size the time of
 * one allreduce on its slowest rank, algbw and busbw as the file holds them, and the
 * count of wrong elements, each checked to be a finite figure, not negative, below a
 * ceiling no sweep reaches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result/h5read.h"
#include "result/result_read_internal.h"
#include "base/utf8.h"

#define MAX_CHILDREN 64

struct children {
    int n;
    char name[MAX_CHILDREN][64];
};

static herr_t add_child(hid_t parent, const char *name, const H5L_info_t *info, void *out)
{
    (void)parent;
    struct children *c = out;
    if (info->type != H5L_TYPE_HARD) return 0; /* a soft or external link is none of dpscale's */
    if (c->n == MAX_CHILDREN) return 1; /* more than any file holds: stop */
    snprintf(c->name[c->n++], sizeof c->name[0], "%s", name);
    return 0;
}

/* The names of the links under `path` of file, in name order; -1 when it is not there. */
static int children_of(hid_t file, const char *path, struct children *c)
{
    c->n = 0;
    if (!h5_exists(file, path)) return -1;
    hid_t g = H5Gopen2(file, path, H5P_DEFAULT);
    if (g < 0) return -1;
    const herr_t rc = H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, add_child, c);
    H5Gclose(g);
    return rc < 0 ? -1 : 0;
}

/* One sweep group (n<N>); -1 with the reason in err. */
static int read_sweep(hid_t file, const char *group, struct report_sweep *s, char *err, size_t errlen)
{
    double *time_s = NULL; /* [size x rank] */
    hid_t g = H5Gopen2(file, group, H5P_DEFAULT);
    if (g < 0) {
        snprintf(err, errlen, "damaged: /%s cannot be read", group);
        return -1;
    }
    h5_attr_str(g, "dtype", s->dtype, sizeof s->dtype);
    if (h5_attr_str(g, "op", s->op, sizeof s->op) != 0) snprintf(s->op, sizeof s->op, "sum");
    s->nranks = h5_attr_int(g, "nranks", 0);
    s->nodes = h5_attr_int(g, "nodes", 0);
    s->in_place = h5_attr_int(g, "in_place", 0);
    s->iters = h5_attr_int(g, "iters", 0);
    s->warmup = h5_attr_int(g, "warmup", 0);
    size_t d[2], dt[2];
    int rc = -1;
    if (h5_read_doubles(g, "size_bytes", s->size_bytes, REPORT_MAX_SIZES, d) != 0 || d[1] != 1) {
        snprintf(err, errlen, "damaged: /%s/size_bytes cannot be read (or holds more than %d sizes)", group, REPORT_MAX_SIZES);
        goto done;
    }
    s->nsizes = (int)d[0];
    const char *names[] = {result_name_in(g, -1, "algbw_GBps"), result_name_in(g, -1, "busbw_GBps"), "wrong_elements"};
    double *into[] = {s->algbw_gbps, s->busbw_gbps, s->wrong};
    for (int k = 0; k < 3; k++)
        if (h5_read_doubles(g, names[k], into[k], REPORT_MAX_SIZES, d) != 0 || (int)d[0] != s->nsizes || d[1] != 1) {
            snprintf(err, errlen, "damaged: /%s/%s is missing or not one value per size", group, names[k]);
            goto done;
        }
    if (s->nranks < 1 || s->nranks > REPORT_MAX_RANKS) {
        snprintf(err, errlen, "damaged: /%s says %d ranks (this report reads 1 to %d)", group, s->nranks, REPORT_MAX_RANKS);
        goto done;
    }
    /* sized by the ranks the group says, and read only when the dataset is exactly that */
    if ((time_s = malloc((size_t)s->nsizes * (size_t)s->nranks * sizeof *time_s + 1)) == NULL ||
        h5_read_doubles(g, "time_s", time_s, (size_t)s->nsizes * (size_t)s->nranks, dt) != 0 || (int)dt[0] != s->nsizes ||
        dt[1] != (size_t)s->nranks) {
        snprintf(err, errlen, "damaged: /%s/time_s is missing or not [%d sizes x %d ranks]", group, s->nsizes, s->nranks);
        goto done;
    }
    static const struct result_figure size_rule = {0, 1, 1e18}, time_rule = {0, 0, 1e6}, bw_rule = {0, 0, 1e7},
                                      wrong_rule = {0, 0, 9e15};
    for (int k = 0; k < s->nsizes; k++) {
        const struct { const char *name; double v; struct result_figure rule; } fig[] = {
            {"size_bytes", s->size_bytes[k], size_rule}, {names[0], s->algbw_gbps[k], bw_rule},
            {names[1], s->busbw_gbps[k], bw_rule},       {"wrong_elements", s->wrong[k], wrong_rule}};
        for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
            char what[700];
            snprintf(what, sizeof what, "/%s/%s[%d]", group, fig[i].name, k);
            if (result_check_figure(what, fig[i].v, fig[i].rule, err, errlen) != 0) goto done;
        }
        for (size_t r = 0; r < dt[1]; r++) {
            char what[700];
            snprintf(what, sizeof what, "/%s/time_s[%d][%zu]", group, k, r);
            if (result_check_figure(what, time_s[(size_t)k * dt[1] + r], time_rule, err, errlen) != 0) goto done;
        }
    }
    for (int k = 0; k < s->nsizes; k++) { /* the slowest rank sets the time, as algbw was computed */
        s->time_s[k] = NAN;
        for (size_t r = 0; r < dt[1]; r++)
            if (isnan(s->time_s[k]) || time_s[(size_t)k * dt[1] + r] > s->time_s[k]) s->time_s[k] = time_s[(size_t)k * dt[1] + r];
    }
    rc = 0;
done:
    free(time_s);
    H5Gclose(g);
    return rc;
}

static int by_system_then_ranks(const void *a, const void *b)
{
    const struct report_sweep *x = a, *y = b;
    int c = strcmp(x->library, y->library);
    if (c == 0) c = strcmp(x->path, y->path);
    return c != 0 ? c : (x->nranks > y->nranks) - (x->nranks < y->nranks);
}

int result_read_comm(hid_t file, int schema, struct report_file *f, char *err, size_t errlen)
{
    f->comm = calloc(1, sizeof *f->comm);
    if (f->comm == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct report_comm *c = f->comm;
    struct children top, mid, leaf;
    if (children_of(file, "collectives", &top) != 0) {
        snprintf(err, errlen, "damaged: /collectives cannot be read");
        return -1;
    }
    /* schema 1: the transport, then n<N>; schema 2: the library, the path, then n<N> */
    for (int i = 0; i < top.n; i++) {
        char at[256];
        snprintf(at, sizeof at, "collectives/%s", top.name[i]);
        const int npaths = schema >= 2 ? (children_of(file, at, &mid), mid.n) : 1;
        for (int j = 0; j < npaths; j++) {
            char group[512];
            if (schema >= 2) snprintf(group, sizeof group, "%s/%s", at, mid.name[j]);
            else snprintf(group, sizeof group, "%s", at);
            if (children_of(file, group, &leaf) != 0) {
                snprintf(err, errlen, "damaged: /%s cannot be read", group);
                return -1;
            }
            for (int k = 0; k < leaf.n; k++) {
                if (c->nsweeps == REPORT_MAX_SWEEPS) {
                    snprintf(err, errlen, "more than %d allreduce sweeps under /collectives", REPORT_MAX_SWEEPS);
                    return -1;
                }
                struct report_sweep *s = &c->sweep[c->nsweeps];
                char sweep[600];
                snprintf(sweep, sizeof sweep, "%s/%s", group, leaf.name[k]);
                if (schema >= 2) {
                    utf8_copy(s->library, sizeof s->library, top.name[i]);
                    result_path_in(schema, mid.name[j], s->path, sizeof s->path);
                } else {
                    result_schema1_transport(top.name[i], s->library, sizeof s->library, s->path, sizeof s->path);
                }
                if (read_sweep(file, sweep, s, err, errlen) != 0) return -1;
                c->nsweeps++;
            }
        }
    }
    if (c->nsweeps == 0) {
        snprintf(err, errlen, "damaged: /collectives holds no allreduce sweep");
        return -1;
    }
    qsort(c->sweep, (size_t)c->nsweeps, sizeof c->sweep[0], by_system_then_ranks);
    return 0;
}

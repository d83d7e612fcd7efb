/* project_curves.c — the target's allreduce curves from a dpscale comm file
 * (project_read.h): each n<N> group's time by message size, on its slowest rank, sizes
 * ascending and every time above 0 (the curve is interpolated in log-log). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "project/project_read.h"
#include "result/result_in.h"
#include "result/result_read.h"

/* The curve of group gn (of q) into *cv: 1 when it is one (sizes and times, at most
 * PROJECT_MAX_POINTS sizes), 0 when it is none, -1 with err when it is damaged. */
static int read_curve(const struct result_in *f, const char *q, const char *name, struct allreduce_curve *cv, char *err,
                      size_t errlen)
{
    char gn[400];
    snprintf(gn, sizeof gn, "%.159s/%.63s", q, name); /* each as long as it can be */
    size_t n = 0, nt = 0, ds[3], d[3];
    double *sz = NULL, *t = NULL;
    const long gpus = result_count_of(name);
    if (gpus >= 1 && gpus <= REPORT_MAX_COUNT) {
        sz = result_in_figures(f, gn, "size_bytes", 1, &n, ds, err, errlen);
        t = result_in_figures(f, gn, "time_s", 2, &nt, d, err, errlen);
    }
    if (sz != NULL && t != NULL && err[0] == '\0' && d[0] != n)
        snprintf(err, errlen, "damaged: %s/%s/time_s has %llu rows for %zu size_bytes; one row per size", q, name,
                 (unsigned long long)d[0], n);
    for (size_t s = 1; sz != NULL && err[0] == '\0' && s < n; s++)
        if (sz[s] <= sz[s - 1])
            snprintf(err, errlen, "damaged: %s/%s/size_bytes do not ascend (%g after %g)", q, name, sz[s], sz[s - 1]);
    int rc = 0;
    if (err[0] == '\0' && sz != NULL && t != NULL && n > 0 && n <= PROJECT_MAX_POINTS) {
        memset(cv, 0, sizeof *cv);
        cv->gpus = (int)gpus;
        cv->nodes = 1;
        cv->npoints = (int)n;
        const size_t ranks = d[1];
        for (size_t s = 0; s < n; s++) { /* the slowest rank's time of each size */
            cv->size_bytes[s] = sz[s];
            cv->time_s[s] = 0;
            for (size_t rk = 0; rk < ranks; rk++)
                if (t[s * ranks + rk] > cv->time_s[s]) cv->time_s[s] = t[s * ranks + rk];
            if (cv->time_s[s] <= 0 && err[0] == '\0') /* the curve is interpolated in log-log */
                snprintf(err, errlen, "damaged: %s/%s/time_s is 0 at %g bytes; a measured time is above 0", q, name, sz[s]);
        }
        rc = 1;
    }
    free(sz), free(t);
    return err[0] != '\0' ? -1 : rc;
}

int project_read_curves(const struct result_in *f, struct allreduce_curve *c, int max, char *where, size_t wlen, char *err,
                        size_t errlen)
{
    char groups[PROJECT_MAX_GROUPS][RESULT_GROUP_LEN], names[PROJECT_MAX_GROUPS][RESULT_NAME_LEN];
    err[0] = '\0';
    const int ngroups = result_in_count_groups(f, "collectives", groups, PROJECT_MAX_GROUPS);
    for (int j = 0; j < ngroups; j++) {
        const char *q = groups[j];
        const int nnames = result_in_children(f, q, names, PROJECT_MAX_GROUPS);
        int nc = 0;
        for (int k = 0; k < nnames && nc < max; k++) {
            const int got = read_curve(f, q, names[k], &c[nc], err, errlen);
            if (got < 0) return -1;
            nc += got;
        }
        if (nc > 0) {
            snprintf(where, wlen, "%s", q);
            return nc;
        }
    }
    snprintf(err, errlen, "it has no allreduce curves (collectives/<library>/<path>/n<N>): make it with dpscale comm");
    return -1;
}

/* h5out_internal.h — the writers of each part of the result file, shared by the
 * h5out*.c files: h5out.c (the root, the whole file, a projection's file),
 * h5out_system.c (/system, its topology and ranks, /config), h5out_runs.c (/runs,
 * /summary, /collectives) and h5out_model.c (/model, /dump). */
#ifndef DPSCALE_H5OUT_INTERNAL_H
#define DPSCALE_H5OUT_INTERNAL_H

#include "result/h5out.h"
#include "result/h5w.h"

/* What /summary repeats on every row so that rows of many files need no join. */
struct h5out_labels {
    const char *model, *precision, *overlap, *shard_optimizer, *system_label;
    int ranks_per_node; /* 0: unknown (every run then on one node) */
};

void h5out_root(struct h5w *w, hid_t file, const struct provenance *p);
void h5out_system(struct h5w *w, hid_t file, const struct h5out_system *sys);
void h5out_config(struct h5w *w, hid_t file, const struct config *cfg);
void h5out_model(struct h5w *w, hid_t file, const struct config *cfg, const struct model *m);
void h5out_dump(struct h5w *w, hid_t file, const struct h5out_dump *d);
void h5out_run(struct h5w *w, hid_t runs_group, const struct config *cfg, const struct run_result *r,
               const struct run_summary *s);
void h5out_summary(struct h5w *w, hid_t file, const struct run_summary *s, int n, const struct h5out_labels *labels);
void h5out_collective(struct h5w *w, hid_t parent, const struct collective_result *r);
/* parent/<library>/<path>/n<N>, created (the library and path groups shared). */
hid_t h5out_run_group(struct h5w *w, hid_t parent, const char *library, const char *path, int nranks);

#endif

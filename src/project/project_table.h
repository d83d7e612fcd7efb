/* project_table.h — the projection's table from what it read (project_read.h): the
 * compute carried to the target's GPU, the terms besides the allreduce (the source's
 * own, its calibrations' or none), each GPU count's projected step and efficiency, and
 * the projection file written from them (/summary in a run's terms, /projection). */
#ifndef DPSCALE_PROJECT_TABLE_H
#define DPSCALE_PROJECT_TABLE_H

#include <stddef.h>

#include "project/project.h"
#include "project/project_read.h"
#include "project/systems.h"

/* The compute's time on the catalog's GPU over the source's (*scale): 1, returning 0,
 * when it is the source's GPU (either name holds the other); else the ratio of their
 * peak TFLOP/s in the source's precision (*target_tflops the target's), returning 1;
 * -1 when that ratio is not known (a peak of 0 or unknown, or tf32). *fp32: the
 * source's precision is fp32 or tf32 (the catalog's fp32 peak, else its bf16 one). */
int project_compute_scale(const struct project_source *src, const struct system_desc *sysd, double *scale,
                          double *target_tflops, int *fp32);

/* The terms the calibrations give a source: each term the median over them. Backward's
 * slowdown per share of backward with communication beside it, over those whose
 * communication ran beside a measurable share of backward (> 2 %: overlap on), else as a
 * fraction; the imbalance as a share of the 1-GPU step. */
struct project_calibration {
    double per_share, interference, imbalance_share;
};
struct project_calibration project_combine_calibrations(const struct project_source *cal, int n);

/* The terms of the projection of src onto the target: with `measured_terms` 0 none; with
 * ncal calibrations theirs (forward as at 1 GPU: its change is the power cap's, a property
 * of the model's compute as much as of the transport); else src's own measured ones.
 * src's interference, imbalance and forward change are set to those used; the imbalance
 * is scaled with the compute (`scale`, project_compute_scale), which changes forward
 * too: a forward measured on another GPU is left out. */
struct projection_terms project_terms(struct project_source *src, const struct project_source *cal, int ncal,
                                      int measured_terms, double scale);

/* The projected steps: one GPU (no communication), and each curve's GPU count. */
struct projection {
    struct projected_step one;
    int n;
    struct projected_step step[PROJECT_MAX_GROUPS];
    double efficiency[PROJECT_MAX_GROUPS]; /* the 1-GPU step / the curve's */
};
void project_onto(const struct project_source *src, const struct projection_terms *terms,
                  const struct allreduce_curve *curves, int n, struct projection *out);

/* What a projection file says of where its figures came from. */
struct projection_sources {
    const char *result;  /* RESULT's path */
    const char *target;  /* "COMM.h5 (collectives/...)" or "SYSTEM.ini (name: GPU)" */
    const char *compute; /* how the compute was had ("the compute as measured", "... SCALED ...") */
    const char *where;   /* a comm file's group of curves, each curve's source there */
    const struct system_desc *sysd; /* or the catalog entry's curves, each with its source (NULL: a comm file) */
};
/* The projection written to a new file `output` (h5out_write_projection): a row of
 * /summary per GPU count, 1 first, each with its curve's source. 0, or -1 with err. */
int project_write(const char *output, const struct projection_sources *from, const struct project_source *src,
                  const struct projection_terms *terms, const struct projection *pj, const struct allreduce_curve *curves,
                  char *err, size_t errlen);

#endif

/* project_table.c — the projection's table (project_table.h): the compute carried to
 * the target's GPU, the terms, each GPU count's projected step (project.c), and the
 * projection file those rows make. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "project/project_table.h"
#include "result/h5out.h"
#include "train/stats.h"

int project_compute_scale(const struct project_source *src, const struct system_desc *sysd, double *scale,
                          double *target_tflops, int *fp32)
{
    *scale = 1.0;
    if (sysd == NULL || strstr(src->device, sysd->gpu) != NULL || strstr(sysd->gpu, src->device) != NULL) return 0;
    *fp32 = strcmp(src->precision, "fp32") == 0 || strcmp(src->precision, "tf32") == 0;
    *target_tflops = *fp32 ? sysd->peak_tflops_fp32 : sysd->peak_tflops_bf16;
    if (src->peak_tflops <= 0 || *target_tflops <= 0 || strcmp(src->precision, "tf32") == 0) return -1;
    *scale = src->peak_tflops / *target_tflops;
    return 1;
}

static double median(const double *v, int n) { return stats_percentile(v, (size_t)n, 50); }

struct project_calibration project_combine_calibrations(const struct project_source *cal, int n)
{
    double ps[PROJECT_MAX_CALIBRATIONS], in[PROJECT_MAX_CALIBRATIONS], im[PROJECT_MAX_CALIBRATIONS];
    int shared = 0;
    for (int k = 0; k < n; k++) {
        if (cal[k].interference_share > 0.02) ps[shared++] = cal[k].interference / cal[k].interference_share;
        in[k] = cal[k].interference;
        im[k] = cal[k].step1_s > 0 ? cal[k].imbalance_s / cal[k].step1_s : 0.0;
    }
    return (struct project_calibration){shared > 0 ? median(ps, shared) : 0.0, median(in, n), median(im, n)};
}

struct projection_terms project_terms(struct project_source *src, const struct project_source *cal, int ncal,
                                      int measured_terms, double scale)
{
    double per_share = 0.0;
    if (scale != 1.0) src->forward_interference = 0.0; /* the source GPU's: its clocks under its power cap */
    if (!measured_terms) {
        src->interference = src->imbalance_s = src->forward_interference = 0;
    } else if (ncal > 0) {
        const struct project_calibration c = project_combine_calibrations(cal, ncal);
        per_share = c.per_share;
        src->interference = per_share > 0.0 ? 0.0 : c.interference;
        /* forward's change is the power cap's (a GPU idling beside a long allreduce runs its
         * next forward faster): as much a property of the model's compute as of the transport,
         * it did not carry over between the presets (19 of 24 with it, 20 without) */
        src->forward_interference = 0.0;
        src->imbalance_s = c.imbalance_share * src->step1_s;
    }
    return (struct projection_terms){scale, src->interference, src->imbalance_s * scale, per_share,
                                     src->forward_interference};
}

void project_onto(const struct project_source *src, const struct projection_terms *terms,
                  const struct allreduce_curve *curves, int n, struct projection *out)
{
    const struct projection_terms none = {terms->compute_scale, 0.0, 0.0, 0.0, 0.0};
    project_step(&src->prof, &none, NULL, &out->one);
    out->n = n;
    for (int i = 0; i < n; i++) {
        project_step(&src->prof, terms, &curves[i], &out->step[i]);
        out->efficiency[i] = out->one.step_s / out->step[i].step_s;
    }
}

/* A projected row in /summary's terms: what the projection does not know is NaN. */
static void fill_row(struct run_summary *r, int gpus, int nodes, int batch, const struct projected_step *s, double step1_s)
{
#define NOT_KNOWN(name, ...) r->name = NAN;
    RUN_SUMMARY_DOUBLES(NOT_KNOWN)
#undef NOT_KNOWN
    snprintf(r->library, sizeof r->library, "proj");
    snprintf(r->path, sizeof r->path, "sim");
    r->nranks = gpus;
    r->nnodes = nodes;
    r->batch_per_rank = batch;
    r->global_batch = batch * gpus;
    r->step_median_s = s->step_s;
    r->forward_median_s = s->forward_s;
    r->backward_median_s = s->backward_s;
    r->comm_exposed_median_s = s->exposed_s;
    r->update_median_s = s->update_s;
    r->compute_only_s = s->forward_s + s->backward_s + s->update_s;
    r->allreduce_alone_s = s->comm_s;
    r->samples_per_s = batch * gpus / s->step_s;
    r->samples_per_s_per_rank = batch / s->step_s;
    r->speedup = gpus * step1_s / s->step_s;
    r->efficiency = step1_s / s->step_s;
}

int project_write(const char *output, const struct projection_sources *from, const struct project_source *src,
                  const struct projection_terms *terms, const struct projection *pj, const struct allreduce_curve *curves,
                  char *err, size_t errlen)
{
    const int nc = pj->n;
    const struct system_desc *sysd = from->sysd;
    struct run_summary *rows = calloc((size_t)nc + 1, sizeof *rows);
    char (*csrc)[H5OUT_PROJECTION_TEXT] = calloc((size_t)nc + 1, sizeof *csrc);
    CHECK_ALLOC(rows);
    CHECK_ALLOC(csrc);
    fill_row(&rows[0], 1, 1, src->batch_per_rank, &pj->one, pj->one.step_s);
    snprintf(csrc[0], sizeof csrc[0], "1 GPU: no communication");
    for (int i = 0; i < nc; i++) {
        fill_row(&rows[i + 1], curves[i].gpus, curves[i].nodes, src->batch_per_rank, &pj->step[i], pj->one.step_s);
        snprintf(csrc[i + 1], sizeof csrc[i + 1], "%d GPUs: %.150s%s%.80s", curves[i].gpus,
                 sysd != NULL ? sysd->curves[i].source : from->where,
                 sysd != NULL && sysd->curves[i].derived[0] ? "; DERIVED: " : "", sysd != NULL ? sysd->curves[i].derived : "");
    }
    /* its provenance (version, command line, times) the writer collects */
    const struct h5out_projection hp = {from->result, from->target, from->compute, project_ready_words(src),
                                        src->interference, terms->imbalance_s, rows, nc + 1, &csrc[0][0]};
    const int rc = h5out_write_projection(output, &hp, err, errlen);
    free(rows);
    free(csrc);
    return rc;
}

/* cmd_gradcheck.c — `dpscale gradcheck`: the data-parallel gradient (each rank's
 * backward pass, summed by the allreduce and averaged) against central finite
 * differences of the global loss, on a sample of coordinates of every tensor.
 * Run it with a tiny model (configs/mlp-tiny.ini); it works on any backend and any
 * number of ranks, so it checks the GPU kernels and the NCCL path too. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels/synthetic.h"
#include "cli/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "cli/session.h"
#include "model/step.h"
#include "train/train.h"

#define GRADCHECK_EPS 3e-3f     /* step of the central difference: smaller drowns in float32, larger in curvature */
#define GRADCHECK_TOLERANCE 1e-2 /* on |a - n| / max(|a| + |n|, floor): see resolution_floor */

#define GRADCHECK_QUANTA 2.0  /* the loss's float noise that the differences must clear, in ulps of the loss */

/* The model's step, tolerance and noise (struct model_ops), or the defaults above. */
struct probe {
    float eps;
    double tolerance, quanta;
};
#define COORDS_PER_TENSOR 8

/* Global loss of the current parameters: the mean over ranks of each rank's mean. */
static double global_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, struct group *c)
{
    float local;
    step_forward_loss(be, m, rb, B, 0, 1.0f, NULL);
    be->ops->download(be, &local, rb->loss, sizeof local);
    double sum = local;
    group_sum_doubles(c, &sum, 1);
    return sum / group_size(c);
}

/* The loss is a float: a central difference cannot resolve a slope finer than its noise,
 * two quanta by default (a model's own: gradcheck_quanta), 2 ulp(L) / (2 eps). The relative error's
 * denominator is at least that resolution over the tolerance (and 1e-3), so that a
 * gradient below what the differences resolve is checked to that resolution, not to noise. */
static double resolution_floor(double plus, double minus, const struct probe *pr)
{
    const double l = fmax(fabs(plus), fabs(minus)), ulp = l * FLT_EPSILON;
    return fmax(1e-3, pr->quanta * ulp / (2.0 * pr->eps) / pr->tolerance);
}

static void set_param(struct backend *be, struct step_buffers *rb, size_t k, float value)
{
    be->ops->upload(be, rb->params + k, &value, sizeof value);
}

static double perturbed_loss(struct backend *be, const struct model *m, struct step_buffers *rb, int B, struct group *c,
                             size_t k, float value)
{
    set_param(be, rb, k, value);
    return global_loss(be, m, rb, B, c);
}

/* gradcheck's memory: the step's arenas for one step, and the two host arrays of
 * the parameters and the reduced gradients (the allreduce is in place). */
static int plan_fits(struct session *s, char *err, size_t errlen)
{
    struct memory_plan plan;
    const int B = config_batch_per_rank(&s->cfg, s->launch.size);
    if (step_plan_memory(&s->cfg, s->model, s->backend.act_dtype, B, 1, &plan, err, errlen) != 0) return -1;
    if (model_add_bytes(&plan.host_bytes, s->model->nparams, 2, sizeof(float)) != 0 || model_plan_sum(&plan) != 0) {
        snprintf(err, errlen, "gradcheck's memory plan overflows a 64-bit size; make the model smaller");
        return -1;
    }
    return train_plan_fits(&plan, "gradcheck", &s->backend, s->launch.local_size, err, errlen);
}

int cmd_gradcheck(int argc, char **argv)
{
    struct session s;
    int rc = session_start(argc, argv, &s);
    if (rc != EXIT_OK) return rc; /* EXIT_HELP too: main prints the help */
    struct backend *be = &s.backend;
    const struct model *m = s.model;
    if (s.cfg.precision != PREC_FP32) {
        if (s.launch.rank == 0)
            fprintf(stderr, "dpscale: error: gradcheck needs train.precision = fp32 (finite differences drown in "
                            "tf32/bf16/fp16 rounding); add --precision=fp32\n");
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    char err[1024] = "";
    const int too_big = plan_fits(&s, err, sizeof err) != 0;
    if (session_refuse_once(&s, too_big, "lower train.batch_per_gpu or make the model smaller (gradcheck wants a tiny one: "
                            "configs/mlp-tiny.ini)", err)) {
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    struct group *g = group_create(s.launch.size);
    struct comm *c = session_open_comm(&s, g, 2);
    const int N = group_size(g), B = config_batch_per_rank(&s.cfg, N);

    struct step_buffers rb;
    step_buffers_alloc(be, &s.cfg, m, B, 1, &rb);
    float *params = malloc(m->nparams * sizeof(float)), *grads = malloc(m->nparams * sizeof(float));
    CHECK_ALLOC(params);
    CHECK_ALLOC(grads);
    model_init_params(m, (uint64_t)s.cfg.seed, params);
    if (m->ops->gradcheck_matrix_scale != 1.0f) /* the model asks to be probed where its gradients resolve */
        for (int i = 0; i < m->ntensors; i++)
            if (m->tensors[i].kind == TENSOR_MATRIX)
                for (size_t j = 0; j < m->tensors[i].count; j++)
                    params[m->tensors[i].offset + j] *= m->ops->gradcheck_matrix_scale;
    step_set_params(be, m, &rb, params);
    step_data(be, m, &rb, (uint64_t)group_rank(g) * (uint64_t)B, B, (uint64_t)s.cfg.seed);

    /* Analytic: local backward, allreduce sum, divide by N (what the optimizer sees). */
    step_forward_loss(be, m, &rb, B, 0, 1.0f, NULL);
    step_backward(be, m, &rb, B, NULL);
    if (c != NULL) {
        comm_begin(c, 0);
        comm_allreduce(c, rb.grads, rb.grads, m->nparams, DT_F32, REDUCE_SUM);
        comm_end(c, 0);
        comm_wait_all(c);
    }
    be->ops->download(be, grads, rb.grads, m->nparams * sizeof(float)); /* fp32: gradcheck runs in fp32 */

    const struct model_ops *o = m->ops;
    const struct probe pr = {o->gradcheck_eps > 0 ? o->gradcheck_eps : GRADCHECK_EPS,
                             o->gradcheck_tolerance > 0 ? o->gradcheck_tolerance : GRADCHECK_TOLERANCE,
                             o->gradcheck_quanta > 0 ? o->gradcheck_quanta : GRADCHECK_QUANTA};
    say("gradcheck: %d ranks x batch %d, %zu parameters, central differences with eps %g\n", N, B, m->nparams,
        (double)pr.eps);
    say("%-24s %10s %14s %14s %10s\n", "tensor", "index", "analytic", "numeric", "rel_err");
    double worst = 0.0;
    int checked = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const struct param_tensor *tensor = &m->tensors[i];
        for (int t = 0; t < COORDS_PER_TENSOR; t++) {
            const size_t idx = synth_hash3((uint64_t)s.cfg.seed, (uint64_t)i, (uint64_t)t) % tensor->count;
            const size_t k = tensor->offset + idx;
            const float p = params[k];
            double plus = perturbed_loss(be, m, &rb, B, g, k, p + pr.eps);
            double minus = perturbed_loss(be, m, &rb, B, g, k, p - pr.eps);
            set_param(be, &rb, k, p);
            const double numeric = (plus - minus) / (2.0 * pr.eps);
            const double analytic = grads[k] / (double)N;
            const double denom = fmax(fabs(analytic) + fabs(numeric), resolution_floor(plus, minus, &pr));
            const double rel = fabs(analytic - numeric) / denom;
            if (rel > worst || isnan(rel)) worst = isnan(rel) ? INFINITY : rel;
            checked++;
            if (t == 0 || rel > pr.tolerance) /* every failing coordinate is named */
                say("%-24s %10zu %14.6e %14.6e %10.2e%s\n", tensor->name, idx, analytic, numeric, rel,
                    rel > pr.tolerance ? "  <- over" : "");
        }
    }
    const int pass = worst <= pr.tolerance;
    say("gradcheck: %d coordinates, max relative error %.3e (tolerance %.0e): %s\n", checked, worst,
        pr.tolerance, pass ? "PASS" : "FAIL");

    free(params);
    free(grads);
    step_buffers_free(be, m, &rb);
    comm_close(c);
    group_destroy(g);
    session_end(&s);
    return pass ? EXIT_OK : EXIT_FAILURE_RUN;
}

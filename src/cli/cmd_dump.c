/* cmd_dump.c — `dpscale dump`: one training step of one rank laid open, for an
 * independent implementation to recompute (tests/gpu/torch_reference.py): the model's
 * tensor table (/model), the initial parameters, the step's inputs, its loss, and the
 * gradient of every parameter, in one HDF5 file. Runs on one rank, any backend and
 * precision; the step is the first of `dpscale run` (samples 0 .. B-1, seed train.seed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "cli/result_file.h"
#include "cli/session.h"
#include "model/step.h"

/* n elements of the compute dtype (or fp32) on the device, as fp32 on the host. */
static float *to_host_f32(struct backend *be, const void *src, int src_is_f32, size_t n)
{
    float *host = malloc(dp_size_mul(n, sizeof(float), "a dumped array"));
    CHECK_ALLOC(host);
    if (src_is_f32 || be->act_dtype == DT_F32) {
        be->ops->download(be, host, src, n * sizeof(float));
        return host;
    }
    float *dev = be->ops->alloc(be, n * sizeof(float));
    be->ops->cast_to_f32(be, dev, src, n);
    be->ops->download(be, host, dev, n * sizeof(float));
    be->ops->free(be, dev);
    return host;
}

int cmd_dump(int argc, char **argv)
{
    struct session s;
    int rc = session_start(argc, argv, &s);
    if (rc != EXIT_OK) return rc; /* EXIT_HELP too: main prints the help */
    if (s.launch.size != 1) {
        if (s.launch.rank == 0)
            fprintf(stderr, "dpscale: error: dump lays open one rank's step: run it on one rank (mpirun -np 1, or "
                            "without mpirun)\n");
        session_end(&s);
        return EXIT_BAD_INPUT;
    }
    struct result_file f;
    if ((rc = result_file_prepare(&s, &f)) != EXIT_OK) return rc;
    struct backend *be = &s.backend;
    const struct model *m = s.model;
    const int B = config_batch_per_rank(&s.cfg, 1);

    struct step_buffers rb;
    step_buffers_alloc(be, &s.cfg, m, B, 1, &rb);
    float *params = malloc(dp_size_mul(m->nparams, sizeof(float), "the parameters"));
    CHECK_ALLOC(params);
    model_init_params(m, (uint64_t)s.cfg.seed, params);
    step_set_params(be, m, &rb, params);
    step_data(be, m, &rb, 0, B, (uint64_t)s.cfg.seed);
    step_forward_loss(be, m, &rb, B, 0, 1.0f, NULL);
    step_backward(be, m, &rb, B, NULL);
    be->ops->synchronize(be);

    struct h5out_dump d = {.batch = B, .nparams = m->nparams, .params = params};
    float loss;
    be->ops->download(be, &loss, rb.loss, sizeof loss);
    d.loss = loss;
    d.grads = to_host_f32(be, rb.grads, rb.grad_dtype == DT_F32, m->nparams);
    struct model_input in[H5OUT_DUMP_MAX_INPUTS];
    d.ninputs = m->ops->inputs != NULL ? m->ops->inputs(m, &rb, in, H5OUT_DUMP_MAX_INPUTS) : 0;
    for (int i = 0; i < d.ninputs; i++) {
        void *host;
        if (in[i].is_int) {
            host = malloc(dp_size_mul(in[i].count, sizeof(int), "a dumped array"));
            CHECK_ALLOC(host);
            be->ops->download(be, host, in[i].data, in[i].count * sizeof(int));
        } else {
            host = to_host_f32(be, in[i].data, in[i].is_f32, in[i].count);
        }
        d.inputs[i] = (struct h5out_array){in[i].name, in[i].is_int, in[i].count, host};
    }
    say("dump: %s, batch %d, %zu parameters, loss %.6f\n", s.cfg.model_name, B, m->nparams, loss);
    const int failed = result_file_write_dump(&s, &f, argc, argv, &d) != 0;

    for (int i = 0; i < d.ninputs; i++) free((void *)d.inputs[i].data);
    free((void *)d.grads);
    free(params);
    step_buffers_free(be, m, &rb);
    session_end(&s);
    return failed ? EXIT_FAILURE_RUN : EXIT_OK;
}

/* backend.c — choose the backend that the configuration names and start it. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "kernels/env_switch.h"

#ifdef DPSCALE_HAVE_CUDA
extern const struct backend_ops backend_cuda_ops;
int backend_cuda_device_count(void);
#endif

int backend_open(struct backend *b, const struct config *cfg, int local_rank, int local_size, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    int kind = cfg->backend;
#ifdef DPSCALE_HAVE_CUDA
    if (kind == BACKEND_AUTO) kind = backend_cuda_device_count() > 0 ? BACKEND_CUDA : BACKEND_CPU;
    if (kind == BACKEND_CUDA) b->ops = &backend_cuda_ops;
#else
    if (kind == BACKEND_AUTO) kind = BACKEND_CPU;
    if (kind == BACKEND_CUDA) {
        snprintf(err, errlen, "run.backend = cuda, but this binary was built without CUDA; rebuild where nvcc is on PATH (make CUDA=1) or use --backend=cpu");
        return -1;
    }
#endif
    if (kind == BACKEND_CPU) b->ops = &backend_cpu_ops;
    return b->ops->init(b, cfg, local_rank, local_size, err, errlen);
}

void backend_close(struct backend *b)
{
    if (b->ops != NULL) b->ops->shutdown(b);
}

void *backend_stream(struct backend *b) { return b->ops->stream != NULL ? b->ops->stream(b) : NULL; }
double backend_energy_j(struct backend *b) { return b->ops->energy_j != NULL ? b->ops->energy_j(b) : -1.0; }
int backend_profiling(void)
{
    static int wanted = -1;
    return env_switch(&wanted, "DPSCALE_PROFILE", "step");
}

void backend_profile_step(struct backend *b, int on)
{
    if (b->ops->profiler != NULL && backend_profiling()) b->ops->profiler(b, on);
}

double backend_nvlink_tx_bytes(struct backend *b)
{
    return b->ops->nvlink_tx_bytes != NULL ? b->ops->nvlink_tx_bytes(b) : -1.0;
}

void *backend_update_stream(struct backend *b) { return b->ops->update_stream != NULL ? b->ops->update_stream(b) : NULL; }

void backend_set_stream(struct backend *b, void *stream)
{
    if (b->ops->set_stream != NULL) b->ops->set_stream(b, stream);
}

void backend_stream_wait(struct backend *b, void *waiter, void *waited)
{
    if (b->ops->stream_wait != NULL) b->ops->stream_wait(b, waiter, waited);
}

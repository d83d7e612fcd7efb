/* collectives.c — the allreduce bandwidth sweep of dpscale comm (collectives.h).
 *
 * Per size: warm-up allreduces, then the ranks line up (device idle, barrier),
 * `iters` allreduces back to back between two events: the mean time per allreduce
 * on each rank. The figure of a size is the slowest rank's, like a synchronous
 * step. Then a fresh pattern, one more allreduce, and a check of every element:
 * rank r sends (r + 1) * (i % 7 + 1), so the sum is n(n+1)/2 * (i % 7 + 1), exact
 * in fp32, bf16 and fp16 for up to 8 ranks (and in fp32 far beyond). */
#include "train/collectives.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "base/halfconv.h"
#include "base/watchdog.h"

static double *calloc_doubles(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof(double));
    CHECK_ALLOC(p);
    return p;
}

static void store(void *host, size_t i, int dtype, float v)
{
    if (dtype == DT_F32) ((float *)host)[i] = v;
    else ((uint16_t *)host)[i] = dtype == DT_BF16 ? float_to_bf16(v) : float_to_fp16(v);
}

static float load(const void *host, size_t i, int dtype)
{
    if (dtype == DT_F32) return ((const float *)host)[i];
    const uint16_t h = ((const uint16_t *)host)[i];
    return dtype == DT_BF16 ? bf16_to_float(h) : fp16_to_float(h);
}

static float pattern(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 7 + 1)); }

/* One allreduce of a fresh pattern, checked element by element: the wrong ones. */
/* One allreduce, complete before anything enqueued later on the compute stream. */
static void allreduce(struct comm *c, void *send, void *recv, size_t count, int dtype)
{
    comm_begin(c, 0);
    comm_allreduce(c, send, recv, count, dtype, REDUCE_SUM);
    comm_end(c, 0);
    comm_wait_all(c);
}

static double check_once(struct backend *be, struct group *g, struct comm *c, void *send, void *recv, void *host,
                         size_t count, int dtype)
{
    const int n = group_size(g), rank = group_rank(g);
    const size_t bytes = count * dtype_size(dtype);
    for (size_t i = 0; i < count; i++) store(host, i, dtype, pattern(rank, i));
    be->ops->upload(be, send, host, bytes);
    allreduce(c, send, recv, count, dtype);
    be->ops->download(be, host, recv, bytes);
    double wrong = 0;
    const float sum_of_ranks = (float)(n * (n + 1) / 2);
    for (size_t i = 0; i < count; i++)
        if (load(host, i, dtype) != sum_of_ranks * (float)(i % 7 + 1)) wrong += 1;
    group_sum_doubles(g, &wrong, 1);
    return wrong;
}

static double time_allreduces(struct backend *be, struct group *g, struct comm *c, void *send, void *recv, size_t count,
                              int dtype, int warmup, int iters)
{
    struct backend_event *a = be->ops->event_create(be), *b = be->ops->event_create(be);
    for (int i = 0; i < warmup; i++) allreduce(c, send, recv, count, dtype);
    be->ops->synchronize(be);
    group_barrier(g);
    be->ops->event_record(be, a);
    for (int i = 0; i < iters; i++) allreduce(c, send, recv, count, dtype);
    be->ops->event_record(be, b);
    const double t = be->ops->event_elapsed_s(be, a, b) / iters;
    be->ops->event_destroy(be, a);
    be->ops->event_destroy(be, b);
    return t;
}

void collective_measure(struct backend *be, struct group *g, struct comm *c, const struct config *cfg,
                        struct collective_result *out)
{
    const int n = group_size(g), rank = group_rank(g), dtype = cfg->coll_dtype;
    const size_t elem = dtype_size(dtype);
    memset(out, 0, sizeof *out);
    snprintf(out->library, sizeof out->library, "%s", comm_library_name(c));
    snprintf(out->path, sizeof out->path, "%s", config_value_name(cfg, "comm", "path"));
    snprintf(out->dtype, sizeof out->dtype, "%s", dtype_name(dtype));
    out->elem_bytes = (int)elem;
    out->nranks = n;
    out->nnodes = group_nnodes(g);
    out->in_place = cfg->coll_in_place;
    out->iters = cfg->coll_iters;
    out->warmup = cfg->coll_warmup;

    /* sizes: min, min x factor, ... up to max (MiB), whole elements */
    size_t sizes[64];
    int ns = 0;
    for (double mib = cfg->coll_min_mib; mib <= cfg->coll_max_mib * (1 + 1e-9) && ns < 64; mib *= cfg->coll_factor) {
        size_t count = (size_t)(mib * 1048576.0 / elem);
        sizes[ns++] = count > 0 ? count : 1;
    }
    out->nsizes = ns;
    const size_t max_count = sizes[ns - 1], max_bytes = dp_size_mul(max_count, elem, "the allreduce buffer");
    void *send = be->ops->alloc(be, max_bytes);
    void *recv = cfg->coll_in_place ? send : be->ops->alloc(be, max_bytes);
    void *host = malloc(max_bytes);
    CHECK_ALLOC(host);

    double *mine = calloc_doubles((size_t)ns), *wrong = calloc_doubles((size_t)ns);
    watchdog_arm("allreduce sweep"); /* a "step" is one size */
    for (int k = 0; k < ns; k++) {
        watchdog_note(k, -1);
        mine[k] = time_allreduces(be, g, c, send, recv, sizes[k], dtype, cfg->coll_warmup, cfg->coll_iters);
        wrong[k] = check_once(be, g, c, send, recv, host, sizes[k], dtype);
    }
    double *all = rank == 0 ? calloc_doubles((size_t)ns * n) : NULL;
    group_gather_doubles(g, mine, (size_t)ns, all);
    watchdog_idle();
    if (rank == 0) {
        out->size_bytes = calloc_doubles((size_t)ns);
        out->time_s = calloc_doubles((size_t)ns * n);
        out->algbw_gbps = calloc_doubles((size_t)ns);
        out->busbw_gbps = calloc_doubles((size_t)ns);
        out->wrong = wrong;
        wrong = NULL;
        for (int k = 0; k < ns; k++) {
            double slowest = 0;
            for (int r = 0; r < n; r++) {
                out->time_s[(size_t)k * n + r] = all[(size_t)r * ns + k];
                if (all[(size_t)r * ns + k] > slowest) slowest = all[(size_t)r * ns + k];
            }
            out->size_bytes[k] = (double)(sizes[k] * elem);
            out->algbw_gbps[k] = out->size_bytes[k] / slowest / 1e9;
            out->busbw_gbps[k] = out->algbw_gbps[k] * 2.0 * (n - 1) / n;
        }
    }
    free(all);
    free(mine);
    free(wrong);
    free(host);
    if (recv != send) be->ops->free(be, recv);
    be->ops->free(be, send);
}

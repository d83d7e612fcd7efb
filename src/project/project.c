/* project.c — one data-parallel step on N GPUs as events, bucket by bucket
 * (project.h; the model and what it leaves out: docs/PROJECTION.md). */
#include "project/project.h"

#include <math.h>
#include <stddef.h>

double allreduce_time_from_busbw(int gpus, double bytes, double busbw_gbps, double latency_s)
{
    if (gpus <= 1) return 0.0;
    return 2.0 * (gpus - 1) / gpus * bytes / (busbw_gbps * 1e9) + latency_s;
}

double allreduce_curve_time(const struct allreduce_curve *c, double bytes)
{
    const int n = c->npoints;
    if (n <= 0 || bytes <= 0.0) return 0.0;
    if (bytes <= c->size_bytes[0]) return c->time_s[0];
    if (bytes >= c->size_bytes[n - 1]) return c->time_s[n - 1] * bytes / c->size_bytes[n - 1];
    int i = 1;
    while (c->size_bytes[i] < bytes) i++;
    const double x0 = log(c->size_bytes[i - 1]), x1 = log(c->size_bytes[i]);
    const double y0 = log(c->time_s[i - 1]), y1 = log(c->time_s[i]);
    return exp(y0 + (y1 - y0) * (log(bytes) - x0) / (x1 - x0));
}

void project_step(const struct step_profile *p, const struct projection_terms *t, const struct allreduce_curve *c,
                  struct projected_step *out)
{
    const double scale = t->compute_scale > 0.0 ? t->compute_scale : 1.0;
    const int communicates = c != NULL && c->gpus > 1;
    double slow = communicates ? 1.0 + t->interference : 1.0;
    if (communicates && t->interference_per_share > 0.0) { /* the slowdown grows with the communication beside backward */
        double comm = 0.0;
        for (int i = 0; i < p->nbuckets; i++) comm += allreduce_curve_time(c, p->bytes[i]);
        const double share = p->overlap && p->backward_s > 0.0 ? fmin(1.0, comm / (p->backward_s * scale)) : 0.0;
        slow = 1.0 + t->interference_per_share * share;
    }
    *out = (struct projected_step){0};
    out->forward_s = p->forward_s * scale * (communicates ? 1.0 + t->forward_interference : 1.0);
    out->backward_s = p->backward_s * scale * slow;
    out->update_s = (communicates && p->update_comm_s > 0.0 ? p->update_comm_s : p->update_left_s) * scale;
    if (communicates) {
        /* one communication stream: bucket i starts when its gradients are complete and
         * the previous reduction is done (overlap off: all of them after backward) */
        double comm_end = p->overlap ? 0.0 : out->backward_s;
        for (int i = 0; i < p->nbuckets; i++) {
            const double ready = p->overlap ? p->ready_s[i] * scale * slow : out->backward_s;
            const double dt = allreduce_curve_time(c, p->bytes[i]);
            comm_end = (ready > comm_end ? ready : comm_end) + dt;
            out->comm_s += dt;
        }
        out->exposed_s = comm_end > out->backward_s ? comm_end - out->backward_s : 0.0;
        out->imbalance_s = t->imbalance_s;
    }
    out->step_s = out->forward_s + out->backward_s + out->exposed_s + out->update_s + out->imbalance_s;
}

/* table.c — the scaling table on stdout: one row per run, the same numbers as the
 * /summary table of the result file. Times in milliseconds for reading; the file
 * keeps seconds. */
#include "table.h"

#include <math.h>

static void print_ratio(FILE *out, double v, int width)
{
    if (isnan(v)) fprintf(out, " %*s", width, "-");
    else fprintf(out, " %*.3f", width, v);
}

void table_print_scaling(FILE *out, const struct run_summary *runs, int n)
{
    fprintf(out, "%-9s %5s %5s %7s %9s %9s %9s %11s %7s %6s %9s %9s %9s %9s %8s %9s\n", "transport", "ranks", "nodes",
            "batch", "step_ms", "p05_ms", "p95_ms", "samples/s", "speedup", "effic", "fwd_ms", "bwd_ms", "allred_ms",
            "upd_ms", "busbw", "loss");
    for (int i = 0; i < n; i++) {
        const struct run_summary *r = &runs[i];
        fprintf(out, "%-9s %5d %5d %7d %9.3f %9.3f %9.3f %11.1f", r->transport, r->nranks, r->nnodes, r->global_batch,
                1e3 * r->step_median_s, 1e3 * r->step_p05_s, 1e3 * r->step_p95_s, r->samples_per_s);
        print_ratio(out, r->speedup, 7);
        print_ratio(out, r->efficiency, 6);
        fprintf(out, " %9.3f %9.3f %9.3f %9.3f", 1e3 * r->phase_median_s[PHASE_FORWARD],
                1e3 * r->phase_median_s[PHASE_BACKWARD], 1e3 * r->phase_median_s[PHASE_ALLREDUCE],
                1e3 * r->phase_median_s[PHASE_UPDATE]);
        if (isnan(r->allreduce_busbw_gbps)) fprintf(out, " %8s", "-");
        else fprintf(out, " %8.2f", r->allreduce_busbw_gbps);
        fprintf(out, " %9.4f\n", r->final_loss);
    }
    fprintf(out, "step_ms: median over timed steps of the slowest rank; effic = samples/s / (ranks x samples/s at 1 rank); "
                 "busbw in GB/s (nccl-tests definition)\n");
}

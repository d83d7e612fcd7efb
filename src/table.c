/* table.c — the scaling table on stdout: one row per run, the same numbers as the
 * /summary table of the result file. Times in milliseconds for reading; the file
 * keeps seconds. */
#include "table.h"

#include <math.h>

/* A figure, or "-" where it is unknown (NaN). */
static void print_value(FILE *out, double v, int width, int decimals)
{
    if (isnan(v)) fprintf(out, " %*s", width, "-");
    else fprintf(out, " %*.*f", width, decimals, v);
}

void table_print_scaling(FILE *out, const struct run_summary *runs, int n)
{
    fprintf(out, "%-9s %5s %5s %7s %9s %9s %9s %11s %7s %6s %9s %9s %9s %9s %8s %6s %8s %9s\n", "transport", "ranks",
            "nodes", "batch", "step_ms", "p05_ms", "p95_ms", "samples/s", "speedup", "effic", "fwd_ms", "bwd_ms",
            "allred_ms", "upd_ms", "busbw", "mfu", "J/sample", "loss");
    for (int i = 0; i < n; i++) {
        const struct run_summary *r = &runs[i];
        fprintf(out, "%-9s %5d %5d %7d %9.3f %9.3f %9.3f %11.1f", r->transport, r->nranks, r->nnodes, r->global_batch,
                1e3 * r->step_median_s, 1e3 * r->step_p05_s, 1e3 * r->step_p95_s, r->samples_per_s);
        print_value(out, r->speedup, 7, 3);
        print_value(out, r->efficiency, 6, 3);
        fprintf(out, " %9.3f %9.3f %9.3f %9.3f", 1e3 * r->phase_median_s[PHASE_FORWARD],
                1e3 * r->phase_median_s[PHASE_BACKWARD], 1e3 * r->phase_median_s[PHASE_ALLREDUCE],
                1e3 * r->phase_median_s[PHASE_UPDATE]);
        print_value(out, r->allreduce_busbw_gbps, 8, 2);
        print_value(out, r->mfu, 6, 3);
        print_value(out, r->joules_per_sample, 8, 4);
        fprintf(out, " %9.4f\n", r->final_loss);
    }
    fprintf(out, "step_ms: median over timed steps of the slowest rank; effic = samples/s / (ranks x samples/s at 1 rank); "
                 "busbw in GB/s (nccl-tests definition); mfu = GEMM FLOP/s per GPU / datasheet peak\n");
}

/* table.c — the two tables printed at the end of a run: the scaling table (what
 * a procurement report quotes) and where the time went (the decomposition of the
 * step). The same numbers as the /summary table of the result file; times in
 * milliseconds for reading, the file keeps seconds. */
#include "train/table.h"

#include <math.h>
#include <stdio.h>

/* A figure, or "-" where it is unknown (NaN). */
static void print_value(FILE *out, double v, int width, int decimals)
{
    if (isnan(v)) fprintf(out, " %*s", width, "-");
    else fprintf(out, " %*.*f", width, decimals, v);
}

static void print_percent(FILE *out, double v, int width)
{
    print_value(out, 100.0 * v, width, 1);
}

/* "nccl/nvlink": who reduces, over which path. */
static const char *label(const struct run_summary *r, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", r->library, r->path);
    return buf;
}

void table_print_scaling(FILE *out, const struct run_summary *runs, int n)
{
    char name[24];
    fprintf(out, "%-11s %5s %5s %7s %9s %9s %9s %11s %7s %6s %6s %8s %9s\n", "comm/path", "ranks", "nodes", "batch",
            "step_ms", "p05_ms", "p95_ms", "samples/s", "speedup", "effic", "mfu", "J/sample", "loss");
    for (int i = 0; i < n; i++) {
        const struct run_summary *r = &runs[i];
        fprintf(out, "%-11s %5d %5d %7d %9.3f %9.3f %9.3f %11.1f", label(r, name, sizeof name), r->nranks, r->nnodes, r->global_batch,
                1e3 * r->step_median_s, 1e3 * r->step_p05_s, 1e3 * r->step_p95_s, r->samples_per_s);
        print_value(out, r->speedup, 7, 3);
        print_value(out, r->efficiency, 6, 3);
        print_value(out, r->mfu, 6, 3);
        print_value(out, r->joules_per_sample, 8, 4);
        fprintf(out, " %9.4f\n", r->final_loss);
    }
    fprintf(out, "\nwhere the time went (ms; loss = share of the step lost against the ideal, 1 - effic = the sum):\n");
    fprintf(out, "%-11s %5s %8s %8s %9s %8s %9s %9s %9s %8s %8s %8s %8s %8s\n", "comm/path", "ranks", "fwd", "bwd",
            "exposed", "update", "compute", "comm", "busbw", "overlap", "compute%", "imbal%", "interf%", "comm%");
    for (int i = 0; i < n; i++) {
        const struct run_summary *r = &runs[i];
        fprintf(out, "%-11s %5d %8.3f %8.3f %9.3f %8.3f %9.3f %9.3f", label(r, name, sizeof name), r->nranks,
                1e3 * r->forward_median_s,
                1e3 * r->backward_median_s, 1e3 * r->comm_exposed_median_s, 1e3 * r->update_median_s,
                1e3 * r->compute_only_s, 1e3 * r->allreduce_alone_s);
        print_value(out, r->allreduce_busbw_GBps, 9, 2);
        print_value(out, r->overlap_efficiency, 8, 3);
        print_percent(out, r->loss_compute, 8);
        print_percent(out, r->loss_imbalance, 8);
        print_percent(out, r->loss_interference, 8);
        print_percent(out, r->loss_comm, 8);
        fputc('\n', out);
    }
    fprintf(out, "step: median over timed steps of the slowest rank; effic = samples/s / (ranks x samples/s at 1 rank); "
                 "mfu = GEMM FLOP/s per GPU / datasheet peak;\nexposed = end of backward to the last reduction done; "
                 "update = the update left after it; compute = the step without communication; comm = the step's "
                 "communication alone, busbw as nccl-tests;\noverlap = 1 - exposed/comm; interf = backward slowed by "
                 "communication beside it; 1 rank communicates nothing (all zeros)\n");
}

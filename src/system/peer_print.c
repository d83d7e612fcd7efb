/* peer_print.c — the GPU-to-GPU copy matrices as text (peer_bw.h). */
#include <stdio.h>

#include "system/peer_bw.h"

static void print_matrix(FILE *out, const struct peer_matrix *m, const char *title,
                         const double (*v)[TOPO_MAX_GPUS], const char *format)
{
    fprintf(out, "\n%s\n     ", title);
    for (int j = 0; j < m->n; j++) fprintf(out, " %8s%d", "GPU", j);
    fputc('\n', out);
    for (int i = 0; i < m->n; i++) {
        fprintf(out, "GPU%-2d", i);
        for (int j = 0; j < m->n; j++) {
            if (i == j) fprintf(out, " %9s", "-");
            else fprintf(out, format, v[i][j]);
        }
        fputc('\n', out);
    }
}

void peer_print(FILE *out, const struct peer_matrix *m)
{
    print_matrix(out, m, "copy bandwidth GPU i -> GPU j, peer access (GB/s)", m->unidir_gbps, " %9.1f");
    print_matrix(out, m, "both ways at once, sum of directions (GB/s)", m->bidir_gbps, " %9.1f");
    print_matrix(out, m, "through pinned host memory, i -> host -> j (GB/s)", m->host_gbps, " %9.1f");
    print_matrix(out, m, "latency of a 4-byte copy i -> j (us)", m->latency_us, " %9.2f");
}

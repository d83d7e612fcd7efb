/* report_doc_busbw.c — the procurement document's section after the models
 * (report_doc.h): the allreduce busbw of the comm files by message size, one column
 * per sweep labelled like the models' columns (so that NVLink and host memory stand
 * side by side). */
#include <math.h>
#include <stdio.h>

#include "report/report.h"
#include "report/doc/report_doc.h"

static void size_text(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && bytes >= 1024 && fmod(bytes, 1024) == 0) bytes /= 1024, u++;
    snprintf(buf, len, "%.0f %s", bytes, units[u]);
}

void doc_write_busbw(FILE *out, const struct report_file *files, int n, const struct doc_info *infos)
{
    static struct doc_column c[DOC_MAX_COLUMNS];
    int ranks[REPORT_MAX_SWEEPS * 4], nranks = 0;
    for (int i = 0; i < n; i++)
        for (int w = 0; files[i].kind == REPORT_COMM && w < files[i].comm->nsweeps; w++) {
            int seen = 0;
            for (int k = 0; k < nranks; k++) seen |= ranks[k] == files[i].comm->sweep[w].nranks;
            if (!seen && nranks < (int)(sizeof ranks / sizeof ranks[0])) ranks[nranks++] = files[i].comm->sweep[w].nranks;
        }
    if (nranks == 0) return;
    for (int i = 1; i < nranks; i++)
        for (int j = i; j > 0 && ranks[j - 1] > ranks[j]; j--) {
            const int t = ranks[j];
            ranks[j] = ranks[j - 1];
            ranks[j - 1] = t;
        }
    fputs("## Allreduce bus bandwidth (dpscale comm)\n\nbusbw in GB/s by message size, nccl-tests' definition (algbw x "
          "2(n-1)/n, GB = 1e9 bytes), one column per sweep; `dpscale report --table comm` gives each sweep in nccl-tests' "
          "columns (time, algbw, #wrong).\n\n", out);
    for (int g = 0; g < nranks; g++) {
        int nc = 0;
        double sizes[REPORT_MAX_SIZES * 4];
        int nsizes = 0;
        for (int i = 0; i < n; i++)
            for (int w = 0; files[i].kind == REPORT_COMM && w < files[i].comm->nsweeps && nc < DOC_MAX_COLUMNS; w++) {
                const struct report_sweep *s = &files[i].comm->sweep[w];
                if (s->nranks != ranks[g]) continue;
                c[nc++] = (struct doc_column){.file = &files[i], .info = &infos[i], .sweep = s};
                for (int k = 0; k < s->nsizes; k++) {
                    int seen = 0;
                    for (int j = 0; j < nsizes; j++) seen |= sizes[j] == s->size_bytes[k];
                    if (!seen && nsizes < (int)(sizeof sizes / sizeof sizes[0])) sizes[nsizes++] = s->size_bytes[k];
                }
            }
        doc_label_columns(c, nc);
        doc_order_columns(c, nc);
        for (int i = 1; i < nsizes; i++)
            for (int j = i; j > 0 && sizes[j - 1] > sizes[j]; j--) {
                const double t = sizes[j];
                sizes[j] = sizes[j - 1];
                sizes[j - 1] = t;
            }
        fprintf(out, "### %d ranks\n\n", ranks[g]);
        doc_legend(out, c, nc, 0);
        fputs("| size |", out);
        for (int k = 0; k < nc; k++) {
            fputc(' ', out);
            report_md_text(out, c[k].label);
            fputs(" |", out);
        }
        fputs("\n|---:|", out);
        for (int k = 0; k < nc; k++) fputs("---:|", out);
        fputc('\n', out);
        for (int j = 0; j < nsizes; j++) {
            char size[32];
            size_text(sizes[j], size, sizeof size);
            fprintf(out, "| %s |", size);
            for (int k = 0; k < nc; k++) {
                const struct report_sweep *s = c[k].sweep;
                int at = -1;
                for (int i = 0; i < s->nsizes && at < 0; i++)
                    if (s->size_bytes[i] == sizes[j]) at = i;
                if (at < 0 || !isfinite(s->busbw_gbps[at])) fputs(" - |", out);
                else if (s->wrong[at] > 0) fprintf(out, " %.1f (%.0f wrong) |", s->busbw_gbps[at], s->wrong[at]);
                else fprintf(out, " %.1f |", s->busbw_gbps[at]);
            }
            fputc('\n', out);
        }
        fputc('\n', out);
    }
}

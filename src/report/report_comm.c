/* report_comm.c — the busbw-by-size table of dpscale comm files (report.h): one
 * table per sweep (file, library, path, ranks) in nccl-tests' columns (size, count,
 * type, redop, time, algbw, busbw, #wrong), as Markdown, CSV (csv.h) or JSON records.
 * The time is the mean of one allreduce on the slowest rank, from which the file's
 * algbw and busbw were computed; type is named as nccl-tests names it (float for
 * fp32), so that the two outputs line up. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/csv.h"
#include "report/report.h"

static const char *nccl_type(const char *dtype)
{
    if (strcmp(dtype, "fp32") == 0) return "float";
    if (strcmp(dtype, "bf16") == 0) return "bfloat16";
    if (strcmp(dtype, "fp16") == 0) return "half";
    return dtype;
}

static double element_bytes(const char *dtype) { return strcmp(dtype, "bf16") == 0 || strcmp(dtype, "fp16") == 0 ? 2 : 4; }

void report_comm_markdown(FILE *out, const struct report_file *files, int n)
{
    for (int i = 0; i < n; i++) {
        const struct report_file *f = &files[i];
        for (int w = 0; w < f->comm->nsweeps; w++) {
            const struct report_sweep *s = &f->comm->sweep[w];
            fputs("### ", out);
            report_md_text(out, f->device);
            fputs(", ", out);
            report_md_text(out, s->library);
            fputs(" over ", out);
            report_md_text(out, report_path_words(s->path));
            fprintf(out, ": allreduce busbw by size, %d ranks on %d node%s\n\n", s->nranks, s->nodes, s->nodes == 1 ? "" : "s");
            report_md_text(out, f->path);
            fputs(", host ", out);
            report_md_text(out, f->host);
            fputs(", ", out);
            report_md_text(out, f->created);
            fputs("; ", out);
            report_md_text(out, s->dtype);
            fputs(", ", out);
            report_md_text(out, s->op);
            fprintf(out, ", %s, %d warm-up + %d timed per size\n\n", s->in_place ? "in place" : "out of place", s->warmup,
                    s->iters);
            fprintf(out, "| size (B) | count | type | redop | time (us) | algbw (GB/s) | busbw (GB/s) | #wrong |\n"
                         "|---:|---:|---|---|---:|---:|---:|---:|\n");
            for (int k = 0; k < s->nsizes; k++) {
                fprintf(out, "| %.0f | %.0f | ", s->size_bytes[k], s->size_bytes[k] / element_bytes(s->dtype));
                report_md_text(out, nccl_type(s->dtype));
                fputs(" | ", out);
                report_md_text(out, s->op);
                fprintf(out, " | %.2f | %.2f | %.2f | %.0f |\n", 1e6 * s->time_s[k], s->algbw_gbps[k], s->busbw_gbps[k],
                        s->wrong[k]);
            }
            fputc('\n', out);
        }
    }
    if (n > 0)
        fprintf(out, "time = mean of one allreduce on the slowest rank; algbw = size / time; busbw = algbw x 2(n-1)/n "
                     "(nccl-tests' definitions, GB = 1e9 bytes); #wrong = elements of the result that differ from the exact "
                     "sum.\n\n");
}

static const char *const columns[] = {"file", "device", "host", "library", "path", "ranks", "nodes", "in_place",
                                      "size_bytes", "count", "type", "redop", "time_us", "algbw_gbps", "busbw_gbps", "wrong"};
#define NCOLUMNS (int)(sizeof columns / sizeof columns[0])

void report_comm_csv(FILE *out, const struct report_file *files, int n)
{
    struct csv c;
    csv_start(&c, out);
    csv_header(&c, columns, NCOLUMNS);
    for (int i = 0; i < n; i++)
        for (int w = 0; w < files[i].comm->nsweeps; w++) {
            const struct report_sweep *s = &files[i].comm->sweep[w];
            for (int k = 0; k < s->nsizes; k++) {
                csv_text(&c, files[i].path);
                csv_text(&c, files[i].device);
                csv_text(&c, files[i].host);
                csv_text(&c, s->library);
                csv_text(&c, s->path);
                csv_int(&c, s->nranks);
                csv_int(&c, s->nodes);
                csv_int(&c, s->in_place);
                csv_number(&c, s->size_bytes[k]);
                csv_number(&c, s->size_bytes[k] / element_bytes(s->dtype));
                csv_text(&c, nccl_type(s->dtype));
                csv_text(&c, s->op);
                csv_number(&c, 1e6 * s->time_s[k]);
                csv_number(&c, s->algbw_gbps[k]);
                csv_number(&c, s->busbw_gbps[k]);
                csv_number(&c, s->wrong[k]);
                csv_end_row(&c);
            }
        }
}

json_t *report_comm_json(const struct report_file *files, int n)
{
    json_t *rows = json_array();
    for (int i = 0; i < n; i++)
        for (int w = 0; w < files[i].comm->nsweeps; w++) {
            const struct report_sweep *s = &files[i].comm->sweep[w];
            for (int k = 0; k < s->nsizes; k++) {
                json_t *o = json_object();
                const char *text[] = {files[i].path, files[i].device, files[i].host, s->library, s->path};
                for (int t = 0; t < 5; t++) report_json_set(o, columns[t], report_json_text(text[t]));
                report_json_set(o, "ranks", json_integer(s->nranks));
                report_json_set(o, "nodes", json_integer(s->nodes));
                report_json_set(o, "in_place", json_integer(s->in_place));
                report_json_set(o, "size_bytes", report_json_count(s->size_bytes[k]));
                report_json_set(o, "count", report_json_count(s->size_bytes[k] / element_bytes(s->dtype)));
                report_json_set(o, "type", report_json_text(nccl_type(s->dtype)));
                report_json_set(o, "redop", report_json_text(s->op));
                report_json_set(o, "time_us", report_json_number(1e6 * s->time_s[k]));
                report_json_set(o, "algbw_gbps", report_json_number(s->algbw_gbps[k]));
                report_json_set(o, "busbw_gbps", report_json_number(s->busbw_gbps[k]));
                report_json_set(o, "wrong", report_json_count(s->wrong[k]));
                json_array_append_new(rows, o);
            }
        }
    return rows;
}

/* report_tables.c — one report of files of every kind (report.h): the run files'
 * scaling tables (or, with --compare, their comparison), the comm files' busbw
 * tables, the topo files' matrices. Markdown: all of them, one section after the
 * other. JSON: one document, an object with one member per table ("scaling" or
 * "reference"/"comparison"/"not_comparable", "busbw", "topology") and "unreadable"
 * for the files that could not be read. CSV: one table per stream, as a CSV file
 * holds one header; which one is `only`, or the first kind present. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"

static const char *const kind_names[] = {"run", "comm", "topo"};

/* The files of one kind, copied (shallowly) into their own array, in order. */
static int files_of_kind(const struct report_file *files, int n, int kind, struct report_file **out)
{
    int m = 0;
    *out = calloc(n > 0 ? (size_t)n : 1, sizeof **out);
    if (*out == NULL) return 0;
    for (int i = 0; i < n; i++)
        if (files[i].kind == kind) (*out)[m++] = files[i];
    return m;
}

static void write_markdown(FILE *out, struct report_file *by_kind[3], const int count[3], const struct report_request *req)
{
    if (count[REPORT_RUNS] > 0) {
        if (req->compare) report_compare_markdown(out, by_kind[REPORT_RUNS], count[REPORT_RUNS]);
        else report_runs_markdown(out, by_kind[REPORT_RUNS], count[REPORT_RUNS]);
    }
    if (count[REPORT_COMM] > 0) report_comm_markdown(out, by_kind[REPORT_COMM], count[REPORT_COMM]);
    if (count[REPORT_TOPO] > 0) report_topo_markdown(out, by_kind[REPORT_TOPO], count[REPORT_TOPO]);
}

static void write_json(FILE *out, FILE *warn, struct report_file *by_kind[3], const int count[3],
                       const struct report_request *req)
{
    json_t *doc = json_object();
    const int all = req->only < 0;
    if (all || req->only == REPORT_RUNS) {
        if (req->compare) report_compare_json(doc, warn, by_kind[REPORT_RUNS], count[REPORT_RUNS]);
        else report_json_set(doc, "scaling", report_runs_json(by_kind[REPORT_RUNS], count[REPORT_RUNS]));
    }
    if (all || req->only == REPORT_COMM) report_json_set(doc, "busbw", report_comm_json(by_kind[REPORT_COMM], count[REPORT_COMM]));
    if (all || req->only == REPORT_TOPO)
        report_json_set(doc, "topology", report_topo_json(by_kind[REPORT_TOPO], count[REPORT_TOPO]));
    json_t *bad = json_array();
    for (int i = 0; i < req->nbad; i++) json_array_append_new(bad, report_json_text(req->unreadable[i]));
    report_json_set(doc, "unreadable", bad);
    report_json_write(out, doc, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    fputc('\n', out);
    json_decref(doc);
}

static void write_csv(FILE *out, FILE *warn, struct report_file *by_kind[3], const int count[3], const struct report_request *req)
{
    int table = req->only;
    for (int k = 0; table < 0 && k < 3; k++)
        if (count[k] > 0) table = k;
    if (table < 0) return; /* nothing readable */
    for (int k = 0; k < 3; k++)
        if (k != table && count[k] > 0)
            fprintf(warn, "dpscale: note: a CSV stream holds one table: the %s files' table is left out; add --table %s to "
                          "get it\n", kind_names[k], kind_names[k]);
    if (table == REPORT_RUNS) {
        if (req->compare) report_compare_csv(out, warn, by_kind[REPORT_RUNS], count[REPORT_RUNS]);
        else report_runs_csv(out, by_kind[REPORT_RUNS], count[REPORT_RUNS]);
    } else if (table == REPORT_COMM) {
        report_comm_csv(out, by_kind[REPORT_COMM], count[REPORT_COMM]);
    } else {
        report_topo_csv(out, by_kind[REPORT_TOPO], count[REPORT_TOPO]);
    }
}

void report_write(FILE *out, FILE *warn, const struct report_file *files, int n, const struct report_request *req)
{
    struct report_file *by_kind[3];
    int count[3];
    for (int k = 0; k < 3; k++) {
        count[k] = files_of_kind(files, n, k, &by_kind[k]);
        if (req->only >= 0 && req->only != k) count[k] = 0;
    }
    if (req->format == REPORT_JSON) write_json(out, warn, by_kind, count, req);
    else if (req->format == REPORT_CSV) write_csv(out, warn, by_kind, count, req);
    else write_markdown(out, by_kind, count, req);
    for (int k = 0; k < 3; k++) free(by_kind[k]);
}

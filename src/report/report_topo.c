/* report_topo.c — the node of a dpscale topo file (report.h): the link matrix as
 * `nvidia-smi topo -m` shows it, with each GPU's PCIe link, NVLinks, NUMA node and
 * CPU affinity; the network adapters; and, where they were measured, the copy
 * matrices (one way and both ways with peer access, through host memory, latency).
 * Markdown tables; CSV in long form, one row per (GPU, peer) pair, self included, so
 * that a pivot gives back each matrix; JSON, one object per file with the matrices
 * as nested arrays. Unknown values (NUMA -1, PCIe 0, the copy of a GPU to itself)
 * are "-", an empty field, or null. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/csv.h"
#include "report/report.h"

static double known(double v, double unknown) { return v == unknown ? NAN : v; }

static void md_value(FILE *out, double v, const char *format)
{
    if (isnan(v)) fputs(" - |", out);
    else fprintf(out, format, v);
}

static void md_copy_matrix(FILE *out, const struct report_topo *t, const char *title, const double (*m)[REPORT_MAX_GPUS],
                           const char *format)
{
    fprintf(out, "%s\n\n| from |", title);
    for (int j = 0; j < t->ngpus; j++) fprintf(out, " to GPU%d |", j);
    fputs("\n|---|", out);
    for (int j = 0; j < t->ngpus; j++) fputs("---:|", out);
    fputc('\n', out);
    for (int i = 0; i < t->ngpus; i++) {
        fprintf(out, "| GPU%d |", i);
        for (int j = 0; j < t->ngpus; j++) md_value(out, i == j ? NAN : m[i][j], format);
        fputc('\n', out);
    }
    fputc('\n', out);
}

static void md_cell_text(FILE *out, const char *v)
{
    fputc(' ', out);
    report_md_text(out, v[0] ? v : "-");
    fputs(" |", out);
}

static void md_links(FILE *out, const struct report_topo *t)
{
    fputs("| |", out);
    for (int j = 0; j < t->ngpus; j++) fprintf(out, " GPU%d |", j);
    fputs(" PCIe | NVLinks up | NUMA | CPU affinity | GPU | bus |\n|---|", out);
    for (int j = 0; j < t->ngpus; j++) fputs("---|", out);
    fputs("---|---:|---:|---|---|---|\n", out);
    for (int i = 0; i < t->ngpus; i++) {
        fprintf(out, "| GPU%d |", i);
        for (int j = 0; j < t->ngpus; j++) md_cell_text(out, t->link[i][j]);
        if (t->pcie_gen[i] > 0) fprintf(out, " Gen%.0f x%.0f |", t->pcie_gen[i], t->pcie_width[i]);
        else fputs(" - |", out);
        md_value(out, t->nvlinks_up[i], " %.0f |");
        md_value(out, known(t->numa_node[i], -1), " %.0f |");
        md_cell_text(out, t->cpu_affinity[i]);
        md_cell_text(out, t->gpu_name[i]);
        md_cell_text(out, t->bus_id[i]);
        fputc('\n', out);
    }
    fputc('\n', out);
}

static void md_nics(FILE *out, const struct report_topo *t)
{
    if (t->nnics == 0) {
        fputs("Network adapters: none found (NCCL's net transport falls back to sockets).\n\n", out);
        return;
    }
    fputs("| network adapter | link layer | rate (Gb/s) | state | NUMA |\n|---|---|---:|---|---:|\n", out);
    for (int k = 0; k < t->nnics; k++) {
        fputc('|', out);
        md_cell_text(out, t->nic_name[k]);
        md_cell_text(out, strcmp(t->nic_link_layer[k], "Ethernet") == 0 ? "RoCE" : t->nic_link_layer[k]);
        md_value(out, known(t->nic_rate_gbps[k], 0), " %.0f |");
        md_cell_text(out, t->nic_state[k]);
        md_value(out, known(t->nic_numa_node[k], -1), " %.0f |");
        fputc('\n', out);
    }
    fputc('\n', out);
}

void report_topo_markdown(FILE *out, const struct report_file *files, int n)
{
    for (int i = 0; i < n; i++) {
        const struct report_file *f = &files[i];
        const struct report_topo *t = f->topo;
        fputs("### Topology of ", out);
        report_md_text(out, f->host[0] ? f->host : "an unnamed host");
        fprintf(out, ": %d GPU%s\n\n", t->ngpus, t->ngpus == 1 ? "" : "s");
        report_md_text(out, f->path);
        fputs(", ", out);
        report_md_text(out, f->created);
        fputs("; detected by ", out);
        report_md_text(out, t->source);
        fputs("\n\n", out);
        if (t->ngpus > 0) md_links(out, t);
        md_nics(out, t);
        if (!t->has_copies) {
            fputs("Copy matrices: not measured (dpscale topo measures them on a GPU node started as one process, "
                  "with topo.peer_bandwidth on).\n\n", out);
            continue;
        }
        md_copy_matrix(out, t, "Copies GPU i -> GPU j with peer access (GB/s):", t->unidir_gbps, " %.1f |");
        md_copy_matrix(out, t, "Both ways at once, the two directions summed (GB/s):", t->bidir_gbps, " %.1f |");
        md_copy_matrix(out, t, "Through pinned host memory, i -> host -> j (GB/s):", t->host_gbps, " %.1f |");
        md_copy_matrix(out, t, "Latency of a 4-byte copy i -> j (us):", t->latency_us, " %.2f |");
    }
    if (n > 0)
        fputs("X = self, NV# = # NVLinks, PIX = one PCIe switch, PXB = several switches, PHB = host bridge, "
              "NODE = across host bridges of one NUMA node, SYS = across sockets (nvidia-smi topo -m); GB = 1e9 bytes.\n\n",
              out);
}

static const char *const columns[] = {"file", "host", "gpu", "gpu_name", "gpu_bus_id", "gpu_pcie_gen", "gpu_pcie_width",
                                      "gpu_numa_node", "peer", "link", "nvlinks", "peer_unidir_gbps", "peer_bidir_gbps",
                                      "peer_host_gbps", "peer_latency_us"};
#define NCOLUMNS (int)(sizeof columns / sizeof columns[0])

/* The copies of pair (i, j): unknown on the diagonal and where not measured. */
static void copies_of(const struct report_topo *t, int i, int j, double v[4])
{
    const int have = t->has_copies && i != j;
    v[0] = have ? t->unidir_gbps[i][j] : NAN;
    v[1] = have ? t->bidir_gbps[i][j] : NAN;
    v[2] = have ? t->host_gbps[i][j] : NAN;
    v[3] = have ? t->latency_us[i][j] : NAN;
}

void report_topo_csv(FILE *out, const struct report_file *files, int n)
{
    struct csv c;
    csv_start(&c, out);
    csv_header(&c, columns, NCOLUMNS);
    for (int f = 0; f < n; f++) {
        const struct report_topo *t = files[f].topo;
        for (int i = 0; i < t->ngpus; i++)
            for (int j = 0; j < t->ngpus; j++) {
                double copies[4];
                copies_of(t, i, j, copies);
                csv_text(&c, files[f].path);
                csv_text(&c, files[f].host);
                csv_int(&c, i);
                csv_text(&c, t->gpu_name[i]);
                csv_text(&c, t->bus_id[i]);
                csv_number(&c, known(t->pcie_gen[i], 0));
                csv_number(&c, known(t->pcie_width[i], 0));
                csv_number(&c, known(t->numa_node[i], -1));
                csv_int(&c, j);
                csv_text(&c, t->link[i][j]);
                csv_number(&c, t->nvlinks[i][j]);
                for (int k = 0; k < 4; k++) csv_number(&c, copies[k]);
                csv_end_row(&c);
            }
    }
}

/* An n x n matrix as nested arrays; the diagonal null where `self_unknown`. */
static json_t *json_matrix(int n, const double (*m)[REPORT_MAX_GPUS], int self_unknown, int integers)
{
    json_t *rows = json_array();
    for (int i = 0; i < n; i++) {
        json_t *row = json_array();
        for (int j = 0; j < n; j++) {
            const double v = self_unknown && i == j ? NAN : m[i][j];
            json_array_append_new(row, integers ? report_json_count(v) : report_json_number(v));
        }
        json_array_append_new(rows, row);
    }
    return rows;
}

static json_t *json_gpus(const struct report_topo *t)
{
    json_t *gpus = json_array();
    for (int i = 0; i < t->ngpus; i++) {
        json_t *g = json_object();
        report_json_set(g, "index", json_integer(i));
        report_json_set(g, "name", report_json_text(t->gpu_name[i]));
        report_json_set(g, "bus_id", report_json_text(t->bus_id[i]));
        report_json_set(g, "pcie_gen", report_json_count(known(t->pcie_gen[i], 0)));
        report_json_set(g, "pcie_width", report_json_count(known(t->pcie_width[i], 0)));
        report_json_set(g, "nvlinks_up", report_json_count(t->nvlinks_up[i]));
        report_json_set(g, "numa_node", report_json_count(known(t->numa_node[i], -1)));
        report_json_set(g, "cpu_affinity", report_json_text(t->cpu_affinity[i]));
        json_array_append_new(gpus, g);
    }
    return gpus;
}

static json_t *json_nics(const struct report_topo *t)
{
    json_t *nics = json_array();
    for (int k = 0; k < t->nnics; k++) {
        json_t *o = json_object();
        report_json_set(o, "name", report_json_text(t->nic_name[k]));
        report_json_set(o, "link_layer", report_json_text(t->nic_link_layer[k]));
        report_json_set(o, "rate_gbps", report_json_number(known(t->nic_rate_gbps[k], 0)));
        report_json_set(o, "state", report_json_text(t->nic_state[k]));
        report_json_set(o, "numa_node", report_json_count(known(t->nic_numa_node[k], -1)));
        json_array_append_new(nics, o);
    }
    return nics;
}

json_t *report_topo_json(const struct report_file *files, int n)
{
    json_t *list = json_array();
    for (int f = 0; f < n; f++) {
        const struct report_topo *t = files[f].topo;
        json_t *o = json_object(), *link = json_array();
        report_json_set(o, "file", report_json_text(files[f].path));
        report_json_set(o, "host", report_json_text(files[f].host));
        report_json_set(o, "device", report_json_text(files[f].device));
        report_json_set(o, "created", report_json_text(files[f].created));
        report_json_set(o, "source", report_json_text(t->source));
        report_json_set(o, "ngpus", json_integer(t->ngpus));
        report_json_set(o, "gpus", json_gpus(t));
        for (int i = 0; i < t->ngpus; i++) {
            json_t *row = json_array();
            for (int j = 0; j < t->ngpus; j++) json_array_append_new(row, report_json_text(t->link[i][j]));
            json_array_append_new(link, row);
        }
        report_json_set(o, "link", link);
        report_json_set(o, "nvlinks", json_matrix(t->ngpus, t->nvlinks, 0, 1));
        report_json_set(o, "nics", json_nics(t));
        json_t *copies = json_null();
        if (t->has_copies) {
            copies = json_object();
            report_json_set(copies, "peer_unidir_gbps", json_matrix(t->ngpus, t->unidir_gbps, 1, 0));
            report_json_set(copies, "peer_bidir_gbps", json_matrix(t->ngpus, t->bidir_gbps, 1, 0));
            report_json_set(copies, "peer_host_gbps", json_matrix(t->ngpus, t->host_gbps, 1, 0));
            report_json_set(copies, "peer_latency_us", json_matrix(t->ngpus, t->latency_us, 1, 0));
        }
        report_json_set(o, "copies", copies);
        json_array_append_new(list, o);
    }
    return list;
}

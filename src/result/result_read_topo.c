/* result_read_topo.c — the node of a dpscale topo file (result_read_internal.h):
 * /system/topology's link matrix, each GPU's PCIe link, NUMA node, CPU affinity and
 * NVLinks, the network adapters, and the copy matrices when they were measured.
 * Every number is NaN or finite and within +-1e9 (a NUMA node of -1 is "unknown"):
 * the tables print them whole. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result/h5read.h"
#include "result/result_read_internal.h"
#include "base/utf8.h"

#define G REPORT_MAX_GPUS

#define MAX_MAGNITUDE 1e9

/* 0 when each of the n values is NaN or finite within +-MAX_MAGNITUDE; -1 otherwise. */
static int plausible(const double *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isnan(v[i]) && !(fabs(v[i]) <= MAX_MAGNITUDE)) return -1;
    return 0;
}

/* An n x n matrix of numbers, or -1. */
static int read_matrix(hid_t g, const char *name, int n, double (*m)[G])
{
    double flat[G * G];
    size_t d[2];
    if (h5_read_doubles(g, name, flat, G * G, d) != 0 || d[0] != (size_t)n || d[1] != (size_t)n ||
        plausible(flat, (size_t)n * (size_t)n) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) m[i][j] = flat[i * n + j];
    return 0;
}

/* One number per GPU (or per adapter), or -1. */
static int read_vector(hid_t g, const char *name, int n, double *v)
{
    size_t d[2];
    return h5_read_doubles(g, name, v, G, d) == 0 && d[0] == (size_t)n && d[1] == 1 && plausible(v, (size_t)n) == 0 ? 0 : -1;
}

static int read_gpus(hid_t g, struct report_topo *t)
{
    const int n = t->ngpus;
    static char links[G * G][8];
    size_t got = 0;
    if (h5_read_strings(g, "link", &links[0][0], sizeof links[0], G * G, &got) != 0 || got != (size_t)(n * n)) return -1;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) utf8_copy(t->link[i][j], sizeof t->link[i][j], links[i * n + j]);
    if (read_matrix(g, "nvlink_count", n, t->nvlinks) != 0) return -1;
    if (h5_read_strings(g, "gpu_name", &t->gpu_name[0][0], sizeof t->gpu_name[0], G, &got) != 0 || got != (size_t)n) return -1;
    if (h5_read_strings(g, "gpu_bus_id", &t->bus_id[0][0], sizeof t->bus_id[0], G, &got) != 0 || got != (size_t)n) return -1;
    if (h5_read_strings(g, "gpu_cpu_affinity", &t->cpu_affinity[0][0], sizeof t->cpu_affinity[0], G, &got) != 0 || got != (size_t)n)
        return -1;
    if (read_vector(g, "gpu_pcie_gen", n, t->pcie_gen) != 0 || read_vector(g, "gpu_pcie_width", n, t->pcie_width) != 0 ||
        read_vector(g, "gpu_numa_node", n, t->numa_node) != 0 || read_vector(g, "gpu_nvlinks_up", n, t->nvlinks_up) != 0)
        return -1;
    return 0;
}

/* The network adapters; files without them (none found) hold empty datasets. */
static int read_nics(hid_t g, struct report_topo *t)
{
    size_t got = 0, d[2];
    if (h5_read_strings(g, "nic_name", &t->nic_name[0][0], sizeof t->nic_name[0], REPORT_MAX_NICS, &got) != 0) return -1;
    t->nnics = (int)got;
    if (h5_read_strings(g, "nic_link_layer", &t->nic_link_layer[0][0], sizeof t->nic_link_layer[0], REPORT_MAX_NICS, &got) != 0 ||
        got != (size_t)t->nnics)
        return -1;
    if (h5_read_strings(g, "nic_state", &t->nic_state[0][0], sizeof t->nic_state[0], REPORT_MAX_NICS, &got) != 0 ||
        got != (size_t)t->nnics)
        return -1;
    if (h5_read_doubles(g, result_name_in(g, -1, "nic_rate_Gbps"), t->nic_rate_gbps, REPORT_MAX_NICS, d) != 0 ||
        d[0] != (size_t)t->nnics || plausible(t->nic_rate_gbps, d[0]) != 0)
        return -1;
    if (h5_read_doubles(g, "nic_numa_node", t->nic_numa_node, REPORT_MAX_NICS, d) != 0 || d[0] != (size_t)t->nnics ||
        plausible(t->nic_numa_node, d[0]) != 0)
        return -1;
    return 0;
}

int result_read_topo(hid_t file, struct report_file *f, char *err, size_t errlen)
{
    f->topo = calloc(1, sizeof *f->topo);
    if (f->topo == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    struct report_topo *t = f->topo;
    hid_t g = H5Gopen2(file, "system/topology", H5P_DEFAULT);
    if (g < 0) {
        snprintf(err, errlen, "damaged: /system/topology cannot be read");
        return -1;
    }
    int rc = -1;
    h5_attr_str(g, "source", t->source, sizeof t->source);
    t->ngpus = h5_attr_int(g, "ngpus", -1);
    if (t->ngpus < 0 || t->ngpus > G) {
        snprintf(err, errlen, "damaged: /system/topology says %d GPUs (this report reads 0 to %d)", t->ngpus, G);
        goto done;
    }
    if (t->ngpus > 0 && read_gpus(g, t) != 0) {
        snprintf(err, errlen, "damaged: /system/topology's link matrix or GPU list is missing, not %d GPUs, or holds a "
                 "number that is infinite or past 1e9", t->ngpus);
        goto done;
    }
    if (read_nics(g, t) != 0) {
        snprintf(err, errlen, "damaged: /system/topology's network adapters cannot be read, or a rate or NUMA node is "
                 "infinite or past 1e9");
        goto done;
    }
    if (h5_exists(g, result_name_in(g, -1, "peer_unidir_GBps"))) { /* measured: all four matrices */
        if (read_matrix(g, result_name_in(g, -1, "peer_unidir_GBps"), t->ngpus, t->unidir_gbps) != 0 ||
            read_matrix(g, result_name_in(g, -1, "peer_bidir_GBps"), t->ngpus, t->bidir_gbps) != 0 ||
            read_matrix(g, result_name_in(g, -1, "peer_host_GBps"), t->ngpus, t->host_gbps) != 0 ||
            read_matrix(g, "peer_latency_us", t->ngpus, t->latency_us) != 0) {
            snprintf(err, errlen, "damaged: /system/topology's copy matrices are not all %d x %d finite figures",
                     t->ngpus, t->ngpus);
            goto done;
        }
        t->has_copies = 1;
    }
    rc = 0;
done:
    H5Gclose(g);
    return rc;
}

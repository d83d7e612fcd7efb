/* topo.c — topology from nvidia-smi's recorded text, from /sys, and printing
 * (topo.h). Detection through NVML lives in topo_nvml.c. */
#include "system/topo.h"
#include "base/safe_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *const link_names[] = {"X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS", "?"};

void topo_link_label(const struct topo_node *t, int i, int j, char *buf, size_t len)
{
    if (t->link[i][j] == TOPO_NVLINK) snprintf(buf, len, "NV%d", t->nvlinks[i][j]);
    else snprintf(buf, len, "%s", link_names[t->link[i][j]]);
}

int topo_all_nvlink(const struct topo_node *t, const int *gpus, int n)
{
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (a != b && t->link[gpus[a]][gpus[b]] != TOPO_NVLINK) return 0;
    return 1;
}

int topo_nvlink_pair(const struct topo_node *t, const int *gpus, int n, int *a, int *b)
{
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++)
            if (t->link[gpus[i]][gpus[j]] == TOPO_NVLINK) {
                *a = gpus[i], *b = gpus[j];
                return 1;
            }
    return 0;
}

void topo_format_matrix(const struct topo_node *t, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->ngpus && used < len; i++) {
        used += (size_t)snprintf(buf + used, len - used, "%sGPU%d:", i ? "; " : "", i);
        for (int j = 0; j < t->ngpus && used < len; j++) {
            char cell[16];
            topo_link_label(t, i, j, cell, sizeof cell);
            used += (size_t)snprintf(buf + used, len - used, " %s", cell);
        }
    }
}

static int parse_cell(const char *cell, int *kind, int *count)
{
    *count = 0;
    if (strcmp(cell, "X") == 0) { *kind = TOPO_SELF; return 0; }
    if (strncmp(cell, "NV", 2) == 0 && isdigit((unsigned char)cell[2])) {
        *kind = TOPO_NVLINK;
        *count = atoi(cell + 2);
        return 0;
    }
    for (int k = TOPO_PIX; k <= TOPO_SYS; k++)
        if (strcmp(cell, link_names[k]) == 0) { *kind = k; return 0; }
    return -1;
}

/* Split a line on tabs (nvidia-smi separates columns by tabs; cells are padded). */
static int split_tabs(char *line, char **cells, int max)
{
    int n = 0;
    for (char *p = line; n < max;) {
        char *tab = strchr(p, '\t');
        if (tab) *tab = '\0';
        while (*p == ' ') p++;
        char *end = p + strlen(p);
        while (end > p && (end[-1] == ' ' || end[-1] == '\n' || end[-1] == '\r')) *--end = '\0';
        cells[n++] = p;
        if (!tab) break;
        p = tab + 1;
    }
    return n;
}

int topo_parse_nvidia_smi(const char *text, struct topo_node *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    char *copy = strdup(text), *save = NULL, *cells[64];
    if (copy == NULL) return -1;
    int ncols = 0, gpu_cols = 0, affinity_col = -1, numa_col = -1, in_nic_legend = 0;
    char *header[64];
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (ncols == 0 && line[0] == '\t') { /* the header row */
            char *h = strdup(line);
            ncols = split_tabs(h, header, 64);
            for (int c = 1; c < ncols; c++) {
                if (strncmp(header[c], "GPU", 3) == 0 && isdigit((unsigned char)header[c][3])) gpu_cols++;
                if (strcmp(header[c], "CPU Affinity") == 0) affinity_col = c;
                if (strcmp(header[c], "NUMA Affinity") == 0) numa_col = c;
            }
            for (int c = 0; c < ncols; c++) header[c] = NULL;
            free(h);
            if (gpu_cols > TOPO_MAX_GPUS) {
                snprintf(err, errlen, "topology has %d GPUs; at most %d are supported", gpu_cols, TOPO_MAX_GPUS);
                free(copy);
                return -1;
            }
            continue;
        }
        if (strncmp(line, "NIC Legend", 10) == 0) { in_nic_legend = 1; continue; }
        if (in_nic_legend) {
            int idx;
            char name[32];
            if (sscanf(line, " NIC%d: %31s", &idx, name) == 2 && t->nnics < TOPO_MAX_NICS) {
                struct topo_nic *nic = &t->nic[t->nnics++];
                snprintf(nic->name, sizeof nic->name, "%s", name);
                snprintf(nic->state, sizeof nic->state, "unknown");
                nic->numa_node = -1;
            }
            continue;
        }
        if (strncmp(line, "GPU", 3) != 0 || !isdigit((unsigned char)line[3]) || ncols == 0) continue;
        int n = split_tabs(line, cells, 64), row = atoi(line + 3);
        if (row >= gpu_cols || n < 1 + gpu_cols) {
            snprintf(err, errlen, "line 'GPU%d' of the topology has %d columns, the header %d", row, n, ncols);
            free(copy);
            return -1;
        }
        for (int j = 0; j < gpu_cols; j++)
            if (parse_cell(cells[1 + j], &t->link[row][j], &t->nvlinks[row][j]) != 0) {
                snprintf(err, errlen, "unknown link '%s' between GPU%d and GPU%d", cells[1 + j], row, j);
                free(copy);
                return -1;
            }
        struct topo_gpu *g = &t->gpu[row];
        snprintf(g->name, sizeof g->name, "GPU%d", row);
        g->numa_node = numa_col > 0 && numa_col < n && isdigit((unsigned char)cells[numa_col][0]) ? atoi(cells[numa_col]) : -1;
        if (affinity_col > 0 && affinity_col < n) snprintf(g->cpu_affinity, sizeof g->cpu_affinity, "%s", cells[affinity_col]);
        /* the text cannot tell an NVSwitch port from a direct link: the widest bond is the floor */
        for (int j = 0; j < gpu_cols; j++)
            if (t->nvlinks[row][j] > g->nvlinks_up) g->nvlinks_up = t->nvlinks[row][j];
        if (row + 1 > t->ngpus) t->ngpus = row + 1;
    }
    free(copy);
    if (t->ngpus == 0) {
        snprintf(err, errlen, "no GPU rows found: is this the output of `nvidia-smi topo -m`?");
        return -1;
    }
    return 0;
}

int topo_load_fixture(const char *path, struct topo_node *t, char *err, size_t errlen)
{
    char *text;
    size_t n;
    if (safe_file_read_text(path, "topology file", 1 << 20, &text, &n, err, errlen) != 0) return -1;
    int rc = topo_parse_nvidia_smi(text, t, err, errlen);
    free(text);
    if (rc == 0) snprintf(t->source, sizeof t->source, "%s", path);
    return rc;
}

/* ---- /sys --------------------------------------------------------------------- */

static const char *sysfs_root(void)
{
    const char *root = getenv("DPSCALE_SYSFS_ROOT");
    return root != NULL && root[0] ? root : "/sys";
}

static int read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    char *r = fgets(buf, (int)len, f);
    fclose(f);
    if (r == NULL) return -1;
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

/* NUMA node and CPU list of a PCI device ("0000:1B:00.0"). */
void topo_sysfs_pci(const char *bus_id, int *numa_node, char *cpus, size_t cpus_len)
{
    char lower[32], path[512], buf[256];
    snprintf(lower, sizeof lower, "%s", bus_id);
    for (char *p = lower; *p; p++) *p = (char)tolower((unsigned char)*p);
    /* NVML pads the domain to 8 digits; sysfs uses 4 */
    const char *id = strlen(lower) == 16 ? lower + 4 : lower;
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s/numa_node", sysfs_root(), id);
    *numa_node = read_line(path, buf, sizeof buf) == 0 ? atoi(buf) : -1;
    snprintf(path, sizeof path, "%s/bus/pci/devices/%s/local_cpulist", sysfs_root(), id);
    if (read_line(path, buf, sizeof buf) == 0) snprintf(cpus, cpus_len, "%s", buf);
}

void topo_sysfs_nics(struct topo_node *t)
{
    char dir[512], path[1024], buf[128];
    snprintf(dir, sizeof dir, "%s/class/infiniband", sysfs_root());
    DIR *d = opendir(dir);
    if (d == NULL) return;
    t->nnics = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && t->nnics < TOPO_MAX_NICS) {
        if (e->d_name[0] == '.') continue;
        struct topo_nic *nic = &t->nic[t->nnics];
        memset(nic, 0, sizeof *nic);
        snprintf(nic->name, sizeof nic->name, "%.31s", e->d_name);
        snprintf(path, sizeof path, "%.700s/%.200s/ports/1/rate", dir, e->d_name);
        if (read_line(path, buf, sizeof buf) == 0) nic->rate_gbps = atof(buf); /* "200 Gb/sec (4X HDR)" */
        snprintf(path, sizeof path, "%.700s/%.200s/ports/1/state", dir, e->d_name);
        if (read_line(path, buf, sizeof buf) == 0) /* "4: ACTIVE" */
            snprintf(nic->state, sizeof nic->state, "%.15s", strchr(buf, ' ') ? strchr(buf, ' ') + 1 : buf);
        snprintf(path, sizeof path, "%.700s/%.200s/ports/1/link_layer", dir, e->d_name);
        if (read_line(path, buf, sizeof buf) == 0) snprintf(nic->link_layer, sizeof nic->link_layer, "%.15s", buf);
        snprintf(path, sizeof path, "%.700s/%.200s/device/numa_node", dir, e->d_name);
        nic->numa_node = read_line(path, buf, sizeof buf) == 0 ? atoi(buf) : -1;
        t->nnics++;
    }
    closedir(d);
    /* readdir order is arbitrary: sort by name for stable output */
    for (int i = 1; i < t->nnics; i++)
        for (int j = i; j > 0 && strcmp(t->nic[j - 1].name, t->nic[j].name) > 0; j--) {
            struct topo_nic tmp = t->nic[j];
            t->nic[j] = t->nic[j - 1];
            t->nic[j - 1] = tmp;
        }
}

void topo_print(FILE *out, const struct topo_node *t)
{
    fprintf(out, "topology (%s)\n\n      ", t->source);
    for (int j = 0; j < t->ngpus; j++) fprintf(out, " %5s%d", "GPU", j);
    fprintf(out, "  %-7s %-6s %-5s %s\n", "PCIe", "NVLink", "NUMA", "CPU affinity");
    for (int i = 0; i < t->ngpus; i++) {
        fprintf(out, "GPU%-3d", i);
        for (int j = 0; j < t->ngpus; j++) {
            char cell[16];
            topo_link_label(t, i, j, cell, sizeof cell);
            fprintf(out, " %6s", cell);
        }
        char pcie[32] = "?", numa[16] = "?";
        if (t->gpu[i].pcie_gen > 0) snprintf(pcie, sizeof pcie, "Gen%dx%d", t->gpu[i].pcie_gen, t->gpu[i].pcie_width);
        if (t->gpu[i].numa_node >= 0) snprintf(numa, sizeof numa, "%d", t->gpu[i].numa_node);
        fprintf(out, "  %-7s %-6d %-5s %s\n", pcie, t->gpu[i].nvlinks_up, numa, t->gpu[i].cpu_affinity);
    }
    for (int i = 0; i < t->ngpus; i++)
        if (t->gpu[i].bus_id[0]) fprintf(out, "GPU%d: %s, bus %s\n", i, t->gpu[i].name, t->gpu[i].bus_id);
    fprintf(out, "\nnetwork adapters: %s\n", t->nnics ? "" : "none found (NCCL's net transport falls back to sockets)");
    for (int i = 0; i < t->nnics; i++) {
        const struct topo_nic *n = &t->nic[i];
        fprintf(out, "  %-10s %-11s %6.0f Gb/s  %-8s NUMA %d\n", n->name,
                strcmp(n->link_layer, "Ethernet") == 0 ? "RoCE" : n->link_layer[0] ? n->link_layer : "?", n->rate_gbps,
                n->state, n->numa_node);
    }
    fprintf(out, "\nX = self, NV# = # NVLinks, PIX = one PCIe switch, PXB = several switches, PHB = host bridge,\n"
                 "NODE = across host bridges of one NUMA node, SYS = across sockets\n");
}

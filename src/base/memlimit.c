/* memlimit.c — the host's memory limits and the process's resident set (memlimit.h). */
#include "base/memlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"
#define UNLIMITED ((unsigned long long)1 << 60) /* v1 writes "no limit" as a page-rounded INT64_MAX */

/* The first number of a one-line file: 0, or -1 when it is not there or says "max". */
static int read_u64(const char *path, unsigned long long *v)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    const int ok = fscanf(f, "%llu", v) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

/* "Key:   N kB" of a /proc file, in bytes; -1 when absent. */
static int read_kib_field(const char *path, const char *key, unsigned long long *bytes)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    char line[256];
    const size_t klen = strlen(key);
    int found = -1;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, key, klen) == 0 && line[klen] == ':' && sscanf(line + klen + 1, "%llu", bytes) == 1) {
            *bytes *= 1024ULL;
            found = 0;
            break;
        }
    fclose(f);
    return found;
}

static void consider(struct mem_limit *out, unsigned long long bytes, const char *source)
{
    if (out->bytes == 0 || bytes < out->bytes) {
        out->bytes = bytes > 0 ? (size_t)bytes : 1; /* nothing left is a limit, not "unknown" */
        snprintf(out->source, sizeof out->source, "%s", source);
    }
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The cgroup path in hierarchy `want` ("" for v2's unified one, "memory" for v1) of
 * the process whose /proc/PID/cgroup is `proc_cgroup`. */
static int cgroup_path(const char *proc_cgroup, const char *want, char *path, size_t len)
{
    FILE *f = fopen(proc_cgroup, "r");
    if (f == NULL) return -1;
    char line[1024];
    int found = -1;
    while (found != 0 && fgets(line, sizeof line, f) != NULL) {
        char *c1 = strchr(line, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
        if (c2 == NULL) continue;
        *c2 = '\0';
        char *controllers = c1 + 1, *save = NULL;
        int match = want[0] == '\0' ? controllers[0] == '\0' : 0;
        for (char *tok = want[0] ? strtok_r(controllers, ",", &save) : NULL; tok != NULL; tok = strtok_r(NULL, ",", &save))
            if (strcmp(tok, want) == 0) match = 1;
        if (!match) continue;
        c2[1 + strcspn(c2 + 1, "\n")] = '\0';
        snprintf(path, len, "%s", c2 + 1);
        found = 0;
    }
    fclose(f);
    return found;
}

/* The tightest max - current over the levels of a cgroup, from `rel` under `mount` up to
 * the mount itself (a limit on a parent binds its children: Slurm's job cgroup above
 * the step's). `max_name`, `cur_name`: v2's memory.max / memory.current, or v1's
 * memory.limit_in_bytes / memory.usage_in_bytes. -1 when no level has a limit. */
static int cgroup_levels(const char *mount, const char *rel, const char *max_name, const char *cur_name,
                         unsigned long long *headroom)
{
    char dir[1024], file[1100];
    snprintf(dir, sizeof dir, "%s%s", mount, strcmp(rel, "/") == 0 ? "" : rel);
    if (!is_dir(dir)) snprintf(dir, sizeof dir, "%s", mount); /* a namespace: our cgroup is the mount's root */
    int found = -1;
    for (;;) {
        unsigned long long max, cur;
        snprintf(file, sizeof file, "%s/%s", dir, max_name);
        const int has_max = read_u64(file, &max) == 0 && max < UNLIMITED; /* "max" does not parse: no limit */
        snprintf(file, sizeof file, "%s/%s", dir, cur_name);
        if (has_max && read_u64(file, &cur) == 0) {
            const unsigned long long h = max > cur ? max - cur : 0;
            if (found != 0 || h < *headroom) *headroom = h;
            found = 0;
        }
        char *slash = strrchr(dir, '/');
        if (strlen(dir) <= strlen(mount) || slash == NULL) break;
        *slash = '\0';
    }
    return found;
}

int memlimit_cgroup_headroom(const char *proc_cgroup, const char *root, unsigned long long *headroom,
                             const char **which)
{
    char rel[900], mount[1024];
    if (cgroup_path(proc_cgroup, "", rel, sizeof rel) == 0 &&
        cgroup_levels(root, rel, "memory.max", "memory.current", headroom) == 0) {
        *which = "the cgroup's memory.max";
        return 0;
    }
    snprintf(mount, sizeof mount, "%s/memory", root);
    if (cgroup_path(proc_cgroup, "memory", rel, sizeof rel) == 0 &&
        cgroup_levels(mount, rel, "memory.limit_in_bytes", "memory.usage_in_bytes", headroom) == 0) {
        *which = "the cgroup's memory.limit_in_bytes (v1)";
        return 0;
    }
    return -1;
}

void memlimit_host(int local_size, struct mem_limit *out)
{
    const unsigned long long ranks = local_size > 0 ? (unsigned long long)local_size : 1ULL;
    memset(out, 0, sizeof *out);
    unsigned long long v;
    if (read_kib_field("/proc/meminfo", "MemAvailable", &v) == 0) consider(out, v / ranks, "MemAvailable");
    const char *which = NULL;
    if (memlimit_cgroup_headroom("/proc/self/cgroup", CGROUP_ROOT, &v, &which) == 0) consider(out, v / ranks, which);
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) { /* the process's own: not shared */
        unsigned long long vm = 0;
        read_kib_field("/proc/self/status", "VmSize", &vm);
        consider(out, rl.rlim_cur > vm ? rl.rlim_cur - vm : 0, "RLIMIT_AS (ulimit -v)");
    }
}

size_t memlimit_rss_bytes(void)
{
    unsigned long long v = 0;
    return read_kib_field("/proc/self/status", "VmRSS", &v) == 0 ? (size_t)v : 0;
}

size_t memlimit_peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (size_t)ru.ru_maxrss * 1024; /* Linux: kilobytes */
}

static size_t g_baseline, g_plan;
static int g_has_baseline;

void memlimit_note_baseline(void)
{
    if (g_has_baseline) return;
    g_baseline = memlimit_rss_bytes();
    g_has_baseline = 1;
}

void memlimit_note_plan(size_t bytes)
{
    if (bytes > g_plan) g_plan = bytes;
}

void memlimit_figures(double out[3])
{
    out[0] = (double)g_plan;
    out[1] = (double)g_baseline;
    out[2] = (double)memlimit_peak_rss_bytes();
}

/* memlimit.h — how much memory this rank may still take, and how much it took.
 *
 * The host's limit is the smallest of what the kernel would let the process map
 * before something kills or refuses it: MemAvailable (/proc/meminfo), the cgroup's
 * memory.max minus memory.current (v2, every level up to the root; v1's
 * memory.limit_in_bytes minus usage as a fallback: Slurm's and containers' limits),
 * and RLIMIT_AS minus the address space already mapped (VmSize). Node-wide figures
 * are shared by the node's ranks; the address-space limit is the process's own.
 * The limit says which source bound it, so a refusal can name it.
 *
 * The accounting half keeps, per process, the resident set before the first run's
 * buffers (the baseline), the largest memory plan of the runs it took part in, and
 * reads the peak resident set (getrusage's ru_maxrss): the result file holds all
 * three per rank, so a plan can be audited against what it cost. */
#ifndef DPSCALE_MEMLIMIT_H
#define DPSCALE_MEMLIMIT_H

#include <stddef.h>

struct mem_limit {
    size_t bytes;      /* what this rank may still allocate; 0 = unknown (no source could be read) */
    char source[64];   /* the binding one: "MemAvailable", "cgroup memory.max", "RLIMIT_AS", "cudaMemGetInfo" */
};

/* The host memory this rank may still allocate, local_size ranks sharing the node. */
void memlimit_host(int local_size, struct mem_limit *out);

/* The tightest headroom (limit - usage) of the cgroup whose membership file is
 * `proc_cgroup` ("/proc/self/cgroup"), under the mount `root` ("/sys/fs/cgroup"): v2
 * first, then v1's memory controller; every level up to the root. 0 and the name of
 * the file that set it in *which, or -1 when no level sets a limit. */
int memlimit_cgroup_headroom(const char *proc_cgroup, const char *root, unsigned long long *headroom,
                             const char **which);

/* The current resident set and the peak so far (ru_maxrss), in bytes; 0 when unknown. */
size_t memlimit_rss_bytes(void);
size_t memlimit_peak_rss_bytes(void);

/* The accounting: the baseline is taken once, before the first buffers of the first
 * run (later calls keep it); a plan is kept when it is the largest so far. */
void memlimit_note_baseline(void);
void memlimit_note_plan(size_t bytes);
/* [planned, baseline, peak] of this process so far (plan 0: no run). */
void memlimit_figures(double out[3]);

#endif

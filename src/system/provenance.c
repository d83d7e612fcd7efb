/* provenance.c — the launch's provenance (provenance.h): when it ran, how it was
 * started (launcher, command line), inside which Slurm allocation, and the NCCL_* and
 * CUDA_* environment. The libraries are provenance_libs.c's, each rank's own
 * description provenance_rank.c's. */
#include "system/provenance.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error.h"
#include "base/version.h"

extern char **environ;

static struct {
    int argc;
    char **argv;
} g_command;

void provenance_note_command(int argc, char **argv)
{
    g_command.argv = calloc((size_t)argc + 1, sizeof *g_command.argv);
    CHECK_ALLOC(g_command.argv);
    for (int i = 0; i < argc; i++) {
        g_command.argv[i] = strdup(argv[i]);
        CHECK_ALLOC(g_command.argv[i]);
    }
    g_command.argc = argc;
}

void provenance_utc_now(char *buf, size_t len)
{
    const time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void copy_env(char *buf, size_t len, const char *name, const char *fallback)
{
    const char *v = getenv(name);
    if ((v == NULL || !v[0]) && fallback != NULL) v = getenv(fallback);
    snprintf(buf, len, "%s", v != NULL ? v : "");
}

/* One argument as a POSIX shell reads it back: bare when it holds nothing special,
 * else in single quotes (a quote inside as '\''). */
static size_t quoted_length(const char *a)
{
    size_t n = 2;
    int plain = a[0] != '\0';
    for (const char *c = a; *c; c++) {
        plain &= strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-", *c) != NULL;
        n += *c == '\'' ? 4 : 1;
    }
    return plain ? strlen(a) : n;
}

static char *join_quoted(int argc, char **argv)
{
    size_t len = 1;
    for (int i = 0; i < argc; i++) len += quoted_length(argv[i]) + 1;
    char *out = malloc(len), *p = out;
    CHECK_ALLOC(out);
    for (int i = 0; i < argc; i++) {
        if (i) *p++ = ' ';
        const char *a = argv[i];
        if (quoted_length(a) == strlen(a)) {
            p = stpcpy(p, a);
            continue;
        }
        *p++ = '\'';
        for (const char *c = a; *c; c++) p = *c == '\'' ? stpcpy(p, "'\\''") : (*p = *c, p + 1);
        *p++ = '\'';
    }
    *p = '\0';
    return out;
}

/* The parent process's command line (/proc), arguments joined by spaces; "" where unreadable. */
static void parent_command_line(char *buf, size_t len, char *comm, size_t commlen)
{
    char path[64], raw[4096];
    buf[0] = comm[0] = '\0';
    snprintf(path, sizeof path, "/proc/%d/cmdline", (int)getppid());
    FILE *f = fopen(path, "rb");
    if (f != NULL) {
        size_t n = fread(raw, 1, sizeof raw - 1, f);
        fclose(f);
        while (n > 0 && raw[n - 1] == '\0') n--;
        for (size_t i = 0; i < n; i++)
            if (raw[i] == '\0') raw[i] = ' ';
        if (n >= len) n = len - 1; /* cut, rather than a warning about cutting */
        memcpy(buf, raw, n);
        buf[n] = '\0';
    }
    snprintf(path, sizeof path, "/proc/%d/comm", (int)getppid());
    if ((f = fopen(path, "r")) != NULL) {
        if (fgets(comm, (int)commlen, f) == NULL) comm[0] = '\0';
        comm[strcspn(comm, "\n")] = '\0';
        fclose(f);
    }
}

/* What started this process: its parent's name where it says, else the variables launchers set. */
static void launcher_name(char *buf, size_t len, const char *parent)
{
    if (strcmp(parent, "slurmstepd") == 0) snprintf(buf, len, "srun");
    else if (strstr(parent, "mpirun") || strstr(parent, "orterun") || strstr(parent, "orted") || strstr(parent, "prte"))
        snprintf(buf, len, "mpirun (Open MPI)");
    else if (strstr(parent, "hydra") || strstr(parent, "mpiexec")) snprintf(buf, len, "mpiexec (Hydra)");
    else if (getenv("OMPI_COMM_WORLD_SIZE") != NULL) snprintf(buf, len, "mpirun (Open MPI)");
    else if (getenv("SLURM_STEP_ID") != NULL && getenv("SLURM_PROCID") != NULL) snprintf(buf, len, "srun");
    else if (getenv("PMI_RANK") != NULL) snprintf(buf, len, "mpiexec (Hydra)");
    else if (getenv("PMIX_RANK") != NULL) snprintf(buf, len, "PMIx");
    else snprintf(buf, len, "none");
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void provenance_environment(char *buf, size_t len)
{
    size_t n = 0, used = 0;
    for (char **e = environ; *e != NULL; e++) n++;
    char **keep = calloc(n + 1, sizeof *keep);
    CHECK_ALLOC(keep);
    size_t k = 0;
    for (char **e = environ; *e != NULL; e++)
        if (strncmp(*e, "NCCL_", 5) == 0 || strncmp(*e, "CUDA_", 5) == 0) keep[k++] = *e;
    qsort(keep, k, sizeof *keep, by_name);
    buf[0] = '\0';
    for (size_t i = 0; i < k; i++) {
        const size_t need = strlen(keep[i]) + 1;
        if (used + need + 5 > len) { /* what does not fit is said to be missing, never cut mid-line */
            snprintf(buf + used, len - used, " ...");
            break;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s\n", keep[i]);
    }
    free(keep);
}

void provenance_start(struct provenance *p)
{
    memset(p, 0, sizeof *p);
    provenance_utc_now(p->started_utc, sizeof p->started_utc);
    snprintf(p->dpscale_version, sizeof p->dpscale_version, "%s", DPSCALE_VERSION);
    snprintf(p->git_commit, sizeof p->git_commit, "%s", version_git_commit());
    static char *none[] = {"dpscale", NULL};
    p->argc = g_command.argv != NULL ? g_command.argc : 1;
    p->argv = g_command.argv != NULL ? g_command.argv : none;
    p->command_line = join_quoted(p->argc, p->argv);
    char parent[64];
    parent_command_line(p->launcher_command_line, sizeof p->launcher_command_line, parent, sizeof parent);
    launcher_name(p->launcher, sizeof p->launcher, parent);
    if (strcmp(p->launcher, "none") == 0) p->launcher_command_line[0] = '\0'; /* a shell's, saying nothing */
    copy_env(p->job_id, sizeof p->job_id, "SLURM_JOB_ID", NULL);
    copy_env(p->slurm_partition, sizeof p->slurm_partition, "SLURM_JOB_PARTITION", NULL);
    copy_env(p->slurm_cluster, sizeof p->slurm_cluster, "SLURM_CLUSTER_NAME", NULL);
    copy_env(p->slurm_nodelist, sizeof p->slurm_nodelist, "SLURM_JOB_NODELIST", "SLURM_NODELIST");
    provenance_libraries(&p->libs);
}

void provenance_finish(struct provenance *p) { provenance_utc_now(p->ended_utc, sizeof p->ended_utc); }

void provenance_free(struct provenance *p)
{
    free(p->command_line);
    free(p->ranks);
    p->command_line = NULL;
    p->ranks = NULL;
    p->nranks = 0;
}

void provenance_local(struct provenance *p)
{
    provenance_start(p);
    p->ranks = calloc(1, sizeof *p->ranks);
    CHECK_ALLOC(p->ranks);
    p->nranks = 1;
    char host[64] = "unknown";
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    provenance_environment(p->ranks[0].environment, sizeof p->ranks[0].environment);
    provenance_rank_collect(&p->ranks[0], 0, 0, host, "", "", -1);
    provenance_finish(p);
}

/* report_doc_read.c — a result file's attributes as text, for the procurement
 * document's provenance appendix and column labels (report_doc.h), read through
 * result_in.h: every attribute of the root, /system, /config, /projection and, at every
 * level, /provenance (old files that lack a field simply show less; attributes added by
 * a newer writer show up without a change here); the distinct hosts, the link between
 * the first two GPUs, and each run's NVLink counters, which prove the path a run took. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result/checksum.h"
#include "result/result_in.h"
#include "report/doc/report_doc.h"
#include "base/utf8.h"

_Static_assert(sizeof((struct doc_attr *)0)->value == RESULT_TEXT_LEN, "an attribute's text as result_in.h gives it");

/* Append text to buf (len bytes), keeping it NUL-terminated; 0 once it is full. */
static int append(char *buf, size_t len, const char *text)
{
    const size_t used = strlen(buf);
    if (used + 1 >= len) return 0;
    snprintf(buf + used, len - used, "%s", text);
    return strlen(text) < len - used;
}

static struct doc_attr *new_attr(struct doc_info *info)
{
    if (info->nattrs == info->cap) {
        const int cap = info->cap ? 2 * info->cap : 128;
        struct doc_attr *more = realloc(info->attrs, (size_t)cap * sizeof *more);
        if (more == NULL) return NULL;
        info->attrs = more;
        info->cap = cap;
    }
    return &info->attrs[info->nattrs++];
}

/* One entry of result_in_attrs_text, kept unless it is a dataset's unit or the file's
 * checksums (checksum.h), which every file has its own of: not what sets it apart. */
static void add_attr(void *ctx, const char *prefix, const char *name, const char *value, int dataset)
{
    struct doc_info *info = ctx;
    if (!dataset && strcmp(name, "units") == 0) return; /* a dataset's unit, not provenance */
    if (!dataset && prefix[0] == '\0' && (strcmp(name, CHECKSUM_ATTR) == 0 || strcmp(name, CHECKSUM_ALGORITHM_ATTR) == 0))
        return;
    struct doc_attr *d = new_attr(info);
    if (d == NULL) return;
    if (dataset) {
        char path[160];
        snprintf(path, sizeof path, "%s%s", prefix, name);
        utf8_copy(d->name, sizeof d->name, path);
    } else {
        char key[sizeof d->name];
        snprintf(key, sizeof key, "%s%s", prefix, name);
        utf8_copy(d->name, sizeof d->name, key);
    }
    snprintf(d->value, sizeof d->value, "%s", value);
}

/* "vm (2 ranks)", "a (4 ranks), b (4 ranks)": the hosts of /system/hosts in order of first rank. */
static void read_hosts(const struct result_in *in, struct doc_info *info)
{
    enum { MAX_RANKS = 4096, W = 64 };
    static char names[MAX_RANKS][W];
    size_t n = 0;
    if (result_in_strings(in, "system/hosts", &names[0][0], W, MAX_RANKS, &n) != 0) return;
    for (size_t i = 0; i < n; i++) {
        int first = 1, count = 0;
        for (size_t j = 0; j < n; j++) {
            if (strcmp(names[j], names[i]) != 0) continue;
            if (j < i) first = 0;
            count++;
        }
        if (!first) continue;
        char one[W + 32];
        snprintf(one, sizeof one, "%s%.63s (%d rank%s)", info->hosts[0] ? ", " : "", names[i], count, count == 1 ? "" : "s");
        append(info->hosts, sizeof info->hosts, one);
    }
}

static void read_topology(const struct result_in *in, struct doc_info *info)
{
    enum { G = REPORT_MAX_GPUS };
    static char links[G * G][8];
    size_t n = 0;
    if (!result_in_exists(in, "system/topology")) return;
    info->topo_ngpus = result_in_attr_int(in, "system/topology", "ngpus", 0);
    const int ng = info->topo_ngpus;
    if (ng >= 2 && ng <= G && result_in_strings(in, "system/topology/link", &links[0][0], sizeof links[0], G * G, &n) == 0 &&
        n == (size_t)(ng * ng))
        utf8_copy(info->link01, sizeof info->link01, links[1]);
}

static void read_runs(const struct result_in *in, struct doc_info *info)
{
    info->nruns = result_in_run_proofs(in, info->schema, info->runs, REPORT_MAX_ROWS);
}

void doc_read_info(const char *path, struct doc_info *info)
{
    memset(info, 0, sizeof *info);
    char err[512];
    struct result_in *in = result_in_open(path, err, sizeof err); /* never a FIFO */
    if (in == NULL) return;
    info->readable = 1;
    info->schema = result_in_attr_int(in, "", "schema_version", 0);
    result_in_attrs_text(in, "", 0, add_attr, info);
    result_in_attrs_text(in, "system", 0, add_attr, info);
    result_in_attrs_text(in, "config", 0, add_attr, info);
    result_in_attrs_text(in, "projection", 0, add_attr, info);
    result_in_attrs_text(in, "provenance", 1, add_attr, info);
    read_hosts(in, info);
    read_topology(in, info);
    read_runs(in, info);
    result_in_close(in);
}

void doc_info_of(const struct report_file *f, struct doc_info *info)
{
    if (f->info == NULL) {
        doc_read_info(f->path, info);
        return;
    }
    *info = *f->info;
    info->attrs = info->nattrs > 0 ? malloc((size_t)info->nattrs * sizeof *info->attrs) : NULL;
    if (info->attrs != NULL) memcpy(info->attrs, f->info->attrs, (size_t)info->nattrs * sizeof *info->attrs);
    info->nattrs = info->cap = info->attrs != NULL ? info->nattrs : 0;
}

void doc_free_info(struct doc_info *info)
{
    free(info->attrs);
    info->attrs = NULL;
    info->nattrs = info->cap = 0;
}

const char *doc_attr(const struct doc_info *info, const char *name)
{
    for (int i = 0; i < info->nattrs; i++)
        if (strcmp(info->attrs[i].name, name) == 0) return info->attrs[i].value;
    return NULL;
}

const char *doc_nccl_env(const struct doc_info *info, const char *var, char *buf, size_t len)
{
    const char *env = doc_attr(info, "system/nccl_env");
    const size_t n = strlen(var);
    for (const char *p = env; p != NULL && *p; p += strcspn(p, " "), p += strspn(p, " ")) {
        if (strncmp(p, var, n) != 0 || p[n] != '=') continue;
        snprintf(buf, len, "%.*s", (int)strcspn(p + n + 1, " "), p + n + 1);
        return buf;
    }
    return NULL;
}

/* report_doc_columns.c — the columns of the procurement document and the lines of a
 * plot, named by what differs between them (report_doc.h); the columns' order and
 * their legend. Several runs of one model used to carry one label ("NVIDIA H200,
 * nccl over auto") though they differed in overlap, NCCL CTAs or machine; here every
 * column names its path and library, then each fact (machine, host, versions, a
 * configuration key, an NCCL variable) whose value is not the same in every column
 * that records it; the schema and the dpscale version only where columns are alike
 * without them, and the file name last.
 * A fact an older file does not record is no difference; an NCCL variable that is
 * unset is one.
 *
 * The path is named as a buyer reads it: "host" (called "pcie" before schema 6) is NCCL
 * with peer access off, the bytes staged through host memory: "host memory (P2P off)";
 * "pcie" is peer-to-peer over PCIe: "PCIe (P2P)"; path auto is named by what the NVLink
 * counters or the environment prove. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/doc/report_doc.h"
#include "result/schema.h"
#include "base/utf8.h"

#define MAX_FACTS 192
#define MAX_ENV 32

struct fact {
    char key[136];  /* "machine", "config/comm.overlap", "env/NCCL_BUFFSIZE" */
    char text[256]; /* "overlap off" */
};

struct facts {
    int n;
    struct fact f[MAX_FACTS];
};

/* The largest run of a system that communicated (its proof says most). */
static const struct result_run_proof *largest_run(const struct doc_info *info, const char *library, const char *path)
{
    const struct result_run_proof *best = NULL;
    for (int i = 0; i < info->nruns; i++) {
        const struct result_run_proof *r = &info->runs[i];
        if (r->nranks > 1 && strcmp(r->library, library) == 0 && strcmp(r->path, path) == 0 && (!best || r->nranks > best->nranks))
            best = r;
    }
    return best;
}

void doc_path_name(const char *library, const char *path, const struct doc_info *info, char *name, size_t len,
                   char *proof, size_t prooflen)
{
    char p2p_off[16], shm_off[16];
    const int p2p = doc_nccl_env(info, "NCCL_P2P_DISABLE", p2p_off, sizeof p2p_off) && strcmp(p2p_off, "0") != 0;
    const int shm = doc_nccl_env(info, "NCCL_SHM_DISABLE", shm_off, sizeof shm_off) && strcmp(shm_off, "0") != 0;
    const struct result_run_proof *run = largest_run(info, library, path);
    const int verified = run != NULL && strncmp(run->proof, "verified", 8) == 0;
    proof[0] = '\0';
    static const struct { const char *path, *name, *settings; } asked[] = {
        {"nvlink", "NVLink", "NCCL_P2P_LEVEL=NVL"},
        {"pcie", NULL, "NCCL_P2P_LEVEL=SYS"},
        {"host", NULL, "NCCL_P2P_DISABLE=1"},
        {"net", "network", "NCCL_P2P_DISABLE=1, NCCL_SHM_DISABLE=1"},
    };
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        if (strcmp(path, asked[i].path) != 0) continue;
        /* a file before schema 6 says pcie for host: the proof says what the file says */
        char written[32] = "";
        if (strcmp(path, "host") == 0 && info->schema > 0 && info->schema < SCHEMA_PCIE_IS_P2P)
            snprintf(written, sizeof written, "pcie in schema %d", info->schema);
        snprintf(name, len, "%s", asked[i].name != NULL ? asked[i].name : report_path_words(path));
        if (verified) snprintf(proof, prooflen, "comm.path = %s%s%s%s, %s", path, written[0] ? " (" : "", written,
                               written[0] ? ")" : "", run->proof);
        else snprintf(proof, prooflen, "comm.path = %s (%s%s%s)", path, asked[i].settings, written[0] ? "; " : "", written);
        return;
    }
    if (p2p) {
        snprintf(name, len, "%s", shm ? "network (P2P and SHM off)" : "host memory (P2P off)");
        snprintf(proof, prooflen, "path %s with NCCL_P2P_DISABLE=%s%s in the environment", path, p2p_off,
                 shm ? " and NCCL_SHM_DISABLE" : "");
        return;
    }
    if (strcmp(library, "mpi") == 0) {
        snprintf(name, len, "%s (MPI's choice)", path);
        snprintf(proof, prooflen, "path %s: MPI reduces host buffers", path);
        return;
    }
    if (run != NULL && run->nvlink_expected_bytes > 0 && isfinite(run->nvlink_tx_bytes)) {
        const int nvlink = run->nvlink_tx_bytes >= 0.9 * run->nvlink_expected_bytes;
        snprintf(name, len, "%s (path %s)", nvlink ? "NVLink" : "not NVLink", path);
        snprintf(proof, prooflen, "path %s, NCCL's choice: the NVLink counters saw %.3g of %.3g gradient bytes at %d GPUs",
                 path, run->nvlink_tx_bytes, run->nvlink_expected_bytes, run->nranks);
        return;
    }
    if (strncmp(info->link01, "NV", 2) == 0) {
        snprintf(name, len, "%s (GPUs joined by %s)", path, info->link01);
        snprintf(proof, prooflen, "path %s, NCCL's choice, no NVLink counters recorded; GPUs 0 and 1 are joined by %s", path,
                 info->link01);
        return;
    }
    snprintf(name, len, "%s (NCCL's choice)", path);
    snprintf(proof, prooflen, "path %s: NCCL's choice, not recorded", path);
}

static void add(struct facts *fs, const char *key, const char *text)
{
    if (fs->n == MAX_FACTS || text[0] == '\0') return;
    utf8_copy(fs->f[fs->n].key, sizeof fs->f[fs->n].key, key);
    utf8_copy(fs->f[fs->n].text, sizeof fs->f[fs->n].text, text);
    fs->n++;
}

/* Configuration keys that name the output, the sweep or the path (said otherwise), not the system. */
static int is_noise(const char *key)
{
    static const char *const noise[] = {"config/run.output", "config/run.output_dir", "config/run.sweep", "config/config_file",
                                        "config/comm.path", "config/comm.paths", "config/comm.transport",
                                        "config/comm.transports", "config/comm.library", "config/model.name",
                                        "config/run.save_params"};
    for (size_t i = 0; i < sizeof noise / sizeof noise[0]; i++)
        if (strcmp(key, noise[i]) == 0) return 1;
    return strncmp(key, "config/collective.", 18) == 0 || strncmp(key, "config/topo.", 12) == 0;
}

/* A configuration key in words where the words are known; "key=value" otherwise. */
static void config_text(const char *key, const char *v, char *out, size_t len)
{
    /* a value of a key is short; one cut at 120 bytes still tells two apart */
    if (strcmp(key, "comm.overlap") == 0) snprintf(out, len, "overlap %.120s", v);
    else if (strcmp(key, "comm.nccl_max_ctas") == 0 && strcmp(v, "0") == 0) snprintf(out, len, "NCCL's own CTA count");
    else if (strcmp(key, "comm.nccl_max_ctas") == 0) snprintf(out, len, "at most %.120s NCCL CTAs", v);
    else if (strcmp(key, "comm.bucket_mb") == 0) snprintf(out, len, "%.120s MB buckets", v);
    else if (strcmp(key, "comm.first_bucket_mb") == 0) snprintf(out, len, "first bucket %.120s MB", v);
    else if (strcmp(key, "comm.allreduce_dtype") == 0 && strcmp(v, "compute") == 0) snprintf(out, len, "allreduce in the compute precision");
    else if (strcmp(key, "comm.allreduce_dtype") == 0) snprintf(out, len, "allreduce in %.120s", v);
    else if (strcmp(key, "train.grad_dtype") == 0 && strcmp(v, "compute") == 0) snprintf(out, len, "gradients in the compute precision");
    else if (strcmp(key, "train.grad_dtype") == 0) snprintf(out, len, "%.120s gradients", v);
    else if (strcmp(key, "comm.shard_optimizer") == 0) snprintf(out, len, "sharded optimizer %.120s", v);
    else if (strcmp(key, "train.overlap_update") == 0) snprintf(out, len, "update beside backward %.120s", v);
    else snprintf(out, len, "%.64s=%.120s", key, v);
}

/* The NCCL variables the path itself sets (nccl_path.c) and the version (a fact of its own). */
static int env_said_otherwise(const char *name)
{
    return strcmp(name, "NCCL_P2P_LEVEL") == 0 || strcmp(name, "NCCL_P2P_DISABLE") == 0 || strcmp(name, "NCCL_SHM_DISABLE") == 0 ||
           strcmp(name, "NCCL_IB_DISABLE") == 0 || strcmp(name, "NCCL_VERSION") == 0;
}

/* The union of the NCCL variable names of every column (but those said otherwise:
 * the path's, and the copy engine's when every file records comm.shm_copy, which sets them). */
static int env_names(const struct doc_column *cols, int n, char names[MAX_ENV][64])
{
    int m = 0, shm_copy = n > 0;
    for (int i = 0; i < n; i++) shm_copy &= doc_attr(cols[i].info, "config/comm.shm_copy") != NULL;
    for (int i = 0; i < n; i++) {
        const char *env = doc_attr(cols[i].info, "system/nccl_env");
        for (const char *p = env; p != NULL && *p; p += strcspn(p, " "), p += strspn(p, " ")) {
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(p, "= "), p);
            int seen = env_said_otherwise(name) ||
                       (shm_copy && (strcmp(name, "NCCL_SHM_USE_CUDA_MEMCPY") == 0 || strcmp(name, "NCCL_SHM_MEMCPY_MODE") == 0));
            for (int k = 0; k < m && !seen; k++) seen = strcmp(names[k], name) == 0;
            if (!seen && m < MAX_ENV) snprintf(names[m++], sizeof names[0], "%s", name);
        }
    }
    return m;
}

static void facts_of(const struct doc_column *c, char env[MAX_ENV][64], int nenv, struct facts *fs)
{
    const struct doc_info *in = c->info;
    char text[256], buf[128];
    const char *v;
    fs->n = 0;
    const int gpus = in->topo_ngpus > 0 ? in->topo_ngpus : (v = doc_attr(in, "system/world_size")) ? atoi(v) : 0;
    if (gpus > 0) snprintf(text, sizeof text, "%d x %.96s", gpus, c->file->device[0] ? c->file->device : "?");
    else snprintf(text, sizeof text, "%s", c->file->device);
    add(fs, "machine", text);
    snprintf(text, sizeof text, "host %s", c->file->host);
    if (c->file->host[0]) add(fs, "host", text);
    if ((v = doc_attr(in, "system/driver")) && v[0]) snprintf(text, sizeof text, "driver %.128s", v), add(fs, "driver", text);
    if ((v = doc_attr(in, "system/backend_library"))) add(fs, "backend_library", v);
    if ((v = doc_attr(in, "system/mpi_library"))) snprintf(text, sizeof text, "%.*s", (int)(strcspn(v, ",") % 200), v), add(fs, "mpi", text);
    if ((v = doc_attr(in, "system/nccl_version")) || (v = doc_nccl_env(in, "NCCL_VERSION", buf, sizeof buf)))
        snprintf(text, sizeof text, "NCCL %.128s", v), add(fs, "nccl", text);
    if (c->sweep != NULL) {
        snprintf(text, sizeof text, "%s %s", c->sweep->dtype, c->sweep->in_place ? "in place" : "out of place");
        add(fs, "sweep", text);
    }
    for (int i = 0; i < in->nattrs; i++) {
        const char *key = in->attrs[i].name;
        if (strncmp(key, "config/", 7) != 0 || is_noise(key)) continue;
        config_text(key + 7, in->attrs[i].value, text, sizeof text);
        add(fs, key, text);
    }
    for (int k = 0; k < nenv; k++) {
        char key[80];
        snprintf(key, sizeof key, "env/%.63s", env[k]);
        if ((v = doc_nccl_env(in, env[k], buf, sizeof buf))) snprintf(text, sizeof text, "%.63s=%.127s", env[k], v);
        else snprintf(text, sizeof text, "%.63s unset", env[k]);
        add(fs, key, text);
    }
    snprintf(text, sizeof text, "schema %d", in->schema);
    if (in->schema > 0) add(fs, "schema", text);
    if ((v = doc_attr(in, "dpscale_version"))) snprintf(text, sizeof text, "dpscale %.128s", v), add(fs, "dpscale", text);
}

/* Facts that tell files apart but not systems: shown only where nothing else does. */
static int is_tie_breaker(const char *key) { return strcmp(key, "schema") == 0 || strcmp(key, "dpscale") == 0; }

static const struct fact *find(const struct facts *fs, const char *key)
{
    for (int i = 0; i < fs->n; i++)
        if (strcmp(fs->f[i].key, key) == 0) return &fs->f[i];
    return NULL;
}

/* Whether `key` holds more than one value among the columns that record it. */
static int differs(const struct facts *all, int n, const char *key)
{
    const struct fact *first = NULL;
    for (int i = 0; i < n; i++) {
        const struct fact *f = find(&all[i], key);
        if (f == NULL) continue;
        if (first == NULL) first = f;
        else if (strcmp(first->text, f->text) != 0) return 1;
    }
    return 0;
}

/* text after the label, ", " between: cut where the label is full, never inside a character */
static void append(char *buf, size_t len, const char *text)
{
    size_t used = strlen(buf);
    if (used > 0 && used + 3 < len) {
        memcpy(buf + used, ", ", 3);
        used += 2;
    }
    if (used + 1 < len) utf8_copy(buf + used, len - used, text);
}

const char *doc_base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static void name_column(struct doc_column *c)
{
    if (c->file->projected) {
        const char *source = doc_attr(c->info, "projection/source");
        snprintf(c->path_name, sizeof c->path_name, "PROJECTED");
        c->library[0] = '\0';
        /* the target: "DIR/comm.h5 (collectives/nccl/auto)", or a catalog entry */
        const char *target = c->file->projection_target, *paren = strstr(target, " (");
        char file[160];
        snprintf(file, sizeof file, "%.*s", (int)(paren ? (size_t)(paren - target) : strlen(target)) % 150, target);
        snprintf(c->label, sizeof c->label, "PROJECTED, not measured: %.150s onto %.100s%.60s",
                 source ? doc_base_name(source) : c->file->device, doc_base_name(file), paren ? paren : "");
        utf8_copy(c->proof, sizeof c->proof, c->file->projection_compute);
        return;
    }
    const char *library = c->sweep ? c->sweep->library : c->sys->library, *path = c->sweep ? c->sweep->path : c->sys->path;
    doc_path_name(library, path, c->info, c->path_name, sizeof c->path_name, c->proof, sizeof c->proof);
    if (strcmp(library, "nccl") == 0) snprintf(c->library, sizeof c->library, "NCCL");
    else if (strcmp(library, "mpi") == 0) snprintf(c->library, sizeof c->library, "MPI");
    else snprintf(c->library, sizeof c->library, "%s", library);
    snprintf(c->label, sizeof c->label, "%s, %s", c->path_name, c->library);
}

void doc_label_columns(struct doc_column *cols, int n)
{
    char env[MAX_ENV][64];
    const int nenv = env_names(cols, n, env);
    struct facts *all = calloc(n > 0 ? (size_t)n : 1, sizeof *all);
    for (int i = 0; i < n; i++) {
        name_column(&cols[i]);
        if (all != NULL) facts_of(&cols[i], env, nenv, &all[i]);
    }
    for (int i = 0; all != NULL && i < n; i++)
        for (int k = 0; k < all[i].n; k++)
            if (!is_tie_breaker(all[i].f[k].key) && differs(all, n, all[i].f[k].key))
                append(cols[i].label, sizeof cols[i].label, all[i].f[k].text);
    /* the file's schema and writer: only where columns are still alike without them */
    static const char *const tie_breakers[] = {"schema", "dpscale"};
    for (int t = 0; all != NULL && t < 2; t++) {
        int useful = 0;
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) {
                const struct fact *a = find(&all[i], tie_breakers[t]), *b = find(&all[j], tie_breakers[t]);
                useful |= a && b && strcmp(a->text, b->text) != 0 && strcmp(cols[i].label, cols[j].label) == 0;
            }
        for (int i = 0; useful && i < n; i++) {
            const struct fact *f = find(&all[i], tie_breakers[t]);
            if (f != NULL) append(cols[i].label, sizeof cols[i].label, f->text);
        }
    }
    free(all);
    /* still alike (the same settings measured twice): the file tells them apart */
    for (int i = 0; i < n; i++) {
        int alike = 0;
        for (int j = 0; j < n; j++) alike |= j != i && strcmp(cols[i].label, cols[j].label) == 0;
        if (!alike) continue;
        for (int j = n - 1; j >= i; j--)
            if (j == i || strcmp(cols[i].label, cols[j].label) == 0) append(cols[j].label, sizeof cols[j].label, doc_base_name(cols[j].file->path));
    }
}

int doc_path_rank(const char *name)
{
    if (strncmp(name, "NVLink", 6) == 0 || strstr(name, "joined by NV") != NULL) return DOC_PATH_NVLINK;
    if (strncmp(name, "PCIe", 4) == 0) return DOC_PATH_PCIE;
    if (strncmp(name, "host memory", 11) == 0) return DOC_PATH_HOST;
    if (strncmp(name, "network", 7) == 0) return DOC_PATH_NET;
    if (strncmp(name, "not NVLink", 10) == 0) return DOC_PATH_NOT_NVLINK;
    return DOC_PATH_OTHER;
}

const char *doc_label_rest(const struct doc_column *c)
{
    const size_t n = strlen(c->path_name) + 2 + strlen(c->library);
    return strlen(c->label) > n + 1 ? c->label + n + 2 : "";
}

void doc_order_columns(struct doc_column *c, int n)
{
    int key[DOC_MAX_COLUMNS];
    for (int i = 0; i < n; i++) {
        key[i] = i;
        for (int j = 0; j < i; j++)
            if (strcmp(doc_label_rest(&c[j]), doc_label_rest(&c[i])) == 0) {
                key[i] = key[j];
                break;
            }
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            const int a = key[j - 1], b = key[j];
            if (a < b || (a == b && doc_path_rank(c[j - 1].path_name) <= doc_path_rank(c[j].path_name))) break;
            const struct doc_column t = c[j];
            c[j] = c[j - 1];
            c[j - 1] = t;
            key[j - 1] = b;
            key[j] = a;
        }
}

void doc_legend(FILE *out, const struct doc_column *c, int n, int runs)
{
    fprintf(out, "| column | file | path, and how it is known |%s\n|---|---|---|%s\n", runs ? " price per GPU-hour |" : "",
            runs ? "---:|" : "");
    for (int k = 0; k < n; k++) {
        fputs("| ", out);
        report_md_text(out, c[k].label);
        fputs(" | ", out);
        report_md_text(out, c[k].file->path);
        if (runs && c[k].info->schema == 1 && !c[k].file->projected)
            fputs(" (schema 1: its 1-GPU run still did a 1-rank allreduce every step, so efficiency is against a slower "
                  "baseline)", out);
        fputs(" | ", out);
        report_md_text(out, c[k].proof);
        if (!runs) fputs(" |\n", out);
        else if (c[k].file->price_per_gpu_hour > 0) fprintf(out, " | %.4g |\n", c[k].file->price_per_gpu_hour);
        else fputs(" | - |\n", out);
    }
    fputc('\n', out);
}

/* report_doc_read.c — a result file's attributes as text, for the procurement
 * document's provenance appendix and column labels (report_doc.h). Attributes are
 * read generically, whatever their names and types (strings fixed or variable,
 * integers, floats, small arrays of them): old files that lack a field simply show
 * less, and attributes added by a newer writer (a /provenance group, say) show up
 * without a change here. Also read: the distinct hosts, the link between the first
 * two GPUs, and each run's NVLink counters, which prove the path a run took. */
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "result/checksum.h"
#include "result/h5read.h"
#include "report/doc/report_doc.h"
#include "report/report_read.h"
#include "base/utf8.h"

#define MAX_ELEMENTS 64         /* values of one attribute or dataset shown; more are cut with "..." */
#define MAX_READ_ELEMENTS 65536 /* read whole to show the first 64; a larger one is only counted */
#define MAX_READ_BYTES ((size_t)64 << 20)
#define MAX_DEPTH 8             /* groups in groups below /provenance or /runs (a damaged file can loop) */

/* Append text to buf (len bytes), keeping it NUL-terminated; 0 once it is full. */
static int append(char *buf, size_t len, const char *text)
{
    const size_t used = strlen(buf);
    if (used + 1 >= len) return 0;
    snprintf(buf + used, len - used, "%s", text);
    return strlen(text) < len - used;
}

/* The elements of an attribute or dataset (`attr` >= 0: an attribute, else dataset
 * `dset`) of type `ftype` as text, joined by ", ". */
static void values_text(hid_t attr, hid_t dset, hid_t ftype, hssize_t n, char *out, size_t len)
{
    out[0] = '\0';
    const H5T_class_t cls = H5Tget_class(ftype);
    const hssize_t shown = n < MAX_ELEMENTS ? n : MAX_ELEMENTS;
    if (n <= 0) return;
    if (n > MAX_READ_ELEMENTS) {
        snprintf(out, len, "(%lld values, not shown)", (long long)n);
        return;
    }
    if (cls == H5T_STRING && H5Tis_variable_str(ftype) > 0) {
        char **v = calloc((size_t)n, sizeof *v);
        hid_t mtype = H5Tcopy(H5T_C_S1);
        H5Tset_size(mtype, H5T_VARIABLE);
        H5Tset_cset(mtype, H5Tget_cset(ftype));
        const herr_t rc = v == NULL ? -1 : attr >= 0 ? H5Aread(attr, mtype, v) : H5Dread(dset, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        for (hssize_t i = 0; rc >= 0 && i < shown; i++) {
            if (i > 0) append(out, len, ", ");
            append(out, len, v[i] != NULL ? v[i] : "");
        }
        for (hssize_t i = 0; rc >= 0 && i < n; i++) H5free_memory(v[i]);
        H5Tclose(mtype);
        free(v);
    } else if (cls == H5T_STRING) {
        const size_t w = H5Tget_size(ftype);
        char *v = w > 0 && w < (1 << 20) && (size_t)n <= MAX_READ_BYTES / w ? calloc((size_t)n, w) : NULL, one[DOC_VALUE_LEN];
        const herr_t rc = v == NULL ? -1 : attr >= 0 ? H5Aread(attr, ftype, v) : H5Dread(dset, ftype, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        for (hssize_t i = 0; rc >= 0 && i < shown; i++) {
            snprintf(one, sizeof one, "%.*s", (int)(w < sizeof one ? w : sizeof one - 1), v + i * w);
            if (i > 0) append(out, len, ", ");
            append(out, len, one);
        }
        free(v);
    } else if (cls == H5T_INTEGER || cls == H5T_FLOAT) {
        double *v = calloc((size_t)n, sizeof *v);
        const herr_t rc = v == NULL ? -1 : attr >= 0 ? H5Aread(attr, H5T_NATIVE_DOUBLE, v)
                                                      : H5Dread(dset, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        char one[48];
        for (hssize_t i = 0; rc >= 0 && i < shown; i++) {
            snprintf(one, sizeof one, cls == H5T_INTEGER ? "%.0f" : "%.10g", v[i]);
            if (i > 0) append(out, len, ", ");
            append(out, len, one);
        }
        free(v);
    } else {
        snprintf(out, len, "(HDF5 type class %d, not shown)", (int)cls);
        return;
    }
    if (n > shown) append(out, len, ", ...");
    char clean[DOC_VALUE_LEN];
    utf8_copy(clean, sizeof clean, out); /* a cut may have split a character */
    snprintf(out, len, "%s", clean);
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

struct walk {
    struct doc_info *info;
    const char *prefix; /* "" for the root, "system/" ... */
    int depth;
};

static herr_t one_attribute(hid_t loc, const char *name, const H5A_info_t *ainfo, void *data)
{
    (void)ainfo;
    struct walk *w = data;
    if (strcmp(name, "units") == 0) return 0; /* a dataset's unit, not provenance */
    if (w->prefix[0] == '\0' && (strcmp(name, CHECKSUM_ATTR) == 0 || strcmp(name, CHECKSUM_ALGORITHM_ATTR) == 0))
        return 0; /* the file's checksums (checksum.h), which every file has its own of: not what sets it apart */
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return 0;
    hid_t t = H5Aget_type(a), s = H5Aget_space(a);
    struct doc_attr *d = new_attr(w->info);
    if (d != NULL) {
        char key[sizeof d->name];
        snprintf(key, sizeof key, "%s%s", w->prefix, name);
        utf8_copy(d->name, sizeof d->name, key);
        values_text(a, -1, t, H5Sget_simple_extent_npoints(s), d->value, sizeof d->value);
    }
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    return 0;
}

static void attributes_of(struct doc_info *info, hid_t obj, const char *prefix)
{
    struct walk w = {info, prefix, 0};
    hsize_t idx = 0;
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, one_attribute, &w);
}

/* Every attribute of the group at `path` and, when `deep`, of every group and small
 * dataset below it (a dataset's values as one more entry). */
static herr_t walk_member(hid_t parent, const char *name, const H5L_info_t *linfo, void *data);

static void walk_group(struct doc_info *info, hid_t file, const char *path, int deep)
{
    if (!h5_exists(file, path)) return;
    hid_t g = H5Oopen(file, path, H5P_DEFAULT);
    if (g < 0) return;
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s/", path);
    attributes_of(info, g, prefix);
    if (deep && H5Iget_type(g) == H5I_GROUP) {
        struct walk w = {info, prefix, 0};
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_member, &w);
    }
    H5Oclose(g);
}

static herr_t walk_member(hid_t parent, const char *name, const H5L_info_t *linfo, void *data)
{
    struct walk *w = data;
    if (linfo->type != H5L_TYPE_HARD || w->depth >= MAX_DEPTH) return 0; /* another file's, or a loop */
    char path[160];
    snprintf(path, sizeof path, "%s%s", w->prefix, name);
    hid_t o = H5Oopen(parent, name, H5P_DEFAULT);
    if (o < 0) return 0;
    if (H5Iget_type(o) == H5I_GROUP) {
        char prefix[176];
        snprintf(prefix, sizeof prefix, "%s/", path);
        attributes_of(w->info, o, prefix);
        struct walk inner = {w->info, prefix, w->depth + 1};
        H5Literate(o, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_member, &inner);
    } else if (H5Iget_type(o) == H5I_DATASET) {
        hid_t t = H5Dget_type(o), s = H5Dget_space(o);
        struct doc_attr *d = new_attr(w->info);
        if (d != NULL) {
            utf8_copy(d->name, sizeof d->name, path);
            values_text(-1, o, t, H5Sget_simple_extent_npoints(s), d->value, sizeof d->value);
        }
        char prefix[176];
        snprintf(prefix, sizeof prefix, "%s/", path);
        attributes_of(w->info, o, prefix);
        H5Sclose(s);
        H5Tclose(t);
    }
    H5Oclose(o);
    return 0;
}

/* "vm (2 ranks)", "a (4 ranks), b (4 ranks)": the hosts of /system/hosts in order of first rank. */
static void read_hosts(hid_t file, struct doc_info *info)
{
    enum { MAX_RANKS = 4096, W = 64 };
    static char names[MAX_RANKS][W];
    size_t n = 0;
    if (h5_read_strings(file, "system/hosts", &names[0][0], W, MAX_RANKS, &n) != 0) return;
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

static void read_topology(hid_t file, struct doc_info *info)
{
    enum { G = REPORT_MAX_GPUS };
    static char links[G * G][8];
    size_t n = 0;
    if (!h5_exists(file, "system/topology")) return;
    hid_t g = H5Gopen2(file, "system/topology", H5P_DEFAULT);
    if (g < 0) return;
    info->topo_ngpus = h5_attr_int(g, "ngpus", 0);
    const int ng = info->topo_ngpus;
    if (ng >= 2 && ng <= G && h5_read_strings(g, "link", &links[0][0], sizeof links[0], G * G, &n) == 0 && n == (size_t)(ng * ng))
        utf8_copy(info->link01, sizeof info->link01, links[1]);
    H5Gclose(g);
}

/* A run group: attributes nranks and nvlink_tx_bytes. Schema 1 names its path by the group above. */
struct run_search {
    struct doc_info *info;
    int depth;
};

static herr_t find_runs(hid_t parent, const char *name, const H5L_info_t *linfo, void *data)
{
    struct run_search *search = data;
    struct doc_info *info = search->info;
    if (linfo->type != H5L_TYPE_HARD || search->depth >= MAX_DEPTH) return 0;
    hid_t g = H5Oopen(parent, name, H5P_DEFAULT);
    if (g < 0) return 0;
    if (H5Iget_type(g) == H5I_GROUP && H5Aexists(g, "nranks") > 0) {
        if (info->nruns < REPORT_MAX_ROWS) {
            struct doc_run *r = &info->runs[info->nruns++];
            char transport[32] = "";
            memset(r, 0, sizeof *r);
            r->nranks = h5_attr_int(g, "nranks", 0);
            r->nvlink_tx_bytes = h5_attr_double(g, "nvlink_tx_bytes");
            r->nvlink_expected_bytes = h5_attr_double(g, "nvlink_expected_bytes");
            h5_attr_str(g, "path_proof", r->proof, sizeof r->proof);
            char path[sizeof r->path];
            if (h5_attr_str(g, "library", r->library, sizeof r->library) != 0 || h5_attr_str(g, "path", path, sizeof path) != 0) {
                ssize_t len = H5Iget_name(parent, transport, sizeof transport); /* "/runs/<transport>" */
                const char *slash = len > 0 ? strrchr(transport, '/') : NULL;
                report_schema1_transport(slash ? slash + 1 : "", r->library, sizeof r->library, r->path, sizeof r->path);
            } else {
                report_path_in(info->schema, path, r->path, sizeof r->path);
            }
        }
    } else if (H5Iget_type(g) == H5I_GROUP) {
        search->depth++;
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, find_runs, search);
        search->depth--;
    }
    H5Oclose(g);
    return 0;
}

void doc_read_info(const char *path, struct doc_info *info)
{
    memset(info, 0, sizeof *info);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || H5Fis_hdf5(path) <= 0) return; /* never a FIFO */
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (file < 0) return;
    info->readable = 1;
    info->schema = h5_attr_int(file, "schema_version", 0);
    attributes_of(info, file, "");
    walk_group(info, file, "system", 0);
    walk_group(info, file, "config", 0);
    walk_group(info, file, "projection", 0);
    walk_group(info, file, "provenance", 1);
    read_hosts(file, info);
    read_topology(file, info);
    if (h5_exists(file, "runs")) {
        hid_t runs = H5Gopen2(file, "runs", H5P_DEFAULT);
        struct run_search search = {info, 0};
        if (runs >= 0) {
            H5Literate(runs, H5_INDEX_NAME, H5_ITER_INC, NULL, find_runs, &search);
            H5Gclose(runs);
        }
    }
    H5Fclose(file);
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

/* result_in_text.c — a result file's attributes as text, and its runs as they prove
 * their path (result_in.h), for the procurement document's provenance appendix and
 * column labels. Attributes are read generically, whatever their names and types
 * (strings fixed or variable, integers, floats, small arrays of them): old files that
 * lack a field simply show less, and attributes added by a newer writer (a /provenance
 * group, say) show up without a change here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result/h5read.h"
#include "result/result_read_internal.h"
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
        char *v = w > 0 && w < (1 << 20) && (size_t)n <= MAX_READ_BYTES / w ? calloc((size_t)n, w) : NULL, one[RESULT_TEXT_LEN];
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
    char clean[RESULT_TEXT_LEN];
    utf8_copy(clean, sizeof clean, out); /* a cut may have split a character */
    snprintf(out, len, "%s", clean);
}

struct walk {
    result_text_fn fn;
    void *ctx;
    const char *prefix; /* "" for the root, "system/" ... */
    int depth;
};

static herr_t one_attribute(hid_t loc, const char *name, const H5A_info_t *ainfo, void *data)
{
    (void)ainfo;
    struct walk *w = data;
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return 0;
    hid_t t = H5Aget_type(a), s = H5Aget_space(a);
    char value[RESULT_TEXT_LEN];
    values_text(a, -1, t, H5Sget_simple_extent_npoints(s), value, sizeof value);
    w->fn(w->ctx, w->prefix, name, value, 0);
    H5Sclose(s);
    H5Tclose(t);
    H5Aclose(a);
    return 0;
}

static void attributes_of(const struct walk *outer, hid_t obj, const char *prefix)
{
    struct walk w = {outer->fn, outer->ctx, prefix, 0};
    hsize_t idx = 0;
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &idx, one_attribute, &w);
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
        attributes_of(w, o, prefix);
        struct walk inner = {w->fn, w->ctx, prefix, w->depth + 1};
        H5Literate(o, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_member, &inner);
    } else if (H5Iget_type(o) == H5I_DATASET) {
        hid_t t = H5Dget_type(o), s = H5Dget_space(o);
        char value[RESULT_TEXT_LEN];
        values_text(-1, o, t, H5Sget_simple_extent_npoints(s), value, sizeof value);
        w->fn(w->ctx, w->prefix, name, value, 1);
        char prefix[176];
        snprintf(prefix, sizeof prefix, "%s/", path);
        attributes_of(w, o, prefix);
        H5Sclose(s);
        H5Tclose(t);
    }
    H5Oclose(o);
    return 0;
}

void result_in_attrs_text(const struct result_in *in, const char *group, int deep, result_text_fn fn, void *ctx)
{
    const struct walk top = {fn, ctx, "", 0};
    if (group[0] == '\0') {
        attributes_of(&top, in->file, "");
        return;
    }
    if (!h5_exists(in->file, group)) return;
    hid_t g = H5Oopen(in->file, group, H5P_DEFAULT);
    if (g < 0) return;
    char prefix[160];
    snprintf(prefix, sizeof prefix, "%s/", group);
    attributes_of(&top, g, prefix);
    if (deep && H5Iget_type(g) == H5I_GROUP) {
        struct walk w = {fn, ctx, prefix, 0};
        H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, walk_member, &w);
    }
    H5Oclose(g);
}

/* A run group: attributes nranks and nvlink_tx_bytes. Schema 1 names its path by the group above. */
struct run_search {
    struct result_run_proof *runs;
    int n, max, schema, depth;
};

static herr_t find_runs(hid_t parent, const char *name, const H5L_info_t *linfo, void *data)
{
    struct run_search *search = data;
    if (linfo->type != H5L_TYPE_HARD || search->depth >= MAX_DEPTH) return 0;
    hid_t g = H5Oopen(parent, name, H5P_DEFAULT);
    if (g < 0) return 0;
    if (H5Iget_type(g) == H5I_GROUP && H5Aexists(g, "nranks") > 0) {
        if (search->n < search->max) {
            struct result_run_proof *r = &search->runs[search->n++];
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
                result_schema1_transport(slash ? slash + 1 : "", r->library, sizeof r->library, r->path, sizeof r->path);
            } else {
                result_path_in(search->schema, path, r->path, sizeof r->path);
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

int result_in_run_proofs(const struct result_in *in, int schema, struct result_run_proof *runs, int max)
{
    struct run_search search = {runs, 0, max, schema, 0};
    if (!h5_exists(in->file, "runs")) return 0;
    hid_t g = H5Gopen2(in->file, "runs", H5P_DEFAULT);
    if (g < 0) return 0;
    H5Literate(g, H5_INDEX_NAME, H5_ITER_INC, NULL, find_runs, &search);
    H5Gclose(g);
    return search.n;
}

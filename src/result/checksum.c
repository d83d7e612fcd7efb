/* checksum.c — sealing a result file with the hash of every object, and verifying
 * them (checksum.h). One walk serves both: every object in name order, depth first,
 * each turned into canonical bytes and hashed; the seal writes the list, the check
 * compares each hash with the list as the walk goes and stops at the first that
 * differs. Every size read from the file is checked before it sizes a buffer. */
#include "result/checksum.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "result/h5read.h"

#define ALGORITHM "xxh64"
#define ALGORITHM_ATTR CHECKSUM_ALGORITHM_ATTR
#define MAX_DEPTH 32                        /* groups in groups; dpscale writes 5 levels, a loop would not end */
#define MAX_OBJECTS 200000
#define MAX_VALUE_BYTES ((size_t)1 << 30) /* one attribute or dataset, in canonical form */
#define MAX_LIST_BYTES ((size_t)64 << 20)
#define MAX_MEMBERS 4096 /* of one compound type */
#define MAX_TYPE_DEPTH 8 /* compounds and arrays within each other */

/* ---- XXH64 (Yann Collet's reference algorithm) ---- */

static const uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL, P3 = 0x165667B19E3779F9ULL,
                      P4 = 0x85EBCA77C2B2AE63ULL, P5 = 0x27D4EB2F165667C5ULL;

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

static uint64_t le64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static uint32_t le32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static uint64_t xround(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }

static uint64_t xmerge(uint64_t h, uint64_t v) { return (h ^ xround(0, v)) * P1 + P4; }

uint64_t checksum_xxh64(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data, *const end = p + len;
    uint64_t h;
    if (len >= 32) {
        uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
        for (; end - p >= 32; p += 32) {
            v1 = xround(v1, le64(p));
            v2 = xround(v2, le64(p + 8));
            v3 = xround(v3, le64(p + 16));
            v4 = xround(v4, le64(p + 24));
        }
        h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
        h = xmerge(xmerge(xmerge(xmerge(h, v1), v2), v3), v4);
    } else {
        h = seed + P5;
    }
    h += (uint64_t)len;
    for (; end - p >= 8; p += 8) h = rotl(h ^ xround(0, le64(p)), 27) * P1 + P4;
    if (end - p >= 4) {
        h = rotl(h ^ (uint64_t)le32(p) * P1, 23) * P2 + P3;
        p += 4;
    }
    for (; p < end; p++) h = rotl(h ^ (uint64_t)*p * P5, 11) * P1;
    h ^= h >> 33;
    h *= P2;
    h ^= h >> 29;
    h *= P3;
    return h ^ (h >> 32);
}

/* ---- an object's canonical bytes ---- */

struct canon {
    unsigned char *p;
    size_t n, cap;
    int full; /* out of memory, or more than MAX_VALUE_BYTES more than once: no hash */
};

static void put(struct canon *c, const void *v, size_t n)
{
    if (c->full) return;
    if (c->cap - c->n < n) {
        size_t cap = c->cap ? c->cap : 4096;
        while (cap - c->n < n && cap < (size_t)4 * MAX_VALUE_BYTES) cap *= 2;
        unsigned char *more = cap - c->n >= n ? realloc(c->p, cap) : NULL;
        if (more == NULL) {
            c->full = 1;
            return;
        }
        c->p = more;
        c->cap = cap;
    }
    memcpy(c->p + c->n, v, n);
    c->n += n;
}

static void put_u64(struct canon *c, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)(v >> (8 * i));
    put(c, b, sizeof b);
}

static void put_str(struct canon *c, const char *s)
{
    const size_t n = strlen(s);
    put_u64(c, n);
    put(c, s, n);
}

/* The walk: the seal collects the list (one line per object), the check compares
 * each object's line with the list's next one. */
struct walk {
    int seal;
    struct canon c;
    struct canon list;   /* seal: the lines written so far */
    const char *expect;  /* check: the list's next line */
    size_t nobjects;
    char *err;
    size_t errlen;
    int failed;
};

static int fail(struct walk *w, const char *fmt, const char *a, const char *b)
{
    if (!w->failed && w->err != NULL) snprintf(w->err, w->errlen, fmt, a, b);
    w->failed = 1;
    return -1;
}

/* ---- types ---- */

/* What the type is, in the canonical bytes: its class and size, and what sets apart
 * types of one class (sign, string kind, members, dimensions). -1 when it nests
 * deeper, or holds more members, than a result file does. */
static int put_type(struct canon *c, hid_t t, int depth)
{
    const H5T_class_t cls = H5Tget_class(t);
    if (cls < 0 || depth > MAX_TYPE_DEPTH) return -1;
    put_u64(c, (uint64_t)cls);
    put_u64(c, (uint64_t)H5Tget_size(t));
    switch (cls) {
    case H5T_INTEGER: put_u64(c, (uint64_t)H5Tget_sign(t)); break;
    case H5T_STRING:
        put_u64(c, (uint64_t)(H5Tis_variable_str(t) > 0));
        put_u64(c, (uint64_t)H5Tget_cset(t));
        put_u64(c, (uint64_t)H5Tget_strpad(t));
        break;
    case H5T_COMPOUND: {
        const int n = H5Tget_nmembers(t);
        if (n < 0 || n > MAX_MEMBERS) return -1;
        put_u64(c, (uint64_t)n);
        for (int k = 0; k < n; k++) {
            char *name = H5Tget_member_name(t, (unsigned)k);
            hid_t m = H5Tget_member_type(t, (unsigned)k);
            const int rc = name != NULL && m >= 0 ? (put_str(c, name), put_type(c, m, depth + 1)) : -1;
            if (name != NULL) H5free_memory(name);
            if (m >= 0) H5Tclose(m);
            if (rc != 0) return -1;
        }
        break;
    }
    case H5T_ARRAY: {
        hsize_t dims[H5S_MAX_RANK];
        const int nd = H5Tget_array_ndims(t);
        if (nd < 1 || nd > H5S_MAX_RANK || H5Tget_array_dims2(t, dims) != nd) return -1;
        put_u64(c, (uint64_t)nd);
        for (int i = 0; i < nd; i++) put_u64(c, dims[i]);
        break;
    }
    default: break;
    }
    if (cls != H5T_ARRAY && cls != H5T_ENUM && cls != H5T_VLEN) return 0;
    hid_t base = H5Tget_super(t); /* the element type */
    const int rc = base >= 0 ? put_type(c, base, depth + 1) : -1;
    if (base >= 0) H5Tclose(base);
    return rc;
}

/* The type values are read in: integers int64 or uint64 and floats float64,
 * little-endian whatever the machine; variable-length strings as char *; compounds
 * and arrays of those, packed; enums, bit fields and opaque data as stored. *vlen:
 * it holds a variable-length string (its values need a walk, not a copy); *skip: its
 * values cannot be hashed (references, variable-length sequences: dpscale writes
 * none), only its type and shape are. -1 when the type cannot be converted. */
static hid_t canon_type(hid_t ft, int depth, int *vlen, int *skip)
{
    if (depth > MAX_TYPE_DEPTH) return -1;
    switch (H5Tget_class(ft)) {
    case H5T_INTEGER: return H5Tcopy(H5Tget_sign(ft) == H5T_SGN_NONE ? H5T_STD_U64LE : H5T_STD_I64LE);
    case H5T_FLOAT: return H5Tcopy(H5T_IEEE_F64LE);
    case H5T_STRING: {
        if (H5Tis_variable_str(ft) <= 0) return H5Tcopy(ft);
        hid_t m = H5Tcopy(H5T_C_S1);
        H5Tset_size(m, H5T_VARIABLE);
        H5Tset_cset(m, H5Tget_cset(ft));
        *vlen = 1;
        return m;
    }
    case H5T_COMPOUND: {
        const int n = H5Tget_nmembers(ft);
        if (n < 1 || n > MAX_MEMBERS) return -1;
        hid_t *mt = calloc((size_t)n, sizeof *mt);
        size_t size = 0;
        hid_t out = -1;
        int ok = mt != NULL;
        for (int k = 0; ok && k < n; k++) {
            hid_t m = H5Tget_member_type(ft, (unsigned)k);
            mt[k] = m >= 0 ? canon_type(m, depth + 1, vlen, skip) : -1;
            if (m >= 0) H5Tclose(m);
            ok = mt[k] >= 0 && H5Tget_size(mt[k]) > 0 && H5Tget_size(mt[k]) <= MAX_VALUE_BYTES - size;
            if (ok) size += H5Tget_size(mt[k]);
        }
        if (ok) out = H5Tcreate(H5T_COMPOUND, size);
        size = 0;
        for (int k = 0; out >= 0 && k < n; k++) {
            char *name = H5Tget_member_name(ft, (unsigned)k);
            if (name == NULL || H5Tinsert(out, name, size, mt[k]) < 0) {
                H5Tclose(out);
                out = -1;
            }
            if (name != NULL) H5free_memory(name);
            size += out >= 0 ? H5Tget_size(mt[k]) : 0;
        }
        for (int k = 0; mt != NULL && k < n; k++)
            if (mt[k] > 0) H5Tclose(mt[k]);
        free(mt);
        return out;
    }
    case H5T_ARRAY: {
        hsize_t dims[H5S_MAX_RANK];
        const int nd = H5Tget_array_ndims(ft);
        if (nd < 1 || nd > H5S_MAX_RANK || H5Tget_array_dims2(ft, dims) != nd) return -1;
        hid_t base = H5Tget_super(ft), mb = base >= 0 ? canon_type(base, depth + 1, vlen, skip) : -1;
        hid_t out = mb >= 0 ? H5Tarray_create2(mb, (unsigned)nd, dims) : -1;
        if (base >= 0) H5Tclose(base);
        if (mb >= 0) H5Tclose(mb);
        return out;
    }
    case H5T_VLEN:
    case H5T_REFERENCE: *skip = 1; return H5Tcopy(ft);
    default: return H5Tcopy(ft);
    }
}

/* One value of canonical type mt that holds a variable-length string. */
static int put_value(struct canon *c, hid_t mt, const unsigned char *v, int depth)
{
    if (depth > MAX_TYPE_DEPTH) return -1;
    switch (H5Tget_class(mt)) {
    case H5T_STRING:
        if (H5Tis_variable_str(mt) > 0) {
            const char *s;
            memcpy(&s, v, sizeof s);
            if (s != NULL) put_str(c, s);
            else put_u64(c, UINT64_MAX);
        } else {
            put(c, v, H5Tget_size(mt));
        }
        return 0;
    case H5T_COMPOUND: {
        const int n = H5Tget_nmembers(mt);
        for (int k = 0; k < n; k++) {
            hid_t m = H5Tget_member_type(mt, (unsigned)k);
            const int rc = m >= 0 ? put_value(c, m, v + H5Tget_member_offset(mt, (unsigned)k), depth + 1) : -1;
            if (m >= 0) H5Tclose(m);
            if (rc != 0) return -1;
        }
        return 0;
    }
    case H5T_ARRAY: {
        hid_t base = H5Tget_super(mt);
        const size_t bs = base >= 0 ? H5Tget_size(base) : 0;
        int rc = bs > 0 ? 0 : -1;
        for (size_t i = 0; rc == 0 && i < H5Tget_size(mt) / bs; i++) rc = put_value(c, base, v + i * bs, depth + 1);
        if (base >= 0) H5Tclose(base);
        return rc;
    }
    default: put(c, v, H5Tget_size(mt)); return 0;
    }
}

/* The type, shape and values of attribute `a` (a >= 0) or dataset `d`; what is
 * hashed when either is read. -1 (the reason in w) when it cannot be read. */
static int put_contents(struct walk *w, hid_t a, hid_t d, const char *what)
{
    struct canon *c = &w->c;
    hid_t ft = a >= 0 ? H5Aget_type(a) : H5Dget_type(d), sp = a >= 0 ? H5Aget_space(a) : H5Dget_space(d), mt = -1;
    void *buf = NULL;
    int rc = -1, vlen = 0, skip = 0;
    hsize_t dims[H5S_MAX_RANK];
    const int rank = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    const hssize_t n = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
    if (ft < 0 || rank < 0 || rank > H5S_MAX_RANK || n < 0 || H5Sget_simple_extent_dims(sp, dims, NULL) != rank ||
        put_type(c, ft, 0) != 0) {
        fail(w, "%s%s has a type or shape that cannot be read", what, "");
        goto done;
    }
    put_u64(c, (uint64_t)H5Sget_simple_extent_type(sp));
    put_u64(c, (uint64_t)rank);
    for (int i = 0; i < rank; i++) put_u64(c, dims[i]);
    if ((mt = canon_type(ft, 0, &vlen, &skip)) < 0) {
        fail(w, "%s%s has a type that cannot be read", what, "");
        goto done;
    }
    const size_t size = H5Tget_size(mt);
    if (n == 0 || skip) {
        rc = 0;
        goto done;
    }
    if (size == 0 || (size_t)n > MAX_VALUE_BYTES / size || (buf = calloc((size_t)n, size)) == NULL) {
        fail(w, "%s%s holds more values than a result file does", what, "");
        goto done;
    }
    if ((a >= 0 ? H5Aread(a, mt, buf) : H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf)) < 0) {
        fail(w, "%s%s cannot be read", what, "");
        goto done;
    }
    rc = 0;
    if (!vlen) put(c, buf, (size_t)n * size);
    for (size_t i = 0; vlen && rc == 0 && i < (size_t)n; i++) rc = put_value(c, mt, (unsigned char *)buf + i * size, 0);
    if (vlen) H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, buf);
    if (rc != 0) fail(w, "%s%s has values that cannot be read", what, "");
done:
    free(buf);
    if (mt >= 0) H5Tclose(mt);
    if (sp >= 0) H5Sclose(sp);
    if (ft >= 0) H5Tclose(ft);
    return rc;
}

struct attr_walk {
    struct walk *w;
    const char *path;
    int root;
};

static herr_t put_attribute(hid_t loc, const char *name, const H5A_info_t *info, void *data)
{
    (void)info;
    struct attr_walk *aw = data;
    if (aw->root && (strcmp(name, CHECKSUM_ATTR) == 0)) return 0; /* the list itself */
    char what[600];
    snprintf(what, sizeof what, "the attribute %.64s of %.500s", name, aw->path);
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    if (a < 0) return fail(aw->w, "%s%s cannot be opened", what, "");
    put_str(&aw->w->c, name);
    const int rc = put_contents(aw->w, a, -1, what);
    H5Aclose(a);
    return rc < 0 ? -1 : 0;
}

/* ---- the walk ---- */

struct members {
    size_t n, cap;
    char **name;
    int *hard; /* a hard link (followed); soft and external links are hashed by name, never followed */
};

static herr_t add_member(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    (void)g;
    struct members *m = data;
    if (m->n == m->cap) {
        const size_t cap = m->cap ? 2 * m->cap : 16;
        char **names = cap <= MAX_OBJECTS ? realloc(m->name, cap * sizeof *names) : NULL;
        if (names != NULL) m->name = names;
        int *hard = names != NULL ? realloc(m->hard, cap * sizeof *hard) : NULL;
        if (hard == NULL) return -1;
        m->hard = hard;
        m->cap = cap;
    }
    if ((m->name[m->n] = strdup(name)) == NULL) return -1;
    m->hard[m->n++] = info->type == H5L_TYPE_HARD;
    return 0;
}

static void free_members(struct members *m)
{
    for (size_t i = 0; i < m->n; i++) free(m->name[i]);
    free(m->name);
    free(m->hard);
}

/* The object's line of the list, given its hash; `out` holds 24 + strlen(path) bytes. */
static void line_of(char *out, size_t len, uint64_t hash, const char *path)
{
    snprintf(out, len, ALGORITHM ":%016" PRIx64 " %s", hash, path);
}

/* Seal: append the line. Check: compare it with the list's next line. */
static int account(struct walk *w, const char *line, const char *path)
{
    if (w->seal) {
        put(&w->list, line, strlen(line));
        put(&w->list, "\n", 1);
        return w->list.full ? fail(w, "the list of checksums is too long%s%s", "", "") : 0;
    }
    const char *nl = strchr(w->expect, '\n');
    const size_t len = nl != NULL ? (size_t)(nl - w->expect) : strlen(w->expect);
    if (len == 0) return fail(w, "%s is not in its list of checksums%s", path, "");
    if (len == strlen(line) && memcmp(line, w->expect, len) == 0) {
        w->expect += len + (nl != NULL);
        return 0;
    }
    const size_t head = sizeof ALGORITHM ":0123456789abcdef " - 1;
    if (len == strlen(line) && len > head && memcmp(line + head, w->expect + head, len - head) == 0)
        return fail(w, "the checksum of %s does not match its contents%s", path, "");
    char listed[600];
    snprintf(listed, sizeof listed, "%.*s", (int)(len > head ? len - head : 0), w->expect + (len > head ? head : len));
    return fail(w, "its list of checksums names %s where the file holds %s", listed[0] ? listed : "nothing", path);
}

static int visit(struct walk *w, hid_t obj, const char *path, int depth)
{
    struct members m = {0};
    char *line = NULL;
    int rc = -1;
    const H5I_type_t type = H5Iget_type(obj);
    if (++w->nobjects > MAX_OBJECTS) return fail(w, "more than %s objects%s", "200000", "");
    if (depth > MAX_DEPTH) return fail(w, "%s lies deeper than any result file's groups (a loop?)%s", path, "");
    w->c.n = 0;
    w->c.full = 0;
    put_u64(&w->c, type == H5I_GROUP ? 'G' : type == H5I_DATASET ? 'D' : 'T');
    struct attr_walk aw = {w, path, depth == 0};
    hsize_t at = 0;
    if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &at, put_attribute, &aw) < 0) {
        fail(w, "the attributes of %s cannot be read%s", path, "");
        goto done;
    }
    if (type == H5I_DATASET && put_contents(w, -1, obj, path) != 0) goto done;
    if (type == H5I_DATATYPE && put_type(&w->c, obj, 0) != 0) {
        fail(w, "the type %s cannot be read%s", path, "");
        goto done;
    }
    if (type == H5I_GROUP) {
        if (H5Literate(obj, H5_INDEX_NAME, H5_ITER_INC, NULL, add_member, &m) < 0) {
            fail(w, "the members of %s cannot be read%s", path, "");
            goto done;
        }
        put_u64(&w->c, m.n);
        for (size_t i = 0; i < m.n; i++) {
            put_str(&w->c, m.name[i]);
            put_u64(&w->c, (uint64_t)m.hard[i]);
        }
    }
    if (w->c.full) {
        fail(w, "%s is larger than this dpscale checks%s", path, "");
        goto done;
    }
    const size_t len = strlen(path) + 32;
    if ((line = malloc(len)) == NULL) {
        fail(w, "out of memory%s%s", "", "");
        goto done;
    }
    line_of(line, len, checksum_xxh64(w->c.p, w->c.n, 0), path);
    if (account(w, line, path) != 0) goto done;
    rc = 0;
    for (size_t i = 0; rc == 0 && i < m.n; i++) {
        if (!m.hard[i]) continue;
        const size_t plen = strlen(path) + strlen(m.name[i]) + 2;
        char *sub = malloc(plen);
        hid_t o = sub != NULL ? H5Oopen(obj, m.name[i], H5P_DEFAULT) : -1;
        if (sub != NULL) snprintf(sub, plen, "%s%s%s", path, depth == 0 ? "" : "/", m.name[i]);
        rc = o >= 0 ? visit(w, o, sub, depth + 1) : fail(w, "%s cannot be opened%s", sub != NULL ? sub : m.name[i], "");
        if (o >= 0) H5Oclose(o);
        free(sub);
    }
done:
    free(line);
    free_members(&m);
    return rc;
}

static int write_text_attr(hid_t root, const char *name, const char *value)
{
    hid_t t = H5Tcopy(H5T_C_S1), s = H5Screate(H5S_SCALAR), a = -1;
    int rc = -1;
    if (t >= 0 && s >= 0 && H5Tset_size(t, H5T_VARIABLE) >= 0 && H5Tset_cset(t, H5T_CSET_UTF8) >= 0 &&
        (H5Aexists(root, name) <= 0 || H5Adelete(root, name) >= 0) &&
        (a = H5Acreate2(root, name, t, s, H5P_DEFAULT, H5P_DEFAULT)) >= 0 && H5Awrite(a, t, &value) >= 0)
        rc = 0;
    if (a >= 0) H5Aclose(a);
    if (s >= 0) H5Sclose(s);
    if (t >= 0) H5Tclose(t);
    return rc;
}

int checksum_seal(hid_t file, char *err, size_t errlen)
{
    struct walk w = {.seal = 1, .err = err, .errlen = errlen};
    hid_t root = H5Oopen(file, "/", H5P_DEFAULT);
    int rc = -1;
    if (root < 0) {
        fail(&w, "the root group cannot be opened%s%s", "", "");
        return -1;
    }
    /* the algorithm first: the root's hash covers it, the list it heads does not */
    if (write_text_attr(root, ALGORITHM_ATTR, ALGORITHM) != 0 || (H5Aexists(root, CHECKSUM_ATTR) > 0 && H5Adelete(root, CHECKSUM_ATTR) < 0)) {
        fail(&w, "the attribute %s cannot be written%s", ALGORITHM_ATTR, "");
    } else if (visit(&w, root, "/", 0) == 0) {
        put(&w.list, "", 1);
        if (w.list.full || write_text_attr(root, CHECKSUM_ATTR, (const char *)w.list.p) != 0)
            fail(&w, "the attribute %s cannot be written%s", CHECKSUM_ATTR, "");
        else rc = 0;
    }
    H5Oclose(root);
    free(w.c.p);
    free(w.list.p);
    return rc;
}

/* The number of the first line of the list that is not "xxh64:<16 lowercase hex
 * digits> <path>" (line_of's form), or 0 when every line is: a list cut short, or
 * one whose digits were damaged, is named as malformed rather than as a mismatch. */
static size_t first_malformed_line(const char *list)
{
    const size_t head = sizeof ALGORITHM ":" - 1;
    size_t number = 1;
    for (const char *line = list; *line; number++) {
        const size_t len = strcspn(line, "\n");
        int ok = len > head + 17 && strncmp(line, ALGORITHM ":", head) == 0 && line[head + 16] == ' ' &&
                 line[head + 17] == '/';
        for (size_t i = head; ok && i < head + 16; i++)
            ok = (line[i] >= '0' && line[i] <= '9') || (line[i] >= 'a' && line[i] <= 'f');
        if (!ok) return number;
        line += len + (line[len] == '\n');
    }
    return number == 1 ? 1 : 0; /* an empty list is malformed too: every file has a root */
}

/* The list of checksums: a scalar string, up to MAX_LIST_BYTES; NULL (err) otherwise. */
static char *read_list(hid_t root, struct walk *w)
{
    char *list = h5_attr_text(root, CHECKSUM_ATTR, MAX_LIST_BYTES);
    if (list == NULL) fail(w, "its list of checksums (/ %s) cannot be read%s", CHECKSUM_ATTR, "");
    return list;
}

int checksum_verify(hid_t file, char *err, size_t errlen)
{
    struct walk w = {.seal = 0, .err = err, .errlen = errlen};
    hid_t root = H5Oopen(file, "/", H5P_DEFAULT);
    if (root < 0) return fail(&w, "the root group cannot be opened%s%s", "", "");
    /* H5Aexists fails (< 0), rather than says no, when the root's attribute messages are
     * damaged: that is no file written before dpscale sealed its files */
    const htri_t list_there = H5Aexists(root, CHECKSUM_ATTR), algorithm_there = H5Aexists(root, ALGORITHM_ATTR);
    const int has_list = list_there > 0, has_algorithm = algorithm_there > 0;
    int rc = -1;
    size_t malformed = 0;
    char *list = NULL, algorithm[16] = "", line[32];
    if (list_there < 0 || algorithm_there < 0) {
        fail(&w, "its root's attributes cannot be read, so whether it has checksums cannot be told%s%s", "", "");
    } else if (!has_list && !has_algorithm) {
        rc = 0; /* written before dpscale sealed its files */
    } else if (has_list != has_algorithm) {
        fail(&w, "its root has %s without %s", has_list ? CHECKSUM_ATTR : ALGORITHM_ATTR, has_list ? ALGORITHM_ATTR : CHECKSUM_ATTR);
    } else if ((list = read_list(root, &w)) != NULL) {
        char *v = h5_attr_text(root, ALGORITHM_ATTR, SIZE_MAX);
        if (v != NULL) snprintf(algorithm, sizeof algorithm, "%s", v);
        free(v);
        if (strcmp(algorithm, ALGORITHM) != 0) {
            fail(&w, "its checksums are of an algorithm this dpscale does not know (%s), not %s", algorithm, ALGORITHM);
        } else if ((malformed = first_malformed_line(list)) != 0) {
            snprintf(line, sizeof line, "%zu", malformed);
            fail(&w, "its list of checksums is malformed: line %s is not " ALGORITHM ":<16 hex digits> <path>%s", line,
                 "");
        } else {
            w.expect = list;
            if (visit(&w, root, "/", 0) == 0) {
                if (*w.expect == '\0') {
                    rc = 1;
                } else {
                    char missing[600];
                    const char *sp = strchr(w.expect, ' ');
                    snprintf(missing, sizeof missing, "%.*s", (int)strcspn(sp != NULL ? sp + 1 : w.expect, "\n"),
                             sp != NULL ? sp + 1 : w.expect);
                    fail(&w, "%s, in its list of checksums, is not in the file%s", missing, "");
                }
            }
        }
    }
    free(list);
    free(w.c.p);
    H5Oclose(root);
    return rc;
}

/* A file's bytes opened as HDF5 in memory (the core driver, nothing on disk): the
 * seal is made on a copy no other process can reach, by name or otherwise. */
static hid_t open_image(void *buf, size_t size, unsigned flags, const char *name)
{
    const hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    hid_t f = -1;
    if (fapl >= 0 && H5Pset_fapl_core(fapl, 1 << 20, 0) >= 0 && H5Pset_file_image(fapl, buf, size) >= 0)
        f = H5Fopen(name, flags, fapl);
    if (fapl >= 0) H5Pclose(fapl);
    return f;
}

void *checksum_seal_image(void *buf, size_t size, size_t *sealed_size, char *err, size_t errlen)
{
    char why[512] = "";
    void *out = NULL;
    ssize_t n = -1;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a failure is said in one line, not HDF5's stack */
    hid_t f = open_image(buf, size, H5F_ACC_RDWR, "dpscale-seal");
    int rc = f >= 0 && checksum_seal(f, why, sizeof why) == 0 && H5Fflush(f, H5F_SCOPE_GLOBAL) >= 0 ? 0 : -1;
    if (rc == 0 && (n = H5Fget_file_image(f, NULL, 0)) > 0 && (out = malloc((size_t)n)) != NULL &&
        H5Fget_file_image(f, out, (size_t)n) != n)
        rc = -1;
    if (rc == 0 && (n <= 0 || out == NULL)) rc = -1;
    if (f >= 0 && H5Fclose(f) < 0) rc = -1;
    if (rc != 0) {
        snprintf(err, errlen, "sealing it failed: %s", why[0] ? why : "HDF5 cannot write it");
        free(out);
        return NULL;
    }
    f = open_image(out, (size_t)n, H5F_ACC_RDONLY, "dpscale-seal-check");
    if (f < 0 || checksum_verify(f, why, sizeof why) != 1) {
        snprintf(err, errlen, "the sealed copy does not verify: %s", why[0] ? why : "it cannot be opened");
        rc = -1;
    }
    if (f >= 0) H5Fclose(f);
    if (rc != 0) {
        free(out);
        return NULL;
    }
    *sealed_size = (size_t)n;
    return out;
}

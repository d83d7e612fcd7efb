/* systems.c — reading a catalog entry (systems.h) with libinih: [system] and one
 * [curve.<label>] section per GPU count, sizes in MiB and busbw in GB/s. As strict as
 * the config reader (config_ini.c): the file is handed to libinih one line at a time,
 * so that every refusal names its line; a key, a section or a number this reader does
 * not know is refused rather than read as 0, and text (a curve's source) that would
 * reach a terminal raw (ESC, BEL, bytes that are not UTF-8) is refused at the line. */
#include "project/systems.h"

#include <ini.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "base/ini_lines.h"
#include "base/safe_file.h"

#define SYSTEM_MAX_FILE_BYTES (1 << 20) /* a catalog entry is a page of text */

struct reading {
    struct ini_lines lines; /* the reader's: path, line, the first refused line (into err) */
    struct system_desc *s;
    double busbw[SYSTEM_MAX_CURVES][PROJECT_MAX_POINTS];
    int nbusbw[SYSTEM_MAX_CURVES];
    unsigned seen[SYSTEM_MAX_CURVES + 1]; /* keys set per section ([system] last): a duplicate is refused */
    char section[64];
    int cur; /* the curve being read, -1 in [system] */
    char err[512];
};

/* The sections a catalog entry has: [system] and [curve.<label>]. */
static int section_known(const char *name, size_t n)
{
    return (n == 6 && memcmp(name, "system", 6) == 0) || (n > 6 && memcmp(name, "curve.", 6) == 0);
}

/* What each key takes. Ranges: what a catalog figure can be, with room (a GPU's peak
 * TFLOP/s, a bus bandwidth in GB/s), so that a typo of three orders of magnitude or a
 * sign is refused instead of projected. */
enum key_kind { CAT_TEXT, CAT_INT, CAT_NUMBER, CAT_LIST };
struct catalog_key {
    const char *name;
    int in_curve; /* 0: [system], 1: [curve.*] */
    enum key_kind kind;
    double least, most; /* numbers: inclusive; CAT_TEXT: most = the longest text */
    int positive;       /* numbers must be above least, not equal to it */
};
static const struct catalog_key catalog_keys[] = {
    {"name", 0, CAT_TEXT, 1, sizeof(((struct system_desc *)0)->name) - 1, 0},
    {"description", 0, CAT_TEXT, 0, 400, 0},
    {"gpu", 0, CAT_TEXT, 1, sizeof(((struct system_desc *)0)->gpu) - 1, 0},
    {"gpus_per_node", 0, CAT_INT, 1, 1024, 0},
    {"peak_tflops_bf16", 0, CAT_NUMBER, 0, 1e5, 1},
    {"peak_tflops_fp32", 0, CAT_NUMBER, 0, 1e5, 1},
    {"interconnect", 0, CAT_TEXT, 0, sizeof(((struct system_desc *)0)->interconnect) - 1, 0},
    {"date", 0, CAT_TEXT, 0, 40, 0},
    {"gpus", 1, CAT_INT, 2, 1 << 20, 0},
    {"nodes", 1, CAT_INT, 1, 1 << 16, 0},
    {"sizes_mib", 1, CAT_LIST, 0, 1 << 20, 1},  /* up to 1 TiB a message */
    {"busbw_gbps", 1, CAT_LIST, 0, 1e5, 1},     /* 100 TB/s: far above any link */
    {"latency_us", 1, CAT_NUMBER, 0, 1e7, 0},   /* read, and not used: the busbw holds the per-call cost */
    {"source", 1, CAT_TEXT, 1, SYSTEM_TEXT - 1, 0},
    {"derived", 1, CAT_TEXT, 0, SYSTEM_TEXT - 1, 0},
};
#define NKEYS (sizeof catalog_keys / sizeof catalog_keys[0])

static void accepted_keys(int in_curve, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < NKEYS && used < len; i++)
        if (catalog_keys[i].in_curve == in_curve)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "", catalog_keys[i].name);
}

static void describe_accepted(const struct catalog_key *k, char *buf, size_t len)
{
    if (k->kind == CAT_TEXT)
        snprintf(buf, len, "text of %.0f to %.0f bytes", k->least, k->most);
    else if (k->kind == CAT_INT)
        snprintf(buf, len, "a whole number from %.0f to %.0f", k->least, k->most);
    else
        snprintf(buf, len, "%s %s %g and at most %g", k->kind == CAT_LIST ? "numbers separated by commas, each" : "a number",
                 k->positive ? "above" : "from", k->least, k->most);
}

/* One number, the whole of text: finite, in the key's range. 0, or -1. */
static int parse_number(const char *text, const struct catalog_key *k, double *v)
{
    char *end;
    const double x = strtod(text, &end);
    if (end == text || *end != '\0' || !isfinite(x) || x > k->most || (k->positive ? x <= k->least : x < k->least))
        return -1;
    if (k->kind == CAT_INT && x != floor(x)) return -1;
    for (const char *p = text; *p; p++) /* hex and exponents read as whole numbers are not what anyone means here */
        if (k->kind == CAT_INT && (*p < '0' || *p > '9')) return -1;
    *v = x;
    return 0;
}

/* "1, 4, 16" into v: the count, or -1 on a bad number, an empty item or past max */
static int parse_list(const char *text, const struct catalog_key *k, double *v, int max)
{
    int n = 0;
    const char *p = text;
    for (;;) {
        while (*p == ' ' || *p == '\t') p++;
        const char *item = p;
        while (*p != '\0' && *p != ',') p++;
        const char *stop = p;
        while (stop > item && (stop[-1] == ' ' || stop[-1] == '\t')) stop--;
        char one[64];
        if (stop == item || (size_t)(stop - item) >= sizeof one || n == max) return -1;
        memcpy(one, item, (size_t)(stop - item));
        one[stop - item] = '\0';
        if (parse_number(one, k, &v[n]) != 0) return -1;
        n++;
        if (*p == '\0') return n;
        p++; /* the comma */
    }
}

static int on_entry(void *user, const char *section, const char *key, const char *value)
{
    struct reading *r = user;
    struct system_desc *s = r->s;
    char accepted[400];
    if (r->lines.failed_line != 0) return 0;
    r->lines.failed_line = r->lines.line; /* cleared on success */
    if (strcmp(section, r->section) != 0 || section[0] == '\0') { /* a new section */
        snprintf(r->section, sizeof r->section, "%s", section);
        if (strcmp(section, "system") == 0) {
            r->cur = -1;
        } else if (strncmp(section, "curve.", 6) == 0 && section[6] != '\0') {
            for (int i = 0; i < s->ncurves; i++) /* libinih gives no event for a header: a label met again */
                if (strcmp(r->s->curves[i].label, section + 6) == 0) {
                    snprintf(r->err, sizeof r->err, "%s:%d: [%s] appears twice; give each curve one section", r->lines.path,
                             r->lines.line, section);
                    return 0;
                }
            if (s->ncurves == SYSTEM_MAX_CURVES) {
                snprintf(r->err, sizeof r->err, "%s:%d: more than %d [curve.*] sections; keep at most %d", r->lines.path,
                         r->lines.line, SYSTEM_MAX_CURVES, SYSTEM_MAX_CURVES);
                return 0;
            }
            r->cur = s->ncurves++;
            snprintf(s->curves[r->cur].label, sizeof s->curves[r->cur].label, "%.31s", section + 6);
        } else {
            snprintf(r->err, sizeof r->err, "%s:%d: %s%s%s; accepted sections: [system] and [curve.<label>] "
                     "(configs/systems/README.md)", r->lines.path, r->lines.line, section[0] ? "unknown section [" : "'",
                     section[0] ? section : key, section[0] ? "]" : "' is outside any section");
            return 0;
        }
    }
    const int in_curve = r->cur >= 0;
    const struct catalog_key *k = NULL;
    for (size_t i = 0; i < NKEYS && k == NULL; i++)
        if (catalog_keys[i].in_curve == in_curve && strcmp(catalog_keys[i].name, key) == 0) k = &catalog_keys[i];
    if (k == NULL) {
        accepted_keys(in_curve, accepted, sizeof accepted);
        snprintf(r->err, sizeof r->err, "%s:%d: unknown key '%.60s' in [%s]; accepted keys: %s", r->lines.path, r->lines.line, key,
                 section, accepted);
        return 0;
    }
    const unsigned bit = 1u << (k - catalog_keys);
    unsigned *seen = &r->seen[in_curve ? r->cur : SYSTEM_MAX_CURVES];
    if (*seen & bit) {
        snprintf(r->err, sizeof r->err, "%s:%d: duplicate key [%s] %s; keep one", r->lines.path, r->lines.line, section, key);
        return 0;
    }
    *seen |= bit;
    double v = 0;
    int ok;
    struct system_curve *c = in_curve ? &s->curves[r->cur] : NULL;
    switch (k->kind) {
    case CAT_TEXT: {
        const size_t len = strlen(value);
        ok = len >= (size_t)k->least && len <= (size_t)k->most;
        if (!ok) break;
        char *to = NULL;
        if (strcmp(key, "name") == 0) to = s->name;
        else if (strcmp(key, "gpu") == 0) to = s->gpu;
        else if (strcmp(key, "interconnect") == 0) to = s->interconnect;
        else if (strcmp(key, "source") == 0) to = c->source;
        else if (strcmp(key, "derived") == 0) to = c->derived;
        if (to != NULL) memcpy(to, value, len + 1); /* the lengths are the fields' */
        break;
    }
    case CAT_INT:
    case CAT_NUMBER:
        ok = parse_number(value, k, &v) == 0;
        if (!ok) break;
        if (strcmp(key, "gpus_per_node") == 0) s->gpus_per_node = (int)v;
        else if (strcmp(key, "peak_tflops_bf16") == 0) s->peak_tflops_bf16 = v;
        else if (strcmp(key, "peak_tflops_fp32") == 0) s->peak_tflops_fp32 = v;
        else if (strcmp(key, "gpus") == 0) c->curve.gpus = (int)v;
        else if (strcmp(key, "nodes") == 0) c->curve.nodes = (int)v;
        break;
    case CAT_LIST:
    default:
        if (strcmp(key, "sizes_mib") == 0) {
            c->curve.npoints = parse_list(value, k, c->curve.size_bytes, PROJECT_MAX_POINTS);
            ok = c->curve.npoints > 0;
            for (int i = 0; i < c->curve.npoints; i++) c->curve.size_bytes[i] *= 1024.0 * 1024.0;
        } else {
            r->nbusbw[r->cur] = parse_list(value, k, r->busbw[r->cur], PROJECT_MAX_POINTS);
            ok = r->nbusbw[r->cur] > 0;
        }
        break;
    }
    if (!ok) {
        char shown[64];
        describe_accepted(k, accepted, sizeof accepted);
        snprintf(shown, sizeof shown, "%.40s%s", value, strlen(value) > 40 ? "..." : "");
        snprintf(r->err, sizeof r->err, "%s:%d: [%s] %s = %s is not accepted; expected %s%s", r->lines.path, r->lines.line, section,
                 key, shown, accepted, k->kind == CAT_LIST ? " (at most 64)" : "");
        return 0;
    }
    r->lines.failed_line = 0;
    return 1;
}

static int by_gpus(const void *a, const void *b)
{
    return ((const struct system_curve *)a)->curve.gpus - ((const struct system_curve *)b)->curve.gpus;
}

int system_read(const char *path, struct system_desc *s, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    struct reading *r = calloc(1, sizeof *r);
    if (r == NULL) {
        snprintf(err, errlen, "out of memory reading %s", path);
        return -1;
    }
    r->s = s;
    r->cur = -1;
    char *text = NULL, why[512];
    size_t len;
    int bad = 1;
    if (safe_file_read_text(path, "system description", SYSTEM_MAX_FILE_BYTES, &text, &len, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s cannot be read (%s); give a file of configs/systems/", path, why);
        goto done;
    }
    ini_lines_init(&r->lines, path, "catalog entry", text, len, r->err, sizeof r->err);
    r->lines.section_known = section_known;
    r->lines.accepted = "[system] and [curve.<label>] (configs/systems/README.md)";
    config_ini_set_line_limit();
    if (ini_lines_finish(&r->lines, ini_parse_stream(ini_lines_read, &r->lines, on_entry, r)) != 0) {
        snprintf(err, errlen, "%s", r->err);
        goto done;
    }
    if (s->ncurves == 0 || s->gpu[0] == '\0') {
        snprintf(err, errlen, "%s has no [system] gpu or no [curve.*] section; see configs/systems/README.md", path);
        goto done;
    }
    for (int i = 0; i < s->ncurves; i++) {
        struct allreduce_curve *c = &s->curves[i].curve;
        if (c->gpus < 2 || c->npoints < 1 || r->nbusbw[i] != c->npoints || s->curves[i].source[0] == '\0') {
            snprintf(err, errlen, "%s: [curve.%s] needs gpus (2 or more), a source, and as many busbw_gbps as sizes_mib "
                     "(%d and %d)", path, s->curves[i].label, r->nbusbw[i], c->npoints);
            goto done;
        }
        if (c->nodes < 1) c->nodes = 1;
        for (int k = 0; k < c->npoints; k++) {
            if (k > 0 && c->size_bytes[k] <= c->size_bytes[k - 1]) {
                snprintf(err, errlen, "%s: [curve.%s] sizes_mib must ascend", path, s->curves[i].label);
                goto done;
            }
            c->time_s[k] = allreduce_time_from_busbw(c->gpus, c->size_bytes[k], r->busbw[i][k], 0.0);
        }
    }
    qsort(s->curves, (size_t)s->ncurves, sizeof s->curves[0], by_gpus);
    bad = 0;
done:
    free(text);
    free(r);
    return bad ? -1 : 0;
}

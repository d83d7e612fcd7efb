/* config_value.c — a key of the table (config_keys.c) and its value: the key by its
 * name (and the names of earlier versions), the strict parsing of a value into its
 * field of struct config, the value formatted back, and what a key accepts, for the
 * messages. The INI reader (config_ini.c) and the command line (config.c) both parse
 * through here. */
#include "config/config_value.h"
#include "config/config.h"
#include "base/safe_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct config_key *config_find_key(const char *section, const char *name)
{
    for (size_t i = 0; i < config_nkeys; i++)
        if (strcmp(config_keys[i].section, section) == 0 && strcmp(config_keys[i].name, name) == 0)
            return &config_keys[i];
    return NULL;
}

const char *config_enum_name(const struct config_key *key, int value)
{
    for (int i = 0; key->choices[i] != NULL; i++)
        if (i == value) return key->choices[i];
    return "?";
}

const char *config_value_name(const struct config *cfg, const char *section, const char *name)
{
    const struct config_key *key = config_find_key(section, name);
    if (key == NULL || key->type != KEY_ENUM) return "?";
    return config_enum_name(key, *(const int *)((const char *)cfg + key->offset));
}

static void join_choices(const struct config_key *key, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; key->choices[i] != NULL; i++) {
        if (i > 0) strncat(buf, "|", len - strlen(buf) - 1);
        strncat(buf, key->choices[i], len - strlen(buf) - 1);
    }
}

/* "accepted: ..." text for a key, used in every value error. */
void config_describe_accepted(const struct config_key *key, char *buf, size_t len)
{
    char choices[256];
    switch (key->type) {
    case KEY_INT:
    case KEY_INT64: snprintf(buf, len, "an integer in [%.0f, %.0f]", key->min, key->max); break;
    case KEY_DOUBLE: snprintf(buf, len, "a decimal number in [%g, %g]", key->min, key->max); break;
    case KEY_ENUM:
        join_choices(key, choices, sizeof choices);
        snprintf(buf, len, "one of %s", choices);
        break;
    case KEY_BOOL: snprintf(buf, len, "on|off"); break;
    case KEY_STRING:
        snprintf(buf, len, "text of at most %d characters, without control characters",
                 key->max > 0 ? (int)key->max : CONFIG_STR_LEN - 1);
        break;
    case KEY_INTLIST:
        snprintf(buf, len, "a comma-separated list of at most %d integers in [%.0f, %.0f]", CONFIG_MAX_SWEEP, key->min,
                 key->max);
        break;
    }
}

/* Strict numbers: strtoll and strtod alone accept what no configuration means
 * ("0x10", " 7", "1e3" for an integer, "0x1p-3", "inf", "nan"), and comparing a
 * long long to a double bound rounds 2^62 + 1 down to 2^62. */
static int all_digits(const char *p, const char **end)
{
    const char *start = p;
    while (*p >= '0' && *p <= '9') p++;
    *end = p;
    return (int)(p - start);
}

int config_parse_int(const char *text, long long min, long long max, long long *out)
{
    const char *p = text, *end;
    if (*p == '+' || *p == '-') p++;
    if (all_digits(p, &end) == 0 || *end != '\0') return -1;
    char *stop;
    errno = 0;
    const long long v = strtoll(text, &stop, 10);
    if (errno == ERANGE || *stop != '\0' || v < min || v > max) return -1;
    *out = v;
    return 0;
}

int config_parse_double(const char *text, double min, double max, double *out)
{
    /* [sign] digits [. digits] [e [sign] digits], or [sign] . digits [e ...]: decimal only */
    const char *p = text, *end;
    if (*p == '+' || *p == '-') p++;
    int digits = all_digits(p, &end);
    p = end;
    if (*p == '.') {
        digits += all_digits(p + 1, &end);
        p = end;
    }
    if (digits == 0) return -1;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (all_digits(p, &end) == 0) return -1;
        p = end;
    }
    if (*p != '\0') return -1;
    char *stop;
    errno = 0;
    const double v = strtod(text, &stop);
    if (errno == ERANGE || *stop != '\0' || !isfinite(v) || v < min || v > max) return -1;
    *out = v;
    return 0;
}

/* A key's bounds as integers: the table keeps them as doubles, every one integral
 * and below 2^63. */
static int parse_integer(const struct config_key *key, const char *text, long long *out)
{
    return config_parse_int(text, (long long)key->min, (long long)key->max, out);
}

void config_quote_value(const char *value, char *buf, size_t len)
{
    const size_t n = strlen(value);
    if (n <= 80) snprintf(buf, len, "'%s'", value);
    else snprintf(buf, len, "'%.48s...' (%zu characters)", value, n); /* the message stays one readable line */
}

/* Store `text` into the field of `key`. Returns 0, or -1 when it is not accepted. */
int config_parse_value(struct config *cfg, const struct config_key *key, const char *text)
{
    char *field = (char *)cfg + key->offset;
    long long iv;
    switch (key->type) {
    case KEY_INT:
        if (parse_integer(key, text, &iv) != 0) return -1;
        *(int *)field = (int)iv;
        return 0;
    case KEY_INT64:
        if (parse_integer(key, text, &iv) != 0) return -1;
        *(long long *)field = iv;
        return 0;
    case KEY_DOUBLE:
        return config_parse_double(text, key->min, key->max, (double *)field);
    case KEY_ENUM:
        for (int i = 0; key->choices[i] != NULL; i++)
            if (strcasecmp(text, key->choices[i]) == 0) {
                *(int *)field = i;
                return 0;
            }
        return -1;
    case KEY_BOOL: {
        static const char *const yes[] = {"on", "true", "yes", "1"}, *const no[] = {"off", "false", "no", "0"};
        for (int i = 0; i < 4; i++) {
            if (strcasecmp(text, yes[i]) == 0) { *(int *)field = 1; return 0; }
            if (strcasecmp(text, no[i]) == 0) { *(int *)field = 0; return 0; }
        }
        return -1;
    }
    case KEY_STRING: /* key->max, where set, is a shorter limit: a label or a file name */
        if (strlen(text) > (key->max > 0 ? (size_t)key->max : CONFIG_STR_LEN - 1)) return -1;
        if (safe_file_has_control(text)) return -1; /* labels and paths reach terminals, files and logs */
        snprintf(field, CONFIG_STR_LEN, "%s", text);
        return 0;
    case KEY_INTLIST: {
        /* the count lives right after the array: sweep[] then nsweep */
        int *list = (int *)field;
        int *count = (int *)(field + sizeof(int) * CONFIG_MAX_SWEEP);
        char buf[CONFIG_STR_LEN], *items[CONFIG_MAX_SWEEP];
        if (strlen(text) >= sizeof buf) return -1;
        snprintf(buf, sizeof buf, "%s", text);
        const int n = config_split_list(buf, items, CONFIG_MAX_SWEEP);
        if (n < 0) return -1;
        for (int i = 0; i < n; i++) {
            if (parse_integer(key, items[i], &iv) != 0) return -1;
            list[i] = (int)iv;
        }
        *count = n;
        return 0;
    }
    }
    return -1;
}

void config_format_value(const struct config *cfg, const struct config_key *key, char *buf, size_t len)
{
    const char *field = (const char *)cfg + key->offset;
    switch (key->type) {
    case KEY_INT: snprintf(buf, len, "%d", *(const int *)field); break;
    case KEY_INT64: snprintf(buf, len, "%lld", *(const long long *)field); break;
    case KEY_DOUBLE: snprintf(buf, len, "%.17g", *(const double *)field); break;
    case KEY_ENUM: snprintf(buf, len, "%s", config_enum_name(key, *(const int *)field)); break;
    case KEY_BOOL: snprintf(buf, len, "%s", *(const int *)field ? "on" : "off"); break;
    case KEY_STRING: snprintf(buf, len, "%s", field); break;
    case KEY_INTLIST: {
        const int *list = (const int *)field;
        int count = *(const int *)(field + sizeof(int) * CONFIG_MAX_SWEEP);
        buf[0] = '\0';
        for (int i = 0; i < count; i++) {
            size_t used = strlen(buf);
            snprintf(buf + used, len - used, "%s%d", i ? "," : "", list[i]);
        }
        break;
    }
    }
}

/* Keys of earlier versions, named in the error with what replaced them. */
const char *config_renamed_key(const char *section, const char *name)
{
    if (strcmp(section, "comm") != 0) return NULL;
    if (strcmp(name, "transport") == 0) return "comm.transport is now comm.path (the library that reduces is comm.library)";
    if (strcmp(name, "transports") == 0) return "comm.transports is now comm.paths";
    return NULL;
}

int config_split_list(char *text, char **items, int max)
{
    int n = 0;
    char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '\0') return 0; /* an empty list: the key's default or "none" */
    for (char *item = text;; n++) {
        char *comma = strchr(item, ',');
        if (comma != NULL) *comma = '\0';
        while (*item == ' ' || *item == '\t') item++;
        char *end = item + strlen(item);
        while (end > item && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
        if (item[0] == '\0' || strpbrk(item, " \t") != NULL || n == max) return -1;
        items[n] = item;
        if (comma == NULL) return n + 1;
        item = comma + 1;
    }
}

/* config_ini.c — the config file (--config): read whole, checked, and handed to
 * libinih one line at a time (ini_lines.h), each value parsed by config_value.c.
 * Only a regular file of text is read; libinih's own limits (a line length, indented
 * lines glued to the key before) never reach the configuration unnoticed. */
#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_ini.h"
#include "config/config_value.h"
#include "base/ini_lines.h"
#include "base/safe_file.h"

/* A configuration is a small text file; anything larger is the wrong file. */
#define CONFIG_MAX_FILE_BYTES (1 << 20)

struct ini_state {
    struct ini_lines lines; /* the reader's: path, line, the first refused line, err */
    struct config *cfg;
    int *set_on_line; /* per key: the line that set it, 0 = not yet */
};

static void list_section_keys(const char *section, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < config_nkeys; i++) {
        if (strcmp(config_keys[i].section, section) != 0) continue;
        if (buf[0]) strncat(buf, ", ", len - strlen(buf) - 1);
        strncat(buf, config_keys[i].name, len - strlen(buf) - 1);
    }
}

static int section_exists(const char *section)
{
    for (size_t i = 0; i < config_nkeys; i++)
        if (strcmp(config_keys[i].section, section) == 0) return 1;
    return 0;
}

static int section_known(const char *name, size_t n)
{
    char section[64];
    if (n >= sizeof section) return 0;
    memcpy(section, name, n);
    section[n] = '\0';
    return section_exists(section);
}

static int on_ini_entry(void *user, const char *section, const char *name, const char *value)
{
    struct ini_state *st = user;
    struct ini_lines *r = &st->lines;
    char accepted[512];
    if (r->failed_line != 0) return 0;
    r->failed_line = r->line; /* cleared below on success */
    if (section[0] == '\0') {
        snprintf(r->err, r->errlen, "%s:%d: '%s' is outside any section; put it under [model], [train], [run], [comm], [topo] or [collective]",
                r->path, r->line, name);
        return 0;
    }
    if (!section_exists(section)) {
        snprintf(r->err, r->errlen, "%s:%d: unknown section [%s]; accepted sections: model, train, run, comm, topo, collective", r->path,
                r->line, section);
        return 0;
    }
    const struct config_key *key = config_find_key(section, name);
    if (key == NULL && config_renamed_key(section, name) != NULL) {
        snprintf(r->err, r->errlen, "%s:%d: %s", r->path, r->line, config_renamed_key(section, name));
        return 0;
    }
    if (key == NULL) {
        list_section_keys(section, accepted, sizeof accepted);
        snprintf(r->err, r->errlen, "%s:%d: unknown key '%s' in [%s]; accepted keys: %s", r->path, r->line, name,
                section, accepted);
        return 0;
    }
    size_t index = (size_t)(key - config_keys);
    if (st->set_on_line[index] != 0) {
        snprintf(r->err, r->errlen, "%s:%d: duplicate key [%s] %s, first set on line %d; keep one", r->path, r->line,
                section, name, st->set_on_line[index]);
        return 0;
    }
    if (config_parse_value(st->cfg, key, value) != 0) {
        char shown[96];
        config_describe_accepted(key, accepted, sizeof accepted);
        config_quote_value(value, shown, sizeof shown);
        snprintf(r->err, r->errlen, "%s:%d: [%s] %s = %s is not accepted; expected %s", r->path, r->line, section,
                name, shown, accepted);
        return 0;
    }
    st->set_on_line[index] = r->line;
    r->failed_line = 0;
    return 1;
}

void config_ini_set_line_limit(void)
{
    /* Debian's libinih takes its line limit at run time: a heap buffer of the
     * configuration's own limit (a long run.output_dir is legitimate), the same one the
     * command line has, instead of the 200 bytes it is built with */
    ini_use_stack = false;
    ini_allow_realloc = false;
    ini_max_line = ini_initial_alloc = CONFIG_MAX_LINE + 3; /* + CR, LF and NUL, as ini.h counts */
}

int config_load_ini(struct config *cfg, const char *path, char *err, size_t errlen)
{
    int set_on_line[256] = {0};
    if (config_nkeys > sizeof set_on_line / sizeof set_on_line[0]) {
        snprintf(err, errlen, "internal: too many configuration keys");
        return -1;
    }
    char *text;
    size_t len;
    /* only a regular file, opened without blocking: a FIFO or /dev/zero is refused */
    if (safe_file_read_text(path, "config file", CONFIG_MAX_FILE_BYTES, &text, &len, err, errlen) != 0) return -1;
    struct ini_state st = {.cfg = cfg, .set_on_line = set_on_line};
    ini_lines_init(&st.lines, path, "configuration", text, len, err, errlen);
    st.lines.section_known = section_known;
    st.lines.accepted = "model, train, run, comm, topo, collective";
    config_ini_set_line_limit();
    const int rc = ini_parse_stream(ini_lines_read, &st.lines, on_ini_entry, &st);
    free(text);
    return ini_lines_finish(&st.lines, rc);
}

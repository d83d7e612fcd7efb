/* config_ini.c — the config file (--config): read whole, checked, and handed to
 * libinih one line at a time (config_internal.h). Only a regular file of text is
 * read; libinih's own limits (a line length, indented lines glued to the key
 * before) never reach the configuration unnoticed. */
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "config_internal.h"
#include "safe_file.h"

/* A configuration is a small text file; anything larger is the wrong file. */
#define CONFIG_MAX_FILE_BYTES (1 << 20)

struct ini_state {
    struct config *cfg;
    const char *path;
    const char *text, *next, *end; /* the file, read whole; the line the reader hands out next */
    int line;                 /* line most recently read: the one the handler sees */
    int *set_on_line;         /* per key: the line that set it, 0 = not yet */
    char *err;
    size_t errlen;
    int failed_line;          /* the line of the first error the reader or the handler found; 0 = none */
};

/* A "[section] more" line: libinih takes the section and drops the rest unseen. */
static int section_has_trailing_text(const char *line, size_t len)
{
    const char *close = memchr(line, ']', len);
    if (close == NULL) return 0; /* no header at all: libinih's syntax error says so */
    for (const char *p = close + 1; p < line + len; p++) {
        if (*p == ';' || *p == '#') return 0;
        if (*p != ' ' && *p != '\t') return 1;
    }
    return 0;
}

/* inih's reader hook: one line of the file per call, so that inih's line numbers
 * are the file's and the handler knows the line it is called for. libinih (Debian's,
 * built with INI_MAX_LINE 200 and multi-line entries) would cut a longer line into
 * pieces counted as lines, and read an indented line as the continuation of the
 * previous key; here a comment line may be of any length, an indented line is read
 * as if it were not indented, a NUL byte or an over-long line stops the parse with
 * the line named. */
static char *ini_line_reader(char *str, int num, void *stream)
{
    struct ini_state *st = stream;
    if (st->next >= st->end || st->failed_line != 0) return NULL;
    /* a line ends at LF, CR LF or a lone CR (old Mac editors, some Windows tools):
     * read as one line, a CR-only file would lose every key after its first */
    const char *line = st->next, *eol = line;
    while (eol < st->end && *eol != '\n' && *eol != '\r') eol++;
    const size_t text_len = (size_t)(eol - line);
    if (eol < st->end) eol += eol[0] == '\r' && eol + 1 < st->end && eol[1] == '\n' ? 2 : 1;
    else eol = NULL;
    const size_t len = eol != NULL ? (size_t)(eol - line) : text_len;
    st->next = line + len;
    st->line++;
    const char *nul = memchr(line, '\0', len);
    if (nul != NULL) {
        snprintf(st->err, st->errlen, "%s:%d: a NUL byte at column %d; a configuration is text (is this the right file?)",
                st->path, st->line, (int)(nul - line) + 1);
        st->failed_line = st->line;
        return NULL;
    }
    const char *start = line;
    while (start < line + len && (*start == ' ' || *start == '\t')) start++;
    if (start < line + len && (*start == ';' || *start == '#')) { /* a comment line: only its end matters */
        snprintf(str, (size_t)num, "\n");
        return str;
    }
    const size_t keep = (size_t)(line + text_len - start);
    if (num < 3 || keep > (size_t)num - 3) {
        snprintf(st->err, st->errlen, "%s:%d: a line of %zu characters; at most %d are read per line (comments may be longer)",
                 st->path, st->line, text_len, num - 3);
        st->failed_line = st->line;
        return NULL;
    }
    if (*start == '[' && section_has_trailing_text(start, keep)) {
        snprintf(st->err, st->errlen, "%s:%d: text after the section header '%.*s'; a header line holds only [section] "
                 "(and a comment after ';' or '#')", st->path, st->line, (int)(keep < 80 ? keep : 80), start);
        st->failed_line = st->line;
        return NULL;
    }
    memcpy(str, start, keep);
    str[keep] = '\n';
    str[keep + 1] = '\0';
    return str;
}

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

static int on_ini_entry(void *user, const char *section, const char *name, const char *value)
{
    struct ini_state *st = user;
    char accepted[512];
    if (st->failed_line != 0) return 0;
    st->failed_line = st->line; /* cleared below on success */
    if (section[0] == '\0') {
        snprintf(st->err, st->errlen, "%s:%d: '%s' is outside any section; put it under [model], [train], [run], [comm], [topo] or [collective]",
                st->path, st->line, name);
        return 0;
    }
    if (!section_exists(section)) {
        snprintf(st->err, st->errlen, "%s:%d: unknown section [%s]; accepted sections: model, train, run, comm, topo, collective", st->path,
                st->line, section);
        return 0;
    }
    const struct config_key *key = config_find_key(section, name);
    if (key == NULL && config_renamed_key(section, name) != NULL) {
        snprintf(st->err, st->errlen, "%s:%d: %s", st->path, st->line, config_renamed_key(section, name));
        return 0;
    }
    if (key == NULL) {
        list_section_keys(section, accepted, sizeof accepted);
        snprintf(st->err, st->errlen, "%s:%d: unknown key '%s' in [%s]; accepted keys: %s", st->path, st->line, name,
                section, accepted);
        return 0;
    }
    size_t index = (size_t)(key - config_keys);
    if (st->set_on_line[index] != 0) {
        snprintf(st->err, st->errlen, "%s:%d: duplicate key [%s] %s, first set on line %d; keep one", st->path, st->line,
                section, name, st->set_on_line[index]);
        return 0;
    }
    if (config_parse_value(st->cfg, key, value) != 0) {
        char shown[96];
        config_describe_accepted(key, accepted, sizeof accepted);
        config_quote_value(value, shown, sizeof shown);
        snprintf(st->err, st->errlen, "%s:%d: [%s] %s = %s is not accepted; expected %s", st->path, st->line, section,
                name, shown, accepted);
        return 0;
    }
    st->set_on_line[index] = st->line;
    st->failed_line = 0;
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
    struct ini_state st = {cfg, path, text, text, text + len, 0, set_on_line, err, errlen, 0};
    config_ini_set_line_limit();
    const int rc = ini_parse_stream(ini_line_reader, &st, on_ini_entry, &st);
    free(text);
    /* the first error of the file: the reader's or the handler's (st), or a line inih could not read (rc) */
    if (rc > 0 && (st.failed_line == 0 || rc < st.failed_line)) {
        snprintf(err, errlen, "%s:%d: syntax error; expected '[section]' or 'key = value'", path, rc);
        return -1;
    }
    if (st.failed_line != 0) return -1;
    if (rc != 0) {
        snprintf(err, errlen, "%s: libinih failed (%d)", path, rc);
        return -1;
    }
    return 0;
}

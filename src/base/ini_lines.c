/* ini_lines.c — an INI file's lines for libinih, checked one by one (ini_lines.h). */
#include "base/ini_lines.h"

#include <stdio.h>
#include <string.h>

#include "base/utf8.h"

void ini_lines_init(struct ini_lines *r, const char *path, const char *kind, const char *text, size_t len, char *err,
                    size_t errlen)
{
    memset(r, 0, sizeof *r);
    r->path = path;
    r->kind = kind;
    r->next = text;
    r->end = text + len;
    r->err = err;
    r->errlen = errlen;
}

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

static char *refuse(struct ini_lines *r)
{
    r->failed_line = r->line;
    return NULL;
}

char *ini_lines_read(char *str, int num, void *stream)
{
    struct ini_lines *r = stream;
    if (r->next >= r->end || r->failed_line != 0) return NULL;
    const char *line = r->next, *eol = line;
    while (eol < r->end && *eol != '\n' && *eol != '\r') eol++;
    const size_t text_len = (size_t)(eol - line);
    if (eol < r->end) eol += eol[0] == '\r' && eol + 1 < r->end && eol[1] == '\n' ? 2 : 1;
    r->next = eol;
    r->line++;
    const char *nul = memchr(line, '\0', text_len);
    if (nul != NULL) {
        snprintf(r->err, r->errlen, "%s:%d: a NUL byte at column %d; a %s is text (is this the right file?)", r->path,
                 r->line, (int)(nul - line) + 1, r->kind);
        return refuse(r);
    }
    for (size_t i = 0, n; i < text_len; i += n) { /* the text ends in a NUL: utf8_next stops there */
        unsigned cp;
        n = utf8_next(line + i, &cp);
        if (cp == 0xFFFD && n == 1) {
            snprintf(r->err, r->errlen, "%s:%d: bytes that are not UTF-8 text at column %zu; save the file as UTF-8",
                     r->path, r->line, i + 1);
            return refuse(r);
        }
        if (utf8_is_control(cp) && cp != '\t') {
            snprintf(r->err, r->errlen, "%s:%d: a control character (U+%04X) at column %zu; a %s is plain text",
                     r->path, r->line, cp, i + 1, r->kind);
            return refuse(r);
        }
    }
    const char *start = line;
    while (start < line + text_len && (*start == ' ' || *start == '\t')) start++;
    if (start < line + text_len && (*start == ';' || *start == '#')) { /* a comment line: only its end matters */
        snprintf(str, (size_t)num, "\n");
        return str;
    }
    const size_t keep = (size_t)(line + text_len - start);
    if (num < 3 || keep > (size_t)num - 3) {
        snprintf(r->err, r->errlen, "%s:%d: a line of %zu characters; at most %d are read per line (comments may be "
                 "longer)", r->path, r->line, text_len, num - 3);
        return refuse(r);
    }
    if (*start == '[' && section_has_trailing_text(start, keep)) {
        snprintf(r->err, r->errlen, "%s:%d: text after the section header '%.*s'; a header line holds only [section] "
                 "(and a comment after ';' or '#')", r->path, r->line, (int)(keep < 80 ? keep : 80), start);
        return refuse(r);
    }
    const char *close = *start == '[' && r->section_known != NULL ? memchr(start, ']', keep) : NULL;
    if (close != NULL && !r->section_known(start + 1, (size_t)(close - start - 1))) {
        const int n = (int)(close - start - 1);
        snprintf(r->err, r->errlen, "%s:%d: unknown section [%.*s]; accepted sections: %s", r->path, r->line,
                 n < 60 ? n : 60, start + 1, r->accepted);
        return refuse(r);
    }
    memcpy(str, start, keep);
    str[keep] = '\n';
    str[keep + 1] = '\0';
    return str;
}

int ini_lines_finish(struct ini_lines *r, int rc)
{
    if (rc > 0 && (r->failed_line == 0 || rc < r->failed_line)) {
        snprintf(r->err, r->errlen, "%s:%d: syntax error; expected '[section]' or 'key = value'", r->path, rc);
        return -1;
    }
    if (r->failed_line != 0) return -1;
    if (rc != 0) {
        snprintf(r->err, r->errlen, "%s: libinih failed (%d)", r->path, rc);
        return -1;
    }
    return 0;
}

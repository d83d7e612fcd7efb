/* report_format.c — text as each of the report's outputs needs it (report.h), in one
 * place: Markdown text and code spans, one-line messages on stderr, gnuplot's quoted
 * strings, and JSON through jansson, valid whatever the file held (NaN becomes null;
 * bytes that are not UTF-8 become U+FFFD). CSV has its own module (csv.h).
 *
 * A result file is data from anyone who could write it, and its strings reach
 * terminals, browsers and SVG viewers. Every writer here walks the text a character
 * at a time (utf8_next): a byte that is not UTF-8 becomes U+FFFD, and a control
 * character (C0, DEL, C1: ESC, BEL, CSI, a line break where the output has none) is
 * written as its code point, \xNN (utf8_control_text), so that it can neither drive a
 * terminal nor split a line, and is still there to be read. Well-formed multi-byte
 * text (ü, ✓) is written as it is. In Markdown, < and & become entities: no tag can
 * open (so no attribute either, and no event handler) and no entity can spell one.
 * That is why > and the quotes stay as they are: alone they are text, and ordinary
 * files hold them ("4096 -> 4096", "NCCL's own CTA count", a quoted command line).
 * JSON keeps its own escapes (\n, \u001b) and gets \u007f to \u009f for the
 * characters that jansson writes raw. */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "base/utf8.h"

/* The character at p written as it is, its control character as \xNN, or U+FFFD. */
static void put_plain(FILE *out, const char *p, size_t n, unsigned cp)
{
    char esc[8];
    if (utf8_is_control(cp)) fputs(utf8_control_text(cp, esc), out);
    else if (cp == 0xFFFD && n == 1) fputs("\xEF\xBF\xBD", out); /* a byte that is not UTF-8 */
    else fwrite(p, 1, n, out);
}

void report_md_text(FILE *out, const char *v)
{
    unsigned cp;
    for (const char *p = v; *p;) {
        const size_t n = utf8_next(p, &cp);
        if (cp == '|' || cp == '\\') fputc('\\', out); /* GFM: an escaped pipe stays inside its cell */
        if (cp == '\n' || cp == '\r' || cp == '\t') fputc(' ', out); /* one line, one cell */
        else if (cp == '<') fputs("&lt;", out);
        else if (cp == '&') fputs("&amp;", out);
        else put_plain(out, p, n, cp);
        p += n;
    }
}

void report_md_code(FILE *out, const char *v)
{
    unsigned cp;
    for (const char *p = v; *p;) {
        const size_t n = utf8_next(p, &cp);
        if (cp == '`') fputc('\'', out); /* a backtick would end the span */
        else if (cp == '<') fputs("&lt;", out); /* a renderer shows it as typed; a careless HTML pass never sees a tag */
        else if (cp == '&') fputs("&amp;", out);
        else put_plain(out, p, n, cp);
        p += n;
    }
}

void report_message(FILE *out, const char *format, ...)
{
    char line[2048], *text = line;
    va_list ap;
    va_start(ap, format);
    const int n = vsnprintf(line, sizeof line, format, ap);
    va_end(ap);
    if (n >= (int)sizeof line && (text = malloc((size_t)n + 1)) != NULL) {
        va_start(ap, format);
        vsnprintf(text, (size_t)n + 1, format, ap);
        va_end(ap);
    }
    unsigned cp;
    for (const char *p = text != NULL ? text : line; *p;) {
        const size_t k = utf8_next(p, &cp);
        put_plain(out, p, k, cp);
        p += k;
    }
    fputc('\n', out);
    if (text != line) free(text);
}

/* gnuplot's SVG terminal writes < and & of the string as entities, > as it is; the one
 * place XML needs &gt; ("]]>") is rewritten in the SVG itself (report_plot.c), since no
 * entity written here would reach it: gnuplot would write its & as &amp;. */
void report_gp_text(FILE *gp, const char *v)
{
    unsigned cp;
    for (const char *p = v; *p;) {
        const size_t n = utf8_next(p, &cp);
        if (cp == '\'') fputs("''", gp); /* the only special character of a single-quoted string */
        else if (cp == '\n' || cp == '\r') fputc(' ', gp); /* a line break would end the command */
        else put_plain(gp, p, n, cp);
        p += n;
    }
}

json_t *report_json_text(const char *v)
{
    json_t *s = json_string(v); /* NULL when v is not UTF-8 */
    if (s != NULL) return s;
    const size_t len = 3 * strlen(v) + 1; /* every byte may become a 3-byte U+FFFD */
    char *clean = malloc(len);
    if (clean == NULL) return json_null();
    s = json_string(utf8_copy(clean, len, v));
    free(clean);
    return s != NULL ? s : json_null();
}

int report_json_write(FILE *out, const json_t *doc, size_t flags)
{
    char *text = json_dumps(doc, flags);
    if (text == NULL) return -1;
    /* jansson escapes C0 in strings itself (the line breaks of JSON_INDENT are its
     * own, between values); DEL and C1 it writes raw, and outside a string JSON holds
     * neither: each becomes \u00NN, the same character to a JSON reader */
    unsigned cp;
    for (const char *p = text; *p;) {
        const size_t n = utf8_next(p, &cp);
        if (cp >= 0x7F && utf8_is_control(cp)) fprintf(out, "\\u%04X", cp);
        else fwrite(p, 1, n, out);
        p += n;
    }
    free(text);
    return 0;
}

json_t *report_json_number(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

json_t *report_json_count(double v)
{
    return isfinite(v) && fabs(v) < 9e18 ? json_integer((json_int_t)v) : json_null();
}

int report_json_set(json_t *obj, const char *key, json_t *v)
{
    return json_object_set_new(obj, key, v != NULL ? v : json_null());
}

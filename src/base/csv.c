/* csv.c — RFC 4180 fields and rows (csv.h). */
#include "base/csv.h"

#include <math.h>
#include <string.h>

#include "base/utf8.h"

/* The control characters other than the line break are written as \xNN: only , " and LF need quotes. */
static int needs_quotes(const char *v) { return strpbrk(v, ",\"\n") != NULL; }

void csv_start(struct csv *c, FILE *out)
{
    c->out = out;
    c->fields = 0;
}

static void separator(struct csv *c)
{
    if (c->fields++ > 0) fputc(',', c->out);
}

void csv_text(struct csv *c, const char *v)
{
    separator(c);
    const int quoted = needs_quotes(v);
    unsigned cp;
    char esc[8];
    if (quoted) fputc('"', c->out);
    for (const char *p = v; *p;) {
        const size_t n = utf8_next(p, &cp);
        if (cp == '"') fputs("\"\"", c->out);
        else if (cp == '\n') fputc('\n', c->out);
        else if (utf8_is_control(cp)) fputs(utf8_control_text(cp, esc), c->out);
        else if (cp == 0xFFFD && n == 1) fputs("\xEF\xBF\xBD", c->out);
        else fwrite(p, 1, n, c->out);
        p += n;
    }
    if (quoted) fputc('"', c->out);
}

void csv_number(struct csv *c, double v)
{
    separator(c);
    if (isfinite(v)) fprintf(c->out, "%.10g", v);
}

void csv_int(struct csv *c, long long v)
{
    separator(c);
    fprintf(c->out, "%lld", v);
}

void csv_end_row(struct csv *c)
{
    fputc('\n', c->out);
    c->fields = 0;
}

void csv_header(struct csv *c, const char *const *names, int n)
{
    for (int i = 0; i < n; i++) csv_text(c, names[i]);
    csv_end_row(c);
}

/* csv.c — RFC 4180 fields and rows (csv.h). */
#include "csv.h"

#include <math.h>
#include <string.h>

static int needs_quotes(const char *v) { return strpbrk(v, ",\"\r\n") != NULL; }

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
    if (!needs_quotes(v)) {
        fputs(v, c->out);
        return;
    }
    fputc('"', c->out);
    for (const char *p = v; *p; p++) {
        if (*p == '"') fputc('"', c->out);
        fputc(*p, c->out);
    }
    fputc('"', c->out);
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

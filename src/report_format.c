/* report_format.c — text as each of the report's formats needs it (report.h), in
 * one place: Markdown cells and headings that a `|` or a line break in a name
 * cannot split, and JSON values through jansson that are valid whatever the file
 * held (NaN becomes null; bytes that are not UTF-8 become U+FFFD). CSV has its own
 * module (csv.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "utf8.h"

void report_md_text(FILE *out, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '|' || *p == '\\') fputc('\\', out); /* GFM: an escaped pipe stays inside its cell */
        if (*p == '\n' || *p == '\r' || *p == '\t') fputc(' ', out);
        else fputc(*p, out);
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

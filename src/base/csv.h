/* csv.h — CSV written in one place, as RFC 4180 has it: a field that holds a comma,
 * a double quote, a CR or a LF is put in double quotes, a quote inside doubled; every
 * row has the header's number of fields. Rows end in LF (what Unix tools expect;
 * Python's csv, pandas and spreadsheets read LF and CRLF alike). Numbers carry ten
 * significant digits, and an unknown one (NaN) is an empty field, never 0 or "nan".
 * Text is written as given but for its control characters: a line break inside a
 * field is RFC 4180's (quoted), every other one (ESC, BEL, CR, tab, C1) is written as
 * its code point, \x1b (utf8.h), so that a name from a file cannot drive the terminal
 * the CSV is printed on; a byte that is not UTF-8 becomes U+FFFD. */
#ifndef DPSCALE_CSV_H
#define DPSCALE_CSV_H

#include <stdio.h>

struct csv {
    FILE *out;
    int fields; /* written in the current row */
};

void csv_start(struct csv *c, FILE *out);
/* A header row of n names. */
void csv_header(struct csv *c, const char *const *names, int n);
void csv_text(struct csv *c, const char *v);
void csv_number(struct csv *c, double v); /* %.10g; empty when NaN or infinite */
void csv_int(struct csv *c, long long v);
void csv_end_row(struct csv *c);

#endif

/* ini_lines.h — the lines of an INI file handed to libinih one at a time (the reader of
 * its ini_parse_stream), with the rules every INI file dpscale reads keeps (a config,
 * a catalog entry of configs/systems/):
 *   - a line ends at LF, CR LF or a lone CR alike;
 *   - a NUL byte, a control character (tab excepted), a C1 control or bytes that are
 *     not UTF-8 stop the parse with file:line, comments included: an editor shows
 *     none of them;
 *   - a comment line (';' or '#' first) may be of any length; an indented line is read
 *     as if it were not (libinih would glue it to the key before);
 *   - a line longer than libinih's buffer is refused, never cut into pieces;
 *   - text after a [section] header is refused (libinih drops it unseen), and, where
 *     the caller says which sections it knows, an unknown one at its own line (libinih
 *     calls no handler for a header).
 * The handler shares failed_line with the reader: the first line refused by either
 * ends the parse. */
#ifndef DPSCALE_INI_LINES_H
#define DPSCALE_INI_LINES_H

#include <stddef.h>

struct ini_lines {
    const char *path;      /* for messages */
    const char *kind;      /* "configuration", "catalog entry": what the file is, in messages */
    const char *next, *end; /* the file, read whole; the line handed out next */
    int line;              /* the line most recently read: the one the handler sees */
    int failed_line;       /* the first line refused by the reader or the handler; 0: none */
    char *err;
    size_t errlen;
    /* NULL, or: 1 when the section `name` (n bytes) is known; `accepted` lists them */
    int (*section_known)(const char *name, size_t n);
    const char *accepted;
};

void ini_lines_init(struct ini_lines *r, const char *path, const char *kind, const char *text, size_t len, char *err,
                    size_t errlen);
/* libinih's reader: ini_parse_stream(ini_lines_read, &lines, handler, user). */
char *ini_lines_read(char *str, int num, void *stream);
/* The first error of the file after ini_parse_stream returned rc: the reader's or the
 * handler's (in err already), or a line libinih could not read (said here). 0 when
 * there was none. */
int ini_lines_finish(struct ini_lines *r, int rc);

#endif

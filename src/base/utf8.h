/* utf8.h — text read from result files, made safe to print: well-formed UTF-8
 * (RFC 3629). A file's strings come from command lines, config files and h5py
 * edits; a stray Latin-1 byte, or a name cut short in the middle of a character,
 * would make the report's JSON unloadable and its CSV undecodable. And a control
 * character (ESC, BEL, CSI) would reach a terminal, where it can set the window's
 * title, clear the screen or rewrite the line: the report's writers (report_format.c,
 * csv.c) walk text character by character (utf8_next) and write each control
 * character as its code point, \xNN (utf8_control_text). */
#ifndef DPSCALE_UTF8_H
#define DPSCALE_UTF8_H

#include <stddef.h>

/* Copy src into dst (len bytes, the NUL included), every byte that does not begin a
 * well-formed UTF-8 sequence replaced by U+FFFD, and never a character cut in two
 * where dst is too short. dst and src must not overlap. Returns dst. */
char *utf8_copy(char *dst, size_t len, const char *src);

/* 1 when s is well-formed UTF-8 throughout, else 0. */
int utf8_valid(const char *s);

/* The character that starts at s (not at its NUL): its length in bytes (1 to 4) and
 * its code point in *cp; a byte that does not begin a well-formed sequence is one
 * byte long and U+FFFD, the replacement character. */
size_t utf8_next(const char *s, unsigned *cp);

/* 1 for a control character: C0 (below U+0020, newline and tab among them), DEL
 * (U+007F) and C1 (U+0080 to U+009F, which some terminals obey as ESC sequences). */
int utf8_is_control(unsigned cp);

/* A control character as text, "\x1b" for ESC, "\x9b" for CSI: a backslash, x and
 * its code point in two hex digits, into buf (at least 5 bytes). Returns buf. */
char *utf8_control_text(unsigned cp, char *buf);

#endif

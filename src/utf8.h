/* utf8.h — text read from result files, made safe to print: well-formed UTF-8
 * (RFC 3629). A file's strings come from command lines, config files and h5py
 * edits; a stray Latin-1 byte, or a name cut short in the middle of a character,
 * would make the report's JSON unloadable and its CSV undecodable. */
#ifndef DPSCALE_UTF8_H
#define DPSCALE_UTF8_H

#include <stddef.h>

/* Copy src into dst (len bytes, the NUL included), every byte that does not begin a
 * well-formed UTF-8 sequence replaced by U+FFFD, and never a character cut in two
 * where dst is too short. dst and src must not overlap. Returns dst. */
char *utf8_copy(char *dst, size_t len, const char *src);

/* 1 when s is well-formed UTF-8 throughout, else 0. */
int utf8_valid(const char *s);

#endif

/* utf8.c — well-formed UTF-8 out of any bytes (utf8.h). */
#include "base/utf8.h"

#include <stdio.h>
#include <string.h>

/* The length of the well-formed sequence that starts at s (1 to 4), or 0 when s does
 * not start one: a stray continuation byte, an overlong form, a surrogate, a code
 * point past U+10FFFF, or a sequence cut short (by the NUL, which stops the scan). */
static size_t sequence_length(const unsigned char *s)
{
    const unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
    size_t n;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) n = 2;
    else if (c == 0xE0) n = 3, lo = 0xA0;  /* no overlong 3-byte forms */
    else if (c == 0xED) n = 3, hi = 0x9F;  /* no UTF-16 surrogates */
    else if (c >= 0xE1 && c <= 0xEF) n = 3;
    else if (c == 0xF0) n = 4, lo = 0x90;  /* no overlong 4-byte forms */
    else if (c == 0xF4) n = 4, hi = 0x8F;  /* nothing past U+10FFFF */
    else if (c >= 0xF1 && c <= 0xF3) n = 4;
    else return 0;
    if (s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

char *utf8_copy(char *dst, size_t len, const char *src)
{
    static const char replacement[] = "\xEF\xBF\xBD"; /* U+FFFD */
    if (len == 0) return dst;
    const unsigned char *s = (const unsigned char *)src;
    size_t used = 0;
    while (*s) {
        const size_t n = sequence_length(s);
        const char *piece = n ? (const char *)s : replacement;
        const size_t bytes = n ? n : 3;
        if (used + bytes >= len) break; /* a whole character, or none */
        memcpy(dst + used, piece, bytes);
        used += bytes;
        s += n ? n : 1;
    }
    dst[used] = '\0';
    return dst;
}

int utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        const size_t n = sequence_length(p);
        if (n == 0) return 0;
        p += n;
    }
    return 1;
}

size_t utf8_next(const char *s, unsigned *cp)
{
    const unsigned char *p = (const unsigned char *)s;
    const size_t n = sequence_length(p);
    static const unsigned lead_bits[5] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    if (n == 0) {
        *cp = 0xFFFD;
        return 1;
    }
    unsigned v = p[0] & lead_bits[n];
    for (size_t i = 1; i < n; i++) v = v << 6 | (p[i] & 0x3F);
    *cp = v;
    return n;
}

int utf8_is_control(unsigned cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

char *utf8_control_text(unsigned cp, char *buf)
{
    snprintf(buf, 5, "\\x%02x", cp & 0xFF);
    return buf;
}

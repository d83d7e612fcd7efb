/* h5read.h — reading back what dpscale's result files hold: string and number
 * attributes, and small datasets of numbers or fixed-length strings (the topology's
 * matrices, a comm sweep's sizes). Text comes back as well-formed UTF-8 (utf8.h),
 * whatever bytes the file held. Nothing here prints; a missing or odd object is a
 * return code, for the caller to name. */
#ifndef DPSCALE_H5READ_H
#define DPSCALE_H5READ_H

#include <hdf5.h>
#include <stddef.h>

/* 0 with the value in buf (truncated to len), or -1 ("" in buf) when absent or not a string. */
int h5_attr_str(hid_t obj, const char *name, char *buf, size_t len);

/* The scalar variable-length string attribute as the file holds it (no UTF-8 repair),
 * malloc'ed; NULL when absent, not one variable-length string, unreadable, or `max`
 * bytes long or longer. */
char *h5_attr_text(hid_t obj, const char *name, size_t max);

/* The attribute as a number (integers converted), or NaN when absent or not a number. */
double h5_attr_double(hid_t obj, const char *name);

/* The attribute as an int, or `fallback` when absent, not a number or out of range. */
int h5_attr_int(hid_t obj, const char *name, int fallback);

/* The numeric dataset `name` of loc, of rank 1 or 2, as doubles (integers converted):
 * 0 with its shape in dims (dims[1] = 1 for rank 1), or -1 when it is absent, not
 * numeric, of another rank, holds more than max values, or cannot be read. */
int h5_read_doubles(hid_t loc, const char *name, double *out, size_t max, size_t dims[2]);

/* The string dataset `name` of loc (fixed or variable length, any rank), flattened:
 * 0 with *n strings, each in `width` bytes of out, NUL-terminated; -1 when absent,
 * not strings, more than max of them, or unreadable. */
int h5_read_strings(hid_t loc, const char *name, char *out, size_t width, size_t max, size_t *n);

/* 1 when loc has a link `path` (one level or several, "system/topology"), else 0. */
int h5_exists(hid_t loc, const char *path);

#endif

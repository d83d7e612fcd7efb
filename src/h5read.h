/* h5read.h — reading back what dpscale's result files hold: a string attribute,
 * fixed or variable length, in the character set it was written in. */
#ifndef DPSCALE_H5READ_H
#define DPSCALE_H5READ_H

#include <hdf5.h>
#include <stddef.h>

/* 0 with the value in buf (truncated to len), or -1 ("" in buf) when absent or not a string. */
int h5_attr_str(hid_t obj, const char *name, char *buf, size_t len);

#endif

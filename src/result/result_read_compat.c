/* result_read_compat.c — the names older schemas gave what today's call otherwise
 * (result_read.h, result_read_internal.h): the columns and datasets renamed in schema
 * 5 (schema.h), "pcie" for the path through host memory before schema 6, and schema 1's
 * one `transport` for a library and a path. Below every reader of a file. */
#include <string.h>

#include "result/h5read.h"
#include "result/result_read_internal.h"
#include "result/schema.h"
#include "base/utf8.h"

static int has_member(hid_t dset, const char *name)
{
    hid_t ft = H5Dget_type(dset);
    const int found = ft >= 0 && H5Tget_class(ft) == H5T_COMPOUND && H5Tget_member_index(ft, name) >= 0;
    if (ft >= 0) H5Tclose(ft);
    return found;
}

const char *result_name_in(hid_t loc, hid_t dset, const char *name)
{
    const char *former = schema_former_name(name);
    if (former == NULL) return name;
    if (dset >= 0) return !has_member(dset, name) && has_member(dset, former) ? former : name;
    return !h5_exists(loc, name) && h5_exists(loc, former) ? former : name;
}

void result_path_in(int schema, const char *written, char *path, size_t pathlen)
{
    utf8_copy(path, pathlen, schema < SCHEMA_PCIE_IS_P2P && strcmp(written, "pcie") == 0 ? "host" : written);
}

void result_schema1_transport(const char *transport, char *library, size_t liblen, char *path, size_t pathlen)
{
    const int is_path = strcmp(transport, "nvlink") == 0 || strcmp(transport, "pcie") == 0 || strcmp(transport, "net") == 0;
    utf8_copy(library, liblen, is_path ? "nccl" : transport);
    result_path_in(1, is_path ? transport : "auto", path, pathlen);
}

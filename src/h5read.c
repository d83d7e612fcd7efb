/* h5read.c — reading what dpscale's result files hold (h5read.h). */
#include "h5read.h"

#include <stdio.h>

int h5_attr_str(hid_t obj, const char *name, char *buf, size_t len)
{
    buf[0] = '\0';
    if (H5Aexists(obj, name) <= 0) return -1;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT), ftype = H5Aget_type(a);
    int rc = -1;
    if (H5Tget_class(ftype) == H5T_STRING) {
        if (H5Tis_variable_str(ftype) > 0) {
            hid_t mtype = H5Tcopy(H5T_C_S1);
            H5Tset_size(mtype, H5T_VARIABLE);
            H5Tset_cset(mtype, H5Tget_cset(ftype)); /* HDF5 converts no character set into another */
            char *v = NULL;
            if (H5Aread(a, mtype, &v) >= 0 && v != NULL) {
                snprintf(buf, len, "%s", v);
                H5free_memory(v);
                rc = 0;
            }
            H5Tclose(mtype);
        } else {
            size_t n = H5Tget_size(ftype);
            char tmp[1024] = "";
            if (n < sizeof tmp && H5Aread(a, ftype, tmp) >= 0) {
                tmp[n] = '\0';
                snprintf(buf, len, "%s", tmp);
                rc = 0;
            }
        }
    }
    H5Tclose(ftype);
    H5Aclose(a);
    return rc;
}

/* model_table.c — the parameter arena as /model/tensors records it (model_table.h). */
#include "result/model_table.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/error.h"

struct row { /* the columns read, by name: the table has more */
    int64_t stage, offset, count;
};

int model_table_last_stage(hid_t file, double *last, double *total)
{
    if (H5Lexists(file, "model", H5P_DEFAULT) <= 0 || H5Lexists(file, "model/tensors", H5P_DEFAULT) <= 0) return -1;
    hid_t d = H5Dopen2(file, "model/tensors", H5P_DEFAULT);
    if (d < 0) return -1;
    hid_t sp = H5Dget_space(d), t = H5Tcreate(H5T_COMPOUND, sizeof(struct row));
    H5Tinsert(t, "stage", HOFFSET(struct row, stage), H5T_NATIVE_INT64);
    H5Tinsert(t, "offset", HOFFSET(struct row, offset), H5T_NATIVE_INT64);
    H5Tinsert(t, "count", HOFFSET(struct row, count), H5T_NATIVE_INT64);
    const hssize_t n = H5Sget_simple_extent_npoints(sp);
    struct row *r = NULL;
    if (n > 0) {
        r = malloc((size_t)n * sizeof *r);
        CHECK_ALLOC(r);
    }
    int rc = -1;
    if (r != NULL && H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, r) >= 0) {
        hssize_t end = 0;
        for (hssize_t i = 1; i < n; i++)
            if (r[i].offset > r[end].offset) end = i;
        *last = *total = 0;
        for (hssize_t i = 0; i < n; i++) {
            *total += (double)r[i].count;
            if (r[i].stage == r[end].stage) *last += (double)r[i].count;
        }
        rc = *last > 0 ? 0 : -1;
    }
    free(r);
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
    return rc;
}

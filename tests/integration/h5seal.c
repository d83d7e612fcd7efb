/* h5seal.c — seal result files with checksums (checksum.h), as dpscale's writer does:
 * tests/integration/test_report_corrupt.py seals copies of the files of results/,
 * written before dpscale sealed its files, to damage them and see every damage that
 * changes a number named. Not installed; `make bin/tests/h5seal`. */
#include <hdf5.h>
#include <stdio.h>

#include "checksum.h"

int main(int argc, char **argv)
{
    int bad = 0;
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    for (int i = 1; i < argc; i++) {
        char err[512];
        hid_t f = H5Fopen(argv[i], H5F_ACC_RDWR, H5P_DEFAULT);
        if (f < 0 || checksum_seal(f, err, sizeof err) != 0) {
            fprintf(stderr, "h5seal: %s: %s\n", argv[i], f < 0 ? "cannot open it for writing" : err);
            bad = 1;
        }
        if (f >= 0 && H5Fclose(f) < 0) bad = 1;
    }
    return bad;
}

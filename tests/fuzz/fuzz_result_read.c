/* fuzz_result_read.c — libFuzzer harness of the result-file reader of `dpscale
 * report`, `project` and `seal` (result_read() in src/result/result_read.c, and
 * through it the readers of run, comm and topo files): the input is written to a file
 * of its own and opened as a result file, the way the report meets a damaged or
 * hostile file. A refusal is expected; a crash, an out-of-bounds access, a leak or an
 * HDF5 identifier left open is the bug. HDF5 itself is not instrumented: a crash
 * inside libhdf5 is HDF5's, but still worth a report. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hdf5.h>

#include "result/result_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a fresh name each time: HDF5 keeps a file it could not close fully open, and
     * would hand the next input the old one */
    char path[] = "/tmp/dpscale-fuzz-report-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) abort();
    for (size_t done = 0; done < size;) {
        const ssize_t n = write(fd, data + done, size - done);
        if (n <= 0) abort();
        done += (size_t)n;
    }
    close(fd);
    struct report_file f;
    char err[1024];
    if (result_read(path, &f, err, sizeof err) == 0) result_free(&f);
    else if (err[0] == '\0') __builtin_trap(); /* a refusal says why */
    if (H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL) != 0) __builtin_trap(); /* every identifier closed, file included */
    unlink(path);
    return 0;
}

/* error.h — how dpscale reports failures.
 *
 * Every failure prints one line, "dpscale: error: HOST:RANK FILE:LINE what failed",
 * and a "hint:" line when the fix is knowable. Library calls are wrapped in one
 * check macro per API (CHECK_MPI in mpi/, CHECK_H5 in h5out.c, CHECK_CUDA in the
 * CUDA backend), all of which end in dp_fatal().
 *
 * dp_fatal() never returns: it runs the abort hook that the comm layer installed
 * (MPI_Abort, and ncclCommAbort on the GPU path) so that a Slurm allocation never
 * hangs waiting on a rank that has given up. Recoverable errors (bad config, a
 * result file that cannot be written) travel up as return codes instead, and only
 * main() decides to exit. */
#ifndef DPSCALE_ERROR_H
#define DPSCALE_ERROR_H

#include <stddef.h>

#include "base/compiler.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Identity used in every message; set once the rank is known. */
void dp_error_set_identity(const char *host, int rank);

/* Called by dp_fatal() before exiting, to take the other ranks down with us. */
void dp_error_set_abort_hook(void (*hook)(int exit_code));

/* Print "dpscale: error: host:rank file:line msg" (+ "hint: ..." when hint != NULL). */
void dp_error_print(const char *file, int line, const char *hint, const char *fmt, ...)
    DP_PRINTF(4, 5);

/* A bad-input error that every rank finds alike, e.g. an unknown command before MPI
 * is up: "dpscale: error: msg", printed by rank 0 only (log_rank(), from the
 * launcher's environment until MPI tells), so that 256 ranks print one line. The
 * other ranks stay quiet, wait 2 s (so that the launcher, which ends the job at the
 * first non-zero exit, lets rank 0 print) and return: exit with the same status. */
void dp_error_once(const char *fmt, ...) DP_PRINTF(1, 2);

/* From now on dp_fatal() neither prints nor exits (it waits to be ended): another
 * thread is ending the job, and failures it provokes (a library call returning after
 * its communicator was aborted) must not print a second error or pick the exit status. */
void dp_error_ending(void);

/* Run by dp_fatal() and dp_error_ending() before the job goes down: what a dying
 * process must not leave behind (the result file's claim). Async-signal-safe. */
void dp_error_set_cleanup(void (*fn)(void));

/* Print as above, then abort every rank. */
DP_NORETURN void dp_fatal(const char *file, int line, const char *hint, const char *fmt, ...)
    DP_PRINTF(4, 5);

#define DP_FATAL(hint, ...) dp_fatal(__FILE__, __LINE__, hint, __VA_ARGS__)
#define DP_ERROR(hint, ...) dp_error_print(__FILE__, __LINE__, hint, __VA_ARGS__)

/* For allocations on the host: a NULL result is fatal. */
#define CHECK_ALLOC(ptr)                                                          \
    do {                                                                          \
        if ((ptr) == NULL) DP_FATAL("the host is out of memory", "allocation of %s failed", #ptr); \
    } while (0)

/* a * b, or fail with a message naming `what` when the product overflows size_t. */
size_t dp_size_mul(size_t a, size_t b, const char *what);
/* Returns 0 and stores a*b in *out, or -1 when it would overflow. */
int dp_size_mul_checked(size_t a, size_t b, size_t *out);
int dp_size_add_checked(size_t a, size_t b, size_t *out);

#ifdef __cplusplus
}
#endif
#endif

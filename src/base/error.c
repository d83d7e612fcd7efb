/* error.c — the one place that prints errors and aborts (see error.h). */
#include "base/error.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

static char g_host[64] = "?";
static int g_rank = -1;
static void (*g_abort_hook)(int) = NULL;

void dp_error_set_identity(const char *host, int rank)
{
    snprintf(g_host, sizeof g_host, "%s", host);
    g_rank = rank;
}

void dp_error_set_abort_hook(void (*hook)(int)) { g_abort_hook = hook; }

static void vprint(const char *file, int line, const char *hint, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (g_rank < 0) {
        char host[64];
        if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "?");
        host[sizeof host - 1] = '\0';
        fprintf(stderr, "dpscale: error: %s:pid%d %s:%d %s\n", host, (int)getpid(), file, line, msg);
    } else {
        fprintf(stderr, "dpscale: error: %s:%d %s:%d %s\n", g_host, g_rank, file, line, msg);
    }
    if (hint != NULL) fprintf(stderr, "hint: %s\n", hint);
    fflush(stderr);
}

void dp_error_print(const char *file, int line, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprint(file, line, hint, fmt, ap);
    va_end(ap);
}

void dp_error_once(const char *fmt, ...)
{
    if (log_rank() != 0) {
        /* mpirun ends the whole job at the first non-zero exit: a quiet rank that left
         * at once could have rank 0 killed before its line is out */
        const struct timespec pause = {2, 0};
        nanosleep(&pause, NULL);
        return;
    }
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "dpscale: error: %s\n", msg);
    fflush(stderr);
}

static volatile int g_ending = 0;
static void (*g_cleanup)(void) = NULL;

void dp_error_ending(void)
{
    g_ending = 1;
    if (g_cleanup != NULL) g_cleanup();
}

void dp_error_set_cleanup(void (*fn)(void)) { g_cleanup = fn; }

void dp_fatal(const char *file, int line, const char *hint, const char *fmt, ...)
{
    while (g_ending) pause(); /* the job is being ended (the watchdog): this failure is its echo */
    va_list ap;
    va_start(ap, fmt);
    vprint(file, line, hint, fmt, ap);
    va_end(ap);
    if (g_cleanup != NULL) g_cleanup();
    if (g_abort_hook != NULL) {
        void (*hook)(int) = g_abort_hook;
        g_abort_hook = NULL; /* a failure inside the hook must not recurse */
        hook(1);
    }
    exit(1);
}

int dp_size_mul_checked(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

int dp_size_add_checked(size_t a, size_t b, size_t *out)
{
    if (b > SIZE_MAX - a) return -1;
    *out = a + b;
    return 0;
}

size_t dp_size_mul(size_t a, size_t b, const char *what)
{
    size_t r;
    if (dp_size_mul_checked(a, b, &r) != 0)
        DP_FATAL(NULL, "size of %s overflows: %zu x %zu", what, a, b);
    return r;
}

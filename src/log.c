/* log.c — rank-0-only output (log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

static int g_rank = 0;

void log_set_rank(int rank) { g_rank = rank; }

void say(const char *fmt, ...)
{
    if (g_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

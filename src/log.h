/* log.h — rank-0-only output, so that eight ranks do not print eight tables. */
#ifndef DPSCALE_LOG_H
#define DPSCALE_LOG_H

#include "error.h"

void log_set_rank(int rank);
/* printf to stdout on rank 0; nothing elsewhere. */
void say(const char *fmt, ...) DP_PRINTF(1, 2);

#endif

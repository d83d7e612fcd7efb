/* fault.c — the tests' fault injection (fault.h). */
#include "base/fault.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

static int g_hang_pending = 0; /* DPSCALE_FAULT's hang: in the next reduction */

/* DPSCALE_FAULT=rank:at:kind; rank -1 when unset or malformed. */
static struct {
    int rank, at;
    char kind[16];
} g_fault = {.rank = -1};

void fault_setup(void)
{
    const char *spec = getenv("DPSCALE_FAULT");
    if (spec == NULL || sscanf(spec, "%d:%d:%15s", &g_fault.rank, &g_fault.at, g_fault.kind) != 3) g_fault.rank = -1;
}

void fault_hang_if_pending(void)
{
    while (g_hang_pending) pause();
}

void fault_maybe_inject(int world_rank)
{
    static int step = -1;
    step++; /* every step of every pass */
    const char *kind = g_fault.kind;
    if (g_fault.rank != world_rank || step != g_fault.at || strcmp(kind, "write") == 0 || strcmp(kind, "nan") == 0) return;
    if (strcmp(kind, "kill") == 0) raise(SIGKILL);
    if (strcmp(kind, "exit") == 0) _exit(3);
    if (strcmp(kind, "stop") == 0) { /* as `kill -STOP`: the process is frozen, threads and all */
        raise(SIGSTOP);
        return; /* continued (SIGCONT): on as if nothing happened */
    }
    if (strcmp(kind, "hang") == 0) {
        g_hang_pending = 1;
        return;
    }
    DP_FATAL(NULL, "fault injected by DPSCALE_FAULT at step %d", step);
}

int fault_fails_write(int world_rank, int points)
{
    return g_fault.rank == world_rank && g_fault.at == points && strcmp(g_fault.kind, "write") == 0;
}

int fault_poisons_loss(int world_rank)
{
    static int runs = 0;
    runs++;
    return g_fault.rank == world_rank && g_fault.at == runs && strcmp(g_fault.kind, "nan") == 0;
}

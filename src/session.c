/* session.c — common start-up of the training subcommands (session.h). */
#include "session.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

int session_any_failed(int failed) { return comm_world_max_int(failed ? 1 : 0) != 0; }

/* All ranks agree; the lowest failing rank prints its message (config errors are
 * the same on every rank, so one copy is enough). */
static int agree_once(int rank, int failed, const char *err)
{
    int first = comm_world_first_rank_with(failed);
    if (first < 0) return 0;
    if (rank == first) {
        fprintf(stderr, "dpscale: error: %s\n", err);
        fflush(stderr);
    }
    return 1;
}

int session_start(int argc, char **argv, struct session *s)
{
    char err[1024] = "";
    memset(s, 0, sizeof *s);
    comm_bootstrap(&argc, &argv, &s->launch);
    log_set_rank(s->launch.rank);

    int rc = config_load(&s->cfg, argc, argv, err, sizeof err);
    if (rc == 1) { /* --help */
        if (s->launch.rank == 0) config_print_help("dpscale");
        comm_finalize();
        return SESSION_DONE;
    }
    if (rc == 0) rc = config_resolve_for_world(&s->cfg, s->launch.size, err, sizeof err);
    if (agree_once(s->launch.rank, rc != 0, err)) goto bad_input;

    s->model = malloc(sizeof *s->model);
    CHECK_ALLOC(s->model);
    rc = model_describe(&s->cfg, s->model, err, sizeof err);
    if (agree_once(s->launch.rank, rc != 0, err)) goto bad_input;

    s->transport = &comm_transport_mpi; /* the only transport of the cpu backend */

    /* The backend may fail on one rank only (no GPU on that node): each says why. */
    rc = backend_open(&s->backend, &s->cfg, s->launch.local_rank, s->launch.local_size, err, sizeof err);
    if (rc != 0) DP_ERROR(NULL, "%s", err);
    if (session_any_failed(rc != 0)) goto bad_input;
    return EXIT_OK;

bad_input:
    free(s->model);
    s->model = NULL;
    comm_finalize();
    return EXIT_BAD_INPUT;
}

void session_end(struct session *s)
{
    backend_close(&s->backend);
    free(s->model);
    comm_finalize();
}

void session_maybe_inject_fault(int world_rank, int step)
{
    static int parsed = 0, rank = -1, at_step = -1;
    static char kind[16] = "";
    if (!parsed) {
        parsed = 1;
        const char *spec = getenv("DPSCALE_FAULT");
        if (spec == NULL || sscanf(spec, "%d:%d:%15s", &rank, &at_step, kind) != 3) rank = -1;
    }
    if (rank != world_rank || step != at_step) return;
    if (strcmp(kind, "kill") == 0) raise(SIGKILL);
    if (strcmp(kind, "exit") == 0) _exit(3);
    DP_FATAL(NULL, "fault injected by DPSCALE_FAULT at step %d", step);
}

/* session.c — common start-up of the training subcommands (session.h). */
#include "cli/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/error.h"
#include "base/fault.h"
#include "base/log.h"
#include "model/registry.h"
#include "model/step.h"
#include "base/watchdog.h"

int session_any_failed(int failed) { return world_max_int(failed ? 1 : 0) != 0; }

/* All ranks agree; the lowest failing rank prints its message (config errors are
 * the same on every rank, so one copy is enough). */
static int agree_once(int rank, int failed, const char *err)
{
    int first = world_first_rank_with(failed);
    if (first < 0) return 0;
    if (rank == first) {
        fprintf(stderr, "dpscale: error: %s\n", err);
        fflush(stderr);
    }
    return 1;
}

int session_refuse_once(const struct session *s, int failed, const char *hint, const char *err)
{
    int first = world_first_rank_with(failed);
    if (first < 0) return 0;
    if (s->launch.rank == first) {
        fprintf(stderr, "dpscale: error: %s:%d %s\n", s->launch.host, s->launch.rank, err);
        if (hint != NULL) fprintf(stderr, "hint: %s\n", hint);
        fflush(stderr);
    }
    return 1;
}

/* Gradients on the GPU travel through NCCL; host buffers through MPI. */
static int choose_library(struct session *s, char *err, size_t errlen)
{
    const int gpu = s->backend.ops->stream != NULL;
    int t = s->cfg.library;
    if (t == LIBRARY_AUTO) t = gpu ? LIBRARY_NCCL : LIBRARY_MPI;
    if (t == LIBRARY_MPI && gpu) {
        snprintf(err, errlen, "comm.library = mpi moves host buffers, but the cuda backend keeps gradients on the GPU; "
                 "use comm.library = nccl (or auto)");
        return -1;
    }
    if (t == LIBRARY_NCCL && !gpu) {
        snprintf(err, errlen, "comm.library = nccl needs the cuda backend; use comm.library = mpi (or auto) on the cpu");
        return -1;
    }
    if (s->cfg.path != PATH_AUTO && t != LIBRARY_NCCL) {
        snprintf(err, errlen, "comm.path = %s chooses NCCL's path and needs the cuda backend; leave it at auto on the cpu",
                 config_value_name(&s->cfg, "comm", "path"));
        return -1;
    }
    if (t == LIBRARY_MPI && (s->cfg.register_buffers || s->cfg.cta_policy != 0)) {
        snprintf(err, errlen, "comm.register, comm.symmetric and comm.cta_policy are NCCL's; leave them off with comm.library = mpi");
        return -1;
    }
    s->library = t;
    s->comm_opt = (struct comm_options){.max_ctas = s->cfg.nccl_max_ctas, .cta_policy = s->cfg.cta_policy,
                                        .register_buffers = s->cfg.register_buffers, .symmetric = s->cfg.symmetric};
    return 0;
}

struct comm *session_open_comm(struct session *s, struct group *g, int min_ranks)
{
    if (g == NULL || group_size(g) < min_ranks) return NULL;
    struct comm *c = NULL;
    char err[512];
    if (comm_open(&c, s->library, g, backend_stream(&s->backend), &s->comm_opt, err, sizeof err) != 0)
        DP_FATAL(NULL, "%s", err);
    return c;
}

int session_start(int argc, char **argv, struct session *s)
{
    char err[1024] = "";
    memset(s, 0, sizeof *s);
    fault_setup(); /* tests only: DPSCALE_FAULT */
    /* the environment as launched, before comm.path sets NCCL's variables */
    provenance_start(&s->provenance);
    provenance_environment(s->rank_provenance.environment, sizeof s->rank_provenance.environment);
    mpi_bootstrap(&argc, &argv, &s->launch);
    log_set_rank(s->launch.rank);

    int rc = config_load(&s->cfg, argc, argv, err, sizeof err);
    if (rc == 1) { /* --help: the command's own, which main prints (from rank 0) */
        provenance_free(&s->provenance);
        mpi_finish();
        return EXIT_HELP;
    }
    if (rc == 0) rc = config_resolve_for_world(&s->cfg, s->launch.size, err, sizeof err);
    if (agree_once(s->launch.rank, rc != 0, err)) goto bad_input;
    snprintf(s->provenance.system_label, sizeof s->provenance.system_label, "%.*s", /* run.system_label: at most 255 */
             (int)sizeof s->provenance.system_label - 1, s->cfg.system_label);

    s->model = calloc(1, sizeof *s->model);
    CHECK_ALLOC(s->model);
    rc = model_describe(&s->cfg, s->model, err, sizeof err);
    if (agree_once(s->launch.rank, rc != 0, err)) goto bad_input;

    /* The backend may fail on some ranks only (no GPU on one node): the first says why, for all. */
    rc = backend_open(&s->backend, &s->cfg, s->launch.local_rank, s->launch.local_size, err, sizeof err);
    if (session_refuse_once(s, rc != 0, NULL, err)) goto bad_input;
    if (s->model->ops->supported != NULL) { /* a model may need operations this backend lacks */
        rc = s->model->ops->supported(s->model, &s->backend, err, sizeof err);
        if (agree_once(s->launch.rank, rc != 0, err)) goto bad_input;
    }
    /* the path first: asking for NVLink where there is none is the error to report */
    if (session_setup_path(s) != 0) goto bad_input;
    rc = choose_library(s, err, sizeof err);
    if (agree_once(s->launch.rank, rc != 0, err)) goto bad_input;

    /* Two ranks driving one GPU would measure contention, not scaling. */
    int other = -1;
    world_node_duplicate(s->backend.info.bus_id, s->launch.local_rank, &other);
    const int shares_gpu = s->backend.info.bus_id[0] != '\0' && other >= 0;
    if (shares_gpu)
        DP_ERROR("start at most one rank per GPU, or give each task its own GPU (srun --gpus-per-task=1)",
                 "this rank and node-local rank %d both use GPU %s", other, s->backend.info.bus_id);
    if (session_any_failed(shares_gpu)) goto bad_input;
    watchdog_start(s->cfg.timeout_s, s->launch.rank, s->launch.host);
    return EXIT_OK;

bad_input:
    provenance_free(&s->provenance);
    model_free(s->model);
    free(s->model);
    s->model = NULL;
    mpi_finish();
    return EXIT_BAD_INPUT;
}

int session_setup_path(struct session *s)
{
    char err[1536] = "", note[160] = "";
    int rc = 0;
    if (s->cfg.topo_fixture[0]) rc = topo_load_fixture(s->cfg.topo_fixture, &s->topo, err, sizeof err);
    else topo_detect(&s->topo);
    /* The GPUs this node's ranks drive, as topology indices, matched by bus id; when
     * none matches (a recorded topology, or no GPU here), every GPU of the node. */
    char *keys = NULL;
    const int nlocal = node_gather_keys(s->backend.info.bus_id, &keys);
    int gpus[TOPO_MAX_GPUS], ngpus = 0;
    for (int r = 0; r < nlocal && ngpus < TOPO_MAX_GPUS; r++)
        for (int g = 0; g < s->topo.ngpus; g++)
            if (s->topo.gpu[g].bus_id[0] && strcasecmp(s->topo.gpu[g].bus_id, keys + (size_t)r * 64) == 0) gpus[ngpus++] = g;
    free(keys);
    if (ngpus == 0)
        for (int g = 0; g < s->topo.ngpus; g++) gpus[ngpus++] = g;
    if (rc == 0) rc = nccl_path_settings(s->cfg.path, &s->topo, gpus, ngpus, &s->nccl, err, sizeof err);
    if (rc == 0) nccl_shm_copy_settings(s->cfg.shm_copy, &s->nccl);
    if (agree_once(s->launch.rank, rc != 0, err)) return -1;
    if (nccl_path_apply(&s->nccl, note, sizeof note) > 0 && s->launch.rank == 0)
        fprintf(stderr, "dpscale: warning: comm.path = %s: %s\n", config_value_name(&s->cfg, "comm", "path"), note);
    nccl_effective_env(s->nccl_env, sizeof s->nccl_env);
    return 0;
}

void session_end(struct session *s)
{
    watchdog_stop();
    provenance_free(&s->provenance);
    backend_close(&s->backend);
    model_free(s->model);
    free(s->model);
    mpi_finish();
}

/* session.h — what every subcommand that trains (run, gradcheck, bench) sets up
 * first, identically on every rank: MPI, the configuration, the backend and the
 * model. A failure on any rank is agreed on by all, reported once by the rank that
 * saw it, and turned into an exit code, before any training work starts. */
#ifndef DPSCALE_SESSION_H
#define DPSCALE_SESSION_H

#include "comm/comm.h"
#include "comm/group.h"
#include "backend/backend.h"
#include "config/config.h"
#include "model/model.h"
#include "system/topo.h"
#include "comm/nccl_path.h"
#include "system/provenance.h"
#include "base/version.h"


/* What a command returns: its exit status, or EXIT_HELP for --help, which main.c
 * answers with the command's help (commands.h) and exit status 0. */
enum exit_code { EXIT_HELP = -1, EXIT_OK = 0, EXIT_FAILURE_RUN = 1, EXIT_BAD_INPUT = 2 };

struct session {
    struct launch launch;
    struct config cfg;
    struct backend backend;
    struct model *model;
    int library;                 /* enum comm_library, never LIBRARY_AUTO: who reduces the gradients */
    struct comm_options comm_opt; /* from [comm], for every comm this launch opens */
    struct topo_node topo;       /* this node's, detected or from topo.fixture */
    struct nccl_settings nccl;   /* what comm.path set before NCCL started */
    char nccl_env[1024];         /* every NCCL_* variable NCCL saw */
    struct provenance provenance; /* the launch's, from its start; every rank's on rank 0 once written */
    struct provenance_rank rank_provenance; /* this rank's: its environment as launched, then its host and GPU */
    char stop_reason[256];       /* rank 0: why a sweep stopped before its end (a point that diverged); "" */
};

/* Topology of this node and the NCCL settings of comm.path, checked against it.
 * Collective; returns 0, or -1 on every rank (the lowest failing rank said why). */
int session_setup_path(struct session *s);

/* The comm of a run on group g (collective over g): NULL when g has fewer than
 * min_ranks ranks (a training run on one rank communicates nothing; dpscale comm
 * measures even a 1-rank allreduce). A library that cannot start is fatal. */
struct comm *session_open_comm(struct session *s, struct group *g, int min_ranks);

/* Returns EXIT_OK with a live session; EXIT_HELP for --help (the command returns it:
 * main prints the command's help); or the exit code to leave with. In the last two
 * MPI is finalised. */
int session_start(int argc, char **argv, struct session *s);
void session_end(struct session *s);

/* Refusals that may depend on the rank's node (no GPU, not enough memory): every
 * rank learns whether any failed, and the lowest failing rank prints its `err`
 * (with its host:rank, and a "hint:" line when hint != NULL) once for all, so that
 * 256 ranks print one line. Collective; returns 1 if any failed. */
int session_refuse_once(const struct session *s, int failed, const char *hint, const char *err);

/* Every rank learns whether any failed; returns 1 if so. */
int session_any_failed(int failed);

#endif

/* result_file.h — the result file of a launch, as the subcommands see it: name and
 * claim it, and check the space it needs, before any work (rank 0 decides, every rank
 * agrees); a sweep then rewrites it after each point, marked incomplete (root attribute
 * complete = 0) until the last, so that a time limit, a crash or a signal keeps what
 * was measured. SIGTERM and SIGINT end the launch at once outside a write, leaving
 * no claim behind; one that comes during a write waits for it (on every rank), so
 * that the point being written is kept too. Each write carries the launch's
 * provenance (every rank describes itself; rank 0 gathers and writes). The output
 * folder is opened once, at prepare, and every later step is inside it: a folder
 * moved and replaced by a link during the launch changes nothing that is written. */
#ifndef DPSCALE_RESULT_FILE_H
#define DPSCALE_RESULT_FILE_H

#include "result/h5file.h"
#include "result/h5out.h"
#include "result/run_record.h"
#include "cli/session.h"

struct result_file {
    char path[4096];
    struct h5file_target target;     /* rank 0: the output folder, opened once, and the claim's lock */
    const struct peer_matrix *peers; /* set by dpscale topo when it measured them */
    int written;                     /* NAME holds this launch's points so far: later writes replace it */
};

/* About what the file of a launch with this configuration and model takes (bytes):
 * every timed step's phases and buckets (the bucket plan training cuts) of every rank
 * of every point, the parameters where they are saved, and the fixed groups. m may
 * be NULL (a file of collectives). */
double result_file_planned_bytes(const struct config *c, const struct model *m);

/* Returns EXIT_OK, or EXIT_BAD_INPUT on every rank (the session is then ended). */
int result_file_prepare(struct session *s, struct result_file *f);

/* Collective. Rank 0 writes runs and/or collectives; returns 0 on every rank when
 * the file was written, -1 when it was not (nothing is left behind then). argc and
 * argv are no longer read: the command line is main()'s (provenance_note_command). */
int result_file_write(struct session *s, struct result_file *f, int argc, char **argv,
                      const struct run_result *runs, const struct run_summary *sums, int nruns,
                      const struct collective_result *colls, int ncolls);
/* Collective: the sweep's first `done` of `planned` points, the file marked incomplete. */
int result_file_write_partial(struct session *s, struct result_file *f, const struct run_result *runs,
                              const struct run_summary *sums, int done, int planned);
/* Collective: the sweep stopped at point `done` because its training diverged: the
 * points before it, the file marked incomplete and the diverged point named (`why`, the
 * root attribute diverged). With no point before it, nothing is written. */
int result_file_write_diverged(struct session *s, struct result_file *f, const struct run_result *runs,
                               const struct run_summary *sums, int done, int planned, const char *why);
/* A launch that ends without a result: the claim (NAME.tmp) is given up; a file of the
 * points done so far stays, marked incomplete. The folder is closed. */
void result_file_abandon(struct session *s, struct result_file *f);

/* The same, for `dpscale dump`: the model and one step laid open (rank 0's). */
int result_file_write_dump(struct session *s, struct result_file *f, int argc, char **argv,
                           const struct h5out_dump *dump);

#endif

/* log.h — rank-0-only output, so that eight ranks do not print eight tables, and
 * the progress lines of a launch.
 *
 * Progress goes to stderr, never stdout: stdout carries the header and the tables
 * that people and scripts parse, and stays byte for byte what it was. In a Slurm job
 * both land in the same log (stderr unbuffered, so in order). Every progress line
 * starts with "dpscale: " and a UTC timestamp, names the sweep point (its rank count)
 * and the pass of train.c in progress, and estimates the time the launch has left:
 *
 *   dpscale: 2026-12-01T10:00:05Z n=2 (point 2/3) real pass, timed step 12/20; launch 45% done, 17 s left
 *
 * A line comes at the start and end of each point and of each pass, and in between
 * at most every DPSCALE_PROGRESS_S seconds (default 5; 0 = after every step), so a
 * slow sweep is never silent for longer than that plus one step. --quiet (main.c)
 * silences them and the run header; results, warnings and errors still come. */
#ifndef DPSCALE_LOG_H
#define DPSCALE_LOG_H

#include "base/compiler.h"

void log_set_rank(int rank);
int log_rank(void);
/* printf to stdout on rank 0; nothing elsewhere. */
void say(const char *fmt, ...) DP_PRINTF(1, 2);

/* The rank of this process in its launch before MPI is started, from the launcher's
 * environment (Open MPI, PMIx, MPICH's PMI, srun); 0 when started alone. */
int log_launch_rank(void);

/* --quiet: no progress lines and no header. */
void log_set_quiet(int quiet);
int log_quiet(void);

/* A sweep point begins: the run on `nranks` ranks, point `index` (from 1) of `count`.
 * It takes `steps` steps (every pass's, the communication-only repetitions counted as
 * steps); `launch_steps` is the sum over all points, which the time left is estimated
 * from. `passes` names them ("compute-only, comm-only, real"). */
void progress_point_begin(int nranks, int index, int count, long long steps, long long launch_steps, const char *passes);
/* A pass of the point begins: `warmup` untimed steps, then `timed` ones. */
void progress_pass_begin(const char *pass, int warmup, int timed);
/* One step of the pass is done (enqueued, on a GPU); prints when a line is due. */
void progress_step(void);
/* The point is done. */
void progress_point_end(void);
/* A progress line of its own ("dpscale: UTC what"), on rank 0 unless --quiet. */
void progress_note(const char *fmt, ...) DP_PRINTF(1, 2);

#endif

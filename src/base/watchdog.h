/* watchdog.h — no hung allocation: a thread per rank that ends the job when a step or
 * a collective stops making progress, or when a rank of the node stops answering.
 *
 * The main thread says where it is (watchdog_note: pass, step, bucket) at every step
 * and every bucket's reduction, and arms the deadline only around work that must
 * finish in a bounded time (watchdog_arm / watchdog_idle). The thread checks, every
 * WATCHDOG_TICK_S:
 *   - this rank: armed and no note for longer than the deadline (a peer that never
 *     joins a collective, a GPU that never returns);
 *   - the other ranks of this node: each rank has a heartbeat file in its node's
 *     heartbeat folder, which its thread rewrites every tick with the time and the
 *     main thread's last note; a heartbeat older than the deadline is a rank that is
 *     stopped (SIGSTOP, a debugger) even while this rank waits in a barrier; when this
 *     rank stalls, a peer with fewer notes is the one that never started the
 *     collective, and is named;
 *   - the communication library's asynchronous errors (ncclCommGetAsyncError).
 * On any of them it prints one line naming the host, rank, pass, step and bucket that
 * did not complete, aborts the library's communicators (ncclCommAbort), then the job
 * (MPI_Abort; _exit if that does not return within WATCHDOG_ABORT_GRACE_S).
 *
 * The deadline is run.timeout_s, or when that is 0 (auto): WATCHDOG_START_S until the
 * first step of a pass is done, then max(WATCHDOG_FLOOR_S, WATCHDOG_STEP_MULTIPLE x
 * the slowest step seen so far).
 *
 * The heartbeat folder lives where every user of the node can write (a tmpfs), so it
 * trusts nothing there by name. Each node's first rank makes it with mkdtemp in
 * $DPSCALE_HEARTBEAT_DIR when that is set, else in the first of /dev/shm, $TMPDIR,
 * /tmp where it can be made and written: a random name, mode 0700, checked by fstat
 * (owner, type, mode) by every rank of the node before use. Files in it are opened
 * relative to it, never through a link and never waiting on a FIFO; a peer's file
 * counts only when it is a regular file of the heartbeat's size carrying this launch's
 * token (random, from world rank 0). Nothing is mapped: a file someone truncates costs
 * a heartbeat, not a SIGBUS. Every rank of a live job holds flock(LOCK_SH) on its
 * folder; a launch removes the folders of dead jobs (killed outright) that are this
 * user's own, real folders it can lock exclusively, whatever pid namespace or node
 * their ranks ran in. Where no folder can be made (a full or read-only tmpfs) the job
 * runs without heartbeats, and the node's first rank says so in one warning line. */
#ifndef DPSCALE_WATCHDOG_H
#define DPSCALE_WATCHDOG_H

#include <stddef.h>

#define WATCHDOG_TICK_S 0.2
#define WATCHDOG_START_S 600.0
#define WATCHDOG_FLOOR_S 120.0
#define WATCHDOG_STEP_MULTIPLE 20.0
#define WATCHDOG_ABORT_GRACE_S 10
#define WATCHDOG_STALL_S 2.0 /* a heartbeat this late is a rank that is not running */
#define WATCHDOG_CLEAN_AGE_S 60 /* a heartbeat folder younger than this is never removed as a dead job's */
#define EXIT_HUNG 4 /* the process's exit status when the watchdog ended the job */

/* Collective over MPI_COMM_WORLD (the ranks of a node agree on their heartbeat
 * folder); starts the thread. timeout_s = 0: the automatic deadline above. */
void watchdog_start(double timeout_s, int rank, const char *host);
/* Collective too: stops the thread, removes this rank's heartbeat (a rank that ends
 * is not stopped), then the node's folder. */
void watchdog_stop(void);

/* Work that must end in a bounded time begins: pass `pass` (a name kept by pointer). */
void watchdog_arm(const char *pass);
/* The same with a deadline of its own for this pass (deadline_s > 0), instead of
 * run.timeout_s or the automatic one: the collectives between sweep points and around
 * a result file's write, which are not steps. */
void watchdog_arm_for(const char *pass, double deadline_s);
/* Where this rank is: step of the pass (counted from 0), bucket being reduced (-1: none). */
void watchdog_note(int step, int bucket);
/* This rank enters the collective just noted (a library call may block inside it,
 * waiting for the peers: NCCL connects lazily); a peer that never enters it is then
 * behind, and named. */
void watchdog_entered(void);
/* Waiting that may legitimately take long (other ranks' sweep points, file writes):
 * this rank's deadline is off; stopped peers are still detected by their heartbeats. */
void watchdog_idle(void);

/* The communication library's hooks: poll returns nonzero (with a reason) on an
 * asynchronous error; abort tears its communicators down. NULL, NULL: none. The
 * thread never calls them after watchdog_set_library returns with new ones. */
void watchdog_set_library(int (*poll)(char *why, size_t len), void (*abort_comms)(void));

#endif

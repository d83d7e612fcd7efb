/* fault.h — fault injection for the tests (DPSCALE_FAULT=rank:step:exit|kill|error|stop|hang,
 * R:K:nan for a run's losses, 0:K:write for the result file's write): makes a rank
 * die, fail, stop (SIGSTOP) or hang at a given step, counted over every step of every
 * pass of the launch, so that "no hung job" can be checked. The session sets it up
 * once (fault_setup); the training loop and the result file ask it. Without
 * DPSCALE_FAULT (or before fault_setup) nothing is injected. */
#ifndef DPSCALE_FAULT_H
#define DPSCALE_FAULT_H

/* Read DPSCALE_FAULT; a value that is not rank:at:kind injects nothing. */
void fault_setup(void);
/* Called at each step's start. A hang lands in the rank's next reduction, where
 * fault_hang_if_pending (called before each) never returns. */
void fault_maybe_inject(int world_rank);
void fault_hang_if_pending(void);
/* DPSCALE_FAULT=0:K:write: whether the result file's write that holds K sweep points
 * (the one after the K-th point) is to fail as on a full disk (h5file_fill_disk). */
int fault_fails_write(int world_rank, int points);
/* DPSCALE_FAULT=R:K:nan: whether rank R's losses of the K-th run it takes part in
 * (counted from 1; one call per run's outcome) are to read as NaN from the run's middle
 * step on, as a diverged run's would. */
int fault_poisons_loss(int world_rank);

#endif

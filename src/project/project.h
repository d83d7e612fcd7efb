/* project.h — the projection of a data-parallel step onto N GPUs we did not run on
 * (docs/PROJECTION.md): one step simulated bucket by bucket, from a backward timeline
 * measured on one GPU and the target's allreduce time by message size. Pure
 * functions, no I/O: the caller reads the result files (project_read.h). */
#ifndef DPSCALE_PROJECT_H
#define DPSCALE_PROJECT_H

#define PROJECT_MAX_POINTS 64

/* The target's allreduce at one GPU count: time by message size, measured (a dpscale
 * comm file) or from a catalog's busbw (t = 2 (N-1)/N S / busbw(S) + latency). */
struct allreduce_curve {
    int gpus, nodes;
    int npoints;                             /* sizes ascending */
    double size_bytes[PROJECT_MAX_POINTS];
    double time_s[PROJECT_MAX_POINTS];
};

/* The time of an allreduce of `bytes`: log-log interpolation between the curve's points;
 * below the smallest size its time (latency-bound); above the largest, its bandwidth. */
double allreduce_curve_time(const struct allreduce_curve *c, double bytes);
/* A curve point from a bus bandwidth (nccl-tests' definition) and a latency. */
double allreduce_time_from_busbw(int gpus, double bytes, double busbw_gbps, double latency_s);

/* One GPU's step as measured, without communication (the compute-only pass). */
struct step_profile {
    double forward_s, backward_s, update_left_s; /* update_left: the part after backward */
    int nbuckets;
    const double *ready_s; /* [nbuckets]: each bucket's gradients complete, from backward's start */
    const double *bytes;   /* [nbuckets]: what each bucket's allreduce moves */
    int overlap;           /* buckets reduced beside backward (comm.overlap) */
    double update_comm_s;  /* at N > 1, the update left after communication (overlap off: the whole
                            * update; on: the last bucket's), when known; 0: update_left_s */
};

/* What the target changes besides the allreduce. */
struct projection_terms {
    double compute_scale; /* the compute's time on the target GPU over the source's (1: the same GPU) */
    double interference;  /* backward's slowdown beside communication: backward x (1 + this) */
    double imbalance_s;   /* the slowest rank's wait for the others, per step */
    double interference_per_share; /* or, when > 0, the slowdown per share of backward that communication runs
                                    * beside: backward x (1 + this x min(1, comm / backward)), overlap on only */
    double forward_interference;   /* forward's change in the multi-GPU run: forward x (1 + this) */
};

struct projected_step {
    double forward_s, backward_s, comm_s, exposed_s, update_s, imbalance_s, step_s;
};

/* The step on the curve's GPU count (gpus <= 1: no communication at all). */
void project_step(const struct step_profile *p, const struct projection_terms *t, const struct allreduce_curve *c,
                  struct projected_step *out);

#endif

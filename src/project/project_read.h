/* project_read.h — what `dpscale project` reads, through result_in.h: RESULT's 1-GPU
 * profile and its measured multi-GPU runs (project_source.c), the same of each
 * --interference-from file, and the target's allreduce curves from a dpscale comm file
 * (project_curves.c). Every file is first read whole as the report reads it, in a
 * process of its own (project_open). Each returns its findings, or -1 with one line
 * naming what is damaged or missing in err; nothing here prints. */
#ifndef DPSCALE_PROJECT_READ_H
#define DPSCALE_PROJECT_READ_H

#include <stddef.h>

#include "project/project.h"

struct result_in;

#define PROJECT_MAX_GROUPS 16      /* measured runs of a source, curves of a target */
#define PROJECT_MAX_CALIBRATIONS 8 /* --interference-from files */
#define PROJECT_NSETTINGS 8

/* What RESULT says: its 1-GPU profile, and its measured multi-GPU runs. */
struct project_source {
    char where[256]; /* "runs/<library>/<path>" */
    struct step_profile prof;
    double *ready, *bytes;
    int ready_measured; /* 0: spread over backward in proportion to the bytes */
    double step1_s;
    double peak_tflops; /* of the GPU it ran on, in its precision (0: unknown) */
    int batch_per_rank;
    char device[96], precision[16];
    int nmeasured, measured_n[PROJECT_MAX_GROUPS];
    double measured_eff[PROJECT_MAX_GROUPS], measured_alone_s[PROJECT_MAX_GROUPS]; /* the allreduce alone: NaN if not recorded */
    char update_note[200]; /* how prof.update_comm_s was had, or why it was not ("": nothing to say) */
    double interference, imbalance_s; /* from the largest measured run, 0 without one */
    double forward_interference;      /* that run's forward against the 1-GPU run's, less 1 (0: not measured) */
    int forward_measured;             /* 0: schema 1-2 (no compute-only backward) or ZeRO-1 */
    double interference_share; /* that run's share of backward with communication beside it (overlap on; else 0) */
    int interference_from;
    const char *interference_approx; /* how an older file's compute-only backward was derived (NULL: measured) */
    char settings[PROJECT_NSETTINGS][32]; /* the communication settings that shape NCCL's work beside backward:
                                           * path, then project_setting_names[1 ...] of /config */
};

/* The settings' names: "path", "comm.shm_copy", ..., "comm.shard_optimizer" (6), "comm.overlap". */
extern const char *const project_setting_names[PROJECT_NSETTINGS];

/* A result file for the projection, read first through the report's reader in a
 * process of its own (report_read_isolated): what `dpscale report` refuses (checksums
 * that do not match, or removed; a figure negative, infinite or past any measurement; a
 * file that crashes the HDF5 library) is not projected either, nor copied into a
 * freshly sealed projection file (h5out_write_projection copies /config, /system and
 * /model from the source); a FIFO or a device is refused before (HDF5 would block on
 * one). Then opened: NULL with why ("PATH: ...") when any of this fails. */
struct result_in *project_open(const char *path, char *why, size_t len);

/* RESULT's 1-GPU profile, its measured runs, and the interference and imbalance of
 * one of them: the run at `terms_from` GPUs, or (0) the largest. src zeroed by the
 * caller; src->ready and src->bytes are its to free (project_source_free). */
int project_read_source(const struct result_in *f, struct project_source *src, int terms_from, char *err, size_t errlen);
void project_source_free(struct project_source *src);
/* How the source's ready times were had, in words. */
const char *project_ready_words(const struct project_source *src);

/* --interference-from: other result files' measured interference and imbalance (their
 * profiles not kept). -1 when all were read, else the index of the one that was not
 * (err says why). cal zeroed by the caller. */
int project_read_calibrations(const char *const *paths, int n, int terms_from, struct project_source *cal, char *err,
                              size_t errlen);

/* The settings on which a source and its calibration differ, "name A here, B there; ...",
 * into out ("" when they agree). comm.shm_copy is left out between two NVLink runs: no
 * copy goes through host memory there. */
void project_settings_differ(const struct project_source *a, const struct project_source *b, char *out, size_t len);

/* The target's curves: collectives/<library>/<path>/n<N> of a dpscale comm file, the
 * first group that has any; their count (at most max), with that group's path in
 * where, or -1 with why in err. */
int project_read_curves(const struct result_in *f, struct allreduce_curve *c, int max, char *where, size_t wlen, char *err,
                        size_t errlen);

#endif

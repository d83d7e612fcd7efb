/* cmd_project.c — `dpscale project RESULT.h5 --comm COMM.h5 | --system SYSTEM.ini`: the
 * step of RESULT's 1-GPU run projected onto every GPU count of a target's allreduce
 * curves (a dpscale comm file measured there, or a catalog entry of configs/systems/),
 * beside RESULT's own measured runs where it has the same count (docs/PROJECTION.md).
 * The command: its options, the files read (project_read.h), the projection made and
 * written (project_table.h), what it prints and its exit status. Reads files only;
 * needs no GPU and no MPI launch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "base/error.h"
#include "base/log.h"
#include "project/project_read.h"
#include "project/project_table.h"
#include "project/systems.h"
#include "report/report.h"
#include "result/result_in.h"
#include "base/safe_file.h"
#include "cli/session.h"

/* --output's rules are dpscale run's: a name ending in .h5, without control characters,
 * and nothing at it yet (a projection is never written over a file, nor through a link,
 * even a dangling one). Checked before anything is read, so that a bad name costs no
 * work; h5out_write_projection checks again as it writes. 0, or -1 with the fix in err. */
static int check_output(const char *output, char *err, size_t errlen)
{
    const char *base = strrchr(output, '/');
    base = base != NULL ? base + 1 : output;
    const size_t len = strlen(base);
    if (output[0] == '\0') {
        snprintf(err, errlen, "--output is empty; give the name of a new projection file, e.g. --output=projection.h5");
        return -1;
    }
    if (safe_file_has_control(output)) {
        snprintf(err, errlen, "--output holds a control character (a newline, ESC); give a plain name ending in .h5");
        return -1;
    }
    if (len <= 3 || strcmp(base + len - 3, ".h5") != 0) {
        snprintf(err, errlen, "--output %s: a projection file's name ends in .h5 after a name of its own; e.g. "
                 "--output=projection.h5", output);
        return -1;
    }
    char why[900];
    if (safe_file_check_target(output, "projection file", 0, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s; choose another --output", why);
        return -1;
    }
    return 0;
}

static void usage(FILE *out)
{
    if (log_rank() != 0) return; /* once per launch */
    fprintf(out,
            "usage: dpscale project RESULT.h5 --comm COMM.h5 | --system SYSTEM.ini [--no-interference]\n"
            "                       [--interference-from OTHER.h5 ...] [--interference-gpus N] [--output FILE.h5]\n\n"
            "RESULT's 1-GPU step projected onto each GPU count of a target's allreduce curves, beside\n"
            "RESULT's measured runs of the same count (docs/PROJECTION.md). Reads files only: no MPI,\n"
            "no GPU, no configuration keys. stdout: the projected step, communication and efficiency\n"
            "per GPU count, each labelled projected, with its inputs' sources.\n\n"
            "options:\n"
            "  --comm COMM.h5            the target's curves: a dpscale comm file measured there\n"
            "  --system SYSTEM.ini       or a catalog entry (configs/systems/): its busbw curves, and the\n"
            "                            compute scaled by the ratio of peak TFLOP/s when its GPU is not\n"
            "                            RESULT's (labelled so in every row)\n"
            "  --no-interference         leave out the slowdown and imbalance RESULT's multi-GPU run measured\n"
            "  --interference-from OTHER.h5\n"
            "                            take them from OTHER's multi-GPU run instead (another model measured\n"
            "                            on the same transport): its slowdown per share of backward with\n"
            "                            communication beside it, and its imbalance as a share of the step;\n"
            "                            up to 8 times: the median of their terms\n"
            "  --interference-gpus N     take them from the measured run at N GPUs (of RESULT, or of OTHER)\n"
            "                            instead of the largest: to predict a larger count from a smaller one\n"
            "  --output FILE.h5          also write the projection to a new HDF5 file (/summary and\n"
            "                            /projection) that dpscale report shows as projected, never beside\n"
            "                            measured rows of the same table; never overwritten\n"
            "  -h, --help                this help\n\n"
            "exit status: 0 projected (and written); 1 the output could not be written; 2 bad arguments,\n"
            "or a file that cannot be read as what it should be\n");
}

/* The terms in words: left out, the calibrations', the source's own, or none measured. */
static void print_terms(const struct project_source *src, const struct project_source *cal, int ncal,
                        const char *const *calibrations, int measured_terms, const struct projection_terms *terms)
{
    if (!measured_terms) {
        printf("  interference and imbalance: left out (--no-interference)\n");
    } else if (ncal > 0) {
        char by[160];
        if (ncal > 1) snprintf(by, sizeof by, "the median over the multi-GPU runs of %d --interference-from files", ncal);
        else snprintf(by, sizeof by, "measured by %.100s's %d-GPU run", calibrations[0], cal[0].interference_from);
        if (terms->interference_per_share > 0.0)
            report_message(stdout, "  interference %.3f x the share of backward with communication beside it, "
                           "imbalance %.3f ms: %s; forward as at 1 GPU", terms->interference_per_share,
                           src->imbalance_s * 1e3, by);
        else
            report_message(stdout, "  interference %.3f (backward) and imbalance %.3f ms: %s; forward as at 1 GPU",
                   src->interference, src->imbalance_s * 1e3, by);
        for (int k = 0; k < ncal; k++) {
            char differ[400];
            project_settings_differ(src, &cal[k], differ, sizeof differ);
            if (differ[0])
                report_message(stdout, "  NOTE: the calibration %s ran with other communication settings (%s): its "
                               "interference may not carry over; calibrate with a run of the same settings",
                               calibrations[k], differ);
        }
    } else if (src->interference_from > 0) {
        char fwd[96];
        if (terms->compute_scale != 1.0) snprintf(fwd, sizeof fwd, "forward as at 1 GPU (its change was measured on another GPU)");
        else if (!src->forward_measured) snprintf(fwd, sizeof fwd, "forward as at 1 GPU (not measured: %s)",
                                                  src->interference_approx ? "no compute-only backward" : "ZeRO-1");
        else snprintf(fwd, sizeof fwd, "forward %+.3f", src->forward_interference);
        printf("  interference %.3f (backward), %s, imbalance %.3f ms: measured by the file's %d-GPU run%s%s\n",
               src->interference, fwd, src->imbalance_s * 1e3, src->interference_from,
               src->interference_approx ? "; " : "", src->interference_approx ? src->interference_approx : "");
    } else {
        printf("  interference and imbalance: none measured (the file has no multi-GPU run): 0\n");
    }
}

/* The table: each GPU count's projected step beside the file's own run of that count
 * (none when the compute was scaled: a measurement of another GPU is no check), then
 * how each count's allreduces alone compare with that run's, and each catalog curve's source. */
static void print_rows(const struct project_source *src, const struct projection *pj, const struct allreduce_curve *curves,
                       double scale, const struct system_desc *sysd)
{
    const int nc = pj->n;
    printf("GPUs    step_ms    comm_ms exposed_ms  projected  measured     error\n");
    char (*alone_note)[200] = calloc((size_t)nc + 1, sizeof *alone_note);
    CHECK_ALLOC(alone_note);
    for (int i = 0; i < nc; i++) {
        const struct projected_step *s = &pj->step[i];
        const double eff = pj->efficiency[i];
        printf("%4d %10.3f %10.3f %10.3f %10.3f", curves[i].gpus, s->step_s * 1e3, s->comm_s * 1e3,
               s->exposed_s * 1e3, eff);
        int found = 0;
        for (int k = 0; k < src->nmeasured && scale == 1.0; k++)
            if (src->measured_n[k] == curves[i].gpus) {
                printf(" %9.3f %+9.3f\n", src->measured_eff[k], eff - src->measured_eff[k]);
                found = 1;
                if (!isnan(src->measured_alone_s[k]) && src->measured_alone_s[k] > 0 && strcmp(src->settings[6], "on") != 0)
                    /* the curve's error, apart (ZeRO-1's reduce-scatter and all-gathers are not an allreduce) */
                    snprintf(alone_note[i], sizeof alone_note[i], "  the allreduces alone at %d GPUs: %.3f ms on "
                             "the curve; %.3f ms measured by the file's run (x %.2f)\n",
                             curves[i].gpus, s->comm_s * 1e3, src->measured_alone_s[k] * 1e3,
                             s->comm_s / src->measured_alone_s[k]);
            }
        if (!found) printf("         -         -\n");
    }
    for (int i = 0; i < nc; i++) fputs(alone_note[i], stdout);
    free(alone_note);
    for (int i = 0; sysd != NULL && i < nc; i++)
        report_message(stdout, "  %d GPUs (%d node%s): %s%s%s", curves[i].gpus, curves[i].nodes, curves[i].nodes > 1 ? "s" : "",
               sysd->curves[i].source, sysd->curves[i].derived[0] ? "; DERIVED: " : "", sysd->curves[i].derived);
    printf("efficiency = the projected 1-GPU step (%.3f ms) / the projected N-GPU step; measured = the file's own run\n",
           pj->one.step_s * 1e3);
}

int cmd_project(int argc, char **argv)
{
    const char *result = NULL, *comm = NULL, *system = NULL, *output = NULL, *calibrations[PROJECT_MAX_CALIBRATIONS];
    const char *calibration = NULL; /* the first */
    int measured_terms = 1, terms_from = 0, ncal = 0;
    for (int i = 1; i < argc; i++) {
        const char *gpus_arg = NULL;
        if (strcmp(argv[i], "--interference-gpus") == 0 && i + 1 < argc) gpus_arg = argv[++i];
        else if (strncmp(argv[i], "--interference-gpus=", 20) == 0) gpus_arg = argv[i] + 20;
        if (gpus_arg != NULL) {
            char *end;
            const long v = strtol(gpus_arg, &end, 10);
            if (end == gpus_arg || *end != '\0' || v < 2 || v > 1 << 20) {
                report_message(stderr, "dpscale: error: project: --interference-gpus '%s' is not a GPU count of 2 or "
                               "more; give the count of the measured run to take the interference from, e.g. 2", gpus_arg);
                return EXIT_BAD_INPUT;
            }
            terms_from = (int)v;
        } else if (strcmp(argv[i], "--no-interference") == 0) measured_terms = 0;
        else if (strcmp(argv[i], "--comm") == 0 && i + 1 < argc) comm = argv[++i];
        else if (strncmp(argv[i], "--comm=", 7) == 0) comm = argv[i] + 7;
        else if ((strcmp(argv[i], "--interference-from") == 0 && i + 1 < argc) ||
                 strncmp(argv[i], "--interference-from=", 20) == 0) {
            if (ncal == PROJECT_MAX_CALIBRATIONS) {
                fprintf(stderr, "dpscale: error: project: more than %d --interference-from files; give at most %d\n",
                        PROJECT_MAX_CALIBRATIONS, PROJECT_MAX_CALIBRATIONS);
                return EXIT_BAD_INPUT;
            }
            calibrations[ncal++] = argv[i][19] == '=' ? argv[i] + 20 : argv[++i];
            calibration = calibrations[0];
        }
        else if (strcmp(argv[i], "--output") == 0 && i + 1 < argc) output = argv[++i];
        else if (strncmp(argv[i], "--output=", 9) == 0) output = argv[i] + 9;
        else if (strcmp(argv[i], "--system") == 0 && i + 1 < argc) system = argv[++i];
        else if (strncmp(argv[i], "--system=", 9) == 0) system = argv[i] + 9;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return EXIT_OK;
        } else if (argv[i][0] != '-' && result == NULL) result = argv[i];
        else {
            report_message(stderr, "dpscale: error: project: unknown argument '%s'; usage: dpscale project RESULT.h5 --comm "
                           "COMM.h5", argv[i]);
            return EXIT_BAD_INPUT;
        }
    }
    if (result == NULL || (comm == NULL) == (system == NULL)) {
        fprintf(stderr, "dpscale: error: project needs a result file and one target, --comm FILE (a dpscale comm file "
                        "measured there) or --system FILE.ini (configs/systems/); usage: dpscale project RESULT.h5 "
                        "--comm COMM.h5 | --system SYSTEM.ini\n");
        return EXIT_BAD_INPUT;
    }
    char err[1024];
    if (output != NULL && check_output(output, err, sizeof err) != 0) {
        report_message(stderr, "dpscale: error: project: %s", err);
        return EXIT_BAD_INPUT;
    }
    result_hdf5_quiet();
    struct system_desc *sysd = NULL;
    if (system != NULL) {
        sysd = calloc(1, sizeof *sysd);
        CHECK_ALLOC(sysd);
        if (system_read(system, sysd, err, sizeof err) != 0) {
            report_message(stderr, "dpscale: error: project: %s", err);
            free(sysd);
            return EXIT_BAD_INPUT;
        }
        comm = NULL;
    }
    char why[600];
    struct result_in *rf = project_open(result, why, sizeof why);
    struct result_in *cf = rf != NULL && comm != NULL ? project_open(comm, why, sizeof why) : NULL;
    if (rf == NULL || (comm != NULL && cf == NULL)) {
        report_message(stderr, "dpscale: error: project: %s", why);
        result_in_close(rf);
        result_in_close(cf);
        free(sysd);
        return EXIT_BAD_INPUT;
    }
    struct project_source src = {0};
    struct allreduce_curve curves[PROJECT_MAX_GROUPS];
    char where[240];
    int rc = EXIT_OK, nc = 0, bad_cal = -1;
    struct project_source cal[PROJECT_MAX_CALIBRATIONS];
    memset(cal, 0, sizeof cal);
    if (project_read_source(rf, &src, calibration == NULL ? terms_from : 0, err, sizeof err) != 0) {
        report_message(stderr, "dpscale: error: project: %s: %s", result, err);
        rc = EXIT_BAD_INPUT;
    } else if (calibration == NULL && terms_from > 0 && measured_terms && src.interference_from != terms_from) {
        report_message(stderr, "dpscale: error: project: %s has no %d-GPU run with a compute-only pass to measure "
                       "interference by; give --interference-gpus a count it ran", result, terms_from);
        rc = EXIT_BAD_INPUT;
    } else if ((bad_cal = project_read_calibrations(calibrations, ncal, terms_from, cal, err, sizeof err)) >= 0) {
        report_message(stderr, "dpscale: error: project: --interference-from %s: %s", calibrations[bad_cal], err);
        rc = EXIT_BAD_INPUT;
    } else if (sysd != NULL) {
        nc = sysd->ncurves;
        for (int i = 0; i < nc; i++) curves[i] = sysd->curves[i].curve;
        snprintf(where, sizeof where, "%s: %s", sysd->name, sysd->gpu);
    } else if ((nc = project_read_curves(cf, curves, PROJECT_MAX_GROUPS, where, sizeof where, err, sizeof err)) < 0) {
        report_message(stderr, "dpscale: error: project: %s: %s", comm, err);
        rc = EXIT_BAD_INPUT;
    }
    /* the compute on another GPU: scaled by the ratio of peak TFLOP/s, and said so */
    double scale = 1.0, target_tflops = 0.0;
    int fp32 = 0;
    char compute_note[512] = "the compute as measured";
    if (rc == EXIT_OK) {
        const int scaled = project_compute_scale(&src, sysd, &scale, &target_tflops, &fp32);
        if (scaled < 0) {
            report_message(stderr, "dpscale: error: project: no peak TFLOP/s to scale the compute from %s to %s in %s; "
                           "give a %s with peak_tflops_%s", src.device, sysd->gpu, src.precision, system, fp32 ? "fp32" : "bf16");
            rc = EXIT_BAD_INPUT;
        } else if (scaled > 0) {
            snprintf(compute_note, sizeof compute_note, "the compute SCALED by peak TFLOP/s, %s %.1f -> %s %.1f (x %.3f "
                     "the time): no 1-GPU run on that GPU", src.device, src.peak_tflops, sysd->gpu, target_tflops, scale);
        }
    }
    if (rc == EXIT_OK) {
        const struct projection_terms terms = project_terms(&src, cal, ncal, measured_terms, scale);
        /* every text from a file or the catalog goes out escaped (report_message): a device name
         * or a curve's source with ESC or BEL in it never drives the terminal */
        report_message(stdout, "projection of %s (%s/n1) onto the allreduce curves of %s (%s)", result, src.where,
               comm != NULL ? comm : system, where);
        report_message(stdout, "  %s", compute_note);
        printf("  1-GPU step %.3f ms: forward %.3f, backward %.3f, update left %.3f; %d buckets, overlap %s, ready times %s\n",
               src.step1_s * 1e3, src.prof.forward_s * 1e3, src.prof.backward_s * 1e3, src.prof.update_left_s * 1e3,
               src.prof.nbuckets, src.prof.overlap ? "on" : "off", project_ready_words(&src));
        if (src.update_note[0]) printf("  %s\n", src.update_note);
        print_terms(&src, cal, ncal, calibrations, measured_terms, &terms);
        struct projection pj;
        project_onto(&src, &terms, curves, nc, &pj);
        print_rows(&src, &pj, curves, scale, sysd);
        if (output != NULL) {
            char target[600];
            snprintf(target, sizeof target, "%s (%s)", comm != NULL ? comm : system, where);
            const struct projection_sources from = {result, target, compute_note, where, sysd};
            if (project_write(output, &from, &src, &terms, &pj, curves, err, sizeof err) != 0) {
                report_message(stderr, "dpscale: error: project: %s", err);
                rc = EXIT_FAILURE_RUN;
            } else {
                report_message(stdout, "wrote %s", output);
            }
        }
    }
    project_source_free(&src);
    result_in_close(rf);
    result_in_close(cf);
    free(sysd);
    return rc;
}

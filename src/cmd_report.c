/* cmd_report.c — `dpscale report FILE.h5 ...`: the scaling tables of result files
 * (Markdown, CSV or JSON), systems side by side (--compare), and a plot (--plot).
 * A file that cannot be read is named with the reason and skipped; the others are
 * still reported, and the exit status says that one was bad. No MPI is needed. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "report.h"
#include "session.h"

static void usage(FILE *out)
{
    fprintf(out, "usage: dpscale report [--format markdown|csv|json] [--compare] [--plot OUT.png|OUT.svg]\n"
                 "                      [--price-per-gpu-hour P[,P...]] FILE.h5 ...\n\n"
                 "  --compare              systems side by side (every library and path of every file), the first as reference,\n"
                 "                         with per-GPU, per-joule and (with prices) per-dollar figures and ratios\n"
                 "  --price-per-gpu-hour   one price for every file, or one per file in order (any currency)\n");
}

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'}, {"compare", no_argument, NULL, 'c'}, {"plot", required_argument, NULL, 'p'},
        {"price-per-gpu-hour", required_argument, NULL, 'd'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    int format = REPORT_MARKDOWN, compare = 0, c;
    const char *plot = NULL, *prices = NULL;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "markdown") == 0) format = REPORT_MARKDOWN;
            else if (strcmp(optarg, "csv") == 0) format = REPORT_CSV;
            else if (strcmp(optarg, "json") == 0) format = REPORT_JSON;
            else {
                fprintf(stderr, "dpscale: error: --format %s: use markdown, csv or json\n", optarg);
                return EXIT_BAD_INPUT;
            }
            break;
        case 'c': compare = 1; break;
        case 'p': plot = optarg; break;
        case 'd': prices = optarg; break;
        case 'h': usage(stdout); return EXIT_OK;
        default:
            fprintf(stderr, "dpscale: error: unknown option '%s' of dpscale report\n", argv[optind - 1]);
            usage(stderr);
            return EXIT_BAD_INPUT;
        }
    }
    const int nfiles = argc - optind;
    if (nfiles < 1) {
        usage(stderr);
        return EXIT_BAD_INPUT;
    }
    struct report_file *files = calloc((size_t)nfiles, sizeof *files);
    if (files == NULL) return EXIT_FAILURE_RUN;
    int ngood = 0, bad = 0;
    double price[256] = {0};
    int nprices = 0;
    for (char *p = prices ? strdup(prices) : NULL, *save = NULL, *tok = p ? strtok_r(p, ",", &save) : NULL; tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(tok, &end);
        if (*end != '\0' || !(v > 0) || nprices == 256) {
            fprintf(stderr, "dpscale: error: --price-per-gpu-hour '%s' is not a positive number\n", tok);
            free(files);
            return EXIT_BAD_INPUT;
        }
        price[nprices++] = v;
    }
    if (nprices > 1 && nprices != nfiles) {
        fprintf(stderr, "dpscale: error: %d prices for %d files: give one price, or one per file\n", nprices, nfiles);
        free(files);
        return EXIT_BAD_INPUT;
    }
    for (int i = 0; i < nfiles; i++) {
        char err[768];
        if (report_read(argv[optind + i], &files[ngood], err, sizeof err) != 0) {
            fprintf(stderr, "dpscale: error: %s\n", err);
            bad = 1;
            continue;
        }
        files[ngood].price_per_gpu_hour = nprices == 0 ? 0 : price[nprices == 1 ? 0 : i];
        ngood++;
    }
    report_label(files, ngood);
    if (ngood > 0) {
        if (compare) report_print_compare(stdout, files, ngood, format);
        else report_print_tables(stdout, files, ngood, format);
        if (plot != NULL) {
            char err[512];
            if (report_plot(plot, files, ngood, err, sizeof err) != 0) {
                fprintf(stderr, "dpscale: error: %s\n", err);
                bad = 1;
            } else {
                fprintf(stderr, "wrote %s\n", plot);
            }
        }
    }
    free(files);
    return bad ? EXIT_FAILURE_RUN : EXIT_OK;
}

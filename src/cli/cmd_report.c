/* cmd_report.c — `dpscale report FILE.h5|FOLDER ...`: the tables of result files of
 * every kind (scaling, busbw by size, topology) as Markdown, CSV or JSON, systems
 * side by side (--compare), a plot (--plot), or a procurement document with its
 * figures (--doc OUT.md). A folder stands for its *.h5 files.
 * A file that cannot be read is named on stderr with the reason and skipped; the
 * others are still reported, and the exit status (1) says that one was bad. Each file
 * is read in a child process with a deadline (report_child.c): one whose damage
 * crashes or hangs the HDF5 library is one more unreadable file. Only regular files
 * are opened (a FIFO named *.h5 in a folder would block the call). A file without
 * checksums (written before dpscale sealed its files, a schema before 6) is reported
 * with a note on stderr that nothing tells a damaged byte in it; one of a later schema
 * without them is refused as damaged. One of a sweep that ended early has a note that
 * it is partial, and one whose training diverged a note saying so (on stderr, in the
 * tables and in the document). No MPI is needed.
 *
 * A result file is data from whoever could write it: its strings are escaped for
 * each output (report_format.c, csv.c), and its figures checked as they are read
 * (result_read*.c). The names the report writes (--plot, --doc and its OUT-figs) are
 * checked before any file is read (their folder there, safe_dir_check_target: no
 * link, FIFO or device there, no control character in the name, room for the
 * temporary, more than an extension) and written through exclusive temporaries beside
 * them (safe_file.h), so that a link planted in a shared folder is never followed. */
#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "report/report.h"
#include "base/safe_file.h"
#include "cli/session.h"

#define MAX_PRICES 256
/* A price per GPU-hour in any currency: a millionth to a billion (a GPU-hour in the
 * smallest and the largest unit of any currency is far inside both); outside it the
 * per-dollar figures would print as hundreds of digits, or as infinite. */
#define MIN_PRICE 1e-6
#define MAX_PRICE 1e9
#define DEFAULT_FILE_TIMEOUT_S 60.0 /* reading a file takes milliseconds; a damaged one can make HDF5 loop */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: dpscale report [--format markdown|csv|json] [--table run|comm|topo] [--compare] [--plot OUT.png|OUT.svg]\n"
            "                      [--price-per-gpu-hour P[,P...]] FILE.h5|FOLDER ...\n"
            "       dpscale report --doc OUT.md [--plot OUT.png|OUT.svg] [--price-per-gpu-hour P[,P...]] FILE.h5|FOLDER ...\n\n"
            "  Every kind of result file has its table: run files (dpscale run, dpscale project) the scaling\n"
            "  table; comm files (dpscale comm) allreduce busbw by size in nccl-tests' columns; topo files\n"
            "  (dpscale topo) the link matrix and the copy matrices. A FOLDER stands for its *.h5 files.\n\n"
            "  --format               markdown (default): every table; json: one document, a member per table;\n"
            "                         csv: one table (RFC 4180), that of --table or the first kind given\n"
            "  --table                the table of run, comm or topo files alone\n"
            "  --compare              systems side by side (every library and path of every run file), the first as\n"
            "                         reference, with per-GPU, per-joule and (with prices) per-dollar figures and ratios\n"
            "  --plot                 speedup and efficiency of the run files against GPU count, with the ideal, through\n"
            "                         gnuplot; an existing plot is replaced\n"
            "  --doc                  a procurement document in Markdown instead of the tables on stdout: per model, one\n"
            "                         column per system and one row per GPU count (per GPU, efficiency, step spread, power,\n"
            "                         per joule, per dollar), its figure in OUT-figs/, projections apart, busbw side by\n"
            "                         side, every file's provenance; the document and figures are replaced when they exist\n"
            "  --price-per-gpu-hour   one price for every file, or one per file in order (any currency, %g to %g)\n"
            "  --file-timeout S       seconds to read one file before it is named as unreadable and skipped (default %g)\n\n"
            "  The plot, the document and its figures are never written through a symbolic link, nor into a\n"
            "  FIFO or a device, and their names hold no control character; OUT-figs is a folder of your own.\n"
            "  Control characters of a file's text are shown as \\xNN (ESC as \\x1b), never sent to the terminal.\n\n"
            "exit status: 0 every file was reported; 1 a file could not be read (missing, not HDF5, truncated,\n"
            "not dpscale's, a newer schema, damaged: a figure no measurement gives, corrupt: changed since it was\n"
            "written, as its checksums show, or of schema 6 or later without them: each is named on stderr with\n"
            "the reason, and the others are still reported) or the plot or a figure could not be drawn; 2 bad\n"
            "options or an output that cannot be written safely. A file without checksums written before dpscale\n"
            "sealed its files (schema 5 and older) is reported with a note on stderr (dpscale seal FILE seals a\n"
            "copy you trust), and so is a partial one (its sweep ended early: the points measured before) and\n"
            "one whose training diverged (root attribute diverged).\n",
            MIN_PRICE, MAX_PRICE, DEFAULT_FILE_TIMEOUT_S);
}

static int ends_with(const char *s, const char *tail)
{
    const size_t n = strlen(s), m = strlen(tail);
    return n >= m && strcmp(s + n - m, tail) == 0;
}

static int is_h5(const struct dirent *e) { return e->d_name[0] != '.' && ends_with(e->d_name, ".h5"); }

/* The paths to read: each argument, a folder replaced by its *.h5 files in name
 * order. Returns their count (in *paths, to free with free_paths); a folder without
 * one is named on stderr and sets *bad. */
static int expand(char **args, int nargs, char ***paths, int *bad)
{
    int n = 0, cap = nargs > 0 ? nargs : 1;
    char **p = malloc((size_t)cap * sizeof *p);
    for (int i = 0; p != NULL && i < nargs; i++) {
        struct stat st;
        struct dirent **list = NULL;
        const int isdir = stat(args[i], &st) == 0 && S_ISDIR(st.st_mode);
        const int m = isdir ? scandir(args[i], &list, is_h5, alphasort) : 0;
        if (isdir && m <= 0) {
            report_message(stderr, "dpscale: error: %s: a folder without *.h5 files", args[i]);
            *bad = 1;
        }
        for (int k = 0; k < (isdir ? m : 1); k++) {
            if (n == cap) {
                char **more = realloc(p, (size_t)(cap *= 2) * sizeof *p);
                if (more == NULL) break;
                p = more;
            }
            if (!isdir) {
                p[n++] = strdup(args[i]);
                continue;
            }
            const size_t len = strlen(args[i]) + strlen(list[k]->d_name) + 2;
            const int slash = ends_with(args[i], "/"); /* results/ names results/a.h5, not results//a.h5 */
            if ((p[n] = malloc(len)) != NULL) snprintf(p[n++], len, "%s%s%s", args[i], slash ? "" : "/", list[k]->d_name);
        }
        for (int k = 0; k < m; k++) free(list[k]);
        free(list);
    }
    *paths = p;
    return p != NULL ? n : 0;
}

static void free_paths(char **paths, int n)
{
    for (int i = 0; i < n; i++) free(paths[i]);
    free(paths);
}

/* --price-per-gpu-hour's list; -1 (said on stderr) when a price is not a number from
 * MIN_PRICE to MAX_PRICE: not infinite, not NaN, not a subnormal such as 1e-320,
 * whose per-dollar figure would overflow. */
static int parse_prices(const char *list, double *price)
{
    int n = 0;
    char *copy = list ? strdup(list) : NULL, *save = NULL;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        const double v = strtod(tok, &end);
        if (end == tok || *end != '\0' || !isnormal(v) || !(v >= MIN_PRICE && v <= MAX_PRICE)) {
            report_message(stderr, "dpscale: error: --price-per-gpu-hour '%s': give a price per GPU-hour from %g to %g "
                                   "(any currency), or one per file separated by commas", tok, MIN_PRICE, MAX_PRICE);
            n = -1;
            break;
        }
        if (n == MAX_PRICES) {
            report_message(stderr, "dpscale: error: --price-per-gpu-hour: more than %d prices", MAX_PRICES);
            n = -1;
            break;
        }
        price[n++] = v;
    }
    if (list != NULL && n == 0) {
        report_message(stderr, "dpscale: error: --price-per-gpu-hour '%s': give a price per GPU-hour from %g to %g (any "
                               "currency), or one per file separated by commas", list, MIN_PRICE, MAX_PRICE);
        n = -1;
    }
    free(copy);
    return n;
}

/* 0 when `out` can be written, checked before any file is read: its folder is there
 * and is a folder (safe_dir_open), its name one a file can take (safe_dir_check_target:
 * no link, FIFO or device there, no control character, room for the temporary beside
 * it), more than an extension (".svg" alone would be a hidden file), and for --doc
 * its OUT-figs nothing or a folder of this user's. -1 said on stderr. *existed: a file is there. */
static int check_output(const char *option, const char *out, int *existed)
{
    static const char *const bare[] = {".svg", ".png", ".md", ".csv"};
    char err[1024];
    struct safe_dir d;
    size_t at;
    const int doc = strcmp(option, "--doc") == 0;
    const char *dot = strrchr(out, '.');
    int rc = -1;
    if (!doc && (dot == NULL || (strcmp(dot, ".png") != 0 && strcmp(dot, ".svg") != 0))) {
        snprintf(err, sizeof err, "the name must end in .png or .svg");
    } else if (safe_dir_open_parent(&d, out, &at, err, sizeof err) == 0) {
        int only_extension = 0;
        for (size_t i = 0; i < sizeof bare / sizeof bare[0] && !only_extension; i++)
            if (strcmp(out + at, bare[i]) == 0) {
                snprintf(err, sizeof err, "%s is an extension alone, which would make a hidden file; give a name "
                         "before it (out%s)", bare[i], bare[i]);
                only_extension = 1;
            }
        if (!only_extension)
            rc = doc ? report_doc_check_targets(out, err, sizeof err)
                     : safe_dir_check_target(&d, out + at, "plot", 1, err, sizeof err);
        struct stat st;
        *existed = rc == 0 && fstatat(d.fd, out + at, &st, AT_SYMLINK_NOFOLLOW) == 0;
        safe_dir_close(&d);
    }
    if (rc != 0) {
        report_message(stderr, "dpscale: error: %s %s: %s", option, out, err);
        return -1;
    }
    return 0;
}

/* --doc: the document, with the command line that made it; 0, or -1 (said on stderr). */
static int write_doc(const char *out, int existed, int argc, char **argv, const struct report_file *files, int n,
                     const struct report_request *tables)
{
    char command[2048] = "dpscale", err[512];
    for (int i = 0; i < argc; i++) {
        const size_t used = strlen(command);
        const int quote = strpbrk(argv[i], " \t'\"") != NULL;
        snprintf(command + used, sizeof command - used, quote ? " '%s'" : " %s", argv[i]);
    }
    const struct report_doc_request req = {.command = command, .unreadable = tables->unreadable, .nbad = tables->nbad};
    const int rc = report_doc_write(out, stderr, files, n, &req, err, sizeof err);
    if (rc < 0) {
        report_message(stderr, "dpscale: error: --doc %s: %s", out, err);
        return -1;
    }
    report_message(stderr, "wrote %s%s", out, existed ? " (replacing the one there)" : "");
    return rc;
}

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"format", required_argument, NULL, 'f'}, {"compare", no_argument, NULL, 'c'}, {"plot", required_argument, NULL, 'p'},
        {"price-per-gpu-hour", required_argument, NULL, 'd'}, {"table", required_argument, NULL, 't'},
        {"doc", required_argument, NULL, 'D'}, {"file-timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct report_request req = {.format = REPORT_MARKDOWN, .only = -1};
    const char *plot = NULL, *prices = NULL, *doc = NULL;
    int c, tables_asked = 0;
    double file_timeout = DEFAULT_FILE_TIMEOUT_S;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            tables_asked = 1;
            if (strcmp(optarg, "markdown") == 0) req.format = REPORT_MARKDOWN;
            else if (strcmp(optarg, "csv") == 0) req.format = REPORT_CSV;
            else if (strcmp(optarg, "json") == 0) req.format = REPORT_JSON;
            else {
                report_message(stderr, "dpscale: error: --format %s: use markdown, csv or json", optarg);
                return EXIT_BAD_INPUT;
            }
            break;
        case 't':
            tables_asked = 1;
            if (strcmp(optarg, "run") == 0) req.only = REPORT_RUNS;
            else if (strcmp(optarg, "comm") == 0) req.only = REPORT_COMM;
            else if (strcmp(optarg, "topo") == 0) req.only = REPORT_TOPO;
            else {
                report_message(stderr, "dpscale: error: --table %s: use run, comm or topo", optarg);
                return EXIT_BAD_INPUT;
            }
            break;
        case 'c': req.compare = 1, tables_asked = 1; break;
        case 'p': plot = optarg; break;
        case 'D': doc = optarg; break;
        case 'd': prices = optarg; break;
        case 'T': {
            char *end;
            file_timeout = strtod(optarg, &end);
            if (*end != '\0' || !(file_timeout > 0 && file_timeout <= 86400)) {
                report_message(stderr, "dpscale: error: --file-timeout %s: give seconds, more than 0 and at most 86400",
                               optarg);
                return EXIT_BAD_INPUT;
            }
            break;
        }
        case 'h': usage(stdout); return EXIT_OK;
        default:
            report_message(stderr, "dpscale: error: unknown option '%s' of dpscale report", argv[optind - 1]);
            usage(stderr);
            return EXIT_BAD_INPUT;
        }
    }
    if (argc - optind < 1) {
        usage(stderr);
        return EXIT_BAD_INPUT;
    }
    if (doc != NULL && tables_asked) {
        fprintf(stderr, "dpscale: error: --doc writes a Markdown document of every table: leave out --format, --table "
                        "and --compare\n");
        return EXIT_BAD_INPUT;
    }
    double price[MAX_PRICES] = {0};
    const int nprices = parse_prices(prices, price);
    if (nprices < 0) return EXIT_BAD_INPUT;
    int plot_existed = 0, doc_existed = 0; /* the outputs first: a bad name costs no read */
    if ((plot != NULL && check_output("--plot", plot, &plot_existed) != 0) ||
        (doc != NULL && check_output("--doc", doc, &doc_existed) != 0))
        return EXIT_BAD_INPUT;
    int bad = 0;
    char **paths = NULL;
    const int npaths = expand(argv + optind, argc - optind, &paths, &bad);
    if (nprices > 1 && nprices != npaths) {
        fprintf(stderr, "dpscale: error: %d prices for %d files: give one price, or one per file\n", nprices, npaths);
        free_paths(paths, npaths);
        return EXIT_BAD_INPUT;
    }
    struct report_file *files = calloc(npaths > 0 ? (size_t)npaths : 1, sizeof *files);
    char **unreadable = calloc(npaths > 0 ? (size_t)npaths : 1, sizeof *unreadable);
    if (files == NULL || unreadable == NULL) {
        fprintf(stderr, "dpscale: error: out of memory for %d files\n", npaths);
        return EXIT_FAILURE_RUN;
    }
    int ngood = 0, nbad = 0, nruns = 0;
    for (int i = 0; i < npaths; i++) {
        char err[768], line[1400];
        const int flags = REPORT_READ_SEALED | (doc != NULL || plot != NULL ? REPORT_READ_INFO : 0);
        if (report_read_isolated(paths[i], &files[ngood], flags, file_timeout, err, sizeof err) != 0) {
            snprintf(line, sizeof line, "%s: %s", files[ngood].path, err);
            report_message(stderr, "dpscale: error: %s", line);
            unreadable[nbad++] = strdup(line);
            bad = 1;
            continue;
        }
        if (!files[ngood].sealed) report_note_unsealed(stderr, &files[ngood]);
        if (files[ngood].points_done < files[ngood].points_planned) report_note_partial(stderr, &files[ngood]);
        if (files[ngood].diverged[0]) report_note_diverged(stderr, &files[ngood]);
        if (files[ngood].kind == REPORT_NONE) {
            report_message(stderr, "dpscale: note: %s: a dpscale dump file (one step laid open): no table to report",
                           files[ngood].path);
            report_free(&files[ngood]);
            continue;
        }
        nruns += files[ngood].kind == REPORT_RUNS;
        files[ngood].price_per_gpu_hour = nprices == 0 ? 0 : price[nprices == 1 ? 0 : i];
        ngood++;
    }
    report_label(files, ngood);
    req.unreadable = (const char *const *)unreadable;
    req.nbad = nbad;
    if (doc != NULL) bad |= write_doc(doc, doc_existed, argc, argv, files, ngood, &req) != 0;
    else report_write(stdout, stderr, files, ngood, &req);
    if ((fflush(stdout) != 0) | ferror(stdout)) { /* stdout a file on a full disk */
        report_message(stderr, "dpscale: error: the tables could not be written completely to standard output "
                               "(disk full?)");
        bad = 1;
    }
    if (plot != NULL) {
        char err[1024];
        struct report_file *runs = calloc(nruns > 0 ? (size_t)nruns : 1, sizeof *runs);
        int k = 0;
        for (int i = 0; runs != NULL && i < ngood; i++)
            if (files[i].kind == REPORT_RUNS) runs[k++] = files[i];
        if (k == 0) {
            report_message(stderr, "dpscale: error: --plot %s: no run file to plot", plot);
            bad = 1;
        } else if (report_plot(plot, runs, k, err, sizeof err) != 0) {
            report_message(stderr, "dpscale: error: --plot %s: %s", plot, err);
            bad = 1;
        } else {
            report_message(stderr, "wrote %s%s", plot, plot_existed ? " (replacing the one there)" : "");
        }
        free(runs);
    }
    for (int i = 0; i < ngood; i++) report_free(&files[i]);
    for (int i = 0; i < nbad; i++) free(unreadable[i]);
    free(unreadable);
    free(files);
    free_paths(paths, npaths);
    return bad ? EXIT_FAILURE_RUN : EXIT_OK;
}

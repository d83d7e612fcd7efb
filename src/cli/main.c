/* main.c — the dpscale command: picks the subcommand and hands it the rest of argv. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "backend/backend.h"
#include "base/error.h"
#include "base/log.h"
#include "system/provenance.h"
#include "cli/session.h"

static void usage(FILE *out)
{
    if (log_rank() != 0) return; /* once per launch, not once per rank */
    fprintf(out,
            "dpscale %s — how much of N GPUs a data-parallel training step really gets\n\n"
            "usage: [mpirun -np N] dpscale [--quiet] COMMAND [OPTIONS]\n"
            "       dpscale COMMAND --help   (or dpscale help COMMAND): its options and the keys it reads\n\n"
            "commands:\n",
            DPSCALE_VERSION);
    commands_print_list(out);
    fprintf(out, "  version    print the version, the git commit and every library's version (also --version)\n\n"
                 "global options (before or after COMMAND):\n"
                 "  --quiet    no header and no progress lines: results, warnings and errors only\n"
                 "  -h, --help this list\n\n"
                 "dpscale config --help lists every configuration key.\n");
}

/* --quiet may come before or after the command (up to a "--"): it is taken out of
 * argv here, so that every command accepts it. Returns the new argc. */
static int take_global_options(int argc, char **argv)
{
    int n = 1, i = 1;
    for (; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (strcmp(argv[i], "--quiet") == 0) log_set_quiet(1);
        else argv[n++] = argv[i];
    }
    for (; i < argc; i++) argv[n++] = argv[i];
    argv[n] = NULL;
    return n;
}

static int is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0 || strcmp(arg, "help") == 0; }

int main(int argc, char **argv)
{
    backend_cpu_take_the_right_kernels(argv); /* may start dpscale again, before anything is done */
    provenance_note_command(argc, argv); /* the whole command line, for the result file */
    log_set_rank(log_launch_rank()); /* before MPI starts: help and errors from rank 0 only */
    argc = take_global_options(argc, argv);
    if (argc >= 3 && strcmp(argv[1], "help") == 0) { /* dpscale help COMMAND = dpscale COMMAND --help */
        argv[1] = argv[2];
        argv[2] = "--help";
        argc = 3;
    }
    if (argc < 2 || is_help(argv[1])) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_BAD_INPUT : EXIT_OK;
    }
    const char *cmd = argv[1];
    const struct command *c = command_find(cmd);
    if (c != NULL) {
        const int rc = c->main(argc - 1, argv + 1);
        if (rc != EXIT_HELP) return rc;
        command_print_help(c, stdout); /* the command's --help, on rank 0 */
        return EXIT_OK;
    }
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        provenance_print_version(stdout);
        return EXIT_OK;
    }
    char names[512] = "";
    for (c = commands; c->name != NULL; c++) snprintf(names + strlen(names), sizeof names - strlen(names), "%s, ", c->name);
    dp_error_once("unknown command '%s'; commands are %sversion (dpscale --help says what each does)", cmd, names);
    return EXIT_BAD_INPUT;
}

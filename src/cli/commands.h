/* commands.h — the subcommands of the dpscale binary, and their help. main.c
 * dispatches through the table; each command takes the arguments after its own
 * name (argv[0] is the subcommand) and returns its exit status, or EXIT_HELP
 * (session.h) for --help, which main answers with command_print_help. */
#ifndef DPSCALE_COMMANDS_H
#define DPSCALE_COMMANDS_H

#include <stdio.h>

int cmd_run(int argc, char **argv);       /* the scaling sweep (cmd_run.c) */
int cmd_gradcheck(int argc, char **argv); /* backward pass against finite differences (cmd_gradcheck.c) */
int cmd_bench(int argc, char **argv);     /* the step against its GEMMs alone (cmd_bench.c) */
int cmd_dump(int argc, char **argv);      /* one step laid open for an independent implementation (cmd_dump.c) */
int cmd_comm(int argc, char **argv);      /* allreduce bandwidth sweep (cmd_comm.c) */
int cmd_topo(int argc, char **argv);      /* the node's GPU, PCIe, NVLink and network topology (cmd_topo.c) */
int cmd_report(int argc, char **argv);    /* tables, comparisons and plots of result files (cmd_report.c) */
int cmd_seal(int argc, char **argv);      /* checksums added to result files written before dpscale sealed them (cmd_seal.c) */
int cmd_project(int argc, char **argv);   /* a measured step projected onto another system's allreduce curves (cmd_project.c) */
int cmd_config(int argc, char **argv);    /* the resolved configuration, or one key of it (cmd_config.c) */

/* A subcommand as `dpscale --help` lists it and its own --help describes it
 * (commands.c). Commands that read the configuration share one layout of help:
 * synopsis, what it does, its options, the configuration keys it reads. report,
 * seal and project read result files, not the configuration, and print their own. */
struct command {
    const char *name;
    int (*main)(int argc, char **argv);
    const char *summary;  /* one line for `dpscale --help` */
    const char *synopsis; /* the arguments after "dpscale NAME"; NULL: the command prints its own help */
    const char *about;    /* what it does and prints, lines of at most 90 columns */
    const char *options;  /* its own options, beyond those of every configuration-reading command */
    const char *keys;     /* the configuration it reads, for config_print_keys; NULL: every key */
    const char *exits;    /* what its exit status means */
};

extern const struct command commands[]; /* ends with a NULL name */

/* The command called `name`, or NULL. */
const struct command *command_find(const char *name);
/* `dpscale NAME --help` of a configuration-reading command, to `out` on rank 0 of
 * the launch only. */
void command_print_help(const struct command *c, FILE *out);
/* `dpscale --help`: every command with its line. */
void commands_print_list(FILE *out);

#endif

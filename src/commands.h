/* commands.h — the subcommands of the dpscale binary; main.c dispatches to them.
 * Each takes the arguments after its own name (argv[0] is the subcommand). */
#ifndef DPSCALE_COMMANDS_H
#define DPSCALE_COMMANDS_H

int cmd_run(int argc, char **argv);       /* the scaling sweep (cmd_run.c) */
int cmd_gradcheck(int argc, char **argv); /* backward pass against finite differences (gradcheck.c) */
int cmd_bench(int argc, char **argv);     /* the step against its GEMMs alone (bench.c) */
int cmd_dump(int argc, char **argv);      /* one step laid open for an independent implementation (cmd_dump.c) */
int cmd_comm(int argc, char **argv);      /* allreduce bandwidth sweep (cmd_comm.c) */
int cmd_topo(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_project(int argc, char **argv); /* a measured step projected onto another system's allreduce curves (cmd_project.c) */
int cmd_config(int argc, char **argv);    /* the resolved configuration, or one key of it (cmd_config.c) */    /* tables, comparisons and plots of result files (cmd_report.c) */      /* the node's GPU, PCIe, NVLink and network topology (cmd_topo.c) */

#endif

/* main.c — the dpscale command: picks the subcommand and hands it the rest of argv. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "error.h"
#include "session.h"

static void usage(FILE *out)
{
    fprintf(out,
            "dpscale %s — how much of N GPUs a data-parallel training step really gets\n\n"
            "usage: mpirun -np N dpscale COMMAND [--config FILE.ini] [--section.key=value ...]\n\n"
            "commands:\n"
            "  run        sweep 1..N ranks, print the scaling table, write one HDF5 result file\n"
            "  gradcheck  check the backward pass (and its allreduce) against finite differences\n"
            "  bench      time the training step against its GEMMs alone on one rank\n"
            "  dump       one step of one rank laid open (parameters, inputs, loss, gradients) in an HDF5 file\n"
            "  comm       allreduce bandwidth over a range of sizes (nccl-tests definitions), checked\n"
            "  topo       GPU links (NVLink, PCIe path), PCIe, NUMA, network adapters, GPU-to-GPU copy matrix\n"
            "  report     scaling tables (Markdown, CSV, JSON), comparisons and plots of result files\n"
            "  project    a measured step projected onto another system's allreduce curves (dpscale comm file)\n"
            "  config     the resolved configuration (--get section.key for one value)\n"
            "  version    print the version\n\n"
            "dpscale run --help lists every configuration key.\n",
            DPSCALE_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? EXIT_BAD_INPUT : EXIT_OK;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "run") == 0) return cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "gradcheck") == 0) return cmd_gradcheck(argc - 1, argv + 1);
    if (strcmp(cmd, "bench") == 0) return cmd_bench(argc - 1, argv + 1);
    if (strcmp(cmd, "dump") == 0) return cmd_dump(argc - 1, argv + 1);
    if (strcmp(cmd, "comm") == 0) return cmd_comm(argc - 1, argv + 1);
    if (strcmp(cmd, "topo") == 0) return cmd_topo(argc - 1, argv + 1);
    if (strcmp(cmd, "report") == 0) return cmd_report(argc - 1, argv + 1);
    if (strcmp(cmd, "project") == 0) return cmd_project(argc - 1, argv + 1);
    if (strcmp(cmd, "config") == 0) return cmd_config(argc - 1, argv + 1);
    if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
        printf("dpscale %s\n", DPSCALE_VERSION);
        return EXIT_OK;
    }
    dp_error_once("unknown command '%s'; commands are run, gradcheck, bench, dump, comm, topo, report, project, config, version", cmd);
    return EXIT_BAD_INPUT;
}

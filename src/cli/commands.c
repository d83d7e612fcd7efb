/* commands.c — the table of subcommands (commands.h): the line `dpscale --help`
 * gives each, and the --help of those that read the configuration, in one layout:
 * usage, what it does and prints, its options, the keys it reads (from the key
 * table itself, so a new key shows up in every --help that names its section). */
#include <string.h>

#include "cli/commands.h"
#include "config/config.h"
#include "base/log.h"

/* The options of every command that reads the configuration (config.c's parser);
 * the command's own come between the two parts. */
static const char common_options[] =
    "  --config FILE.ini         keys from an INI file: [section] lines, then key = value lines\n"
    "  --section.key=VALUE       one key, over the file's (e.g. --train.iters=50)\n"
    "  --backend=, --sweep=, --precision=, --path=, --library=, --output-dir=VALUE\n"
    "                            short for run.backend, run.sweep, train.precision, comm.path,\n"
    "                            comm.library, run.output_dir\n";
static const char common_flags[] =
    "  --quiet                   no header and no progress lines: results, warnings and errors only\n"
    "                            (a global option: also before the command)\n"
    "  -h, --help                this help\n";

static const char output_option[] =
    "  -o, --output FILE.h5      the result file's name in run.output_dir (run.output; default\n"
    "                            dpscale-<UTC time>-<job or pid>.h5); an existing file is never overwritten\n";

const struct command commands[] = {
    {"run", cmd_run, "sweep 1..N ranks, print the scaling table, write one HDF5 result file",
     "mpirun -np N dpscale run [--config FILE.ini] [--section.key=VALUE ...] [-o FILE.h5] [--quiet]",
     "For each N of run.sweep (1, 2, 4 ... up to the launch's ranks when not given) the first N\n"
     "ranks train the model data-parallel while the others wait, in three passes over the same\n"
     "steps: compute only, the communication alone, the real step (one pass on one rank).\n"
     "stdout: a header of what runs, a line per N, the scaling table and where the time went.\n"
     "stderr: progress lines (UTC time, N, pass, step, the time the launch has left) at each\n"
     "point's and pass's start and end and every DPSCALE_PROGRESS_S seconds between (default 5).\n"
     "One HDF5 file per launch holds every rank's timings (dpscale report reads it).",
     output_option, "model train run comm topo.fixture",
     "0 every run done and written; 1 a run failed (a rank died, replicas drifted, the path\n"
     "was not the one asked for, the file could not be written); 2 bad configuration or launch"},
    {"gradcheck", cmd_gradcheck, "check the backward pass (and its allreduce) against finite differences",
     "[mpirun -np N] dpscale gradcheck [--config FILE.ini] [--section.key=VALUE ...]",
     "The data-parallel gradient (each rank's backward pass, summed by the allreduce) against\n"
     "central finite differences of the global loss, on a sample of coordinates of every tensor.\n"
     "Use a tiny model (configs/mlp-tiny.ini) in fp32; any backend, any number of ranks.\n"
     "stdout: each coordinate's analytic and numeric gradient, then PASS or FAIL. No file.",
     NULL,
     "model train.scaling train.batch_per_gpu train.global_batch train.seed train.precision run.backend "
     "run.threads comm.library comm.path topo.fixture",
     "0 every coordinate within the tolerance; 1 one is not; 2 bad configuration"},
    {"bench", cmd_bench, "time the training step against its GEMMs alone on one rank",
     "dpscale bench [--config FILE.ini] [--section.key=VALUE ...] [--quiet]",
     "How much of one rank's training step its GEMMs are: the real step timed by phase, the\n"
     "same GEMMs alone on the same shapes and buffers (with attention's products where the\n"
     "model has them), their share of the step against the target, then a few steps with every\n"
     "backend operation timed. One rank (no mpirun, or -np 1). stdout: the tables; stderr:\n"
     "progress lines of the step's run. No file.",
     NULL, "model train run.backend run.threads run.peak_tflops",
     "0 measured (the target met or not: the last lines say); 1 the step failed; 2 bad\n"
     "configuration or more than one rank"},
    {"dump", cmd_dump, "one step of one rank laid open (parameters, inputs, loss, gradients) in an HDF5 file",
     "dpscale dump [--config FILE.ini] [--section.key=VALUE ...] [-o FILE.h5]",
     "The first training step of one rank (samples 0 .. B-1, seed train.seed) laid open for an\n"
     "independent implementation to recompute (tests/gpu/torch_reference.py): the model's tensor\n"
     "table, the initial parameters, the step's inputs, its loss and every parameter's gradient,\n"
     "in one HDF5 file. One rank (no mpirun, or -np 1); any backend and precision.",
     output_option, "model train run.backend run.output_dir run.output run.threads",
     "0 written; 1 the file could not be written; 2 bad configuration or more than one rank"},
    {"comm", cmd_comm, "allreduce bandwidth over a range of sizes (nccl-tests definitions), checked",
     "mpirun -np N dpscale comm [--config FILE.ini] [--section.key=VALUE ...] [-o FILE.h5] [--quiet]",
     "Allreduce bandwidth from collective.min_mib to collective.max_mib (times collective.factor)\n"
     "on every N >= 2 of run.sweep (on one rank when the launch has one), through the library\n"
     "and path a training run would take; every element of every result is checked.\n"
     "stdout: per N, nccl-tests' columns (size, count, time, algbw, busbw, #wrong). The result\n"
     "file holds them under /collectives (dpscale report, dpscale project --comm read it).",
     output_option,
     "collective comm.library comm.path comm.nccl_max_ctas comm.register comm.symmetric comm.cta_policy "
     "comm.shm_copy run.backend run.sweep run.output_dir run.output run.threads topo.fixture",
     "0 done, every element right; 1 a wrong element or a failure; 2 bad configuration"},
    {"topo", cmd_topo, "GPU links (NVLink, PCIe path), PCIe, NUMA, network adapters, GPU-to-GPU copy matrix",
     "dpscale topo [--config FILE.ini] [--section.key=VALUE ...] [-o FILE.h5]",
     "This node's GPUs and what connects them: the link matrix as nvidia-smi topo -m shows it,\n"
     "PCIe generation and width, NUMA and CPU affinity, NVLinks, InfiniBand and RoCE adapters;\n"
     "the NCCL settings comm.path would apply here; and, started as one process on a GPU node\n"
     "with topo.peer_bandwidth on, the GPU-to-GPU copy matrix. All of it goes to a result file.",
     output_option, "topo comm.path comm.shm_copy run.backend run.output_dir run.output",
     "0 done; 1 the file could not be written; 2 bad configuration (or a comm.path this node lacks)"},
    {"report", cmd_report, "scaling tables (Markdown, CSV, JSON), comparisons and plots of result files", NULL, NULL, NULL,
     NULL, NULL},
    {"seal", cmd_seal, "seal result files written before dpscale sealed its files (checksums the report checks)", NULL,
     NULL, NULL, NULL, NULL},
    {"project", cmd_project, "a measured step projected onto another system's allreduce curves (dpscale comm file)",
     NULL, NULL, NULL, NULL, NULL},
    {"config", cmd_config, "the resolved configuration (--get section.key for one value)",
     "dpscale config [--config FILE.ini] [--section.key=VALUE ...] [--get section.key]",
     "The configuration as a launch would resolve it (defaults, then the file, then the command\n"
     "line), without MPI: every key as 'section.key = value', or with --get one value alone (the\n"
     "job scripts ask it for comm.paths). Below: every key of dpscale, its default and accepted\n"
     "values; each command's --help names those it reads.",
     "  --get section.key         print that key's value alone\n", NULL,
     "0 printed; 2 bad configuration or no such key"},
    {NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL},
};

const struct command *command_find(const char *name)
{
    for (const struct command *c = commands; c->name != NULL; c++)
        if (strcmp(c->name, name) == 0) return c;
    return NULL;
}

void command_print_help(const struct command *c, FILE *out)
{
    if (log_rank() != 0 || c->synopsis == NULL) return;
    fprintf(out, "usage: %s\n\n%s\n\noptions:\n%s%s%s\n", c->synopsis, c->about, common_options,
            c->options ? c->options : "", common_flags);
    if (c->keys != NULL)
        fprintf(out, "configuration it reads (in the INI file: [section] key = value; on the command line:\n"
                     "--section.key=VALUE; dpscale config --help lists every key):\n");
    else
        fprintf(out, "configuration keys (in the INI file: [section] key = value; on the command line:\n"
                     "--section.key=VALUE):\n");
    config_print_keys(out, c->keys);
    fprintf(out, "\nexit status: %s\n", c->exits);
}

void commands_print_list(FILE *out)
{
    for (const struct command *c = commands; c->name != NULL; c++) fprintf(out, "  %-10s %s\n", c->name, c->summary);
}

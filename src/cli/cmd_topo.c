/* cmd_topo.c — `dpscale topo`: what connects the GPUs of this node (the link
 * matrix as `nvidia-smi topo -m` shows it, PCIe generation and width, NUMA and CPU
 * affinity, NVLinks) and the node to the network (InfiniBand and RoCE adapters), the
 * NCCL settings that comm.path would apply, and, on a GPU node started as one
 * process, the GPU-to-GPU copy matrix. Everything goes to the result file too. */
#include <stdio.h>

#include "cli/commands.h"
#include "base/log.h"
#include "system/peer_bw.h"
#include "cli/result_file.h"
#include "cli/session.h"

#define PEER_COPY_BYTES ((size_t)256 << 20)

int cmd_topo(int argc, char **argv)
{
    struct session s;
    int rc = session_start(argc, argv, &s); /* detects, and checks comm.path against it */
    if (rc != EXIT_OK) return rc; /* EXIT_HELP too: main prints the help */
    struct result_file out;
    if ((rc = result_file_prepare(&s, &out)) != EXIT_OK) return rc;
    if (s.launch.rank == 0) {
        topo_print(stdout, &s.topo);
        say("\ncomm.path = %s:", config_value_name(&s.cfg, "comm", "path"));
        for (int i = 0; i < s.nccl.n; i++) say(" %s=%s", s.nccl.v[i].name, s.nccl.v[i].value);
        say("%s\n", s.nccl.n ? "" : " no NCCL setting (NCCL chooses)");
    }
#ifdef DPSCALE_HAVE_CUDA
    static struct peer_matrix peers;
    if (s.backend.info.device_index >= 0 && s.cfg.topo_peer_bandwidth) {
        if (s.launch.size > 1)
            say("\n(copy matrix skipped: start dpscale topo as one process, without mpirun, to measure it)\n");
        else if (peer_measure(&peers, PEER_COPY_BYTES) == 0) {
            say("\ncopies of %zu MiB between every pair of GPUs (cudaMemcpyPeerAsync, %s)\n", PEER_COPY_BYTES >> 20,
                "mean of 10 after one untimed");
            peer_print(stdout, &peers);
            out.peers = &peers;
        }
    }
#endif
    const int failed = result_file_write(&s, &out, argc, argv, NULL, NULL, 0, NULL, 0) != 0;
    session_end(&s);
    return failed ? EXIT_FAILURE_RUN : EXIT_OK;
}

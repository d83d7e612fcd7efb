/* test_topo.c — topology from recorded `nvidia-smi topo -m` output and /sys, and
 * the NCCL settings of every path (comm.path), on an 8-GPU NVSwitch node and a PCIe-only
 * dual-socket node (and that node with one NVLink bridge, made from it in memory). */
#include <stdlib.h>

#include "config/config.h"
#include "system/topo.h"
#include "comm/nccl_path.h"
#include "check.h"

static struct topo_node g_nvswitch, g_pcie;
static const int all8[] = {0, 1, 2, 3, 4, 5, 6, 7};

static const char *setting(const struct nccl_settings *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i].name, name) == 0) return s->v[i].value;
    return NULL;
}

TEST(nvswitch_node_has_eight_gpus_all_nv18)
{
    char err[256];
    CHECK(topo_load_fixture("tests/fixtures/topo-nvswitch-8gpu.txt", &g_nvswitch, err, sizeof err) == 0);
    CHECK(g_nvswitch.ngpus == 8);
    CHECK(g_nvswitch.link[0][7] == TOPO_NVLINK && g_nvswitch.nvlinks[0][7] == 18);
    CHECK(g_nvswitch.link[3][3] == TOPO_SELF);
    CHECK(topo_all_nvlink(&g_nvswitch, all8, 8));
    CHECK(g_nvswitch.gpu[5].numa_node == 1);
    CHECK(strcmp(g_nvswitch.gpu[0].cpu_affinity, "0-55,112-167") == 0);
    CHECK(g_nvswitch.nnics == 4 && strcmp(g_nvswitch.nic[3].name, "mlx5_3") == 0);
}

TEST(pcie_node_has_switch_bridge_and_socket_levels)
{
    char err[256], label[16];
    CHECK(topo_load_fixture("tests/fixtures/topo-pcie-dual-socket-8gpu.txt", &g_pcie, err, sizeof err) == 0);
    CHECK(g_pcie.ngpus == 8);
    CHECK(g_pcie.link[0][1] == TOPO_PIX && g_pcie.link[0][2] == TOPO_PXB);
    CHECK(g_pcie.link[4][6] == TOPO_NODE && g_pcie.link[0][4] == TOPO_SYS);
    CHECK(!topo_all_nvlink(&g_pcie, all8, 2));
    topo_link_label(&g_pcie, 2, 3, label, sizeof label);
    CHECK(strcmp(label, "PIX") == 0);
}

TEST(text_that_is_not_a_topology_is_refused)
{
    struct topo_node t;
    char err[256];
    CHECK(topo_parse_nvidia_smi("hello\nworld\n", &t, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "no GPU rows");
    CHECK(topo_parse_nvidia_smi("\tGPU0\tGPU1\nGPU0\t X \tNVX\nGPU1\tNV2\t X \n", &t, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "unknown link 'NVX'");
}

TEST(nvlink_on_the_nvswitch_node_restricts_p2p_to_nvlink)
{
    struct nccl_settings s;
    char err[512];
    CHECK(nccl_path_settings(PATH_NVLINK, &g_nvswitch, all8, 8, &s, err, sizeof err) == 0);
    CHECK(setting(&s, "NCCL_P2P_LEVEL") != NULL && strcmp(setting(&s, "NCCL_P2P_LEVEL"), "NVL") == 0);
}

TEST(nvlink_on_a_pcie_node_is_an_error_that_shows_the_matrix)
{
    struct nccl_settings s;
    char err[1024];
    CHECK(nccl_path_settings(PATH_NVLINK, &g_pcie, all8, 2, &s, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "not all NVLink-connected");
    CHECK_CONTAINS(err, "GPU0: X PIX PXB");
    CHECK_CONTAINS(err, "use comm.path = pcie, host or auto");
}

TEST(host_disables_peer_access_and_net_disables_shared_memory_too)
{
    struct nccl_settings s;
    char err[256];
    CHECK(nccl_path_settings(PATH_HOST, &g_nvswitch, all8, 8, &s, err, sizeof err) == 0);
    CHECK(s.n == 1 && strcmp(setting(&s, "NCCL_P2P_DISABLE"), "1") == 0);
    CHECK(nccl_path_settings(PATH_NET, &g_pcie, all8, 8, &s, err, sizeof err) == 0);
    CHECK(strcmp(setting(&s, "NCCL_P2P_DISABLE"), "1") == 0 && strcmp(setting(&s, "NCCL_SHM_DISABLE"), "1") == 0);
    /* the fixture's adapters are of unknown state: no InfiniBand known up, so sockets */
    CHECK(setting(&s, "NCCL_IB_DISABLE") != NULL);
    CHECK(nccl_path_settings(PATH_AUTO, &g_pcie, all8, 8, &s, err, sizeof err) == 0 && s.n == 0);
}

TEST(pcie_on_a_pcie_node_allows_peer_to_peer_across_the_whole_node)
{
    struct nccl_settings s;
    char err[1024];
    CHECK(nccl_path_settings(PATH_PCIE, &g_pcie, all8, 8, &s, err, sizeof err) == 0);
    CHECK(s.n == 1 && setting(&s, "NCCL_P2P_LEVEL") != NULL && strcmp(setting(&s, "NCCL_P2P_LEVEL"), "SYS") == 0);
    CHECK(setting(&s, "NCCL_P2P_DISABLE") == NULL);
}

TEST(pcie_on_nvlink_gpus_is_refused_naming_host_and_nvlink)
{
    /* NCCL cannot keep its peer-to-peer off NVLink: a pcie run there would be an NVLink run */
    struct nccl_settings s;
    char err[1024] = "";
    CHECK(nccl_path_settings(PATH_PCIE, &g_nvswitch, all8, 2, &s, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "comm.path = pcie, but these GPUs are NVLink-connected");
    CHECK_CONTAINS(err, "GPU0: X NV18");
    CHECK_CONTAINS(err, "use comm.path = host to measure without NVLink (through host memory), or nvlink");
    CHECK(strchr(err, '\n') == NULL);
    /* one GPU communicates with nobody: nothing to refuse */
    CHECK(nccl_path_settings(PATH_PCIE, &g_nvswitch, all8, 1, &s, err, sizeof err) == 0);
}

TEST(pcie_is_refused_where_one_pair_of_the_run_has_nvlink)
{
    /* a PCIe node with an NVLink bridge between GPUs 2 and 3 (A100 PCIe, RTX A6000) */
    struct topo_node t = g_pcie;
    struct nccl_settings s;
    char err[1024] = "";
    t.link[2][3] = t.link[3][2] = TOPO_NVLINK;
    t.nvlinks[2][3] = t.nvlinks[3][2] = 4;
    const int two[] = {0, 1}, bridged[] = {1, 2, 3};
    CHECK(nccl_path_settings(PATH_PCIE, &t, two, 2, &s, err, sizeof err) == 0); /* GPUs 0 and 1: PIX only */
    CHECK(nccl_path_settings(PATH_PCIE, &t, bridged, 3, &s, err, sizeof err) != 0);
    CHECK_CONTAINS(err, "GPUs 2 and 3 are NVLink-connected");
    CHECK_CONTAINS(err, "use comm.path = host to measure without NVLink (through host memory), or auto");
}

TEST(shm_copy_ce_puts_the_host_memory_copies_on_the_copy_engines)
{
    struct nccl_settings s;
    char err[256];
    CHECK(nccl_path_settings(PATH_HOST, &g_nvswitch, all8, 8, &s, err, sizeof err) == 0);
    nccl_shm_copy_settings(SHM_COPY_SM, &s);
    CHECK(s.n == 1 && setting(&s, "NCCL_SHM_USE_CUDA_MEMCPY") == NULL);
    nccl_shm_copy_settings(SHM_COPY_CE, &s);
    CHECK(s.n == 3 && strcmp(setting(&s, "NCCL_SHM_USE_CUDA_MEMCPY"), "1") == 0);
    CHECK(strcmp(setting(&s, "NCCL_SHM_MEMCPY_MODE"), "3") == 0);
}

TEST(sysfs_adapters_are_read_with_rate_state_and_link_layer)
{
    struct topo_node t;
    memset(&t, 0, sizeof t);
    setenv("DPSCALE_SYSFS_ROOT", "tests/fixtures/sys", 1);
    topo_sysfs_nics(&t);
    unsetenv("DPSCALE_SYSFS_ROOT");
    CHECK(t.nnics == 2);
    CHECK(strcmp(t.nic[0].name, "mlx5_0") == 0 && t.nic[0].rate_gbps == 200.0);
    CHECK(strcmp(t.nic[0].state, "ACTIVE") == 0 && strcmp(t.nic[0].link_layer, "InfiniBand") == 0);
    CHECK(strcmp(t.nic[1].link_layer, "Ethernet") == 0 && strcmp(t.nic[1].state, "DOWN") == 0 && t.nic[1].numa_node == 1);
    /* with an InfiniBand adapter up, net keeps InfiniBand */
    struct nccl_settings s;
    char err[256];
    CHECK(nccl_path_settings(PATH_NET, &t, all8, 0, &s, err, sizeof err) == 0);
    CHECK(setting(&s, "NCCL_IB_DISABLE") == NULL);
}

TEST(applying_settings_reports_a_user_value_it_replaced)
{
    struct nccl_settings s;
    char err[256], note[128] = "";
    setenv("NCCL_P2P_DISABLE", "0", 1);
    nccl_path_settings(PATH_HOST, &g_pcie, all8, 8, &s, err, sizeof err);
    CHECK(nccl_path_apply(&s, note, sizeof note) == 1);
    CHECK_CONTAINS(note, "NCCL_P2P_DISABLE=0 replaced by 1");
    char env[512];
    nccl_effective_env(env, sizeof env);
    CHECK_CONTAINS(env, "NCCL_P2P_DISABLE=1");
    unsetenv("NCCL_P2P_DISABLE");
}

int main(void) { return test_main("topo"); }

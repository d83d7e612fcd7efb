"""dpscale topo and the check of comm.path, on recorded topologies (fixtures) and a
recorded /sys, on a machine without GPUs."""
import os

import h5py

from conftest import ROOT, dpscale

NVSWITCH = ROOT / "tests/fixtures/topo-nvswitch-8gpu.txt"
PCIE = ROOT / "tests/fixtures/topo-pcie-dual-socket-8gpu.txt"


def topo(outdir, *args, env=None):
    return dpscale(1, "topo", "--backend=cpu", f"--run.output_dir={outdir}", "--run.output=t.h5", *args, env=env)


def test_pcie_node_prints_the_matrix_and_stores_it(outdir):
    p = topo(outdir, f"--topo.fixture={PCIE}")
    assert p.returncode == 0, p.stderr
    assert "GPU0        X    PIX    PXB    PXB    SYS" in p.stdout
    t = h5py.File(outdir / "t.h5")["system/topology"]
    assert t.attrs["ngpus"] == 8 and t.attrs["source"] == str(PCIE)
    link = t["link"][:].astype(str)
    assert link[0, 1] == "PIX" and link[0, 4] == "SYS" and link[4, 6] == "NODE"
    assert list(t["gpu_numa_node"][:]) == [0, 0, 0, 0, 1, 1, 1, 1]


def test_nvlink_asked_of_a_pcie_node_is_refused_with_the_matrix(outdir):
    p = topo(outdir, f"--topo.fixture={PCIE}", "--comm.path=nvlink")
    assert p.returncode == 2
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 1
    assert "not all NVLink-connected" in errors[0] and "GPU0: X PIX PXB PXB SYS" in errors[0]
    assert list(outdir.iterdir()) == []


def test_nvswitch_node_is_all_nvlink(outdir):
    p = topo(outdir, f"--topo.fixture={NVSWITCH}")
    assert p.returncode == 0, p.stderr
    nv = h5py.File(outdir / "t.h5")["system/topology/nvlink_count"][:]
    assert nv.shape == (8, 8) and (nv + 18 * __import__("numpy").eye(8, dtype=int) == 18).all()


def test_network_adapters_come_from_sys(outdir):
    p = topo(outdir, env={"DPSCALE_SYSFS_ROOT": str(ROOT / "tests/fixtures/sys")})
    assert p.returncode == 0, p.stderr
    assert "mlx5_0     InfiniBand     200 Gb/s  ACTIVE   NUMA 0" in p.stdout
    assert "mlx5_1     RoCE           100 Gb/s  DOWN     NUMA 1" in p.stdout
    t = h5py.File(outdir / "t.h5")["system/topology"]
    assert list(t["nic_rate_Gbps"][:]) == [200.0, 100.0]


def test_every_run_file_records_topology_and_nccl_environment(outdir):
    p = dpscale(1, "run", "--config", ROOT / "configs/mlp-tiny.ini", f"--run.output_dir={outdir}", "--run.output=r.h5",
                f"--topo.fixture={PCIE}", env={"NCCL_DEBUG": "WARN"})
    assert p.returncode == 0, p.stderr
    s = h5py.File(outdir / "r.h5")["system"]
    assert s["topology/link"].shape == (8, 8)
    assert "NCCL_DEBUG=WARN" in s.attrs["nccl_env"]
    assert s.attrs["library"] == "mpi" and s.attrs["path"] == "auto"
    assert "transport" not in s.attrs


def test_paths_other_than_auto_need_nccl(outdir):
    p = dpscale(2, "run", "--config", ROOT / "configs/mlp-tiny.ini", f"--run.output_dir={outdir}",
                f"--topo.fixture={NVSWITCH}", "--comm.path=host")
    assert p.returncode == 2 and "comm.path = host chooses NCCL's path and needs the cuda backend" in p.stderr


def test_pcie_asked_of_nvlink_gpus_is_refused_naming_host(outdir):
    # NCCL's peer-to-peer would take NVLink: a "pcie" run there would measure NVLink
    p = topo(outdir, f"--topo.fixture={NVSWITCH}", "--comm.path=pcie")
    assert p.returncode == 2
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 1, p.stderr
    assert "comm.path = pcie, but these GPUs are NVLink-connected" in errors[0] and "GPU0: X NV18" in errors[0]
    assert "use comm.path = host to measure without NVLink (through host memory), or nvlink" in errors[0]
    assert list(outdir.iterdir()) == []


def test_pcie_on_a_pcie_node_passes_the_topology_check(outdir):
    # on the cpu backend it then stops where every path but auto does
    p = topo(outdir, f"--topo.fixture={PCIE}", "--comm.path=pcie")
    assert p.returncode == 2 and "NVLink-connected" not in p.stderr
    assert "comm.path = pcie chooses NCCL's path and needs the cuda backend" in p.stderr, p.stderr

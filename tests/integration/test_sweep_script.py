"""jobs/lib/sweep.sh outside Slurm: one launch per path (comm.path), an existing
result never overwritten, a bad path refused, a failed path named while the others
run, TRANSPORTS still taken with a warning, the default paths of a node with and
without NVLink (a stand-in GPU node: tests/slurm/gpu-node); and the functions of jobs/lib/common.sh
the Slurm jobs rest on: the launcher and its MPI plugin, CPUs per rank, lists that
survive sbatch --export."""
import os
import re
import subprocess

import pytest

from conftest import ROOT, mpi_env


def sweep(tmp_path, *args, **env):
    e = mpi_env({"OUTDIR": str(tmp_path), "NAME": "s", "LAUNCHER": "mpirun -np 2", **env})
    return subprocess.run([ROOT / "jobs/lib/sweep.sh", "--config", ROOT / "configs/mlp-tiny.ini", *args], env=e,
                          capture_output=True, text=True, timeout=120)


def test_one_file_per_path(tmp_path):
    p = sweep(tmp_path, "--sweep=1,2", PATHS="auto")
    assert p.returncode == 0, p.stderr
    assert "deprecated" not in p.stderr
    assert "--comm.path=auto" in p.stdout
    assert (tmp_path / "s-auto.h5").exists()


def test_transports_is_still_taken_with_one_warning(tmp_path):
    p = sweep(tmp_path, "--sweep=1,2", TRANSPORTS="auto")
    assert p.returncode == 0, p.stderr
    warnings = [l for l in p.stderr.splitlines() if "TRANSPORTS" in l]
    assert len(warnings) == 1 and "deprecated" in warnings[0] and "PATHS" in warnings[0], p.stderr
    assert (tmp_path / "s-auto.h5").exists()


def test_an_existing_result_is_never_overwritten(tmp_path):
    (tmp_path / "s-auto.h5").write_bytes(b"keep")
    p = sweep(tmp_path, PATHS="auto")
    assert p.returncode == 2 and "never overwritten" in p.stderr
    assert (tmp_path / "s-auto.h5").read_bytes() == b"keep"


def test_an_unknown_path_is_refused(tmp_path):
    p = sweep(tmp_path, PATHS="infiniband")
    assert p.returncode == 2 and "unknown path 'infiniband' in PATHS" in p.stderr


def test_the_config_names_the_paths(tmp_path):
    ini = tmp_path / "t.ini"
    ini.write_text(open(ROOT / "configs/mlp-tiny.ini").read() + "\n[comm]\npaths = auto\n")
    e = mpi_env({"OUTDIR": str(tmp_path), "NAME": "c", "LAUNCHER": "mpirun -np 2"})
    e.pop("PATHS", None)
    e.pop("TRANSPORTS", None)
    p = subprocess.run([ROOT / "jobs/lib/sweep.sh", "--config", ini, "--sweep=1,2"], env=e, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "c-auto.h5").exists() and not (tmp_path / "c-nvlink.h5").exists()


def test_dpscale_config_prints_one_resolved_key():
    p = subprocess.run([ROOT / "bin/dpscale", "config", "--config", ROOT / "configs/mlp-tiny.ini", "--get", "model.layers"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "3"


def test_a_failed_path_is_named_with_its_reason_and_the_others_still_run(tmp_path):
    p = sweep(tmp_path, "--sweep=1,2", PATHS="nvlink:auto")  # nvlink needs the cuda backend
    assert p.returncode == 1, p.stdout + p.stderr
    failed = [l for l in p.stderr.splitlines() if "path nvlink failed" in l]
    assert len(failed) == 1 and "needs the cuda backend" in failed[0], p.stderr
    assert (tmp_path / "s-auto.h5").exists() and not (tmp_path / "s-nvlink.h5").exists()


GPU_NODE = ROOT / "tests/slurm/gpu-node"  # nvidia-smi of a recorded node, and a dpscale that runs on the CPU


def sweep_on_gpu_node(tmp_path, topo):
    """The sweep with its default paths on a stand-in node with TOPO's GPUs and links."""
    e = mpi_env({"OUTDIR": str(tmp_path), "NAME": "s", "LAUNCHER": "mpirun -np 2", "PATH": f"{GPU_NODE}:{os.environ['PATH']}",
                 "DPSCALE": str(GPU_NODE / "dpscale"), "DPSCALE_TEST_TOPO": str(topo)})
    for k in ("PATHS", "TRANSPORTS"):
        e.pop(k, None)
    # --backend=cuda as jobs/scale8.sh asks on a GPU node; the stand-in dpscale runs the CPU
    return subprocess.run([ROOT / "jobs/lib/sweep.sh", "--config", ROOT / "configs/mlp-tiny.ini", "--backend=cuda",
                           "--sweep=1,2"], env=e, capture_output=True, text=True, timeout=180)


def test_on_a_node_without_nvlink_the_default_is_pcie_and_host(tmp_path):
    # a PCIe-only node (L40S, H100 PCIe): peer-to-peer over PCIe against host memory, nvlink skipped with a note
    p = sweep_on_gpu_node(tmp_path, ROOT / "tests/fixtures/topo-pcie-dual-socket-8gpu.txt")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "paths pcie, host (the default without NVLink)" in p.stdout, p.stdout
    assert "path nvlink skipped: nvidia-smi topo -m shows no NVLink" in p.stdout
    assert "--comm.path=pcie " in p.stdout and "--comm.path=host " in p.stdout and "--comm.path=nvlink" not in p.stdout
    assert sorted(f.name for f in tmp_path.glob("*.h5")) == ["s-host.h5", "s-pcie.h5"]


def test_on_an_nvlink_node_the_default_is_nvlink_and_host(tmp_path):
    # pcie would take NVLink there (and is refused): NVLink against host memory
    p = sweep_on_gpu_node(tmp_path, ROOT / "tests/fixtures/topo-nvswitch-8gpu.txt")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "paths nvlink, host (the default with NVLink)" in p.stdout, p.stdout
    assert "skipped" not in p.stdout and "--comm.path=pcie" not in p.stdout
    assert sorted(f.name for f in tmp_path.glob("*.h5")) == ["s-host.h5", "s-nvlink.h5"]


def test_host_is_a_path_dpscale_config_accepts():
    p = subprocess.run([ROOT / "bin/dpscale", "config", "--config", ROOT / "configs/mlp-tiny.ini", "--comm.path=host",
                        "--get", "comm.path"], capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "host", p.stderr


@pytest.mark.parametrize("paths, error", [("auto:auto", "path auto is named twice"),
                                          ("auto:", "is not a list"), ("auto,,net", "is not a list")])
def test_a_bad_list_of_paths_is_refused_before_any_launch(tmp_path, paths, error):
    p = sweep(tmp_path, PATHS=paths)
    assert p.returncode == 2 and error in p.stderr, p.stderr
    assert "path auto:" not in p.stdout  # no launch
    assert list(tmp_path.iterdir()) == []


# --- jobs/lib/common.sh, function by function ------------------------------------------

def common(call, **env):
    """Run CALL in bash after sourcing jobs/lib/common.sh; returns the CompletedProcess."""
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("SLURM_") and k not in ("LAUNCH", "DPSCALE", "NVLS", "NCCL_NVLS_ENABLE")}
    e.update(env)
    return subprocess.run(["bash", "-c", f"source {ROOT}/jobs/lib/common.sh && {call}"], env=e, capture_output=True,
                          text=True, timeout=30)


# what `srun --mpi=list` prints: Slurm 22.05 (Debian 12) and Slurm 20.11 (Debian 11)
MPI_LIST_22 = "MPI plugin types are...\n\tpmix\n\tnone\n\tcray_shasta\n\tpmi2\n" \
              "specific pmix plugin versions available: pmix_v4\n"
MPI_LIST_20 = "srun: MPI types are...\nsrun: cray_shasta\nsrun: none\nsrun: pmix\nsrun: pmix_v3\nsrun: pmi2\n"


def fake_srun(tmp_path, offers):
    """A folder holding an `srun` whose --mpi=list prints OFFERS, for PATH."""
    d = tmp_path / "bin"
    d.mkdir()
    (d / "srun").write_text(f"#!/bin/sh\nprintf '%s' '{offers}'\n")
    (d / "srun").chmod(0o755)
    return f"{d}:{os.environ['PATH']}"


@pytest.mark.parametrize("offers, launch, expected", [
    (MPI_LIST_22, "auto", "srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=6"),
    (MPI_LIST_20, "auto", "srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=6"),
    ("MPI plugin types are...\n\tnone\n\tpmi2\n", "auto", "srun --mpi=pmi2 --kill-on-bad-exit=1 --cpus-per-task=6"),
    ("MPI plugin types are...\n\tnone\n", "auto", "mpirun --bind-to none"),
    (MPI_LIST_22, "pmi2", "srun --mpi=pmi2 --kill-on-bad-exit=1 --cpus-per-task=6"),
    (MPI_LIST_22, "mpirun", "mpirun --bind-to none"),
    ("MPI plugin types are...\n\tnone\n\tpmi2\n", "srun", "srun --mpi=pmi2 --kill-on-bad-exit=1 --cpus-per-task=6"),
])
def test_the_launcher_names_the_mpi_plugin_srun_offers(tmp_path, offers, launch, expected):
    p = common("dpscale_launcher 6", PATH=fake_srun(tmp_path, offers), SLURM_JOB_ID="7", LAUNCH=launch)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().startswith(expected), f"expected {expected!r}, got {p.stdout!r}"


def test_a_plugin_srun_does_not_offer_is_refused(tmp_path):
    p = common("dpscale_launcher 1", PATH=fake_srun(tmp_path, "MPI plugin types are...\n\tnone\n\tpmix\n"),
               SLURM_JOB_ID="7", LAUNCH="pmi2")
    assert p.returncode == 2 and p.stdout == ""
    assert "LAUNCH=pmi2 but this Slurm's srun offers pmix" in p.stderr, p.stderr


def test_outside_slurm_auto_starts_the_ranks_with_mpirun(tmp_path):
    p = common("dpscale_launcher 1", PATH=fake_srun(tmp_path, MPI_LIST_22), NTASKS="3")
    assert p.returncode == 0 and p.stdout.strip().startswith("mpirun --bind-to none") and "-np 3" in p.stdout


@pytest.mark.parametrize("env, ranks, expected", [({"SLURM_CPUS_ON_NODE": "112"}, 8, "14"),
                                                  ({"SLURM_CPUS_ON_NODE": "4"}, 8, "1"),
                                                  ({"SLURM_CPUS_ON_NODE": "112", "SLURM_CPUS_PER_TASK": "3"}, 8, "3")])
def test_each_rank_gets_its_share_of_the_node_or_what_sbatch_c_gave(env, ranks, expected):
    p = common(f"cpus_per_task {ranks}", **env)
    assert p.returncode == 0 and p.stdout.strip() == expected, (p.stdout, p.stderr)


@pytest.mark.parametrize("name, value, expected", [("SWEEP", "1:2:4:8", "1,2,4,8"), ("SWEEP", "1,2", "1,2"),
                                                   ("PATHS", "nvlink:host", "nvlink,host"), ("PATHS", "pcie:host", "pcie,host"),
                                                   ("PATHS", "auto", "auto")])
def test_a_list_takes_colons_and_commas(name, value, expected):
    p = common(f"list_items {name} '{value}'")
    assert p.returncode == 0 and p.stdout.strip() == expected, (p.stdout, p.stderr)


@pytest.mark.parametrize("spec", ["ALL,SWEEP=1:2:4:8,PATHS=nvlink:host:net", "ALL,PATHS=nvlink:host,HOME",
                                  "ALL,CONFIG=configs/mlp-tiny.ini,SWEEP=8"])
def test_an_export_that_slurm_passes_whole_is_taken(spec):
    p = common("check_export_split && echo taken", SLURM_EXPORT_ENV=spec)
    assert p.returncode == 0 and p.stdout.strip() == "taken", p.stderr


def test_an_export_cut_at_the_end_is_refused():
    p = common("check_export_split", SLURM_EXPORT_ENV="ALL,SWEEP=1:2,PATHS=nvlink,host")
    assert p.returncode == 2 and "write PATHS=nvlink:host" in p.stderr, p.stderr
    p = common("check_export_split", SLURM_EXPORT_ENV="ALL,PATHS=pcie,host")
    assert p.returncode == 2 and "write PATHS=pcie:host" in p.stderr, p.stderr


def test_every_srun_line_in_the_readme_names_its_mpi_plugin():
    # where the cluster's MpiDefault is none, srun without --mpi starts ranks that never meet
    text = (ROOT / "README.md").read_text()
    lines = [l for l in text.splitlines() if re.match(r"\s*srun\s", l)] + re.findall(r"`(srun\s[^`]*)`", text)
    assert lines, "README shows no srun line"
    assert [l for l in lines if not re.search(r"--mpi=(pmix|pmi2|list)\b", l)] == []


@pytest.mark.parametrize("env, said, in_force", [({"NVLS": "off"}, "NCCL_NVLS_ENABLE=0", "0"),
                                                 ({"NVLS": "on"}, "NCCL_NVLS_ENABLE=1", "1"),
                                                 ({"NCCL_NVLS_ENABLE": "0"}, "NCCL_NVLS_ENABLE=0", "0"),
                                                 ({}, "NCCL_NVLS_ENABLE=unset, NCCL default", "unset")])
def test_nvls_is_set_for_every_launch_and_said_in_the_log(env, said, in_force):
    p = common('nvls_setting && echo "in force: ${NCCL_NVLS_ENABLE:-unset}"', **env)
    assert p.returncode == 0, p.stderr
    assert "NVLink SHARP: " + said in p.stdout, p.stdout
    assert p.stdout.strip().endswith("in force: " + in_force), p.stdout


def test_a_wrong_nvls_is_refused():
    p = common("nvls_setting", NVLS="yes")
    assert p.returncode == 2 and "NVLS=yes: give on or off" in p.stderr, p.stderr


COUNTS = ["NTASKS", "NP", "SLURM_NTASKS", "SLURM_JOB_NUM_NODES", "SLURM_CPUS_ON_NODE", "SLURM_CPUS_PER_TASK",
          "SLURM_NTASKS_PER_NODE"]


@pytest.mark.parametrize("script", ["jobs/scale8.sh", "jobs/multinode.sh", "jobs/smoke.sh", "jobs/lib/sweep.sh"])
@pytest.mark.parametrize("name", COUNTS)
def test_a_count_that_is_not_digits_never_reaches_bash_arithmetic(tmp_path, script, name):
    """bash evaluates a variable's text inside $(( )) as an expression, and an
    expression's array index runs a command substitution: only digits may get there."""
    planted = tmp_path / "ran"
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_") and k not in ("NTASKS", "NP")}
    e.update({"DPSCALE_HOME": str(ROOT), "OUTDIR": str(tmp_path), name: f"a[$(touch {planted})1]"})
    p = subprocess.run(["bash", ROOT / script], env=e, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert not planted.exists(), f"{script} ran the command inside {name}"
    assert p.returncode == 2 and f"{name}='a[$(touch" in p.stderr and "is not a count" in p.stderr, \
        (p.returncode, p.stderr[-500:])


@pytest.mark.parametrize("value", ["08", "-1", "1e3", " 4", "4 ", "0x10", "0"])
def test_counts_are_plain_decimal_digits_of_at_least_one(value):
    p = common("cpus_per_task 2", SLURM_CPUS_ON_NODE=value)
    assert p.returncode == 2 and "is not a count" in p.stderr, (value, p.stdout, p.stderr)


@pytest.mark.parametrize("name", ["SLURM_NTASKS", "SLURM_JOB_NUM_NODES"])
def test_a_zero_count_stops_the_multinode_job_at_once(tmp_path, name):
    """0 tasks looped forever in the sweep's doubling, 0 nodes divided by zero."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    e.update({"DPSCALE_HOME": str(ROOT), "SLURM_NTASKS": "2", "SLURM_JOB_NUM_NODES": "1", name: "0"})
    p = subprocess.run(["bash", ROOT / "jobs/multinode.sh"], env=e, capture_output=True, text=True, timeout=30,
                       cwd=tmp_path)
    assert p.returncode == 2 and f"{name}='0' is not a count" in p.stderr, p.stderr

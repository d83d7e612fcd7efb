"""The Slurm jobs, submitted with sbatch to a real single-node Slurm (slurmctld,
slurmd and munge from Debian's packages) that this module starts and stops. The
jobs run on the CPU backend; where a test needs a GPU node, tests/slurm/gpu-node
stands in for one (nvidia-smi of a recorded node, and a dpscale that runs its
launches on the CPU). Needs root and the slurm-wlm and munge packages, which .ci/run
installs; elsewhere these tests are skipped with the reason."""
import os
import re
import shutil
import subprocess
import time

import h5py
import pytest

from conftest import ROOT, mpi_env

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("slurmctld") is None or shutil.which("munged") is None,
    reason="needs root and Debian's slurm-wlm and munge (as in CI)")

GPU_NODE = ROOT / "tests/slurm/gpu-node"
NVSWITCH_NODE = ROOT / "tests/fixtures/topo-nvswitch-8gpu.txt"
PCIE_NODE = ROOT / "tests/fixtures/topo-pcie-dual-socket-8gpu.txt"
# what a user's environment might hold and a test must not inherit
JOB_SETTINGS = ("CONFIG", "SWEEP", "PATHS", "TRANSPORTS", "OUTDIR", "LAUNCH", "NAME", "NTASKS", "DPSCALE",
                "DPSCALE_HOME", "LAUNCHER")
# a line the job scripts write: "2026-11-30T08:05:27Z dpscale scale8: ..."
SCRIPT_LINE = re.compile(r"dpscale (job|scale8|sweep|smoke|multinode)( warning| error)?:")
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ dpscale ")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    state = tmp_path_factory.mktemp("slurm")
    start = subprocess.run([ROOT / "tests/slurm/cluster.sh", "start", state], capture_output=True, text=True,
                           timeout=120)
    assert start.returncode == 0, start.stdout + start.stderr
    # ranks started by srun do not know they share 2 cores 8 ways: without yielding, the
    # ranks that wait out a small run spin, and a sweep takes 4 s instead of 0.6 s
    env = mpi_env({"SLURM_CONF": str(state / "slurm.conf"), "OMPI_MCA_mpi_yield_when_idle": "1"})
    for k in JOB_SETTINGS:
        env.pop(k, None)
    try:
        yield env
    finally:
        subprocess.run([ROOT / "tests/slurm/cluster.sh", "stop", state], timeout=60)


def gpu_node(env, topo):
    """The environment of a submission from a stand-in GPU node with TOPO's GPUs and links."""
    return {**env, "PATH": f"{GPU_NODE}:{env['PATH']}", "DPSCALE": str(GPU_NODE / "dpscale"),
            "DPSCALE_TEST_TOPO": str(topo)}


def wait(env, job, timeout=300):
    """The job's exit code once it has ended (scontrol, every 0.2 s: sbatch --wait polls every 10 s)."""
    deadline = time.monotonic() + timeout
    while True:
        show = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True).stdout
        state = re.search(r"JobState=(\S+)", show)
        if state and state.group(1) not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING"):
            return int(re.search(r"ExitCode=(\d+):", show).group(1))
        assert time.monotonic() < deadline, f"job {job} not done after {timeout} s: {show}"
        time.sleep(0.2)


def sbatch(env, tmp_path, script, *options, **exports):
    """Submit as a user would, wait for the end; returns (exit code, job log)."""
    export = ",".join(["ALL"] + [f"{k}={v}" for k, v in exports.items()])
    log = tmp_path / "job.out"
    p = subprocess.run(["sbatch", "--parsable", f"--output={log}", f"--export={export}", *options, script],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rc = wait(env, p.stdout.strip().split(";")[0])
    return rc, log.read_text() if log.exists() else ""


def script_lines(log):
    return [l for l in log.splitlines() if SCRIPT_LINE.search(l)]


def assert_stamped(log):
    lines = script_lines(log)
    assert lines, log
    unstamped = [l for l in lines if not STAMP.match(l)]
    assert unstamped == [], "job script lines without a UTC ISO-8601 time:\n" + "\n".join(unstamped)


def nranks(path):
    with h5py.File(path) as f:
        return [int(n) for n in f["summary"]["nranks"]]


@pytest.mark.parametrize("launch", ["pmix", "mpirun"])
def test_scale8_runs_the_whole_sweep_and_writes_it(slurm, tmp_path, launch):
    # the mpirun job is given the former name of PATHS: taken, with one warning
    old = {"TRANSPORTS": "auto"} if launch == "mpirun" else {}
    rc, log = sbatch(slurm, tmp_path, "jobs/scale8.sh", CONFIG="configs/mlp-tiny.ini", OUTDIR=tmp_path, LAUNCH=launch,
                     **old)
    assert rc == 0, log
    files = list(tmp_path.glob("dpscale-scale8-*-auto.h5"))
    assert len(files) == 1, log
    f = h5py.File(files[0])
    assert sorted(f["runs/mpi/auto"].keys(), key=lambda k: int(k[1:])) == ["n1", "n2", "n4", "n8"]
    assert list(f["summary"]["nranks"]) == [1, 2, 4, 8]
    assert f.attrs["job_id"] != ""  # SLURM_JOB_ID, also in the file name
    assert f.attrs["job_id"] in files[0].name
    assert "where the time went" in log and "path auto: done" in log and "--comm.path=auto" in log
    assert "mpi over auto" in log  # the comparison at the end
    assert len([l for l in log.splitlines() if "TRANSPORTS is deprecated" in l]) == (1 if old else 0), log
    # srun is told the plugin and the CPUs of each rank: 8 CPUs of the node over 8 ranks
    launcher = "srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=1" if launch == "pmix" else "mpirun --bind-to none"
    assert f"launcher '{launcher}" in log and f"path auto: {launcher}" in log, log
    assert_stamped(log)


def test_a_bad_config_fails_the_job_with_one_clear_line(slurm, tmp_path):
    rc, log = sbatch(slurm, tmp_path, "jobs/scale8.sh", CONFIG="configs/nope.ini", OUTDIR=tmp_path)
    assert rc != 0
    assert "dpscale job: error: CONFIG=configs/nope.ini is not readable" in log
    assert list(tmp_path.glob("*.h5")) == []


@pytest.mark.parametrize("name, value, fix", [("SWEEP", "1,2,4", "SWEEP=1:2:4"),
                                              ("PATHS", "auto,net", "PATHS=auto:net")])
def test_a_list_cut_by_sbatch_export_is_refused_not_run_short(slurm, tmp_path, name, value, fix):
    # the form that ran "sweep 1" and "transports nvlink" once: --export splits at every comma
    cut = f"ALL,CONFIG=configs/mlp-tiny.ini,OUTDIR={tmp_path},{name}={value}"
    p = subprocess.run(["sbatch", "--parsable", f"--output={tmp_path}/job.out", f"--export={cut}", "jobs/scale8.sh"],
                       cwd=ROOT, env=slurm, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rc = wait(slurm, p.stdout.strip())
    log = (tmp_path / "job.out").read_text()
    assert rc == 2, log
    errors = [l for l in log.splitlines() if "error:" in l]
    assert len(errors) == 1 and f"split {name}={value} at its commas" in errors[0] and fix in errors[0], log
    assert list(tmp_path.glob("*.h5")) == [], log


def test_a_failed_path_is_reported_and_the_others_still_run(slurm, tmp_path):
    # nvlink cannot run on the CPU backend: one line names it and why; auto runs; the job fails
    rc, log = sbatch(slurm, tmp_path, "jobs/scale8.sh", CONFIG="configs/mlp-tiny.ini", OUTDIR=tmp_path,
                     SWEEP="1:2", PATHS="nvlink:auto")
    assert rc == 1, log
    failed = [l for l in log.splitlines() if "path nvlink failed" in l]
    assert len(failed) == 1 and "needs the cuda backend" in failed[0], log
    assert [f.name.split("-")[-1] for f in tmp_path.glob("*.h5")] == ["auto.h5"], log
    assert nranks(next(tmp_path.glob("*-auto.h5"))) == [1, 2]
    assert "1 of 2 paths done; failed: nvlink" in log
    assert_stamped(log)


def test_on_a_node_without_nvlink_the_default_paths_skip_nvlink(slurm, tmp_path):
    # a PCIe-only node (L40S, H100 PCIe): the default measures peer-to-peer over PCIe and host
    # memory, and says why not nvlink
    rc, log = sbatch(gpu_node(slurm, PCIE_NODE), tmp_path, "jobs/scale8.sh", CONFIG="configs/mlp-tiny.ini",
                     OUTDIR=tmp_path, SWEEP="1:2")
    assert rc == 0, log
    skipped = [l for l in log.splitlines() if "path nvlink skipped" in l]
    assert len(skipped) == 1 and "no NVLink" in skipped[0], log
    assert sorted(f.name.split("-")[-1] for f in tmp_path.glob("*.h5")) == ["host.h5", "pcie.h5"], log
    assert "--comm.path=nvlink" not in log


def test_smoke_job_proves_the_installation(slurm, tmp_path):
    rc, log = sbatch(slurm, tmp_path, "jobs/smoke.sh", OUTDIR=tmp_path)
    assert rc == 0, log
    assert "gradcheck: 48 coordinates" in log and "smoke test passed" in log
    assert "srun --mpi=pmix --kill-on-bad-exit=1 --cpus-per-task=4" in log  # #SBATCH --cpus-per-task=4
    assert_stamped(log)


def test_multinode_script_runs_on_the_nodes_it_is_given(slurm, tmp_path):
    rc, log = sbatch(slurm, tmp_path, "jobs/multinode.sh", "-N", "1", "--ntasks-per-node=2", "--gpus-per-node=2",
                     CONFIG="configs/mlp-tiny.ini", OUTDIR=tmp_path)
    assert rc == 0, log
    f = h5py.File(next(tmp_path.glob("dpscale-multinode-*.h5")))
    assert list(f["summary"]["nranks"]) == [1, 2]
    assert "1 nodes x 2 ranks, 4 CPUs per task" in log


# --- README's own sbatch lines, exactly as written ---------------------------------

def readme_cluster_lines():
    """The sbatch lines of the code block of README's "Running on a cluster"."""
    text = (ROOT / "README.md").read_text()
    section = text.split("\n## Running on a cluster\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [l for l in block.splitlines() if re.match(r"([A-Z_]+=\S+\s+)*sbatch\s", l)]


def asked(line, name):
    """The items LINE asks for NAME (SWEEP, PATHS) in the environment or in --export, else None."""
    m = re.search(rf"(?:^|[\s,]){name}=(\S+?)(?=,[A-Z_]+=|\s|$)", line)
    return re.split(r"[,:]", m.group(1)) if m else None


def nodes_asked(line):
    m = re.search(r"(?:-N\s*|--nodes=)(\d+)", line)
    return int(m.group(1)) if m else 1


def test_readme_sbatch_lines_run_every_path_and_gpu_count_they_ask_for(slurm, tmp_path):
    lines = readme_cluster_lines()
    runnable = [l for l in lines if nodes_asked(l) == 1]  # the test cluster has one node
    assert all("jobs/multinode.sh" in l for l in set(lines) - set(runnable)), lines
    lists_in_export = [l for l in runnable if "--export" in l and len(asked(l, "PATHS") or []) > 1
                       and len(asked(l, "SWEEP") or []) > 1]
    assert lists_in_export, f"README shows no sbatch --export line with a list of paths and of GPU counts: {lines}"
    # a dpscale folder as README says to submit from: bin, jobs, configs; what the jobs
    # write by default (out/) lands here, and results/ must stay untouched
    home = tmp_path / "dpscale"
    home.mkdir()
    for d in ("bin", "jobs", "configs"):
        (home / d).symlink_to(ROOT / d)
    env = gpu_node(slurm, NVSWITCH_NODE)
    jobs = []
    for line in runnable:
        p = subprocess.run(["bash", "-c", line], cwd=home, env=env, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"{line}\n{p.stdout}{p.stderr}"
        jobs.append((line, re.search(r"Submitted batch job (\d+)", p.stdout).group(1)))
    for line, job in jobs:
        rc = wait(env, job)
        script = re.search(r"jobs/(\w+)\.sh", line).group(1)
        log = (home / f"dpscale-{script}-{job}.out").read_text()
        assert rc == 0, f"{line}\n{log}"
        assert_stamped(log)
        if script == "smoke":
            assert "smoke test passed" in log, log
            continue
        paths = asked(line, "PATHS") or asked(line, "TRANSPORTS") or ["nvlink", "host"]  # the default on NVLink
        sweep = [int(n) for n in asked(line, "SWEEP") or [1, 2, 4, 8]]
        for p in paths:
            launch = [l for l in log.splitlines() if f"path {p}: srun --mpi=pmix" in l]
            assert len(launch) == 1 and f"--sweep={','.join(map(str, sweep))} --comm.path={p} " in launch[0], \
                f"{line}: no launch of path {p} with sweep {sweep}\n{log}"
            assert f"path {p}: done" in log, f"{line}\n{log}"
        files = sorted((home / "out").glob(f"dpscale-{script}-{job}-*.h5"))
        assert [f.name.rsplit("-", 1)[1][:-3] for f in files] == sorted(paths), f"{line}\n{log}"
        for f in files:
            assert nranks(f) == sweep, f"{line}: {f.name}"
    assert not (home / "results").exists()

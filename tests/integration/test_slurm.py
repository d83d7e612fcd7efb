"""The Slurm jobs, submitted with sbatch to a real single-node Slurm (slurmctld,
slurmd and munge from Debian's packages) that this module starts and stops. The
jobs run on the CPU backend. Needs root and the slurm-wlm and munge packages, which
.ci/run installs; elsewhere these tests are skipped with the reason."""
import os
import shutil
import subprocess

import h5py
import pytest

from conftest import ROOT, mpi_env

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("slurmctld") is None or shutil.which("munged") is None,
    reason="needs root and Debian's slurm-wlm and munge (as in CI)")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    state = tmp_path_factory.mktemp("slurm")
    start = subprocess.run([ROOT / "tests/slurm/cluster.sh", "start", state], capture_output=True, text=True,
                           timeout=120)
    assert start.returncode == 0, start.stdout + start.stderr
    env = mpi_env({"SLURM_CONF": str(state / "slurm.conf")})
    try:
        yield env
    finally:
        subprocess.run([ROOT / "tests/slurm/cluster.sh", "stop", state], timeout=60)


def sbatch(env, tmp_path, script, *options, **exports):
    """Submit as a user would, wait for the end; returns (exit code, job log)."""
    export = ",".join(["ALL"] + [f"{k}={v}" for k, v in exports.items()])
    log = tmp_path / "job.out"
    p = subprocess.run(["sbatch", "--wait", f"--output={log}", f"--export={export}", *options, script],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    return p.returncode, log.read_text() if log.exists() else p.stderr


@pytest.mark.parametrize("launch", ["srun", "mpirun"])
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
    assert "where the time went" in log and "paths auto" in log and "--comm.path=auto" in log
    assert "mpi over auto" in log  # the comparison at the end
    assert len([l for l in log.splitlines() if "TRANSPORTS is deprecated" in l]) == (1 if old else 0), log


def test_a_bad_config_fails_the_job_with_one_clear_line(slurm, tmp_path):
    rc, log = sbatch(slurm, tmp_path, "jobs/scale8.sh", CONFIG="configs/nope.ini", OUTDIR=tmp_path)
    assert rc != 0
    assert "dpscale job: error: CONFIG=configs/nope.ini is not readable" in log
    assert list(tmp_path.glob("*.h5")) == []


def test_smoke_job_proves_the_installation(slurm, tmp_path):
    rc, log = sbatch(slurm, tmp_path, "jobs/smoke.sh", OUTDIR=tmp_path)
    assert rc == 0, log
    assert "gradcheck: 48 coordinates" in log and "smoke test passed" in log


def test_multinode_script_runs_on_the_nodes_it_is_given(slurm, tmp_path):
    rc, log = sbatch(slurm, tmp_path, "jobs/multinode.sh", "-N", "1", "--ntasks-per-node=2", "--gpus-per-node=2",
                     CONFIG="configs/mlp-tiny.ini", OUTDIR=tmp_path)
    assert rc == 0, log
    f = h5py.File(next(tmp_path.glob("dpscale-multinode-*.h5")))
    assert list(f["summary"]["nranks"]) == [1, 2]
    assert "1 nodes x 2 ranks" in log

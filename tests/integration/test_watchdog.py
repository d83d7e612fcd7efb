"""The watchdog (src/base/watchdog.h): a stopped or hung rank ends the whole job within
run.timeout_s plus a few seconds, with one line naming the rank, pass, step and bucket
that did not complete; and a healthy run is never touched. Real ranks under mpirun, the
CPU backend, the tiny model with many steps (each a few microseconds)."""
import os
import re
import signal
import subprocess
import time

import h5py
import pytest

from conftest import BINARY, TINY, dpscale, mpi_env

TIMEOUT_S = 3
LONG = ["--train.iters=100000", "--model.hidden_dim=256", "--train.batch_per_gpu=128",  # minutes of steps:
        f"--run.timeout_s={TIMEOUT_S}"]  # only the watchdog ends it early


def error_lines(text):
    return [l for l in text.splitlines() if l.startswith("dpscale: error:")]


def descends_from(pid, ancestor):
    """Whether ancestor is pid's parent, grandparent, ... (the tests run in parallel: another
    launch's ranks of the same binary are no ranks of this one)."""
    for _ in range(8):
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])  # field 4, after the command's ")"
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def rank_pids(mpirun_pid):
    """{rank: pid} of the dpscale processes mpirun started (their OMPI_COMM_WORLD_RANK)."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or not descends_from(int(pid), mpirun_pid):
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if str(BINARY).encode() in cmd and b"OMPI_COMM_WORLD_RANK" in env and b"mpirun" not in cmd.split(b"\0")[0]:
            out[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
    return out


@pytest.mark.parametrize("stopped", [1, 0])
def test_a_stopped_rank_ends_the_job_and_is_named(outdir, stopped):
    """The issue's bar: SIGSTOP of one rank; every process gone within timeout + 10 s."""
    cmd = ["mpirun", "-np", "2", str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={outdir}",
           "--run.sweep=2", *LONG]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
    try:
        deadline = time.monotonic() + 30
        pids = {}
        while len(pids) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            pids = rank_pids(p.pid)
        assert len(pids) == 2, f"ranks not found: {pids}"
        time.sleep(1.5)  # both in their steps
        os.kill(pids[stopped], signal.SIGSTOP)
        start = time.monotonic()
        _, err = p.communicate(timeout=TIMEOUT_S + 30)
        elapsed = time.monotonic() - start
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0

    def alive(pid):
        try:
            return open(f"/proc/{pid}/stat").read().split()[2] != "Z"
        except OSError:
            return False

    while any(alive(pid) for pid in pids.values()) and time.monotonic() - start < TIMEOUT_S + 10:
        time.sleep(0.1)  # mpirun may return while a killed rank is still tearing down
    elapsed = time.monotonic() - start
    assert elapsed < TIMEOUT_S + 10, f"the job took {elapsed:.1f} s to end"
    assert not any(alive(pid) for pid in pids.values()), "a rank outlived the job"
    lines = error_lines(err)
    assert len(lines) == 1, err
    assert re.search(rf"rank {stopped} on this node \(pid {pids[stopped]}\) stopped answering [\d.]+ s ago "
                     r"in the \w[\w-]* pass, step \d+", lines[0]), lines[0]
    assert list(outdir.iterdir()) == []


@pytest.mark.parametrize("rank", [1, 0])
def test_a_rank_hung_before_a_reduction_is_named_by_the_others(outdir, rank):
    """DPSCALE_FAULT's hang: the rank stops inside its next reduction (the communication
    alone pass's first bucket); the peer waits in it, sees the rank is behind, names it."""
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.sweep=2", "--train.iters=200",
                f"--run.timeout_s={TIMEOUT_S}", env={"DPSCALE_FAULT": f"{rank}:30:hang"}, timeout=TIMEOUT_S + 40)
    assert p.returncode == 4, p.stderr
    lines = error_lines(p.stderr)
    assert 1 <= len(lines) <= 2, p.stderr  # the culprit defers; its peer's abort usually ends it first
    assert re.search(rf":{1 - rank} rank {rank} on this node \(pid \d+\) is stuck in the communication-alone pass, "
                     r"step 0, bucket 0 \(running, but it never started", p.stderr), p.stderr
    assert f"deadline {TIMEOUT_S} s, run.timeout_s" in p.stderr


def test_a_healthy_run_leaves_no_heartbeat_behind(outdir, tmp_path):
    """In a base folder of its own (DPSCALE_HEARTBEAT_DIR), so that launches of other
    checkouts beside the test, whose folders are as randomly named, do not count."""
    base = tmp_path / "heartbeats"
    base.mkdir()
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.timeout_s=1",
                env={"DPSCALE_HEARTBEAT_DIR": str(base)})
    assert p.returncode == 0, p.stderr
    assert error_lines(p.stderr) == []
    assert "dpscale: warning:" not in p.stderr, f"expected the heartbeats in {base}, without a warning:\n{p.stderr}"
    assert list(base.iterdir()) == [], f"expected nothing left in {base}; found {list(base.iterdir())}"


def test_the_timeout_must_be_a_number_of_seconds(outdir):
    p = dpscale(1, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.timeout_s=-1")
    assert p.returncode == 2
    assert "run.timeout_s" in p.stderr


def test_a_stopped_rank_keeps_the_sweep_points_done(outdir):
    """The rest of the issue's bar: the points completed before the hang stay in the file."""
    cmd = ["mpirun", "-np", "2", str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={outdir}",
           "--run.output=r.h5", "--run.sweep=1,2", "--train.iters=5000", "--model.hidden_dim=256",
           "--train.batch_per_gpu=128", f"--run.timeout_s={TIMEOUT_S}"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
    try:
        deadline = time.monotonic() + 120
        while not (outdir / "r.h5").exists() and time.monotonic() < deadline:  # the 1-rank point is kept
            time.sleep(0.2)
        time.sleep(1)  # into the 2-rank point
        pids = rank_pids(p.pid)
        assert len(pids) == 2, pids
        os.kill(pids[1], signal.SIGSTOP)
        _, err = p.communicate(timeout=TIMEOUT_S + 30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0 and len(error_lines(err)) == 1, err
    assert "rank 1 on this node" in err
    assert sorted(f.name for f in outdir.iterdir()) == ["r.h5"]
    with h5py.File(outdir / "r.h5") as f:
        assert (f.attrs["complete"], f.attrs["points_completed"], f.attrs["points_planned"]) == (0, 1, 2)


def test_a_rank_stopped_between_points_without_heartbeats_ends_the_job(outdir):
    """No node-local heartbeats (a rank of another node looks the same): a rank stopped
    after the first point's file is written, while the others set the next point up,
    is found by their own deadline, not waited for forever."""
    env = mpi_env({"DPSCALE_HEARTBEAT_DIR": "/nonexistent/dpscale", "DPSCALE_WRITE_FAULT": "pause:2"})
    cmd = ["mpirun", "-np", "2", "-x", "DPSCALE_HEARTBEAT_DIR", "-x", "DPSCALE_WRITE_FAULT", str(BINARY), "run",
           "--config", str(TINY), f"--run.output_dir={outdir}", "--run.output=t.h5", "--run.sweep=1,2",
           f"--run.timeout_s={TIMEOUT_S}"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not any(n.startswith(".t.h5.") for n in os.listdir(outdir)) and time.monotonic() < deadline:
            time.sleep(0.05)  # the first point's write, held 2 s
        pids = rank_pids(p.pid)
        assert 1 in pids, f"rank 1 not found: {pids}"
        os.kill(pids[1], signal.SIGSTOP)
        start = time.monotonic()
        _, err = p.communicate(timeout=TIMEOUT_S + 40)
        elapsed = time.monotonic() - start
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0 and elapsed < 2 + TIMEOUT_S + 15, (p.returncode, elapsed, err[-1500:])
    lines = error_lines(err)
    assert len(lines) == 1 and "no progress for" in lines[0] and "in the point set-up pass" in lines[0], err
    with h5py.File(outdir / "t.h5", "r") as f:
        assert f.attrs["points_completed"] == 1 and f.attrs["complete"] == 0

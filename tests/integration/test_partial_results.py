"""The result file survives what ends a launch early (issue 15, item 2): it is claimed
(NAME.tmp) and checked before any work, rewritten after each sweep point marked
incomplete, and SIGTERM leaves the points done so far and no NAME.tmp. Real ranks,
the CPU backend."""
import os
import signal
import socket
import subprocess
import time

import h5py
import pytest

from conftest import BINARY, TINY, dpscale, mpi_env


def errors(p):
    return [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]


def test_a_complete_sweep_says_so(outdir):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=r.h5", "--run.sweep=1,2")
    assert p.returncode == 0, p.stderr
    assert sorted(f.name for f in outdir.iterdir()) == ["r.h5"]
    with h5py.File(outdir / "r.h5") as f:
        assert (f.attrs["complete"], f.attrs["points_completed"], f.attrs["points_planned"]) == (1, 2, 2)
    assert "kept 1 of 2 sweep points in" in p.stderr  # the file after the first point, a progress line


def test_an_output_folder_that_is_a_file_fails_before_any_work(tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    start = time.monotonic()
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={blocker}", "--train.iters=100000")
    assert p.returncode == 2 and len(errors(p)) == 1, p.stderr
    assert time.monotonic() - start < 20 and "n=1" not in p.stdout
    assert blocker.read_text() == "x"


def test_a_name_too_long_fails_before_any_work(outdir):
    """253 characters pass the configuration, but NAME.tmp is over the file system's 255."""
    p = dpscale(1, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=" + "x" * 250 + ".h5",
                "--train.iters=100000")
    assert p.returncode == 2 and len(errors(p)) == 1, p.stderr
    assert "File name too long" in p.stderr and list(outdir.iterdir()) == []


def test_a_claim_left_by_a_dead_process_is_removed(outdir):
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer runs
    (outdir / "r.h5.tmp").write_text(f"{dead.pid} {socket.gethostname()}\n")
    p = dpscale(1, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=r.h5")
    assert p.returncode == 0, p.stderr
    assert f"removed {outdir}/r.h5.tmp, left by process {dead.pid}" in p.stderr
    assert sorted(f.name for f in outdir.iterdir()) == ["r.h5"]


def test_a_live_claim_is_refused_and_left_alone(outdir):
    claim = outdir / "r.h5.tmp"
    claim.write_text(f"{os.getpid()} {socket.gethostname()}\n")  # this test's own process: alive
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=r.h5")
    assert p.returncode == 2 and len(errors(p)) == 1, p.stderr
    assert "another launch (its pid and host inside) is writing this result" in p.stderr
    assert claim.read_text() == f"{os.getpid()} {socket.gethostname()}\n" and not (outdir / "r.h5").exists()


def test_sigterm_keeps_the_points_done_and_no_claim(outdir):
    """As a Slurm time limit does: SIGTERM to the launch while the 2-rank point runs."""
    cmd = ["mpirun", "-np", "2", str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={outdir}",
           "--run.output=r.h5", "--run.sweep=1,2", "--train.iters=5000", "--model.hidden_dim=256",
           "--train.batch_per_gpu=128"]  # the 1-rank point in seconds, the 2-rank one three times as long
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
    try:
        deadline = time.monotonic() + 120
        while not (outdir / "r.h5").exists() and time.monotonic() < deadline:  # the first point is kept
            time.sleep(0.2)
        assert (outdir / "r.h5").exists(), "the 1-rank point was never written"
        time.sleep(1)
        p.send_signal(signal.SIGTERM)  # mpirun passes it to the ranks
        p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode != 0
    assert sorted(f.name for f in outdir.iterdir()) == ["r.h5"]
    with h5py.File(outdir / "r.h5") as f:
        assert (f.attrs["complete"], f.attrs["points_completed"], f.attrs["points_planned"]) == (0, 1, 2)
        assert list(f["summary"]["nranks"]) == [1]
    report = subprocess.run([str(BINARY), "report", str(outdir / "r.h5")], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr

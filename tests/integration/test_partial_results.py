"""The result file survives what ends a launch early: it is claimed
(NAME.tmp) and checked before any work, rewritten after each sweep point marked
incomplete, and SIGTERM leaves the points done so far and no NAME.tmp. A write that
fails (a full disk: DPSCALE_FAULT=0:K:write, or a real one) ends the launch with one
error and leaves NAME as the launch last wrote it, sealed, and no NAME.tmp. Real
ranks, the CPU backend."""
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
    """253 characters pass the configuration, but the temporary beside NAME would be over the
    file system's 255."""
    p = dpscale(1, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=" + "x" * 250 + ".h5",
                "--train.iters=100000")
    assert p.returncode == 2 and len(errors(p)) == 1, p.stderr
    assert "is too long (at most 246 bytes, for its temporary beside it)" in p.stderr and list(outdir.iterdir()) == []


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


# the 1-rank point in seconds, the 2-rank one three times as long
# The 2-rank point must outlast what the test does once the 1-rank point is written: a
# signal (1,500 steps, about 10 s of it on 2 cores), or filling a small disk (a few ms:
# 200 steps). Neither point longer than that: make test stays within its 10 minutes.
SLOW_SWEEP = ["--run.sweep=1,2", "--train.iters=1500", "--model.hidden_dim=256", "--train.batch_per_gpu=128"]
SHORT_SWEEP = ["--run.sweep=1,2", "--train.iters=200", "--model.hidden_dim=256", "--train.batch_per_gpu=128"]
FIX = "hint: free space in run.output_dir or set run.output_dir to another folder"


def launch_and_act_after_the_first_point(outdir, act, sweep=SLOW_SWEEP):
    """A 2-rank sweep 1,2 into OUTDIR/r.h5; act(the mpirun process) once the 1-rank
    point's file is there. Returns (exit status, stderr)."""
    cmd = ["mpirun", "-np", "2", str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={outdir}",
           "--run.output=r.h5", *sweep]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
    try:
        deadline = time.monotonic() + 120
        while not (outdir / "r.h5").exists() and time.monotonic() < deadline:  # the first point is kept
            time.sleep(0.2)
        assert (outdir / "r.h5").exists(), "the 1-rank point was never written"
        act(p)
        _, err = p.communicate(timeout=60)  # no rank hangs
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, err


def assert_the_first_point_is_kept(outdir):
    """OUTDIR holds r.h5 alone: the 1-rank point, marked incomplete, sealed, reported as partial."""
    assert sorted(f.name for f in outdir.iterdir()) == ["r.h5"]  # no r.h5.tmp
    with h5py.File(outdir / "r.h5") as f:
        assert (f.attrs["complete"], f.attrs["points_completed"], f.attrs["points_planned"]) == (0, 1, 2)
        assert list(f["summary"]["nranks"]) == [1] and "checksums" in f.attrs
    report = subprocess.run([BINARY, "report", str(outdir / "r.h5")], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0 and "| 1 |" in report.stdout, report.stdout + report.stderr
    assert report.stderr == (f"dpscale: note: {outdir}/r.h5 is partial: its launch ended after 1 of the 2 sweep points "
                             "planned (root attribute complete = 0); it holds those measured\n")  # its checksums match


def test_sigterm_keeps_the_points_done_and_no_claim(outdir):
    """As a Slurm time limit does: SIGTERM to the launch while the 2-rank point runs."""
    def term(p):
        time.sleep(1)
        p.send_signal(signal.SIGTERM)  # mpirun passes it to the ranks
    rc, _ = launch_and_act_after_the_first_point(outdir, term)
    assert rc != 0
    assert_the_first_point_is_kept(outdir)


@pytest.mark.parametrize("point", [1, 2])
def test_a_write_that_fails_is_named_and_the_file_is_as_last_written(outdir, point):
    """DPSCALE_FAULT=0:K:write: the write after sweep point K stops half-way with ENOSPC, as
    on a full disk. After point 2 (the last) r.h5 stays as written after point 1; at
    point 1 nothing was written yet, and nothing is left."""
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=r.h5", "--run.sweep=1,2",
                env={"DPSCALE_FAULT": f"0:{point}:write"}, timeout=60)
    assert p.returncode == 1 and len(errors(p)) == 1 and FIX in p.stderr.splitlines(), p.stderr
    written = f"writing {outdir}/r.h5 failed: No space left on device; its temporary was removed"
    if point == 1:
        assert errors(p)[0].endswith(f"{written}, nothing was kept"), p.stderr
        assert list(outdir.iterdir()) == []
    else:
        assert errors(p)[0].endswith(f"{written}, and {outdir}/r.h5 is as this launch last wrote it (the sweep points "
                                     "written before, marked incomplete)"), p.stderr
        assert_the_first_point_is_kept(outdir)


def test_a_disk_that_fills_during_the_sweep_keeps_the_points_written_before(small_disk):
    """A real full disk: room for the launch to start (twice the planned file), filled
    once the 1-rank point is written, so that the write after the last point fails."""
    disk = small_disk(32 << 20)

    def fill(p):
        with open(disk / "filler", "wb") as f:
            try:
                while True:
                    f.write(bytes(1 << 20))
                    f.flush()
            except OSError:  # ENOSPC: the disk is full
                pass
    rc, err = launch_and_act_after_the_first_point(disk, fill, SHORT_SWEEP)
    errs = [l for l in err.splitlines() if l.startswith("dpscale: error:")]
    assert rc == 1 and len(errs) == 1 and FIX in err.splitlines(), err
    assert f"writing {disk}/r.h5 failed: No space left on device; its temporary was removed, and {disk}/r.h5 is as" in errs[0]
    (disk / "filler").unlink()
    assert_the_first_point_is_kept(disk)

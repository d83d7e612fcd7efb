"""The result file in a folder other users share (a cluster's scratch, /tmp) and under
preemption. Another user (nobody, uid 65534) plants links and FIFOs where dpscale
writes: at NAME, at the claim NAME.tmp, between two sweep points, at dpscale seal's
copy. Nothing outside the launch's own files is ever written or removed (a root-only
file's bytes stay as they were), nothing hangs, a refusal is one error line before
any training, and every "kept in X" is true. A SIGTERM that lands inside a write (to
mpirun, or to every rank as Slurm sends it) lets that write finish: the point being
written is kept. Real ranks, the CPU backend, run as root (the attacks as nobody,
through setpriv); skipped where that is not possible."""
import os
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import h5py
import pytest

from conftest import BINARY, ROOT, TINY, dpscale, edit_h5, mpi_env

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
VICTIM = b"root only: no launch may write or remove this\n"
NOT_TRAINED = "--train.iters=100000"  # a refusal after any training would take minutes


def errors(p_stderr):
    return [l for l in p_stderr.splitlines() if l.startswith("dpscale: error:")]


def as_nobody(*cmd):
    subprocess.run([*NOBODY, *map(str, cmd)], check=True, capture_output=True, timeout=30)


def shared_folder(mode):
    """A world-writable folder of root's under /tmp (pytest's own folders are root's
    alone, closed to nobody): mode 1777 as /tmp, or 0777 without the sticky bit."""
    if os.geteuid() != 0:
        pytest.skip("the attacks need root (the launch) and nobody (the attacker)")
    probe = subprocess.run([*NOBODY, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"cannot act as nobody: {probe.stderr.strip()}")
    d = Path(tempfile.mkdtemp(prefix="dpscale-shared-", dir="/tmp"))
    d.chmod(mode)
    return d


@pytest.fixture
def shared():
    d = shared_folder(0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def open_shared():
    d = shared_folder(0o777)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def victim(tmp_path):
    """A root-only file outside the shared folder: what an attacker's link points at."""
    v = tmp_path / "victim"
    v.write_bytes(VICTIM)
    v.chmod(0o600)
    yield v
    assert v.read_bytes() == VICTIM, "a file outside the launch was written"


def launch(folder, *args, env=None):
    """A 2-rank sweep 1,2 into FOLDER/r.h5, started in the background."""
    cmd = ["mpirun", "-np", "2", str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={folder}",
           "--run.output=r.h5", "--run.sweep=1,2", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env(env))


def wait_for(cond, what, p, timeout=60):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline or p.poll() is not None:
            p.kill()
            out, err = p.communicate()
            pytest.fail(f"{what} never happened:\n{out}\n{err}")
        time.sleep(0.01)


def finish(p, timeout=60):
    try:
        out, err = p.communicate(timeout=timeout)  # no rank hangs
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


def temporaries(folder):
    return sorted(folder.glob(".r.h5.*"))


def points(path):
    """(complete, points_completed) of a readable, sealed result file."""
    with h5py.File(path, "r") as f:
        assert "checksums" in f.attrs
        return int(f.attrs["complete"]), int(f.attrs["points_completed"])


def plant(kind, path, victim):
    if kind == "fifo":
        as_nobody("mkfifo", path)
    elif kind == "dangling link":
        as_nobody("ln", "-s", victim.parent / "not-there", path)
    else:
        as_nobody("ln", "-s", victim, path)


def unchanged(kind, path, victim):
    st = os.lstat(path)
    if kind == "fifo":
        return stat.S_ISFIFO(st.st_mode) and st.st_uid == 65534
    target = victim.parent / "not-there" if kind == "dangling link" else victim
    return stat.S_ISLNK(st.st_mode) and os.readlink(path) == str(target) and not (victim.parent / "not-there").exists()


@pytest.mark.parametrize("where", ["r.h5", "r.h5.tmp"])
@pytest.mark.parametrize("kind", ["fifo", "dangling link", "link to a root-only file"])
def test_a_link_or_fifo_at_the_name_or_its_claim_is_refused_before_any_training(shared, victim, where, kind):
    planted = shared / where
    plant(kind, planted, victim)
    start = time.monotonic()
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={shared}", "--run.output=r.h5", NOT_TRAINED, timeout=60)
    assert p.returncode == 2 and len(errors(p.stderr)) == 1, p.stderr
    said = "symbolic link" if "link" in kind else "not a regular file"
    assert f"{planted} " in errors(p.stderr)[0] and said in errors(p.stderr)[0], p.stderr
    assert time.monotonic() - start < 30 and "n=1" not in p.stdout
    assert unchanged(kind, planted, victim) and os.listdir(shared) == [where]


@pytest.mark.parametrize("name", ["notes.txt", "a\nb.h5", "r\x1b[2J.h5", ".h5"])
def test_a_name_that_is_not_a_plain_h5_file_is_refused_before_any_training(outdir, name):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", f"--run.output={name}", NOT_TRAINED, timeout=60)
    assert p.returncode == 2 and len(errors(p.stderr)) == 1, p.stderr
    assert ("must end in .h5" if name.isprintable() else "control character") in p.stderr, p.stderr
    assert "\x1b" not in p.stderr and "n=1" not in p.stdout and list(outdir.iterdir()) == []


def test_a_dead_claim_of_another_user_is_left_alone(shared):
    dead = subprocess.Popen(["true"])
    dead.wait()
    claim = shared / "r.h5.tmp"
    as_nobody("sh", "-c", f"echo '{dead.pid} {socket.gethostname()}' > {claim}")
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={shared}", "--run.output=r.h5", NOT_TRAINED, timeout=60)
    assert p.returncode == 2 and len(errors(p.stderr)) == 1 and "another user's file" in p.stderr, p.stderr
    assert claim.read_text() == f"{dead.pid} {socket.gethostname()}\n" and os.listdir(shared) == ["r.h5.tmp"]


def test_a_link_planted_at_the_claim_between_points_is_never_written_through(shared, victim):
    """Once the first point is written, NAME.tmp is no longer the launch's: nobody links
    it to a root-only file, and the rewrites (fresh temporaries) never open it."""
    p = launch(shared, env={"DPSCALE_WRITE_FAULT": "pause:1"})
    # the claim is given up just after the first file is linked into place
    wait_for(lambda: (shared / "r.h5").exists() and not os.path.lexists(shared / "r.h5.tmp"),
             "the first point's file, and the claim given up", p)
    as_nobody("ln", "-s", victim, shared / "r.h5.tmp")
    rc, _, err = finish(p)
    assert rc == 0 and errors(err) == [], err
    st = os.lstat(shared / "r.h5")
    assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and points(shared / "r.h5") == (1, 2)
    assert os.readlink(shared / "r.h5.tmp") == str(victim)  # another's, left alone
    assert sorted(os.listdir(shared)) == ["r.h5", "r.h5.tmp"]


def test_a_link_that_takes_the_name_during_the_first_write_leaves_the_point_in_the_file_named(shared, victim):
    """nobody takes NAME (a dangling link) while the first point's file is written: it is
    never written through, and the error names the file that truly holds the point."""
    p = launch(shared, env={"DPSCALE_WRITE_FAULT": "pause:1.5"})
    wait_for(lambda: temporaries(shared), "the first point's temporary", p)
    plant("dangling link", shared / "r.h5", victim)
    rc, _, err = finish(p)
    kept = temporaries(shared)
    assert rc == 1 and len(errors(err)) == 1 and len(kept) == 1, err
    assert errors(err)[0].endswith(f"cannot create {shared}/r.h5: File exists; the complete content is kept in {kept[0]}")
    assert "hint: the file kept is the complete result" in err
    assert os.lstat(kept[0]).st_uid == 0 and points(kept[0]) == (0, 1)
    assert unchanged("dangling link", shared / "r.h5", victim)
    assert sorted(os.listdir(shared)) == sorted(["r.h5", kept[0].name])  # the claim given up


def test_a_result_replaced_by_a_link_between_points_is_left_alone(open_shared, victim):
    """Without the sticky bit, nobody may replace the launch's r.h5 by a link to a
    root-only file: the next rewrite refuses, and keeps its content beside it."""
    folder = open_shared
    p = launch(folder, env={"DPSCALE_WRITE_FAULT": "pause:1"})
    wait_for(lambda: (folder / "r.h5").exists(), "the first point's file", p)
    as_nobody("ln", "-sfn", victim, folder / "r.h5")
    rc, _, err = finish(p)
    kept = temporaries(folder)
    assert rc == 1 and len(errors(err)) == 1 and len(kept) == 1, err
    assert errors(err)[0].endswith(f"{folder}/r.h5 was replaced since this launch wrote it (a symbolic link now): it is "
                                   f"left alone, and the complete result is kept in {kept[0]}"), err
    assert points(kept[0]) == (1, 2) and os.readlink(folder / "r.h5") == str(victim)
    assert sorted(os.listdir(folder)) == sorted(["r.h5", kept[0].name])


def swap_folder_for_a_link(folder, to):
    """nobody renames the launch's output folder aside and puts a link to `to` at its name."""
    as_nobody("sh", "-c", f"mv {folder} {folder}.real && ln -s {to} {folder}")
    return Path(f"{folder}.real")


@pytest.fixture
def root_only_folder(tmp_path):
    """A folder of root's alone: what a link swapped in for the output folder names."""
    v = tmp_path / "victim-folder"
    v.mkdir(mode=0o700)
    yield v
    assert os.listdir(v) == [], "a file was written into a folder the launch never named"


@pytest.mark.parametrize("when", ["between two writes", "during a write"])
def test_an_output_folder_swapped_for_a_link_is_never_followed(open_shared, root_only_folder, when):
    """The output folder is opened once: nobody moving it aside and linking its name to a
    root-only folder, between two sweep points or while a write is held, changes
    nothing written; the result lands in the folder opened, and the line that names it
    says where that folder is now."""
    out = open_shared / "out"
    p = launch(out, env={"DPSCALE_WRITE_FAULT": "pause:1"})
    if when == "between two writes":
        wait_for(lambda: (out / "r.h5").exists(), "the first point's file", p)
    else:
        wait_for(lambda: out.is_dir() and temporaries(out), "the first point's temporary", p)
    real = swap_folder_for_a_link(out, root_only_folder)
    rc, stdout, err = finish(p)
    assert rc == 0 and errors(err) == [], err
    assert points(real / "r.h5") == (1, 2) and sorted(os.listdir(real)) == ["r.h5"]
    assert os.readlink(out) == str(root_only_folder)
    assert f"wrote {out}/r.h5 (the folder {out} was moved or replaced during the launch; the result is in the " \
           f"folder that was opened, now {real})" in stdout, stdout


def claim_held(folder):
    """A launch that holds the claim of folder/r.h5 (training for minutes: ended by the test)."""
    cmd = ["mpirun", "-np", "1", str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={folder}",
           "--run.output=r.h5", NOT_TRAINED, "--model.hidden_dim=1024", "--train.batch_per_gpu=256"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=mpi_env())
    # the claim holds "PID HOST" once written: the file exists a moment before that
    wait_for(lambda: (folder / "r.h5.tmp").exists() and (folder / "r.h5.tmp").read_text().strip() != "",
             "the first launch's claim, written", p)
    return p


def end_holder(p, folder):
    p.send_signal(signal.SIGTERM)  # outside a write: the launch ends at once, its claim removed
    finish(p)
    assert not (folder / "r.h5.tmp").exists()


@pytest.mark.parametrize("where", ["beside it", "in another pid namespace"])
def test_a_claim_held_by_a_running_launch_is_never_taken(outdir, where):
    """The claimant holds flock(LOCK_EX) on NAME.tmp: a second launch is refused whether
    or not it can see the claimant's pid (a pid namespace of its own sees none)."""
    if where != "beside it" and subprocess.run(["unshare", "-pf", "--mount-proc", "true"]).returncode != 0:
        pytest.skip("unshare -pf --mount-proc is not possible here")
    first = claim_held(outdir)
    try:
        claim = (outdir / "r.h5.tmp").read_text()
        prefix = [] if where == "beside it" else ["unshare", "-pf", "--mount-proc"]
        cmd = [*prefix, "mpirun", "-np", "1", str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={outdir}",
               "--run.output=r.h5", NOT_TRAINED]
        p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=60)
        assert p.returncode == 2 and len(errors(p.stderr)) == 1, p.stderr
        assert "another launch (its pid and host inside) is writing this result" in p.stderr, p.stderr
        if where != "beside it":  # its pid looked dead from there: the lock alone told
            assert "its pid is of another pid namespace" in p.stderr, p.stderr
        assert "removed" not in p.stderr and (outdir / "r.h5.tmp").read_text() == claim
        assert first.poll() is None, "the first launch failed"
    finally:
        end_holder(first, outdir)


# A SIGTERM that lands inside the first point's write (held there by DPSCALE_WRITE_FAULT
# once its temporary is complete). mpirun passes a SIGTERM on to the ranks after
# odls_base_sigkill_timeout and sends SIGKILL as long again after that (1 s each by
# default); 2 s here, as a launcher's grace (Slurm's KillWait is 30 s), so that the
# signal surely comes while the 3 s write is held, and it ends before the SIGKILL.
@pytest.mark.parametrize("to", ["mpirun", "every rank"])
def test_a_sigterm_during_the_first_write_keeps_that_point(outdir, to):
    env = {"DPSCALE_WRITE_FAULT": "pause:3", "OMPI_MCA_odls_base_sigkill_timeout": "2"} if to == "mpirun" else \
        {"DPSCALE_WRITE_FAULT": "pause:2"}
    p = launch(outdir, "--train.iters=50", env=env)
    wait_for(lambda: temporaries(outdir), "the first point's temporary", p)
    if to == "mpirun":
        p.send_signal(signal.SIGTERM)
    else:  # as Slurm signals every task
        ranks = subprocess.run(["pgrep", "-P", str(p.pid), "-x", "dpscale"], capture_output=True, text=True).stdout.split()
        assert len(ranks) == 2, ranks
        for pid in ranks:
            os.kill(int(pid), signal.SIGTERM)
    rc, _, err = finish(p)
    assert rc != 0
    assert f"dpscale: note: SIGTERM came while {outdir}/r.h5 was written: the write was finished first" in err, err
    assert os.listdir(outdir) == ["r.h5"] and points(outdir / "r.h5") == (0, 1)  # no temporary, no claim


def unsealed(folder, name="r.h5"):
    path = folder / name
    shutil.copy(ROOT / "results/h200x2-comm-bound-pcie.h5", path)
    with edit_h5(path):
        pass
    return path


def seal(*paths):
    return subprocess.run([BINARY, "seal", *map(str, paths)], capture_output=True, text=True, timeout=60)


def test_seal_refuses_a_link_and_never_seals_what_it_names(shared, tmp_path):
    target = unsealed(tmp_path, "root-only.h5")
    data = target.read_bytes()
    as_nobody("ln", "-s", target, shared / "r.h5")
    p = seal(shared / "r.h5")
    assert p.returncode == 2 and errors(p.stderr) == [
        f"dpscale: error: {shared}/r.h5 is a symbolic link, and a file is never sealed through one; seal the file it "
        "names"], p.stderr
    assert target.read_bytes() == data and os.readlink(shared / "r.h5") == str(target)


def test_seal_refuses_a_fifo_without_hanging(shared):
    as_nobody("mkfifo", shared / "r.h5")
    p = seal(shared / "r.h5")
    assert p.returncode == 2 and len(errors(p.stderr)) == 1 and "not a regular file" in p.stderr, p.stderr


def test_seal_never_writes_through_a_link_planted_at_its_copy(shared, victim):
    path = unsealed(shared)
    data = path.read_bytes()
    as_nobody("ln", "-s", victim, f"{path}.seal.tmp")
    p = seal(path)
    assert p.returncode == 1 and len(errors(p.stderr)) == 1 and f"{path}.seal.tmp exists" in p.stderr, p.stderr
    assert path.read_bytes() == data and os.readlink(f"{path}.seal.tmp") == str(victim)


def test_a_tiny_bucket_size_is_not_refused_for_space_it_will_not_take(small_disk):
    """--comm.bucket_mb=0.001 on a 278,000-parameter model: 6 buckets (a tensor opens at
    most one), not the 1,112 that the gradient's kilobytes would make. Planned from the
    bucket plan, the file needs about 13 MB (twice the file and its replacement); the
    count by size asked for 55 MB, and this 16 MB disk was refused."""
    disk = small_disk(16 << 20)
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={disk}", "--run.output=r.h5", "--run.sweep=1,2",
                "--comm.bucket_mb=0.001", "--model.hidden_dim=512", "--train.iters=200", timeout=120)
    assert p.returncode == 0, p.stderr
    assert points(disk / "r.h5") == (1, 2) and os.listdir(disk) == ["r.h5"]

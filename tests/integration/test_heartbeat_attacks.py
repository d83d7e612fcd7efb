"""The watchdog's heartbeat folder (src/base/watchdog.h) against another user of the node:
nothing outside the job's own folder is ever deleted or written, no planted entry hangs,
crashes or aborts a healthy job, and no launch removes a live job's folder, whatever
pid namespace it runs in. Real ranks under mpirun, the CPU backend, the tiny model.

The attacks run as nobody (uid 65534) through setpriv; the tests skip where that is not
possible. Each launch gets a base folder of its own (DPSCALE_HEARTBEAT_DIR, mode 1777
like /dev/shm) so that links planted here never meet another checkout's dpscale
cleaning /dev/shm on the same machine."""
import fcntl
import glob
import os
import shutil
import stat
import struct
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import BINARY, TINY, dpscale, mpi_env

NOBODY = 65534
PREFIX = "dpscale-heartbeat."  # mkdtemp's template in src/base/watchdog.c
OLD_PREFIX = "dpscale-heartbeat-"  # dpscale-heartbeat-PID-TIME, the predictable name of before
WARNING_TAIL = "no node-local heartbeats; a stopped rank is found by each rank's own deadline only"
# struct heartbeat of src/base/watchdog.c: magic, token, rank, armed, step, bucket, pid, seq, beat, note, pass
HEARTBEAT = struct.Struct("<QQiiiiqqdd48s")
# A few seconds of steps (three passes of 2 ranks): long enough to tamper with the live folder
LONG = ["--run.sweep=2", "--train.iters=3000", "--model.hidden_dim=256", "--train.batch_per_gpu=128"]
# run.timeout_s: a heartbeat wrongly believed stale would end the job within it, and the
# job runs well past it after the planting. Not shorter: the ranks meet only between the
# passes, so what one rank loses to a loaded machine over a pass of 3000 steps is
# waited for there, under this deadline (3 s ended a sound job beside another test).
TIMEOUT_S = 6
JOB_LIMIT_S = 150  # a job that has not ended by then hangs


def _nobody_can_run(exe):
    try:
        p = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", exe, "-c", "pass"],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


@pytest.fixture(scope="module")
def attacker_python():
    """An interpreter that runs as nobody, for the attacks."""
    if os.geteuid() != 0:
        pytest.skip("the attacks run as another user: the tests must run as root")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is not installed: no way to act as another user")
    for exe in (sys.executable, "/usr/bin/python3"):
        if os.path.exists(exe) and _nobody_can_run(exe):
            return exe
    pytest.skip("no Python interpreter that nobody (uid 65534) may run, through setpriv")


def as_nobody(python, code, *args, check=True):
    """Run Python `code` as nobody with argv[1:] = ARGS; returns the CompletedProcess."""
    p = subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", python, "-c", code,
                        *map(str, args)], capture_output=True, text=True, timeout=60)
    if check:
        assert p.returncode == 0, f"the attack itself failed to run: {p.stderr}"
    return p


@pytest.fixture
def base():
    """A base folder for heartbeat folders that every user may write, as /dev/shm."""
    d = tempfile.mkdtemp(prefix="dpscale-test-hb-", dir="/tmp")
    os.chmod(d, 0o1777)
    yield d
    shutil.rmtree(d, ignore_errors=True)  # rmtree removes links, never what they point at


@pytest.fixture
def victim(tmp_path):
    """Files only root may touch, which an attack aims at."""
    d = tmp_path / "victim"
    d.mkdir()
    for name in ("a", "b"):
        (d / name).write_text(f"precious {name}\n")
    return d


def contents(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def error_lines(text):
    return [l for l in text.splitlines() if l.startswith("dpscale: error:")]


def start(np, base, outdir, *args, name="r.h5", wrap=(), env=None):
    cmd = [*wrap, "mpirun", "-np", str(np), str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={outdir}",
           f"--run.output={name}", *map(str, args)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=mpi_env({"DPSCALE_HEARTBEAT_DIR": str(base), **(env or {})}))


def kill_session(sid):
    """SIGKILL to every process of session `sid`: mpirun and the ranks it started (each in
    a process group of its own, all in mpirun's session)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:
                os.kill(int(pid), 9)
        except (OSError, ValueError, IndexError):
            pass


def finish(p, limit_s=JOB_LIMIT_S):
    """The job's (returncode, stderr); a job still running after limit_s is killed and fails the test."""
    try:
        _, err = p.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        kill_session(p.pid)
        _, err = p.communicate()
        pytest.fail(f"expected the job to end by itself; it still ran after {limit_s} s (killed). stderr:\n{err}")
    return p.returncode, err


def assert_ended_normally(rc, err, what):
    assert rc == 0 and error_lines(err) == [], f"{what}: expected exit 0 and no error line, got exit {rc}:\n{err}"


def live_folder(p, base, nranks, limit_s=60):
    """The running job's heartbeat folder in `base`, once every rank's file is there."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        for d in glob.glob(os.path.join(base, PREFIX + "*")):
            if all(os.path.exists(os.path.join(d, f"rank{r}")) for r in range(nranks)):
                return d
        if p.poll() is not None:
            pytest.fail(f"expected the job's heartbeat folder in {base}; the job ended (exit {p.returncode}) "
                        f"before it was seen:\n{p.stderr.read()}")
        time.sleep(0.05)
    kill_session(p.pid)
    pytest.fail(f"expected the job's heartbeat folder in {base} within {limit_s} s; none came")


def still_running(p, what):
    assert p.poll() is None, f"expected the job still running after {what}; it had ended (exit {p.returncode}), " \
        "so the test proved nothing: lengthen LONG"


def test_a_linked_stale_folder_is_not_followed(attacker_python, base, victim, outdir):
    """Links named as heartbeat folders of dead jobs (the old and the new pattern), and a
    real folder of nobody's with a link inside: a launch's cleanup removes none of what
    they point at, and not them either (they are not this user's)."""
    before = contents(victim)
    as_nobody(attacker_python, """
import os, sys
base, victim = sys.argv[1:3]
os.symlink(victim, os.path.join(base, "dpscale-heartbeat-999999-1"))
os.symlink(victim, os.path.join(base, "dpscale-heartbeat.AAAAAA"))
d = os.path.join(base, "dpscale-heartbeat.BBBBBB")
os.mkdir(d)
os.chmod(d, 0o700)
os.symlink(os.path.join(victim, "a"), os.path.join(d, "rank0"))
os.utime(d, (0, 0))  # as old as can be: dead by age
""", base, victim)
    rc, err = finish(start(2, base, outdir))
    assert_ended_normally(rc, err, "a launch beside planted links")
    assert contents(victim) == before, f"expected the victim's files untouched: {before}; they are {contents(victim)}"
    left = sorted(os.listdir(base))
    assert left == ["dpscale-heartbeat-999999-1", "dpscale-heartbeat.AAAAAA", "dpscale-heartbeat.BBBBBB"], \
        f"expected nobody's entries left alone and the job's folder gone; the base holds {left}"
    assert os.listdir(os.path.join(base, "dpscale-heartbeat.BBBBBB")) == ["rank0"]


def test_a_folder_made_in_advance_under_the_old_name_is_never_used(attacker_python, base, victim, outdir):
    """The old name (rank 0's pid and the start second) could be made in advance with
    rank0 -> victim inside. Made for every pid and second the launch could have, they are
    neither used nor removed, and the victim is unchanged: the name is random now."""
    before = contents(victim)
    first = int(open("/proc/sys/kernel/ns_last_pid").read()) + 1
    now = int(time.time())
    as_nobody(attacker_python, """
import os, sys
base, victim, first, now = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for pid in range(first, first + 300):
    for t in range(now, now + 6):
        d = os.path.join(base, f"dpscale-heartbeat-{pid}-{t}")
        os.mkdir(d)
        os.chmod(d, 0o777)
        for r, f in (("rank0", "a"), ("rank1", "b")):
            os.symlink(os.path.join(victim, f), os.path.join(d, r))
""", base, victim, first, now)
    rc, err = finish(start(2, base, outdir))
    assert_ended_normally(rc, err, "a launch beside folders made in advance")
    assert contents(victim) == before, f"expected the victim's files untouched: {before}; they are {contents(victim)}"
    planted = [d for d in os.listdir(base) if d.startswith(OLD_PREFIX)]
    assert len(planted) == 300 * 6, f"expected the 1800 planted folders left alone; {len(planted)} remain"
    changed = [d for d in planted if sorted(os.listdir(os.path.join(base, d))) != ["rank0", "rank1"]]
    assert changed == [], f"expected nothing added to or removed from a planted folder; changed: {changed[:5]}"
    assert [d for d in os.listdir(base) if d.startswith(PREFIX)] == [], "expected the job's own folder removed"


def test_entries_that_are_not_heartbeats_are_skipped(attacker_python, base, victim, outdir):
    """The live folder is this user's and 0700: nobody cannot plant in it. What this user
    might leave there by mistake (a FIFO or a link in a rank's place, a file cut short,
    stray entries) is skipped: the job ends normally, nothing blocks on a FIFO, and the
    folder goes at the end with all of it."""
    before = contents(victim)
    p = start(3, base, outdir, *LONG, f"--run.timeout_s={TIMEOUT_S}")
    try:
        d = live_folder(p, base, 3)
        st = os.lstat(d)
        assert stat.S_ISDIR(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700, \
            f"expected the job's folder a real folder of root's, mode 0700; got mode {oct(st.st_mode)}, uid {st.st_uid}"
        tried = as_nobody(attacker_python, "import os, sys; os.mkfifo(os.path.join(sys.argv[1], 'rank5'))", d,
                          check=False)
        assert tried.returncode != 0 and "PermissionError" in tried.stderr, \
            f"expected nobody refused a FIFO in the job's folder; got exit {tried.returncode}: {tried.stderr}"
        os.rename(os.path.join(d, "rank1"), os.path.join(d, "rank1.moved"))
        os.mkfifo(os.path.join(d, "rank1"))
        os.rename(os.path.join(d, "rank2"), os.path.join(d, "rank2.moved"))
        with open(os.path.join(d, "rank2"), "wb") as f:
            f.write(b"short")
        os.symlink(victim / "a", os.path.join(d, "rank7"))
        os.mkfifo(os.path.join(d, "rank8"))
        time.sleep(0.6)  # several ticks of every rank's scan
        still_running(p, "the entries were planted")
    finally:
        rc, err = finish(p)
    assert_ended_normally(rc, err, "a job whose folder holds a FIFO, a link and a short file")
    assert contents(victim) == before, f"expected the victim's files untouched: {before}; they are {contents(victim)}"
    assert os.listdir(base) == [], f"expected the job's folder and all in it removed; the base holds {os.listdir(base)}"


def test_truncating_a_live_heartbeat_does_not_crash(base, outdir):
    """A heartbeat file cut to 0 bytes, again and again: no SIGBUS (the heartbeat is not
    mapped), the job ends normally."""
    p = start(2, base, outdir, *LONG, f"--run.timeout_s={TIMEOUT_S}")
    try:
        d = live_folder(p, base, 2)
        until = time.monotonic() + 2
        while time.monotonic() < until:
            for r in (0, 1):
                try:
                    os.truncate(os.path.join(d, f"rank{r}"), 0)
                except FileNotFoundError:
                    pass
            time.sleep(0.03)
        still_running(p, "the files were truncated")
    finally:
        rc, err = finish(p)
    assert_ended_normally(rc, err, "a job whose heartbeats were truncated")


def test_a_forged_heartbeat_is_ignored(attacker_python, base, outdir):
    """A heartbeat of a rank the job does not have (rank 9), and one in rank 1's place that
    lacks the launch's token, both stopped for ages: the job is not aborted for them."""
    p = start(2, base, outdir, *LONG, f"--run.timeout_s={TIMEOUT_S}")
    try:
        d = live_folder(p, base, 2)
        tried = as_nobody(attacker_python, "import os, sys; open(os.path.join(sys.argv[1], 'rank9'), 'wb')", d,
                          check=False)
        assert tried.returncode != 0 and "PermissionError" in tried.stderr, \
            f"expected nobody refused a file in the job's folder; got exit {tried.returncode}: {tried.stderr}"
        real = HEARTBEAT.unpack(open(os.path.join(d, "rank0"), "rb").read())
        magic, token, _, armed, step, bucket, _, seq, _, note, pas = real
        forged = HEARTBEAT.pack(magic, token, 9, armed, step, bucket, 1, seq, 1.0, note, pas)  # stopped long ago
        with open(os.path.join(d, "rank9"), "wb") as f:
            f.write(forged)
        os.rename(os.path.join(d, "rank1"), os.path.join(d, "rank1.moved"))
        with open(os.path.join(d, "rank1"), "wb") as f:
            f.write(HEARTBEAT.pack(magic, token ^ 1, 1, armed, step, bucket, 1, seq, 1.0, note, pas))
        time.sleep(0.6)  # several ticks of every rank's scan
        still_running(p, "the forged heartbeats were planted")
    finally:
        rc, err = finish(p)
    assert_ended_normally(rc, err, "a job beside forged heartbeats")


def _mount(args, where):
    p = subprocess.run(["mount", *args, str(where)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"no file system of our own for the heartbeats: mount {' '.join(args)} failed: {p.stderr.strip()}")


@pytest.mark.parametrize("kind", ["missing", "not-a-folder", "read-only", "full", "room-for-one-rank"])
def test_no_usable_heartbeat_folder_warns_once_and_runs(tmp_path, outdir, kind):
    """Where no heartbeat folder can be made (or one rank's file cannot be written), the
    job runs without heartbeats: one warning line, exit 0, nothing left behind."""
    where = tmp_path / "hb"
    mounted = False
    try:
        if kind == "missing":
            pass
        elif kind == "not-a-folder":
            where.write_text("a file\n")
        else:
            where.mkdir()
            opts = {"read-only": "ro,size=65536", "full": "size=4096", "room-for-one-rank": "size=4096"}[kind]
            _mount(["-t", "tmpfs", "-o", opts, "tmpfs"], where)
            mounted = True
            if kind == "full":
                fd = os.open(where / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
                try:  # every block of the file system taken
                    while os.write(fd, b"\0" * 4096) > 0:
                        pass
                except OSError:
                    pass
                finally:
                    os.close(fd)
        p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=r.h5",
                    env={"DPSCALE_HEARTBEAT_DIR": str(where)}, timeout=JOB_LIMIT_S)
        warnings = [l for l in p.stderr.splitlines() if l.startswith("dpscale: warning:")]
        assert_ended_normally(p.returncode, p.stderr, f"a launch with a {kind} heartbeat base")
        assert len(warnings) == 1 and warnings[0].endswith(WARNING_TAIL), \
            f"expected one warning line ending '{WARNING_TAIL}'; got:\n{p.stderr}"
        assert (outdir / "r.h5").exists(), "expected the result file written"
        if mounted:
            left = [e for e in os.listdir(where) if e != "filler"]
            assert left == [], f"expected no heartbeat folder left in {where}; found {left}"
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_dev_shm_falls_back_to_tmpdir(tmp_path, outdir):
    """/dev/shm full (a 4 KiB tmpfs over it, filled, in a mount namespace of the job's own):
    the heartbeats go to $TMPDIR, with no warning and no SIGBUS."""
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs", "-o", "size=4096",
                            "tmpfs", "/dev/shm"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip(f"no mount namespace to fill /dev/shm in: {probe.stderr.strip()}")
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = mpi_env({"TMPDIR": str(tmpdir)})
    env.pop("DPSCALE_HEARTBEAT_DIR", None)
    fill = 'mount -t tmpfs -o size=4096 tmpfs /dev/shm && head -c 4096 /dev/zero >/dev/shm/fill; exec "$@"'
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", fill, "sh", "mpirun", "-np", "2", str(BINARY), "run",
           "--config", str(TINY), f"--run.output_dir={outdir}", "--run.output=r.h5", *LONG]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        live_folder(p, tmpdir, 2)
    finally:
        rc, err = finish(p)
    assert_ended_normally(rc, err, "a launch with /dev/shm full")
    assert "dpscale: warning:" not in err, f"expected no warning (TMPDIR was there to use); got:\n{err}"


def test_dead_jobs_folders_are_removed_only_when_old_and_unlocked(base, outdir):
    """A launch removes a dead job's folder (this user's, older than a minute, not locked);
    it keeps one younger (its job may not have locked it yet) and one that is locked."""
    def folder(name, age_s):
        d = os.path.join(base, PREFIX + name)
        os.mkdir(d, 0o700)
        open(os.path.join(d, "rank0"), "wb").close()
        os.utime(d, (time.time() - age_s, time.time() - age_s))
        return d

    dead, young, locked = folder("dead00", 3600), folder("young0", 0), folder("locked", 3600)
    fd = os.open(locked, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # as each rank of a live job holds it
        rc, err = finish(start(2, base, outdir))
    finally:
        os.close(fd)
    assert_ended_normally(rc, err, "a launch beside old folders")
    kept = {d: os.path.exists(d) for d in (dead, young, locked)}
    assert kept == {dead: False, young: True, locked: True}, \
        f"expected the dead one removed, the young and the locked kept; kept: {kept}"


@pytest.mark.parametrize("namespace", ["same", "unshare -pf"])
def test_a_live_folder_survives_another_launchs_cleanup(base, tmp_path, outdir, namespace):
    """Job A runs; its folder is made to look a minute old, so that only its lock keeps it.
    Launch B (in A's pid namespace, or in one of its own, where A's pids do not exist)
    cleans the base: A's folder stays, a dead job's goes, and A ends normally."""
    wrap = ()
    if namespace != "same":
        if shutil.which("unshare") is None:
            pytest.skip("unshare is not installed")
        probe = subprocess.run(["unshare", "-pf", "--mount-proc", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            pytest.skip(f"no pid namespace of our own: unshare -pf --mount-proc failed: {probe.stderr.strip()}")
        wrap = ("unshare", "-pf", "--mount-proc")
    a = start(2, base, outdir, *LONG, name="a.h5")
    try:
        d = live_folder(a, base, 2)
        hour_ago = time.time() - 3600
        os.utime(d, (hour_ago, hour_ago))
        dead = os.path.join(base, PREFIX + "dead00")
        os.mkdir(dead, 0o700)
        os.utime(dead, (hour_ago, hour_ago))
        b_out = tmp_path / "b"
        b_out.mkdir()
        # Open MPI names its session folder after mpirun's pid: in a pid namespace of its
        # own, B's low pid can be that of another job's folder (orte_init: "getting local
        # rank failed"), so B keeps its session folder apart (a short path: its sockets' names
        # must fit in 108 bytes)
        session = tempfile.mkdtemp(prefix="ompi-b.", dir="/tmp")
        try:
            rc_b, err_b = finish(start(2, base, b_out, name="b.h5", wrap=wrap,
                                       env={"OMPI_MCA_orte_tmpdir_base": session} if wrap else None))
        finally:
            shutil.rmtree(session, ignore_errors=True)
        assert_ended_normally(rc_b, err_b, f"launch B ({namespace} pid namespace)")
        assert not os.path.exists(dead), "expected B's cleanup to remove a dead job's folder (did it run?)"
        still_running(a, "launch B ended")
        assert sorted(os.listdir(d)) == ["rank0", "rank1"], \
            f"expected A's live folder and its files kept by B's cleanup; it holds {os.listdir(d) if os.path.exists(d) else 'nothing: removed'}"
    finally:
        rc_a, err_a = finish(a)
    assert_ended_normally(rc_a, err_a, "job A")

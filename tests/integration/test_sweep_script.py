"""jobs/lib/sweep.sh outside Slurm: one launch per path (comm.path), an existing
result never overwritten, a bad path refused, TRANSPORTS still taken with a warning."""
import subprocess

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

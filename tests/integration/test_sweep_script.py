"""jobs/lib/sweep.sh outside Slurm: one launch per transport, an existing result
never overwritten, a bad transport refused."""
import subprocess

from conftest import ROOT, mpi_env


def sweep(tmp_path, *args, **env):
    e = mpi_env({"OUTDIR": str(tmp_path), "NAME": "s", "LAUNCHER": "mpirun -np 2", **env})
    return subprocess.run([ROOT / "jobs/lib/sweep.sh", "--config", ROOT / "configs/mlp-tiny.ini", *args], env=e,
                          capture_output=True, text=True, timeout=120)


def test_one_file_per_transport(tmp_path):
    p = sweep(tmp_path, "--sweep=1,2", TRANSPORTS="auto")
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "s-auto.h5").exists()


def test_an_existing_result_is_never_overwritten(tmp_path):
    (tmp_path / "s-auto.h5").write_bytes(b"keep")
    p = sweep(tmp_path, TRANSPORTS="auto")
    assert p.returncode == 2 and "never overwritten" in p.stderr
    assert (tmp_path / "s-auto.h5").read_bytes() == b"keep"


def test_an_unknown_transport_is_refused(tmp_path):
    p = sweep(tmp_path, TRANSPORTS="infiniband")
    assert p.returncode == 2 and "unknown transport 'infiniband'" in p.stderr


def test_the_config_names_the_transports(tmp_path):
    ini = tmp_path / "t.ini"
    ini.write_text(open(ROOT / "configs/mlp-tiny.ini").read() + "\n[comm]\ntransports = auto\n")
    e = mpi_env({"OUTDIR": str(tmp_path), "NAME": "c", "LAUNCHER": "mpirun -np 2"})
    e.pop("TRANSPORTS", None)
    p = subprocess.run([ROOT / "jobs/lib/sweep.sh", "--config", ini, "--sweep=1,2"], env=e, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "c-auto.h5").exists() and not (tmp_path / "c-nvlink.h5").exists()


def test_dpscale_config_prints_one_resolved_key():
    p = subprocess.run([ROOT / "bin/dpscale", "config", "--config", ROOT / "configs/mlp-tiny.ini", "--get", "model.layers"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "3"

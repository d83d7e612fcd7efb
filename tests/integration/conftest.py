"""Shared helpers of the MPI integration tests: start bin/dpscale under mpirun with
real ranks (oversubscribed on small machines) and read its HDF5 file back."""
import contextlib
import os
import subprocess
from pathlib import Path

import h5py
import pytest

ROOT = Path(__file__).resolve().parents[2]
# DPSCALE_BINARY: another build of the same sources (make test-sanitize)
BINARY = Path(os.environ.get("DPSCALE_BINARY", ROOT / "bin" / "dpscale"))
TINY = ROOT / "configs" / "mlp-tiny.ini"


def mpi_env(extra=None):
    env = dict(os.environ)
    env["OMPI_MCA_rmaps_base_oversubscribe"] = "1"  # 4 ranks on a 2-core CI machine
    env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"  # containers often forbid CMA
    if os.geteuid() == 0:
        env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
        env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env.update(extra or {})
    return env


def dpscale(np, *args, env=None, timeout=120):
    """Run `mpirun -np NP bin/dpscale ARGS...`; returns the CompletedProcess."""
    cmd = ["mpirun", "-np", str(np), str(BINARY), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(env), timeout=timeout)


@pytest.fixture
def outdir(tmp_path):
    d = tmp_path / "out"
    d.mkdir()
    return d


@pytest.fixture
def small_disk(tmp_path):
    """small_disk(BYTES): a folder on a file system of its own of that size (a tmpfs
    mounted for the test, unmounted after), to be filled as a full disk is. Skips the
    test where mount is not allowed (not root, a container without CAP_SYS_ADMIN)."""
    mounts = []

    def make(size_bytes):
        d = tmp_path / f"disk{len(mounts)}"
        d.mkdir()
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(d)], capture_output=True,
                           text=True)
        if p.returncode != 0:
            pytest.skip(f"no file system of our own to fill: mount -t tmpfs failed: {p.stderr.strip()}")
        mounts.append(d)
        return d

    yield make
    for d in mounts:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def run_tiny(np, outdir, *args, name="r.h5", env=None):
    """A run of the tiny model into OUTDIR/NAME; fails the test on a non-zero exit."""
    p = dpscale(np, "run", "--config", TINY, f"--run.output_dir={outdir}", f"--run.output={name}", *args, env=env)
    assert p.returncode == 0, f"dpscale failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return h5py.File(outdir / name, "r"), p


@contextlib.contextmanager
def edit_h5(path):
    """A result file opened to be changed by hand, as tests do to stand for files of
    other machines and older versions. Its checksums (src/result/checksum.h) are dropped, so
    that it reads as a file written before dpscale sealed its files, not as a corrupt
    one; a file of schema 6 or later, which dpscale has always sealed as it wrote it
    (and refuses without checksums), is sealed again after the edit with dpscale seal,
    as its writer would have. One dpscale cannot read (a newer schema) stays unsealed."""
    with h5py.File(path, "r+") as f:
        yield f
        for name in ("checksums", "checksum_algorithm"):
            if name in f.attrs:
                del f.attrs[name]
        schema = f.attrs.get("schema_version", 0)
    if schema >= 6:
        subprocess.run([str(BINARY), "seal", str(path)], capture_output=True, timeout=60)


def md_cells(line):
    """The cells of a Markdown table row; an escaped | or \\ stays inside its cell."""
    cells, cell, i = [], "", 1
    while i < len(line):
        if line[i] == "\\" and i + 1 < len(line):
            cell, i = cell + line[i + 1], i + 2
            continue
        if line[i] == "|":
            cells.append(cell.strip())
            cell = ""
        else:
            cell += line[i]
        i += 1
    return cells

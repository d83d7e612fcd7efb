"""dpscale comm on the CPU backend (MPI): the allreduce sweep, its nccl-tests
figures recomputed from the file, and every result checked."""
import h5py
import numpy as np
import pytest

from conftest import dpscale


def comm(outdir, *args, name="c.h5", np_=2):
    p = dpscale(np_, "comm", "--backend=cpu", "--collective.min_mib=0.25", "--collective.max_mib=4",
                "--collective.iters=5", f"--run.output_dir={outdir}", f"--run.output={name}", *args)
    return p


@pytest.mark.parametrize("in_place", ["on", "off"])
def test_sweep_is_correct_and_self_consistent(outdir, in_place):
    p = comm(outdir, f"--collective.in_place={in_place}")
    assert p.returncode == 0, p.stdout + p.stderr
    g = h5py.File(outdir / "c.h5")["collectives/mpi/auto/n2"]
    assert g.attrs["in_place"] == (in_place == "on") and g.attrs["dtype"] == "fp32"
    sizes = g["size_bytes"][:]
    assert list(sizes) == [2**18, 2**20, 2**22]  # 0.25, 1, 4 MiB: factor 4
    assert np.all(g["wrong_elements"][:] == 0)
    slowest = g["time_s"][:].max(axis=1)
    assert np.allclose(g["algbw_GBps"][:], sizes / slowest / 1e9, rtol=1e-12)
    assert np.allclose(g["busbw_GBps"][:], g["algbw_GBps"][:] * 2 * (2 - 1) / 2, rtol=1e-12)
    rows = [l.split() for l in p.stdout.splitlines() if l.strip()[:1].isdigit()]
    assert len(rows) == 3 and all(r[-1] == "0" for r in rows)


def test_sweeps_every_n_of_the_sweep(outdir):
    p = comm(outdir, "--sweep=2,4", np_=4)
    assert p.returncode == 0, p.stderr
    f = h5py.File(outdir / "c.h5")
    assert sorted(f["collectives/mpi/auto"].keys()) == ["n2", "n4"]
    assert "runs" not in f and "model" not in f and f.attrs["schema_version"] == 6
    assert f["system"].attrs["library"] == "mpi" and f["system"].attrs["path"] == "auto"


def test_16_bit_allreduce_over_mpi_is_refused_before_work(outdir):
    p = comm(outdir, "--collective.dtype=bf16")
    assert p.returncode == 2
    assert "needs comm.library = nccl" in p.stderr
    assert list(outdir.iterdir()) == []


def test_copy_engine_copies_are_refused_in_one_line_not_hung(outdir):
    # NCCL's copy-engine SHM copies stall the sweep (2 x H200, NCCL 2.28.3):
    # dpscale comm refuses them before any allreduce, on every backend
    p = comm(outdir, "--comm.shm_copy=ce")
    assert p.returncode == 2, p.stdout + p.stderr
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 1 and "comm.shm_copy = sm" in errors[0] and "nccl#803" in errors[0]
    assert list(outdir.iterdir()) == []

"""dpscale report on files the tool itself wrote: tables checked row by row
against the files, CSV and JSON parsed back, comparisons, plots, bad files; and
on a schema-1 file measured before (results/), which is still read."""
import csv
import io
import json
import os
import shutil
import subprocess

import h5py
import pytest

from conftest import BINARY, ROOT, run_tiny

OLD = ROOT / "results/h200x4-mlp-comm-bound-overlap-on-nvlink.h5"  # schema 1: a `transport` column


def report(*args, env=None):
    e = dict(os.environ, **(env or {}))
    return subprocess.run([BINARY, "report", *map(str, args)], capture_output=True, text=True, timeout=60, env=e)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("rep")
    run_tiny(2, d, "--sweep=1,2", name="a.h5")
    run_tiny(2, d, "--sweep=1,2", name="a2.h5")
    run_tiny(2, d, "--sweep=1,2", "--train.batch_per_gpu=16", name="b.h5")
    return d


def test_markdown_rows_match_the_file(files):
    p = report(files / "a.h5")
    assert p.returncode == 0, p.stderr
    device = h5py.File(files / "a.h5")["system"].attrs["device_name"]
    assert f"### {device}, mpi over auto: mlp-tiny" in p.stdout
    rows = [l.strip("|").split("|") for l in p.stdout.splitlines() if l.startswith("| ") and l[2].isdigit()]
    summary = h5py.File(files / "a.h5")["summary"][:]
    assert len(rows) == len(summary) == 2
    for cells, s in zip(rows, summary):
        cells = [c.strip() for c in cells]
        assert int(cells[0]) == s["nranks"]
        assert float(cells[2]) == pytest.approx(s["samples_per_s"], abs=0.05)
        assert float(cells[5]) == pytest.approx(s["efficiency"], abs=5e-4)
        assert float(cells[6]) == pytest.approx(100 * s["comm_exposed_median_s"] / s["step_median_s"], abs=0.05)


def test_csv_parses_back_to_the_file_figures(files):
    p = report("--format", "csv", files / "a.h5", files / "b.h5")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == 4
    assert "transport" not in rows[0]
    for row in rows:
        assert row["library"] == "mpi" and row["path"] == "auto"
        s = h5py.File(row["file"])["summary"][:]
        mine = s[s["nranks"] == int(row["gpus"])][0]
        assert float(row["samples_per_s"]) == pytest.approx(mine["samples_per_s"], rel=1e-9)
        assert float(row["efficiency"]) == pytest.approx(mine["efficiency"], rel=1e-9)
        if row["gpus"] == "1":
            assert row["allreduce_busbw_gbps"] == ""  # no allreduce on one rank: empty, not 0
        else:
            assert float(row["allreduce_busbw_gbps"]) == pytest.approx(mine["allreduce_busbw_gbps"], rel=1e-9)


def test_json_parses(files):
    p = report("--format", "json", files / "a.h5")
    doc = json.loads(p.stdout)
    assert set(doc) == {"scaling", "busbw", "topology", "unreadable"} and doc["busbw"] == doc["unreadable"] == []
    data = doc["scaling"]
    assert [d["gpus"] for d in data] == [1, 2] and data[0]["allreduce_busbw_gbps"] is None
    assert all(d["library"] == "mpi" and d["path"] == "auto" and "transport" not in d for d in data)
    assert data[0]["exposed_comm_pct"] == pytest.approx(0, abs=0.05)  # one rank communicates nothing


def test_compare_gives_ratios_and_prices(files):
    p = report("--compare", "--price-per-gpu-hour=2,4", files / "a.h5", files / "a2.h5")
    assert p.returncode == 0, p.stderr
    lines = [l for l in p.stdout.splitlines() if l.startswith("| 2 |")]
    assert len(lines) == 2
    a, a2 = (h5py.File(files / n)["summary"][:][1] for n in ("a.h5", "a2.h5"))
    cells = [c.strip() for c in lines[1].strip("|").split("|")]
    assert float(cells[-1]) == pytest.approx(a2["samples_per_s"] / a["samples_per_s"], abs=5e-4)
    assert float(cells[-2]) == pytest.approx(a2["samples_per_s"] * 3600 / (4 * 2), rel=1e-3)
    device = h5py.File(files / "a.h5")["system"].attrs["device_name"]
    assert f"reference: {device}, mpi over auto (" in p.stdout
    assert cells[1] == f"{device}, mpi over auto"


def test_compare_as_csv_quotes_the_system(files):
    p = report("--compare", "--format", "csv", files / "a.h5", files / "a2.h5")
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == 4 and all(r["system"].endswith(", mpi over auto") for r in rows)
    assert {r["file"] for r in rows} == {str(files / "a.h5"), str(files / "a2.h5")}


def test_compare_says_plainly_when_runs_are_not_comparable(files):
    p = report("--compare", files / "a.h5", files / "b.h5")
    assert "not comparable:" in p.stdout and "another batch (16 vs 8)" in p.stdout
    assert "b.h5" not in "".join(l for l in p.stdout.splitlines() if l.startswith("| "))


def test_files_of_another_model_are_told_apart_by_the_model_table(files, tmp_path):
    """The report compares models by what /model says: type, parameter count and unit.
    A wider model is another model; the same model under another preset label is not;
    a schema-3 file (no /model) still reads, its parameters from its runs."""
    run_tiny(2, tmp_path, "--sweep=1,2", "--model.hidden_dim=40", name="wide.h5")
    run_tiny(2, tmp_path, "--sweep=1,2", "--model.name=relabelled", name="same.h5")
    p = report("--compare", files / "a.h5", tmp_path / "wide.h5", tmp_path / "same.h5")
    assert "not comparable:" in p.stdout and "wide.h5" in p.stdout and "another model (mlp," in p.stdout, p.stdout
    assert "same.h5 " not in "".join(l for l in p.stdout.splitlines() if l.startswith("**not comparable"))
    old = tmp_path / "old.h5"
    shutil.copy(files / "a.h5", old)
    with h5py.File(old, "r+") as f:
        del f["model"]
        f.attrs["schema_version"] = 3
    p = report("--compare", files / "a.h5", old)
    assert p.returncode == 0 and "not comparable" not in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG"), ("svg", b"<svg")])
def test_plot_is_drawn_by_gnuplot(files, tmp_path, ext, magic):
    out = tmp_path / f"plot.{ext}"
    p = report("--plot", out, files / "a.h5", files / "b.h5")
    assert p.returncode == 0, p.stderr
    assert magic in out.read_bytes()[:400]


def test_plot_without_gnuplot_names_the_package(files, tmp_path):
    p = report("--plot", tmp_path / "x.png", files / "a.h5", env={"PATH": "/nonexistent"})
    assert p.returncode != 0 and "apt-get install gnuplot-nox" in p.stderr
    assert not (tmp_path / "x.png").exists()


def test_bad_files_are_named_and_the_others_still_reported(files, tmp_path):
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes((files / "a.h5").read_bytes()[:3000])
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = [1, 2, 3]
    newer = tmp_path / "newer.h5"
    shutil.copy(files / "a.h5", newer)
    with h5py.File(newer, "r+") as f:
        f.attrs["schema_version"] = 5
    text = tmp_path / "notes.h5"
    text.write_text("not hdf5")
    p = report(truncated, foreign, files / "a.h5", newer, text)
    assert p.returncode == 1
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 4, p.stderr
    assert any("truncated.h5" in e and ("damaged" in e or "not an HDF5" in e) for e in errors)
    assert any("foreign.h5: not a dpscale result file" in e for e in errors)
    assert any("newer.h5: schema version 5" in e and "update dpscale" in e for e in errors)
    assert any("notes.h5: not an HDF5 file" in e for e in errors)
    assert str(files / "a.h5") in p.stdout  # the good one is still reported


@pytest.mark.skipif(not OLD.exists(), reason="results/ holds no schema-1 file")
def test_a_schema_1_file_is_still_read():
    """Files measured before schema 2 cannot be measured again: their `transport`
    column becomes library nccl and path nvlink."""
    with h5py.File(OLD) as f:
        assert f.attrs["schema_version"] == 1 and "transport" in f["summary"].dtype.names
        summary = f["summary"][:]
    p = report("--format", "csv", OLD)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert [int(r["gpus"]) for r in rows] == list(summary["nranks"]) == [1, 2, 4]
    for row, s in zip(rows, summary):
        assert row["library"] == "nccl" and row["path"] == "nvlink"
        assert float(row["samples_per_s"]) == pytest.approx(s["samples_per_s"], rel=1e-9)
    p = report(OLD)
    assert p.returncode == 0 and "### NVIDIA H200, nccl over nvlink: mlp-comm-bound" in p.stdout


def test_schema_1_and_2_files_compare_side_by_side(files):
    """A schema-1 transport that named the library (mpi, nccl) is that library over path auto."""
    old = ROOT / "results/h200x2-gemm-heavy-nvlink.h5"  # schema 1, transport "nccl"
    if not old.exists():
        pytest.skip("results/ holds no schema-1 nccl file")
    p = report("--compare", "--format", "csv", old, files / "a.h5")
    assert p.returncode == 0, p.stderr
    assert "not comparable:" in p.stderr and "mpi over auto" in p.stderr  # beside the data, never in it
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert rows and all(r["system"] == "NVIDIA H200, nccl over auto" for r in rows)

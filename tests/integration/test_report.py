"""dpscale report on files the tool itself wrote: tables checked row by row
against the files, CSV and JSON parsed back, comparisons, plots, bad files; and
on a schema-1 file measured before (results/), which is still read. Then every kind
of file (run, comm, topo, projection) in one folder, every format of every mode
parsed back by Python's csv and json modules and by pandas, with names that hold
quotes, commas, pipes, line breaks, non-ASCII and bytes that are not UTF-8."""
import csv
import io
import json
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import BINARY, ROOT, dpscale, edit_h5, md_cells, run_tiny

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
            assert float(row["allreduce_busbw_gbps"]) == pytest.approx(mine["allreduce_busbw_GBps"], rel=1e-9)


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
    with edit_h5(old) as f:
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
    with edit_h5(newer) as f:
        f.attrs["schema_version"] = 7
    text = tmp_path / "notes.h5"
    text.write_text("not hdf5")
    p = report(truncated, foreign, files / "a.h5", newer, text)
    assert p.returncode == 1
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 4, p.stderr
    assert any("truncated.h5" in e and ("damaged" in e or "not an HDF5" in e) for e in errors)
    assert any("foreign.h5: not a dpscale result file" in e for e in errors)
    assert any("newer.h5: schema version 7" in e and "update dpscale" in e for e in errors)
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


OLD_HOST = [ROOT / "results" / n for n in ("h200x4-mlp-comm-bound-overlap-on-pcie.h5", "h200x2-comm-bound-pcie.h5",
                                            "h200x2-projection-checks/bert-large-pcie.h5")]  # schemas 1, 2, 4: path "pcie"


@pytest.mark.parametrize("old", OLD_HOST, ids=lambda p: p.name)
def test_pcie_of_a_file_before_schema_6_is_read_as_host_memory(old):
    """Before schema 6, "pcie" was NCCL with peer access off, through host memory: the
    path schema 6 calls host. The label says host memory, never a PCIe system."""
    if not old.exists():
        pytest.skip(f"results/ holds no {old.name}")
    with h5py.File(old) as f:
        assert f.attrs["schema_version"] < 6
        column = "path" if "path" in f["summary"].dtype.names else "transport"
        assert set(f["summary"][column]) == {b"pcie"}
    p = report("--format", "csv", old)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert rows and all(r["library"] == "nccl" and r["path"] == "host" for r in rows), rows
    p = report(old)
    assert p.returncode == 0 and "### NVIDIA H200, nccl over host memory (P2P off): " in p.stdout, p.stdout
    assert "over pcie" not in p.stdout and "PCIe (P2P)" not in p.stdout


def test_a_comm_file_before_schema_6_names_its_pcie_sweeps_host_memory():
    old = ROOT / "results/h200x2-projection-checks/comm-pcie.h5"  # schema 4: /collectives/nccl/pcie
    if not old.exists():
        pytest.skip("results/ holds no comm-pcie.h5")
    p = report("--format", "json", old)
    assert p.returncode == 0, p.stderr
    assert {(s["library"], s["path"]) for s in json.loads(p.stdout)["busbw"]} == {("nccl", "host")}
    p = report(old)
    assert "### NVIDIA H200, nccl over host memory (P2P off): allreduce busbw by size" in p.stdout, p.stdout


@pytest.mark.parametrize("schema, path, words", [(5, "pcie", "host memory (P2P off)"), (6, "pcie", "PCIe (P2P)"),
                                                 (6, "host", "host memory (P2P off)")])
def test_the_schema_decides_what_pcie_means(files, tmp_path, schema, path, words):
    """pcie before schema 6 is host memory (read as host); from schema 6 it is peer-to-peer over PCIe."""
    f = tmp_path / "f.h5"
    shutil.copy(files / "a.h5", f)
    with edit_h5(f) as h:
        s = h["summary"][:]
        s["library"], s["path"] = b"nccl", path.encode()
        h["summary"][...] = s
        h.attrs["schema_version"] = schema
    p = report("--format", "csv", f)
    assert p.returncode == 0, p.stderr
    assert {r["path"] for r in csv.DictReader(io.StringIO(p.stdout))} == {"host" if words.startswith("host") else "pcie"}
    p = report("--compare", f, f)
    assert p.returncode == 0, p.stderr
    assert f", nccl over {words} " in p.stdout, p.stdout


# --- every kind of file, every format, hostile names ---

try:
    import pandas as pd
except ImportError:  # pandas is a test dependency (tools/deps.sh); only its assertions are skipped
    pd = None
needs_pandas = pytest.mark.skipif(pd is None, reason="python3-pandas is not installed (tools/deps.sh install)")

# a quote, a comma, a pipe, a backslash, a line break, non-ASCII: what a label must survive
HOSTILE = 'GPU "X", rev|2 \\ 2nd\nline ü✓'
PCIE_FIXTURE = ROOT / "tests/fixtures/topo-pcie-dual-socket-8gpu.txt"
TOPO_WITH_COPIES = ROOT / "results/h200x2-topo.h5"  # measured on 2 x H200: link and copy matrices
SCHEMA1_COMM = ROOT / "results/h200x4-comm-nvlink.h5"  # /collectives/<transport>/n<N>


def retitle(src, dst, device=None, model=None, overlap=None):
    """A copy of a result file with its device name, model label or overlap rewritten."""
    shutil.copy(src, dst)
    with edit_h5(dst) as f:
        if device is not None:
            f["system"].attrs["device_name"] = device
        if model is not None:
            f["config"].attrs["model.name"] = model
        if overlap is not None:
            f["config"].attrs["comm.overlap"] = overlap
    return dst


@pytest.fixture(scope="module")
def mixed(files, tmp_path_factory):
    """A folder of every kind of file dpscale writes: two runs (one under a hostile
    name, with a device and model label to match), a comm file with a hostile device,
    topo files with and without copy matrices, a projection, a schema-1 comm file and
    a dump-like file, which has no table."""
    d = tmp_path_factory.mktemp("mixed")
    shutil.copy(files / "a.h5", d / "run.h5")
    retitle(files / "a.h5", d / 'odd, "quoted" ü.h5', device=HOSTILE, model="é" * 40)
    p = dpscale(2, "comm", "--backend=cpu", "--collective.min_mib=0.25", "--collective.max_mib=1", "--collective.iters=2",
                f"--run.output_dir={d}", "--run.output=comm.h5")
    assert p.returncode == 0, p.stderr
    with edit_h5(d / "comm.h5") as f:
        f["system"].attrs["device_name"] = HOSTILE
    p = dpscale(1, "topo", "--backend=cpu", f"--topo.fixture={PCIE_FIXTURE}", f"--run.output_dir={d}", "--run.output=topo.h5")
    assert p.returncode == 0, p.stderr
    shutil.copy(TOPO_WITH_COPIES, d / "topo-h200x2.h5")
    shutil.copy(SCHEMA1_COMM, d / "comm-schema1.h5")
    p = subprocess.run([BINARY, "project", ROOT / "results/h200x2-comm-bound-pcie.h5", "--comm",
                        ROOT / "results/h200x2-comm-p2p-disabled.h5", "--output", d / "projected.h5"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    with h5py.File(d / "dump.h5", "w") as f:
        f.attrs["writer"], f.attrs["schema_version"] = "dpscale", 4
        f.create_group("dump")
    (d / "notes.txt").write_text("not a result file, and not *.h5: a folder's other files are not read")
    return d



def md_tables(text):
    """Every Markdown table of the text: lists of rows of cells."""
    tables, rows = [], []
    for line in text.split("\n") + [""]:
        if line.startswith("|"):
            rows.append(md_cells(line))
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def check_markdown(text):
    """Every table has a header, a separator row, and rows of the header's width."""
    tables = md_tables(text)
    assert tables, text
    for t in tables:
        assert len(t) >= 2 and all(set(c) <= set("-:") and c for c in t[1]), t[:2]
        assert all(len(row) == len(t[0]) for row in t), f"a row of another width than its header {t[0]}:\n{t}"
    return tables


def check_csv(text):
    """One header and rows of its width: the CSV has no line that is not data."""
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows and all(len(r) == len(rows[0]) for r in rows), text
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def test_a_folder_of_every_kind_is_reported_with_exit_0(mixed):
    p = report(mixed)
    assert p.returncode == 0, p.stderr
    assert "dump.h5: a dpscale dump file" in p.stderr and "dpscale: error" not in p.stderr
    assert "### PROJECTED, not measured" in p.stdout  # the projection's scaling table, labelled
    assert p.stdout.count("allreduce busbw by size") == 3  # mpi over auto n2; schema 1: nvlink n2 and n4
    assert p.stdout.count("### Topology of ") == 2
    assert "notes.txt" not in p.stdout + p.stderr
    check_markdown(p.stdout)


@pytest.mark.parametrize("compare", [False, True], ids=["plain", "compare"])
@pytest.mark.parametrize("fmt", ["markdown", "csv", "json"])
def test_every_format_of_every_mode_parses(mixed, fmt, compare):
    p = report(*(["--compare"] if compare else []), "--format", fmt, mixed)
    assert p.returncode == 0, p.stderr
    if fmt == "markdown":
        check_markdown(p.stdout)
    elif fmt == "csv":
        rows = check_csv(p.stdout)
        assert rows and ("system" in rows[0]) == compare
        assert "--table comm" in p.stderr and "--table topo" in p.stderr  # the tables left out are named
    else:
        doc = json.loads(p.stdout)
        assert set(doc) == ({"reference", "comparison", "not_comparable"} if compare else {"scaling"}) | {
            "busbw", "topology", "unreadable"}
        assert doc["busbw"] and doc["topology"] and doc["unreadable"] == []


@pytest.mark.parametrize("table", ["run", "comm", "topo"])
def test_each_table_alone_is_one_csv(mixed, table):
    p = report("--format", "csv", "--table", table, mixed)
    assert p.returncode == 0 and "left out" not in p.stderr, p.stderr
    rows = check_csv(p.stdout)
    key = {"run": "efficiency", "comm": "busbw_gbps", "topo": "link"}[table]
    assert rows and all(key in r for r in rows)


def test_hostile_names_stay_in_their_fields(mixed):
    """The device and model label hold quotes, a comma, a pipe, a line break and
    non-ASCII; the file name a comma and quotes. Each comes back whole, in its column."""
    odd = str(mixed / 'odd, "quoted" ü.h5')
    rows = check_csv(report("--format", "csv", mixed).stdout)
    mine = [r for r in rows if r["file"] == odd]
    assert len(mine) == 2 and all(r["device"] == HOSTILE for r in mine)
    assert mine[0]["model"] == "é" * 23  # cut to its 47-byte field, between characters, not inside one
    busbw = check_csv(report("--format", "csv", "--table", "comm", mixed / "comm.h5").stdout)
    assert busbw and all(r["device"] == HOSTILE for r in busbw)
    doc = json.loads(report("--format", "json", mixed).stdout)
    assert {r["device"] for r in doc["scaling"] if r["file"] == odd} == {HOSTILE}
    md = report(mixed / 'odd, "quoted" ü.h5').stdout
    heading = [l for l in md.splitlines() if l.startswith("### ")]
    escaped = HOSTILE.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")  # one line, no cell split
    shape = h5py.File(odd)["model"].attrs["shape"]
    assert heading == [f"### {escaped}, mpi over auto: {'é' * 23} ({shape}, fp32), weak scaling, batch 8 per GPU"]


def test_compare_of_labels_with_commas_is_one_csv_table(files, tmp_path):
    """The issue's case: "NVIDIA H200 nvlink, overlap on" shifted the columns, and the
    `# not comparable` lines came before the header."""
    on = retitle(files / "a.h5", tmp_path / "on.h5", device="NVIDIA H200 nvlink", overlap="on")
    off = retitle(files / "a2.h5", tmp_path / "off.h5", device="NVIDIA H200 nvlink", overlap="off")
    p = report("--compare", "--format", "csv", on, off, files / "b.h5")
    assert p.returncode == 0, p.stderr
    rows = check_csv(p.stdout)
    assert {r["system"] for r in rows} == {"NVIDIA H200 nvlink, mpi over auto, overlap on",
                                           "NVIDIA H200 nvlink, mpi over auto, overlap off"}
    assert all(r["file"] in (str(on), str(off)) and int(r["gpus"]) in (1, 2) for r in rows)
    assert "not comparable" not in p.stdout and f"not comparable: {files / 'b.h5'}" in p.stderr


def test_compare_as_json_names_what_it_left_out(files):
    p = report("--compare", "--format", "json", "--price-per-gpu-hour=2", files / "a.h5", files / "a2.h5", files / "b.h5")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["reference"]["file"] == str(files / "a.h5")
    assert [r["gpus"] for r in doc["comparison"]] == [1, 1, 2, 2]
    assert doc["not_comparable"] == [{"system": doc["not_comparable"][0]["system"], "file": str(files / "b.h5"),
                                      "reason": "another batch (16 vs 8)"}]
    a2 = h5py.File(files / "a2.h5")["summary"][:][1]
    assert doc["comparison"][3]["samples_per_dollar"] == pytest.approx(a2["samples_per_s"] * 3600 / (2 * 2), rel=1e-9)


def test_comm_file_gives_busbw_by_size_in_nccl_tests_columns(mixed):
    p = report("--format", "csv", mixed / "comm.h5")
    assert p.returncode == 0, p.stderr
    rows = check_csv(p.stdout)
    assert list(rows[0])[:16] == ["file", "device", "host", "library", "path", "ranks", "nodes", "in_place", "size_bytes",
                                  "count", "type", "redop", "time_us", "algbw_gbps", "busbw_gbps", "wrong"]
    g = h5py.File(mixed / "comm.h5")["collectives/mpi/auto/n2"]
    assert len(rows) == len(g["size_bytes"]) == 2
    for r, size, t, algbw, busbw in zip(rows, g["size_bytes"], g["time_s"][:], g["algbw_GBps"], g["busbw_GBps"]):
        assert (r["library"], r["path"], r["ranks"], r["type"], r["redop"]) == ("mpi", "auto", "2", "float", "sum")
        assert float(r["size_bytes"]) == size and float(r["count"]) == size / 4
        assert float(r["time_us"]) == pytest.approx(1e6 * t.max(), rel=1e-9)  # the slowest rank
        assert float(r["algbw_gbps"]) == pytest.approx(algbw, rel=1e-9)
        assert float(r["busbw_gbps"]) == pytest.approx(busbw, rel=1e-9)
    md = check_markdown(report(mixed / "comm.h5").stdout)
    assert md[0][0] == ["size (B)", "count", "type", "redop", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong"]


def test_a_schema_1_comm_file_is_read_by_its_transport(mixed):
    doc = json.loads(report("--format", "json", mixed / "comm-schema1.h5").stdout)
    sweeps = {(r["library"], r["path"], r["ranks"]) for r in doc["busbw"]}
    assert sweeps == {("nccl", "nvlink", 2), ("nccl", "nvlink", 4)}
    n4 = h5py.File(SCHEMA1_COMM)["collectives/nvlink/n4"]
    assert [r["busbw_gbps"] for r in doc["busbw"] if r["ranks"] == 4] == pytest.approx(list(n4["busbw_gbps"]), rel=1e-9)


def test_topo_file_gives_the_link_matrix(mixed):
    rows = check_csv(report("--format", "csv", mixed / "topo.h5").stdout)
    link = h5py.File(mixed / "topo.h5")["system/topology/link"][:].astype(str)
    assert len(rows) == 64
    for r in rows:
        assert r["link"] == link[int(r["gpu"]), int(r["peer"])] and r["peer_unidir_gbps"] == ""  # no copies measured
    md = report(mixed / "topo.h5").stdout
    assert "| GPU0 | X | PIX | PXB | PXB | SYS | SYS | SYS | SYS |" in md and "Copy matrices: not measured" in md


def test_topo_file_gives_the_copy_matrices(mixed):
    t = h5py.File(TOPO_WITH_COPIES)["system/topology"]
    doc = json.loads(report("--format", "json", mixed / "topo-h200x2.h5").stdout)
    (topo,) = doc["topology"]
    assert topo["link"] == [["X", "NV18"], ["NV18", "X"]] and topo["gpus"][1]["pcie_gen"] == 5
    assert topo["gpus"][0]["numa_node"] is None  # -1 in the file: unknown
    for name in ("peer_unidir_gbps", "peer_bidir_gbps", "peer_host_gbps", "peer_latency_us"):
        m = topo["copies"][name]
        assert m[0][0] is None and m[1][1] is None  # a GPU is not copied to itself
        assert m[0][1] == pytest.approx(t[name][0, 1], rel=1e-9) and m[1][0] == pytest.approx(t[name][1, 0], rel=1e-9)
    tables = check_markdown(report(mixed / "topo-h200x2.h5").stdout)
    assert ["from", "to GPU0", "to GPU1"] in [tab[0] for tab in tables]
    assert ["GPU0", "-", f"{t['peer_unidir_gbps'][0, 1]:.1f}"] in [row for tab in tables for row in tab]


@needs_pandas
@pytest.mark.parametrize("table", ["run", "comm", "topo"])
def test_pandas_reads_each_csv_table_with_its_columns(mixed, table):
    p = report("--format", "csv", "--table", table, mixed)
    df = pd.read_csv(io.StringIO(p.stdout), keep_default_na=False)
    rows = check_csv(p.stdout)
    assert list(df.columns) == list(rows[0]) and len(df) == len(rows)
    assert df["file"].str.endswith(".h5").all()  # no shifted column: every file is a file
    if table == "run":
        assert (df.loc[df["file"].str.contains("quoted"), "device"] == HOSTILE).all()
        assert df["efficiency"].between(0, 2).all()
    elif table == "comm":
        assert (df.loc[df["file"].str.endswith("comm.h5"), "device"] == HOSTILE).all()
        assert (df["busbw_gbps"] > 0).all()
    else:
        assert set(df["link"]) >= {"X", "NV18", "PIX", "SYS"}


@needs_pandas
def test_pandas_reads_the_comparison_and_every_json_table(files, mixed, tmp_path):
    on = retitle(files / "a.h5", tmp_path / "on.h5", device="NVIDIA H200 nvlink", overlap="on")
    off = retitle(files / "a2.h5", tmp_path / "off.h5", device="NVIDIA H200 nvlink", overlap="off")
    df = pd.read_csv(io.StringIO(report("--compare", "--format", "csv", on, off).stdout))
    assert list(df["gpus"]) == [1, 1, 2, 2] and df["system"].str.startswith("NVIDIA H200 nvlink, mpi over auto").all()
    doc = json.loads(report("--format", "json", mixed).stdout)
    scaling, busbw = pd.DataFrame(doc["scaling"]), pd.DataFrame(doc["busbw"])
    assert set(scaling["device"]) >= {HOSTILE} and scaling["gpus"].dtype.kind == "i"
    assert busbw["size_bytes"].dtype.kind == "i" and (busbw["busbw_gbps"] > 0).all()


def test_bytes_that_are_not_utf8_come_out_as_replacement_characters(files, tmp_path):
    bad = tmp_path / "latin1.h5"
    shutil.copy(files / "a.h5", bad)
    with edit_h5(bad) as f:
        f["system"].attrs["device_name"] = np.bytes_(b"Caf\xe9 GPU")  # Latin-1, not UTF-8
    for fmt in ("markdown", "csv", "json"):
        p = subprocess.run([BINARY, "report", "--format", fmt, bad], capture_output=True, timeout=60)
        assert p.returncode == 0
        out = p.stdout.decode("utf-8")  # raises if the output is not UTF-8
        assert "Caf\ufffd GPU" in (json.loads(out)["scaling"][0]["device"] if fmt == "json" else out)


def test_unreadable_files_are_named_and_listed_beside_the_data(files, tmp_path):
    truncated = tmp_path / "truncated.h5"
    truncated.write_bytes((files / "a.h5").read_bytes()[:3000])
    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    missing = tmp_path / "missing.h5"
    p = report("--format", "json", files / "a.h5", missing, truncated, empty, TOPO_WITH_COPIES)
    assert p.returncode == 1
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 3, p.stderr
    assert f"{missing}: cannot open it: No such file or directory" in p.stderr
    assert f"{empty}: an empty file" in p.stderr
    doc = json.loads(p.stdout)  # the readable files are still reported, in valid JSON
    assert len(doc["scaling"]) == 2 and len(doc["topology"]) == 1
    assert [u.split(":")[0] for u in doc["unreadable"]] == [str(missing), str(truncated), str(empty)]
    csv_out = report("--format", "csv", missing, files / "a.h5")
    assert csv_out.returncode == 1 and len(check_csv(csv_out.stdout)) == 2


def test_help_says_what_the_exit_status_means():
    p = report("--help")
    assert p.returncode == 0
    assert "exit status: 0 every file was reported; 1 a file could not be read" in p.stdout
    assert "--table" in p.stdout and "busbw by size" in p.stdout


def test_a_plot_title_cannot_run_gnuplot_commands(files, tmp_path):
    """A device name that closes gnuplot's quote and starts a command on a new line."""
    evil = retitle(files / "a.h5", tmp_path / "evil.h5", device=f"x'\nsystem('touch {tmp_path}/pwned')\n#")
    p = report("--plot", tmp_path / "p.svg", evil)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "pwned").exists()
    assert b"<svg" in (tmp_path / "p.svg").read_bytes()[:400]

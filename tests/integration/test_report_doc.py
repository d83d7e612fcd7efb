"""dpscale report --doc OUT.md: the procurement document, on a folder
of small CPU run files made here: the same model over NVLink, through host memory with
overlap on and off (their /summary's library and path rewritten, as the CPU cannot
take NCCL's paths) and through MPI, another batch (another section), a comm file and a
projection. Its tables parse, with the systems as columns and the GPU counts as rows;
the labels tell every run apart and never say a bare pcie (host memory is "host memory
(P2P off)", also in files before schema 6 that call it pcie; peer-to-peer over PCIe is
"PCIe (P2P)"); projections keep to their own
tables; the figures exist with one ideal and one legend entry per line; the same
command runs twice; a missing or corrupt file is named while the rest is reported.
Also --plot's fixes, and the committed docs/procurement.md against results/."""
import re
import shutil
import subprocess

import h5py
import pytest

from conftest import BINARY, ROOT, dpscale, edit_h5, md_cells, run_tiny


def report(*args, cwd=None):
    return subprocess.run([BINARY, "report", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd)


def set_path(path, library, p, nccl_env=None):
    """Rewrite a run file's systems to another library and path (what a GPU run records)."""
    with edit_h5(path) as f:
        s = f["summary"][:]
        s["library"], s["path"] = library.encode(), p.encode()
        f["summary"][...] = s
        if nccl_env is not None:
            f["system"].attrs["nccl_env"] = nccl_env


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    d = tmp_path_factory.mktemp("doc")
    run_tiny(2, d, "--sweep=1,2", name="a-nvlink.h5")
    set_path(d / "a-nvlink.h5", "nccl", "nvlink", "NCCL_VERSION=2.28.3-1 NCCL_P2P_LEVEL=NVL")
    run_tiny(2, d, "--sweep=1,2", name="a-host.h5")
    set_path(d / "a-host.h5", "nccl", "host", "NCCL_VERSION=2.28.3-1 NCCL_P2P_DISABLE=1")
    run_tiny(2, d, "--sweep=1,2", "--comm.overlap=off", name="a-host-off.h5")
    set_path(d / "a-host-off.h5", "nccl", "host", "NCCL_VERSION=2.28.3-1 NCCL_P2P_DISABLE=1")
    run_tiny(2, d, "--sweep=1,2", name="a-mpi.h5")
    run_tiny(2, d, "--sweep=1,2", "--train.batch_per_gpu=16", name="b.h5")
    p = dpscale(2, "comm", "--backend=cpu", "--collective.min_mib=0.25", "--collective.max_mib=1", "--collective.iters=2",
                f"--run.output_dir={d}", "--run.output=comm.h5")
    assert p.returncode == 0, p.stderr
    p = subprocess.run([BINARY, "project", d / "a-mpi.h5", "--comm", d / "comm.h5", "--output", d / "projected.h5"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return d


@pytest.fixture(scope="module")
def doc(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "procurement.md"
    p = report("--doc", out, folder)
    assert p.returncode == 0, p.stderr
    return out, out.read_text()



def sections(text):
    """{heading: body} for every `## ` heading."""
    parts = re.split(r"^## (.*)$", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def tables(text):
    """(caption, rows of cells) of every Markdown table; the caption is the paragraph before it."""
    found, rows, caption, last = [], [], "", ""
    for line in text.split("\n") + [""]:
        if line.startswith("|"):
            if not rows:
                caption = last
            rows.append(md_cells(line))
            continue
        if rows:
            assert len(rows) >= 2 and all(set(c) <= set("-:") and c for c in rows[1]), rows[:2]
            assert all(len(r) == len(rows[0]) for r in rows), f"a row of another width than its header:\n{rows}"
            found.append((caption, [rows[0]] + rows[2:]))
            rows = []
        if line.strip():
            last = line
    return found


N = r"-?\d+(\.\d+)?(e[+-]\d+)?"
NUMBER = re.compile(f"^{N}$")
STEP = re.compile(f"^{N}( \\({N}–{N}\\))?$")  # median (p05–p95)


def gpu_tables(body):
    return [(c, t) for c, t in tables(body) if t[0][0] == "GPUs"]


def model_section(text, batch):
    (body,) = [b for h, b in sections(text).items() if h.startswith("mlp-tiny") and f"batch {batch} per GPU" in h]
    return body


def test_tables_have_the_systems_as_columns_and_the_gpu_counts_as_rows(doc, folder):
    _, text = doc
    body = model_section(text, 8)
    measured = [(c, t) for c, t in gpu_tables(body) if "PROJECTED" not in c]
    assert len(measured) >= 3, body  # per GPU, efficiency, step (the CPU records no energy)
    assert "not recorded in these files (no GPU energy counter)" in body
    labels = measured[0][1][0][1:]
    assert len(labels) == 4 and len(set(labels)) == 4, labels  # nvlink, host on, host off, mpi: one column each
    for caption, t in measured:
        assert t[0][1:] == labels, caption
        assert [int(r[0]) for r in t[1:]] == [1, 2], caption
        for r in t[1:]:
            for v in r[1:]:
                assert v == "-" or NUMBER.match(v) or ("Step" in caption and STEP.match(v)), (caption, v)
    (eff,) = [t for c, t in measured if "efficiency" in c]
    with h5py.File(folder / "a-host-off.h5") as f:
        want = f["summary"]["efficiency"][1]
    (col,) = [k for k, label in enumerate(labels, 1) if "overlap off" in label]
    assert float(eff[2][col]) == pytest.approx(want, abs=5e-4)


def test_labels_name_the_path_and_library_and_what_differs(doc):
    _, text = doc
    labels = gpu_tables(model_section(text, 8))[0][1][0][1:]
    assert any(l.startswith("NVLink, NCCL") for l in labels), labels
    host = [l for l in labels if l.startswith("host memory (P2P off), NCCL")]
    assert len(host) == 2 and {"overlap on" in l for l in host} == {True, False}, labels
    assert any("MPI" in l for l in labels), labels
    headers = [label for c, t in tables(text) for label in t[0][1:] if t[0][0] in ("GPUs", "size")]
    assert headers and not [h for h in headers if re.search("pcie", h, re.I)]  # "host memory (P2P off)"
    # NVLink beside host memory: the column after NVLink's is host memory with the same settings
    k = next(i for i, l in enumerate(labels) if l.startswith("NVLink"))
    assert labels[k + 1].startswith("host memory") and labels[k + 1].split(", ")[2:] == labels[k].split(", ")[2:], labels


def test_pcie_is_host_memory_before_schema_6_and_peer_to_peer_over_pcie_from_it(folder, tmp_path):
    """Files before schema 6 said pcie for the path through host memory (NCCL_P2P_DISABLE=1);
    from schema 6 pcie is NCCL's peer-to-peer over PCIe (NCCL_P2P_LEVEL=SYS)."""
    d = tmp_path / "schemas"
    d.mkdir()
    for name, schema, env in (("old.h5", 5, "NCCL_P2P_DISABLE=1"), ("new.h5", 6, "NCCL_P2P_LEVEL=SYS")):
        shutil.copy(folder / "a-mpi.h5", d / name)
        set_path(d / name, "nccl", "pcie", f"NCCL_VERSION=2.28.3-1 {env}")
        with edit_h5(d / name) as f:
            f.attrs["schema_version"] = schema
    out = tmp_path / "s.md"
    p = report("--doc", out, d)
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    labels = gpu_tables(model_section(text, 8))[0][1][0][1:]
    assert sorted(l.split(",")[0] for l in labels) == ["PCIe (P2P)", "host memory (P2P off)"], labels
    (legend,) = [t for c, t in tables(model_section(text, 8)) if t[0][0] == "column"]
    proofs = {row[1]: row[2] for row in legend[1:]}
    assert proofs[str(d / "old.h5")] == "comm.path = host (NCCL_P2P_DISABLE=1; pcie in schema 5)", proofs
    assert proofs[str(d / "new.h5")] == "comm.path = pcie (NCCL_P2P_LEVEL=SYS)", proofs
    (glance,) = [t for c, t in tables(sections(text)["At a glance"]) if t[0][0] == "model"]
    assert glance[0][2:] == ["PCIe (P2P)", "host memory (P2P off)"], glance[0]


def test_projections_have_their_own_tables(doc):
    _, text = doc
    body = model_section(text, 8)
    for caption, t in gpu_tables(body):
        projected = ["PROJECTED" in label for label in t[0][1:]]
        assert all(projected) or not any(projected), (caption, t[0])
        assert all(projected) == ("PROJECTED" in caption), (caption, t[0])
    assert any("PROJECTED" in c for c, _ in gpu_tables(body))


def test_every_model_has_its_figure_with_one_ideal_and_one_legend_entry_per_line(doc):
    out, text = doc
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(figures) == 2, figures  # batch 8 and batch 16
    for link in figures:
        svg = (out.parent / link).read_text()
        assert svg.count("<text>ideal</text>") == 1, link
    body = model_section(text, 8)
    svg = (out.parent / re.search(r"!\[[^\]]*\]\(([^)]+)\)", body).group(1)).read_text()
    for label in gpu_tables(body)[0][1][0][1:]:
        assert svg.count(f"<text>{label}</text>") == 1, label


def test_the_same_command_runs_twice(folder, tmp_path):
    out = tmp_path / "twice.md"
    first = report("--doc", out, folder)
    text = out.read_text()
    second = report("--doc", out, folder)
    assert first.returncode == second.returncode == 0, second.stderr
    assert "replacing" in second.stderr
    assert out.read_text() == text
    assert not list(tmp_path.glob("*.tmp-*")) and not list((tmp_path / "twice-figs").glob("*.tmp-*"))


def test_busbw_of_comm_files_side_by_side(doc, folder):
    _, text = doc
    (body,) = [b for h, b in sections(text).items() if h.startswith("Allreduce bus bandwidth")]
    (t,) = [t for c, t in tables(body) if t[0][0] == "size"]
    with h5py.File(folder / "comm.h5") as f:
        (sweep,) = [g for g in f["collectives"].values() for g in g.values() for g in g.values()]
        busbw = sweep["busbw_GBps" if "busbw_GBps" in sweep else "busbw_gbps"][:]  # schema 5 renamed it
        sizes = sweep["size_bytes"][:]
    assert [r[0] for r in t[1:]] == [f"{int(s) // 1024} KiB" if s < 2**20 else f"{int(s) // 2**20} MiB" for s in sizes]
    assert [float(r[1]) for r in t[1:]] == pytest.approx(list(busbw), abs=0.06)


def test_provenance_shows_what_each_file_holds(folder, tmp_path):
    """Attributes read generically: a /provenance group's new fields show up, an old
    file without a command line is still reported."""
    d = tmp_path / "prov"
    d.mkdir()
    shutil.copy(folder / "a-mpi.h5", d / "new.h5")
    shutil.copy(folder / "a-host.h5", d / "old.h5")
    with edit_h5(d / "new.h5") as f:
        g = f.create_group("provenance")
        g.attrs["cuda_driver"] = "580.159.04"
        g.create_group("rank0").attrs["gpu_uuids"] = ["GPU-1", "GPU-2"]
    with edit_h5(d / "old.h5") as f:
        del f.attrs["command_line"], f["system"].attrs["mpi_library"]
    p = report("--doc", tmp_path / "p.md", d)
    assert p.returncode == 0, p.stderr
    (body,) = [b for h, b in sections((tmp_path / "p.md").read_text()).items() if h.startswith("Appendix")]
    new, old = body.split("### new.h5")[1], body.split("### old.h5")[1].split("### new.h5")[0]
    assert "| provenance/cuda_driver | 580.159.04 |" in new
    assert "| provenance/rank0/gpu_uuids | GPU-1, GPU-2 |" in new
    assert "| command_line |" in new and "| command_line |" not in old
    assert "| system/nccl_env | NCCL_VERSION=2.28.3-1 NCCL_P2P_DISABLE=1 |" in old


def test_a_missing_or_corrupt_file_is_named_and_the_rest_reported(folder, tmp_path):
    corrupt = tmp_path / "corrupt.h5"
    corrupt.write_bytes((folder / "a-mpi.h5").read_bytes()[:2000])
    out = tmp_path / "bad.md"
    p = report("--doc", out, folder / "a-nvlink.h5", tmp_path / "missing.h5", corrupt, folder / "a-host.h5")
    assert p.returncode == 1
    assert "missing.h5: cannot open it" in p.stderr and "corrupt.h5:" in p.stderr
    text = out.read_text()
    (bad,) = [b for h, b in sections(text).items() if h.startswith("Files that could not be read")]
    assert "missing.h5" in bad and "corrupt.h5" in bad
    labels = gpu_tables(model_section(text, 8))[0][1][0][1:]
    assert [l.split(",")[0] for l in labels] == ["NVLink", "host memory (P2P off)"]


def test_doc_takes_no_table_options(folder, tmp_path):
    p = report("--doc", tmp_path / "x.md", "--format", "csv", folder)
    assert p.returncode == 2 and "--doc" in p.stderr
    assert not (tmp_path / "x.md").exists()


# --- --plot: the ideal, the legend, a second run ---

def test_plot_runs_twice_with_one_legend_entry_per_line(folder, tmp_path):
    out = tmp_path / "plot.svg"
    files = [folder / n for n in ("a-nvlink.h5", "a-host.h5", "a-host-off.h5")]
    first = report("--plot", out, *files)
    second = report("--plot", out, *files)
    assert first.returncode == second.returncode == 0, second.stderr
    svg = out.read_text()
    assert svg.count("<text>ideal</text>") == 1
    texts = re.findall(r"<text>([^<]*NCCL[^<]*)</text>", svg)
    assert len(texts) == 3 and len(set(texts)) == 3, texts  # once each, and told apart


# --- the committed document ---

@pytest.mark.skipif(not (ROOT / "docs/procurement.md").exists(), reason="docs/procurement.md is not committed")
def test_the_committed_document_is_what_the_committed_results_give(tmp_path):
    """docs/procurement.md comes from `dpscale report --doc docs/procurement.md results/`;
    rerun it (into a temporary folder) when results/ or the report changes."""
    out = tmp_path / "procurement.md"
    p = report("--doc", out, "results/", cwd=ROOT)
    assert p.returncode == 0, p.stderr
    made = out.read_text().replace(str(out), "docs/procurement.md")
    assert made == (ROOT / "docs/procurement.md").read_text(), "regenerate: bin/dpscale report --doc docs/procurement.md results/"
    for model in sections(made):
        if not model.startswith("mlp-"):
            continue
        labels = gpu_tables(sections(made)[model])[0][1][0][1:]
        paths = [l.split(",")[0] for l in labels]
        assert any(p.startswith("NVLink") for p in paths) and "host memory (P2P off)" in paths, (model, labels)


def test_per_watt_and_per_dollar_with_the_prices_given(folder, tmp_path):
    """Energy as a GPU run records it (NVML), and one price per file: the price is in the
    legend, per dollar = samples/s x 3600 / (price x GPUs)."""
    d = tmp_path / "priced"
    d.mkdir()
    for name in ("a-nvlink.h5", "a-host.h5"):
        shutil.copy(folder / name, d / name)
        with edit_h5(d / name) as f:
            s = f["summary"][:]
            s["avg_power_w"], s["joules_per_sample"] = 500.0, 0.002
            f["summary"][...] = s
    p = report("--doc", tmp_path / "priced.md", "--price-per-gpu-hour", "2,3", d / "a-nvlink.h5", d / "a-host.h5")
    assert p.returncode == 0, p.stderr
    body = model_section((tmp_path / "priced.md").read_text(), 8)
    (legend,) = [t for c, t in tables(body) if t[0][0] == "column"]
    assert [r[-1] for r in legend[1:]] == ["2", "3"]
    found = {c.split("**")[1]: t for c, t in gpu_tables(body)}
    assert [r[1:] for r in found["Average power per GPU, W"][1:]] == [["500", "500"]] * 2
    assert float(found["samples/s per watt"][1][1]) == pytest.approx(500)
    with h5py.File(d / "a-host.h5") as f:
        rate = f["summary"]["samples_per_s"][1]
    assert float(found["samples per dollar"][2][2]) == pytest.approx(rate * 3600 / (3 * 2), rel=1e-3)

"""`dpscale project` on committed files measured on 2 x H200: the 2-GPU efficiency
projected from each file's 1-GPU run and the machine's own allreduce curves, against
the efficiency the file measured (within 0.03); the catalog target;
bad input. Reads files only: no GPU and no MPI launch needed."""
import os
import re
import subprocess

import pytest

from conftest import BINARY, ROOT

RESULTS = ROOT / "results"
NVLINK, PCIE = RESULTS / "h200x2-comm-nvlink.h5", RESULTS / "h200x2-comm-p2p-disabled.h5"


def project(*args):
    return subprocess.run([str(BINARY), "project", *map(str, args)], capture_output=True, text=True, timeout=60)


def row(out, gpus, fields=slice(4, 7)):
    """(projected, measured, error) of the GPU count's row (fields: other columns)."""
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == str(gpus) and len(f) == 7:
            return tuple(float(x) if x != "-" else None for x in f[fields])
    raise AssertionError(out)


@pytest.mark.parametrize("name,comm", [
    ("h200x2-transformers/B-bert-large-nvlink-g16.h5", NVLINK),
    ("h200x2-transformers/G-gpt2-small-pcie-g16.h5", PCIE),
    ("h200x2-comm-bound-pcie.h5", PCIE),
    ("h200x2-comm-bound-pcie-overlap-off.h5", PCIE),
    ("h200x2-gemm-heavy-nvlink.h5", NVLINK),
])
def test_projection_of_a_measured_run_is_within_the_bar(name, comm):
    p = project(RESULTS / name, "--comm", comm)
    assert p.returncode == 0, p.stderr
    projected, measured, error = row(p.stdout, 2)
    assert error == pytest.approx(projected - measured, abs=2e-3)
    assert abs(error) <= 0.03, p.stdout


def test_without_the_measured_interference_the_projection_is_more_optimistic():
    base = RESULTS / "h200x2-transformers/B-bert-large-nvlink.h5"
    with_terms, without = project(base, "--comm", NVLINK), project(base, "--comm", NVLINK, "--no-interference")
    assert "measured by the file's 2-GPU run" in with_terms.stdout
    assert "left out (--no-interference)" in without.stdout
    assert row(without.stdout, 2)[0] > row(with_terms.stdout, 2)[0]


CHECKS = RESULTS / "h200x2-projection-checks"


@pytest.mark.parametrize("name,path", [
    ("h200x2-transformers/call7/B-bert-large-nvlink-g16.h5", "nvlink"),
    ("h200x2-transformers/call7/G-gpt2-small-pcie-g16.h5", "pcie"),
    ("h200x2-projection-checks/bert-large-pcie.h5", "pcie"),
])
def test_interference_calibrated_on_another_model_predicts_within_the_bar(name, path):
    """One MLP run calibrates the transport's interference; a transformer is predicted."""
    cal = CHECKS / f"comm-bound-{path}-on.h5"
    p = project(RESULTS / name, "--comm", CHECKS / f"comm-{path}.h5", "--interference-from", cal)
    assert p.returncode == 0, p.stderr
    assert f"measured by {cal}'s 2-GPU run" in p.stdout
    assert "x the share of backward with communication beside it" in p.stdout
    projected, measured, error = row(p.stdout, 2)
    assert abs(error) <= 0.03, p.stdout
    own = project(RESULTS / name, "--comm", CHECKS / f"comm-{path}.h5")
    assert row(own.stdout, 2, slice(1, 2)) != row(p.stdout, 2, slice(1, 2))  # the calibration changed the step


def test_interference_from_a_file_without_a_multi_gpu_run_is_refused(tmp_path):
    one = project(RESULTS / "h200x2-transformers/call7/B-bert-large-nvlink-g16.h5", "--comm", CHECKS / "comm-nvlink.h5",
                  "--interference-from", CHECKS / "comm-nvlink.h5")
    assert one.returncode == 2
    assert one.stderr.count("\n") == 1 and "--interference-from" in one.stderr, one.stderr


def test_a_catalog_system_scales_the_compute_and_names_its_sources():
    p = project(RESULTS / "h200x2-transformers/B-bert-large-nvlink-g16.h5", "--system", ROOT / "configs/systems/a100-sxm-8.ini")
    assert p.returncode == 0, p.stderr
    assert re.search(r"SCALED by peak TFLOP/s, NVIDIA H200 989\.4 -> NVIDIA A100-SXM4-80GB 312\.0", p.stdout), p.stdout
    projected, measured, _ = row(p.stdout, 8)
    assert 0 < projected <= 1 and measured is None
    assert "8 GPUs (1 node): " in p.stdout  # the curve's source
    # a run made on the entry's own GPU is taken as measured, not scaled
    same = project(RESULTS / "h200x2-transformers/B-bert-large-nvlink-g16.h5", "--system", ROOT / "configs/systems/h200-sxm-8.ini")
    assert same.returncode == 0 and "the compute as measured" in same.stdout and "SCALED" not in same.stdout, same.stdout


@pytest.mark.parametrize("args,says", [
    ((), "needs a result file and one target"),
    (("--comm", NVLINK, "--system", ROOT / "configs/systems/a100-sxm-8.ini"), "needs a result file and one target"),
    (("--comm", NVLINK, "--bogus"), "unknown argument"),
])
def test_bad_arguments_are_refused_in_one_line(args, says):
    p = project(RESULTS / "h200x2-transformers/G-gpt2-small-nvlink.h5", *args) if args else project()
    assert p.returncode == 2 and says in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_files_of_the_wrong_kind_are_named(tmp_path):
    p = project(NVLINK, "--comm", NVLINK)  # a comm file has no runs
    assert p.returncode == 2 and "no 1-GPU run" in p.stderr, p.stderr
    bad = tmp_path / "bad.ini"
    bad.write_text("[system]\ngpu = X\n[curve.n8]\ngpus = 8\nsizes_mib = 1, 4\nbusbw_gbps = 10\n")
    p = project(RESULTS / "h200x2-transformers/G-gpt2-small-nvlink.h5", "--system", bad)
    assert p.returncode == 2 and str(bad) in p.stderr and "as many busbw_gbps as sizes_mib" in p.stderr, p.stderr
    p = project(tmp_path / "none.h5", "--comm", NVLINK)
    assert p.returncode == 2 and f"cannot open result file {tmp_path / 'none.h5'}: No such file" in p.stderr, p.stderr


def test_a_projection_file_is_its_own_and_the_report_says_projected(tmp_path):
    import h5py
    out = tmp_path / "proj.h5"
    src = RESULTS / "h200x2-transformers/B-bert-large-nvlink.h5"
    p = project(src, "--system", ROOT / "configs/systems/ib400-nodes.ini", "--output", out)
    assert p.returncode == 0 and f"wrote {out}" in p.stdout, p.stderr
    with h5py.File(out, "r") as f:
        assert "runs" not in f and "projection" in f  # no measured run beside the projected rows
        assert f["projection"].attrs["source"] == str(src)
        rows = f["summary"][:]
        assert [int(r["nranks"]) for r in rows] == [1, 8, 16, 32]
        assert all(r["library"] == b"proj" for r in rows)
        assert rows[0]["efficiency"] == 1.0 and 0 < rows[-1]["efficiency"] < 1
        assert len(f["projection/curve_source"][:]) == 4
    r = subprocess.run([str(BINARY), "report", str(out)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("### PROJECTED, not measured: NVIDIA H200's step onto"), r.stdout
    assert "Projected by `dpscale project`" in r.stdout
    # an existing file is never overwritten
    again = project(src, "--system", ROOT / "configs/systems/ib400-nodes.ini", "--output", out)
    assert again.returncode == 2 and "already exists" in again.stderr and again.stderr.count("\n") == 1, again.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["proj.h5"]  # nothing else left behind


# Across GPU counts: the 4-GPU files (schema 1: runs/<path>/n<N>, no library level, no
# compute-only backward) projected onto the 4-GPU machine's own allreduce curves.
X4 = {"nvlink": RESULTS / "h200x4-comm-nvlink.h5", "host": RESULTS / "h200x4-comm-pcie.h5"}


@pytest.mark.parametrize("name,path", [
    ("h200x4-mlp-gemm-heavy-overlap-on-nvlink.h5", "nvlink"),
    ("h200x4-mlp-comm-bound-overlap-on-pcie.h5", "host"),
    ("h200x4-mlp-gemm-heavy-overlap-off-pcie.h5", "host"),
])
def test_the_4_gpu_step_is_predicted_from_the_2_gpu_run_within_the_bar(name, path):
    p = project(RESULTS / name, "--comm", X4[path], "--interference-gpus", "2")
    assert p.returncode == 0, p.stderr
    assert "measured by the file's 2-GPU run; schema 1:" in p.stdout, p.stdout
    projected, measured, error = row(p.stdout, 4)
    assert measured is not None and abs(error) <= 0.03, p.stdout
    # the 2-GPU run's terms are not the 4-GPU run's: the figure differs from the default's
    assert row(project(RESULTS / name, "--comm", X4[path]).stdout, 4)[0] != projected


def test_interference_gpus_takes_the_other_files_run_of_that_count():
    f, other = RESULTS / "h200x4-mlp-gemm-heavy-overlap-on-nvlink.h5", RESULTS / "h200x4-mlp-comm-bound-overlap-on-nvlink.h5"
    p = project(f, "--comm", X4["nvlink"], "--interference-from", other, "--interference-gpus", "2")
    assert p.returncode == 0, p.stderr
    assert f"measured by {other}'s 2-GPU run" in p.stdout, p.stdout


@pytest.mark.parametrize("args,message", [
    (["--interference-gpus", "3"], "has no 3-GPU run"),
    (["--interference-gpus", "1"], "is not a GPU count of 2 or more"),
    (["--interference-gpus=two"], "is not a GPU count of 2 or more"),
    (["--interference-from", RESULTS / "h200x4-mlp-comm-bound-overlap-on-nvlink.h5", "--interference-gpus", "8"],
     "has no 8-GPU run"),
])
def test_interference_gpus_that_the_file_did_not_run_is_refused(args, message):
    p = project(RESULTS / "h200x4-mlp-gemm-heavy-overlap-on-nvlink.h5", "--comm", X4["nvlink"], *args)
    assert p.returncode == 2, p.stdout
    assert message in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_a_calibration_of_other_communication_settings_is_named():
    """BERT-Large through host memory with the copies on the copy engines and bf16
    gradients, calibrated on an MLP run with SM copies and fp32 gradients: said so."""
    base = RESULTS / "h200x2-transformers/call7/B-bert-large-pcie-g16.h5"
    p = project(base, "--comm", CHECKS / "comm-pcie.h5", "--interference-from", CHECKS / "comm-bound-pcie-on.h5")
    assert p.returncode == 0, p.stderr
    note = [line for line in p.stdout.splitlines() if "NOTE: the calibration" in line and
            "ran with other communication settings" in line]
    assert len(note) == 1, p.stdout
    assert "comm.shm_copy ce here, sm there" in note[0] and "comm.allreduce_dtype compute here, fp32 there" in note[0]
    same = project(RESULTS / "h200x2-transformers/call7/B-bert-large-nvlink.h5", "--comm", CHECKS / "comm-nvlink.h5",
                   "--interference-from", CHECKS / "comm-bound-nvlink-on.h5")
    assert same.returncode == 0 and "NOTE" not in same.stdout, same.stdout


S7 = CHECKS / "session7"


def test_overlap_off_puts_the_whole_update_after_the_allreduce():
    """BERT-Large over NVLink with overlap off: the 1-GPU run left 0.23 ms of
    update after backward; at 2 GPUs the whole update (2.41 ms measured) follows the
    allreduce. The projection sizes it from the last stage's rate and lands in the bar."""
    p = project(S7 / "callB/bert-large-nvlink-off.h5", "--comm", S7 / "callB/comm-nvlink.h5")
    assert p.returncode == 0, p.stderr
    line = [l for l in p.stdout.splitlines() if "update after communication" in l]
    assert len(line) == 1 and "the whole update (overlap off), 334092288 elements" in line[0], p.stdout
    update_ms = float(line[0].split("communication ")[1].split(" ms")[0])
    assert 2.3 < update_ms < 2.6, line  # 2.41 ms measured by the 2-GPU run
    projected, measured, error = row(p.stdout, 2)
    assert abs(error) <= 0.03, p.stdout
    # a last stage too small to give a rate (the ResNet's stem: a launch) leaves the update as measured
    r = project(S7 / "callB/resnet50-nvlink-off.h5", "--comm", S7 / "callB/comm-nvlink.h5")
    assert "as at 1 GPU (the last stage's update, 9536 elements" in r.stdout, r.stdout


def test_the_curve_and_the_runs_own_allreduce_alone_are_set_side_by_side():
    p = project(S7 / "callA/comm-bound-net-on.h5", "--comm", S7 / "callA/comm-net.h5")
    line = [l for l in p.stdout.splitlines() if l.startswith("  the allreduces alone at 2 GPUs")]
    assert len(line) == 1, p.stdout
    ratio = float(line[0].rsplit("x ", 1)[1].rstrip(")"))
    assert 1.1 < ratio < 1.25  # the socket transport's sweep ran slower than the run's own allreduces


@pytest.mark.parametrize("name", ["bert-large-nvlink-on", "gpt2-small-host-on", "resnet50-nvlink-off"])
def test_the_other_models_of_the_transport_calibrate_this_one(name):
    """Leave one out: the median of the other presets' terms, same path and overlap."""
    path, overlap = name.split("-")[-2:]
    others = [f for f in sorted(S7.glob(f"call[AB]/*-{path}-{overlap}.h5")) if f.stem != name]
    assert len(others) == 4
    d = "callB"
    args = [a for f in others for a in ("--interference-from", f)]
    p = project(S7 / d / f"{name}.h5", "--comm", S7 / d / f"comm-{path}.h5", *args)
    assert p.returncode == 0, p.stderr
    assert "the median over the multi-GPU runs of 4 --interference-from files" in p.stdout, p.stdout
    assert abs(row(p.stdout, 2)[2]) <= 0.03, p.stdout


def test_more_calibrations_than_the_limit_are_refused():
    f = S7 / "callA/comm-bound-nvlink-on.h5"
    p = project(S7 / "callB/bert-large-nvlink-on.h5", "--comm", S7 / "callB/comm-nvlink.h5",
                *[a for _ in range(9) for a in ("--interference-from", f)])
    assert p.returncode == 2 and "more than 8 --interference-from files" in p.stderr and p.stderr.count("\n") == 1


def test_the_issues_command_prints_2_to_8_gpus_with_their_sources():
    """`dpscale project --system configs/systems/a100-sxm-8.ini results/h200x2-bert-large.h5`,
    as the validation table writes it: a row per GPU count of the node, each with the source of its
    curve (measured or DERIVED), the compute SCALED, and no H200 measurement set beside an
    A100 projection."""
    p = project("--system", ROOT / "configs/systems/a100-sxm-8.ini", RESULTS / "h200x2-bert-large.h5")
    assert p.returncode == 0, p.stderr
    rows = {int(l.split()[0]): l.split() for l in p.stdout.splitlines() if l.split() and l.split()[0] in ("2", "4", "8")
            and len(l.split()) == 7}
    assert sorted(rows) == [2, 4, 8], p.stdout
    assert all(r[5] == "-" and r[6] == "-" for r in rows.values()), p.stdout
    assert "the compute SCALED by peak TFLOP/s" in p.stdout and "the allreduces alone" not in p.stdout
    assert "forward as at 1 GPU (its change was measured on another GPU)" in p.stdout
    sources = [l for l in p.stdout.splitlines() if l.startswith("  ") and "GPUs (1 node):" in l]
    assert len(sources) == 3 and sum("DERIVED" in l for l in sources) == 2 and "Hetu-Galvatron" in sources[2]


# the README's answer table names each preset's row by its model, the tools' tables by its file
ANSWER_ROWS = {"bert-large": "BERT-Large", "gpt2-small": "GPT-2 small", "resnet50": "ResNet-50",
               "gemm-heavy": "MLP 8 × 8192", "comm-bound": "MLP 8 × 4096"}


def cells(row):
    return [c.strip() for c in row.strip().strip("|").split("|")]


def answer_row(model):
    """The cells of the README answer table's row of MODEL (a key of ANSWER_ROWS)."""
    rows = [l for l in (ROOT / "README.md").read_text().splitlines() if l.startswith(f"| {ANSWER_ROWS[model]} ")]
    assert len(rows) == 1, f"README's answer table has no single row for {ANSWER_ROWS[model]}"
    return cells(rows[0])


def test_the_validation_table_is_what_the_tool_prints_from_the_committed_files():
    """docs/PROJECTION.md's table of every preset over every transport is
    tools/project_validate_presets.sh's output on results/h200x2-projection-checks/session7, row for row,
    with its tally; the README's measured columns are its measured NVLink and host-memory runs."""
    out = subprocess.run([str(ROOT / "tools/project_validate_presets.sh")], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env={**os.environ, "DPSCALE": str(BINARY)})
    assert out.returncode == 0, out.stderr
    page = (ROOT / "docs/PROJECTION.md").read_text().split("<!-- tools/project_validate_presets.sh -->\n", 1)[1]
    printed = [l for l in out.stdout.splitlines() if l]
    assert page.splitlines()[:len(printed) + 1] == out.stdout.splitlines()[:len(printed) + 1], out.stdout
    assert "own run's terms 24 / 25" in printed[-1] and "other models 20 / 24" in printed[-1]
    measured = {cells(l)[0]: cells(l)[3] for l in printed if l.startswith("| ") and not l.startswith("| run ")}
    for model in ANSWER_ROWS:
        assert answer_row(model)[2:4] == [measured[f"{model}-nvlink-on"], measured[f"{model}-host-on"]], model


def test_zero1_runs_take_no_forward_change():
    """ZeRO-1's next forward waits for the weights' all-gathers: not a forward change of the
    model's, so not measured as one (found in review)."""
    p = project(RESULTS / "h200x2-mlp-step-vs-ddp/B-shard-on.h5", "--comm", RESULTS / "h200x2-comm-nvlink.h5")
    assert p.returncode == 0, p.stderr
    assert "forward as at 1 GPU (not measured: ZeRO-1)" in p.stdout, p.stdout
    assert "the allreduces alone" not in p.stdout  # a reduce-scatter and all-gathers are no allreduce


def test_the_systems_table_is_what_the_tool_prints_from_the_committed_files():
    """The articles' question as docs/PROJECTION.md answers it: tools/project_systems.sh on its
    default files; the README's answer table holds the same figures, by model and system."""
    out = subprocess.run([str(ROOT / "tools/project_systems.sh")], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, env={**os.environ, "DPSCALE": str(BINARY)})
    assert out.returncode == 0 and out.stdout.count("\n") == 7, out.stdout + out.stderr
    assert out.stdout.strip() in (ROOT / "docs/PROJECTION.md").read_text()
    for row in out.stdout.splitlines()[2:]:
        projected = [c.split(" (")[0] for c in cells(row)[1:]]
        model = next(m for m in ANSWER_ROWS if m in cells(row)[0])
        assert answer_row(model)[-len(projected):] == projected, row

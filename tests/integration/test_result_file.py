"""The HDF5 result file holds what docs/schema.md's schema (version 5) says, and its
summary figures can be recomputed from its own timing datasets. Runs live in
/runs/<library>/<path>/n<N>; the 1-rank run communicates nothing. Provenance, units
and types: test_provenance.py."""
import h5py
import numpy as np
import pytest

from conftest import run_tiny

PHASES = ["forward_s", "backward_s", "comm_exposed_s", "update_s", "step_s"]


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("res")
    f, p = run_tiny(2, out, "--sweep=1,2", "--train.iters=6", "--train.warmup=2")
    return f, p


def test_root_system_and_config_are_self_describing(result):
    f, _ = result
    assert f.attrs["schema_version"] == 6
    assert f.attrs["writer"] == "dpscale"
    for key in ["dpscale_version", "created_utc", "command_line", "job_id"]:
        assert key in f.attrs
    assert "run --config" in f.attrs["command_line"]
    s = f["system"]
    assert s.attrs["backend"] == "cpu" and s.attrs["world_size"] == 2
    assert s.attrs["library"] == "mpi" and s.attrs["path"] == "auto" and "transport" not in s.attrs
    assert s["hosts"].shape == (2,)
    c = f["config"]
    assert c.attrs["model.layers"] == 3 and c.attrs["train.iters"] == 6
    assert c.attrs["run.sweep"] == "1,2" and c.attrs["model.activation"] == "gelu"


def test_model_group_holds_the_tensor_table_in_backward_order(result):
    """/model: what the rest of dpscale knows of the model, and nothing about the MLP's
    own shape: its type, parameters, FLOPs per sample, unit and the tensor table."""
    f, _ = result
    m = f["model"]
    assert m.attrs["type"] == "mlp" and m.attrs["unit"] == "samples" and m.attrs["stages"] == 3
    t = m["tensors"][:]
    assert t["name"][0].decode() == "layer2.bias" and t["name"][-1].decode() == "layer0.weight"
    assert (t["offset"][1:] == t["offset"][:-1] + t["count"][:-1]).all(), "contiguous, in arena order"
    assert (t["stage"][1:] <= t["stage"][:-1]).all(), "backward order"
    assert (t["count"] == t["rows"] * t["cols"]).all()
    assert int(t["count"].sum()) == m.attrs["parameters"] == f["runs/mpi/auto/n1"].attrs["parameters"]
    flops = f["runs/mpi/auto/n1"].attrs["gemm_flops_per_step"] / f["runs/mpi/auto/n1"].attrs["global_batch"]
    assert abs(m.attrs["gemm_flops_per_sample"] - flops) <= 1e-9 * flops


def test_every_run_has_iteration_by_rank_datasets(result):
    f, _ = result
    assert list(f["runs"].keys()) == ["mpi"] and list(f["runs/mpi"].keys()) == ["auto"]
    for n in (1, 2):
        g = f[f"runs/mpi/auto/n{n}"]
        assert g.attrs["nranks"] == n and g.attrs["timed_steps"] == 6
        assert g.attrs["library"] == "mpi" and g.attrs["path"] == "auto" and "transport" not in g.attrs
        assert g.attrs["communicates"] == (n > 1)
        for key, value in [("overlap_update", "on"), ("shard_optimizer", "off"), ("register", "off"),
                           ("symmetric", "off"), ("cta_policy", "default"), ("gemm_sm_margin", 0)]:
            assert g.attrs[key] == value, key
        for name in PHASES + ["compute_only_s", "compute_only_backward_s"]:
            d = g[name]
            assert d.shape == (6, n), (name, d.shape)
            assert d.attrs["units"] == "s"
            assert np.all(d[:] >= 0)
        assert g["loss"].shape == (8,)
        # the phases add up to the step on every rank and iteration
        parts = sum(g[p][:] for p in PHASES[:-1])
        assert np.allclose(parts, g["step_s"][:], rtol=1e-6, atol=1e-9)


def test_the_one_rank_run_communicates_nothing(result):
    f, _ = result
    g = f["runs/mpi/auto/n1"]
    assert g.attrs["communicates"] == 0
    assert g.attrs["allreduce_bytes"] == 0 and g.attrs["allreduce_dtype"] == "none"
    alone = g["allreduce_alone_s"][:]
    assert alone.shape == (1, 1) and np.all(alone == 0)  # one row of zeros: no collective was run
    assert np.all(g["comm_exposed_s"][:] < 1e-6)
    s = f["summary"][:]
    one = s[s["nranks"] == 1][0]
    assert one["allreduce_alone_s"] == 0 and np.isnan(one["allreduce_busbw_GBps"])
    assert one["comm_exposed_median_s"] < 1e-6
    for loss in ("loss_compute", "loss_imbalance", "loss_interference", "loss_comm"):
        assert one[loss] == pytest.approx(0, abs=1e-12), loss
    two = f["runs/mpi/auto/n2"]
    assert two.attrs["communicates"] == 1 and two.attrs["allreduce_bytes"] > 0
    assert two.attrs["allreduce_dtype"] == "fp32"


def test_summary_efficiency_agrees_with_the_timing_datasets(result):
    f, _ = result
    summary = f["summary"][:]
    assert list(summary["nranks"]) == [1, 2]
    names = summary.dtype.names
    assert "transport" not in names and names[:2] == ("library", "path")
    for text in ("library", "path"):  # UTF-8 strings of any length
        info = h5py.check_string_dtype(f["summary"].dtype[text])
        assert info.encoding == "utf-8" and info.length is None, (text, info)
    assert list(summary["library"]) == [b"mpi", b"mpi"] and list(summary["path"]) == [b"auto", b"auto"]
    for col in ("compute_only_backward_s", "loss_interference"):
        assert col in names
    thr = {}
    for row in summary:
        n = int(row["nranks"])
        step = f[f"runs/mpi/auto/n{n}/step_s"][:]
        median_of_slowest = np.median(step.max(axis=1))
        assert row["step_median_s"] == pytest.approx(median_of_slowest, rel=1e-12)
        assert row["step_p95_s"] == pytest.approx(np.percentile(step.max(axis=1), 95), rel=1e-12)
        thr[n] = row["global_batch"] / median_of_slowest
        assert row["samples_per_s"] == pytest.approx(thr[n], rel=1e-12)
    for row in summary:
        n = int(row["nranks"])
        assert row["efficiency"] == pytest.approx(thr[n] / (n * thr[1]), rel=1e-12)
        assert f[f"runs/mpi/auto/n{n}"].attrs["efficiency"] == pytest.approx(row["efficiency"], rel=1e-12)


def test_stdout_table_shows_the_same_numbers(result):
    f, p = result
    assert "comm/path" in p.stdout
    rows = [line.split() for line in p.stdout.splitlines() if line.startswith("mpi/auto ")]
    assert len(rows) == 4  # the scaling table, then where the time went
    # three decimals printed: within half a unit of the file's value, plus a hair for a value
    # that sits on the rounding boundary (0.0335 in the file, printed 0.034 from its own double)
    half = 5e-4 + 1e-9
    for row, where, s in zip(rows[:2], rows[2:], f["summary"][:]):
        assert float(row[4]) == pytest.approx(1e3 * s["step_median_s"], abs=half)
        assert float(row[9]) == pytest.approx(s["efficiency"], abs=half)
        assert float(where[4]) == pytest.approx(1e3 * s["comm_exposed_median_s"], abs=half)
        assert float(where[6]) == pytest.approx(1e3 * s["compute_only_s"], abs=half)

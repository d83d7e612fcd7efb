"""Overlap of the gradient allreduce with backward on the CPU backend (MPI), and
the decomposition of the step that every run records (compute, imbalance,
interference, comm: they add up to 1 - efficiency; all zero on one rank)."""
import numpy as np
import pytest

from conftest import run_tiny

# wide enough that the gradient arena makes several 0.02 MB buckets
WIDE = ["--model.hidden_dim=96", "--model.layers=4", "--comm.bucket_mb=0.02", "--comm.first_bucket_mb=0.005"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("ov")
    on, _ = run_tiny(2, out, *WIDE, "--comm.overlap=on", "--train.iters=6", name="on.h5")
    off, _ = run_tiny(2, out, *WIDE, "--comm.overlap=off", "--train.iters=6", name="off.h5")
    return on, off


def test_overlap_cuts_the_arena_into_buckets_and_off_is_one(runs):
    on, off = runs
    g_on, g_off = on["runs/mpi/auto/n2"], off["runs/mpi/auto/n2"]
    assert g_on.attrs["overlap"] == "on" and g_on.attrs["nbuckets"] > 2
    assert g_off.attrs["overlap"] == "off" and g_off.attrs["nbuckets"] == 1
    assert g_on["bucket_elements"][:].sum() == g_on.attrs["parameters"]
    assert g_on["bucket_start_s"].shape == (6, 2, g_on.attrs["nbuckets"])


def test_with_overlap_the_first_bucket_starts_during_backward(runs):
    on, off = runs
    for f, during in ((on, True), (off, False)):
        g = f["runs/mpi/auto/n2"]
        backward_end = g["forward_s"][:] + g["backward_s"][:]  # from the step's start
        first_start = g["bucket_start_s"][:, :, 0]
        assert np.all((first_start < backward_end) == during), (first_start, backward_end)
        # every bucket ends after it starts, and before the step's allreduce phase is over
        assert np.all(g["bucket_end_s"][:] >= g["bucket_start_s"][:])
        exposed_end = backward_end + g["comm_exposed_s"][:]
        assert np.all(g["bucket_end_s"][:].max(axis=2) <= exposed_end + 1e-6)


def test_bucket_ready_times_are_the_backward_timeline(runs):
    """Each bucket's gradients are complete (bucket_ready_s, on the compute stream) in
    backward order, inside backward, and before its reduction starts; the compute-only
    pass records the same timeline without communication (what a projection starts from)."""
    on, _ = runs
    for n in (1, 2):
        g = on[f"runs/mpi/auto/n{n}"]
        forward_end = g["forward_s"][:][:, :, None]
        backward_end = forward_end + g["backward_s"][:][:, :, None]
        # each pass against its own steps: the compute-only pass's forward is not the real
        # pass's (a loaded machine stretches one step of one pass, not the other's); its file
        # keeps the step and the backward, so its first bucket is after the step began
        compute_only = g["compute_only_s"][:][:, :, None]
        for name, first_after, step in (("bucket_ready_s", forward_end, backward_end),
                                        ("bucket_ready_compute_only_s", np.zeros_like(compute_only), compute_only)):
            ready = g[name][:]
            assert ready.shape == (6, n, g.attrs["nbuckets"])
            assert np.all(np.diff(ready, axis=2) >= 0), name
            assert np.all(ready[:, :, :1] >= first_after[:, :, :1] - 1e-6), name
            assert np.all(ready <= step + 1e-6), name
        ready = g["bucket_ready_s"][:]
        assert np.all(ready <= backward_end + 1e-6)
        if n == 1:  # the real pass is the compute-only one
            assert np.array_equal(ready, g["bucket_ready_compute_only_s"][:])
        else:  # a reduction starts once its gradients are complete
            assert np.all(g["bucket_start_s"][:] >= ready - 1e-4)


def test_overlap_does_not_change_the_training(runs):
    on, off = runs
    assert on["runs/mpi/auto/n2"].attrs["params_hash"] == off["runs/mpi/auto/n2"].attrs["params_hash"]
    assert np.array_equal(on["runs/mpi/auto/n2/loss"][:], off["runs/mpi/auto/n2/loss"][:])


def test_decomposition_adds_up_and_agrees_with_its_datasets(runs):
    for f in runs:
        s = f["summary"][:]
        for row in s:
            n = int(row["nranks"])
            g = f[f"runs/mpi/auto/n{n}"]
            compute = g["compute_only_s"][:]
            assert compute.shape == (6, n)
            assert row["compute_only_s"] == pytest.approx(np.median(compute.max(axis=1)), rel=1e-12)
            assert row["compute_only_mean_s"] == pytest.approx(np.median(compute.mean(axis=1)), rel=1e-12)
            alone = g["allreduce_alone_s"][:]
            assert row["allreduce_alone_s"] == pytest.approx(np.median(alone.max(axis=1)), rel=1e-12)
            assert row["backward_median_s"] == pytest.approx(np.median(g["backward_s"][:].max(axis=1)), rel=1e-12)
            co_bwd = g["compute_only_backward_s"][:]
            assert co_bwd.shape == (6, n)
            assert row["compute_only_backward_s"] == pytest.approx(np.median(co_bwd.max(axis=1)), rel=1e-12)
            step = row["step_median_s"]
            assert row["loss_interference"] == pytest.approx(
                (row["backward_median_s"] - row["compute_only_backward_s"]) / step, abs=1e-12)
            assert row["loss_comm"] == pytest.approx((step - row["compute_only_s"]) / step - row["loss_interference"],
                                                     abs=1e-12)
            exposed = np.median(g["comm_exposed_s"][:].max(axis=1))
            assert row["comm_exposed_median_s"] == pytest.approx(exposed, rel=1e-12)
            if n > 1:
                assert row["overlap_efficiency"] == pytest.approx(1 - exposed / row["allreduce_alone_s"], rel=1e-9)
            parts = row["loss_compute"] + row["loss_imbalance"] + row["loss_interference"] + row["loss_comm"]
            assert parts == pytest.approx(1 - row["efficiency"], abs=1e-9)
            if n == 1:  # one rank communicates nothing: nothing is lost
                assert np.all(alone == 0) and row["comm_exposed_median_s"] < 1e-6
                for loss in ("loss_compute", "loss_imbalance", "loss_interference", "loss_comm"):
                    assert row[loss] == pytest.approx(0, abs=1e-12), loss


def test_allreduce_op_sum_and_avg_train_the_same(tmp_path):
    a, _ = run_tiny(2, tmp_path, "--comm.allreduce_op=avg", "--sweep=2", name="avg.h5")
    b, _ = run_tiny(2, tmp_path, "--comm.allreduce_op=sum", "--sweep=2", name="sum.h5")
    assert a["runs/mpi/auto/n2"].attrs["params_hash"] == b["runs/mpi/auto/n2"].attrs["params_hash"]
    assert a["runs/mpi/auto/n2"].attrs["allreduce_op"] == "avg"

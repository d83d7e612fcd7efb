"""The training step itself, on real MPI ranks: gradients against finite
differences, data-parallel equivalence, and a loss that goes down."""
import numpy as np
import pytest

from conftest import TINY, dpscale, run_tiny


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_backward_matches_finite_differences(ranks):
    p = dpscale(ranks, "gradcheck", "--config", TINY)
    assert p.returncode == 0, p.stdout + p.stderr
    assert ": PASS" in p.stdout, p.stdout


def test_n_ranks_with_batch_b_equal_one_rank_with_batch_nb(outdir):
    """Strong scaling feeds every run of the sweep the same global batches: the
    parameters after training must agree across 1, 2 and 4 ranks."""
    f, _ = run_tiny(4, outdir, "--train.scaling=strong", "--train.global_batch=16", "--sweep=1,2,4",
                    "--run.save_params=on", "--train.iters=8")
    ref = f["runs/mpi/auto/n1/params"][:]
    for n in (2, 4):
        got = f[f"runs/mpi/auto/n{n}/params"][:]
        assert np.allclose(got, ref, rtol=1e-5, atol=1e-6), f"n={n}: max diff {np.abs(got - ref).max()}"
        assert np.allclose(f[f"runs/mpi/auto/n{n}/loss"][:], f["runs/mpi/auto/n1/loss"][:], rtol=1e-5)


def test_separate_launches_agree_too(outdir):
    """Two launches, 1 rank x batch 16 and 2 ranks x batch 8 (weak scaling), same samples."""
    f1, _ = run_tiny(1, outdir, "--train.batch_per_gpu=16", "--sweep=1", "--run.save_params=on", name="one.h5")
    f2, _ = run_tiny(2, outdir, "--train.batch_per_gpu=8", "--sweep=2", "--run.save_params=on", name="two.h5")
    a, b = f1["runs/mpi/auto/n1/params"][:], f2["runs/mpi/auto/n2/params"][:]
    assert np.allclose(a, b, rtol=1e-5, atol=1e-6), f"max diff {np.abs(a - b).max()}"


@pytest.mark.parametrize("optimizer,activation", [("sgd", "gelu"), ("adamw", "gelu"), ("sgd", "relu")])
def test_loss_decreases_on_the_synthetic_task(outdir, optimizer, activation):
    lr = "0.05" if optimizer == "sgd" else "0.003"
    f, _ = run_tiny(2, outdir, f"--train.optimizer={optimizer}", f"--train.lr={lr}", "--train.iters=30", "--sweep=2",
                    f"--model.activation={activation}")
    loss = f["runs/mpi/auto/n2/loss"][:]
    assert loss[-3:].mean() < 0.6 * loss[:3].mean(), loss


def test_replicas_end_identical(outdir):
    f, _ = run_tiny(4, outdir, "--sweep=4")
    g = f["runs/mpi/auto/n4"]
    assert g.attrs["replica_max_abs_diff"] == 0.0

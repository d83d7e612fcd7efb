"""The honest 1-rank baseline and the update taken off the critical path,
on real MPI ranks: a run on one rank communicates nothing and its decomposition is
all zeros; updating each bucket as soon as it is reduced, and the ZeRO-1 sharded
optimizer, train bit for bit what the update after backward trains."""
import numpy as np
import pytest

from conftest import TINY, dpscale, run_tiny

LOSSES = ("loss_compute", "loss_imbalance", "loss_interference", "loss_comm")


def summary_row(f, n):
    rows = [r for r in f["summary"][:] if r["nranks"] == n]
    assert len(rows) == 1, f"one /summary row for n={n}, got {len(rows)}"
    return rows[0]


@pytest.mark.parametrize("ranks", [1, 2])
def test_one_rank_communicates_nothing_and_loses_nothing(outdir, ranks):
    """mpirun -np 1 and -np 2: the n=1 run has no allreduce time, no exposed
    communication, no bytes on the wire, and every loss term is exactly 0."""
    f, p = run_tiny(ranks, outdir)
    g = f["runs/mpi/auto/n1"]
    assert g.attrs["communicates"] == 0
    assert g.attrs["allreduce_bytes"] == 0
    assert np.all(g["allreduce_alone_s"][:] == 0.0)
    assert np.all(g["comm_exposed_s"][:] == 0.0)
    assert np.array_equal(g["compute_only_s"][:], g["step_s"][:]), "1 rank: the real step is its own compute-only step"
    row = summary_row(f, 1)
    assert row["allreduce_alone_s"] == 0.0 and row["comm_exposed_median_s"] == 0.0
    for name in LOSSES:
        assert row[name] == 0.0, f"{name} = {row[name]} at n=1"
    assert row["efficiency"] == 1.0
    if ranks == 2:
        assert f["runs/mpi/auto/n2"].attrs["communicates"] == 1
        assert f["runs/mpi/auto/n2"].attrs["allreduce_bytes"] > 0


def test_the_four_losses_add_up_to_one_minus_efficiency(outdir):
    f, _ = run_tiny(2, outdir, "--train.iters=10")
    row = summary_row(f, 2)
    total = sum(row[name] for name in LOSSES)
    assert abs(total - (1.0 - row["efficiency"])) < 1e-9, f"{total} vs 1 - {row['efficiency']}"
    g = f["runs/mpi/auto/n2"]
    co_bwd = np.median(np.max(g["compute_only_backward_s"][:], axis=1))
    assert abs(co_bwd - row["compute_only_backward_s"]) < 1e-12
    assert abs(row["loss_interference"] - (row["backward_median_s"] - co_bwd) / row["step_median_s"]) < 1e-12


def hashes(f):
    return {n: f[f"runs/mpi/auto/{n}"].attrs["params_hash"] for n in ("n1", "n2") if f"runs/mpi/auto/{n}" in f}


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_update_overlap_on_and_off_train_bit_identical_parameters(outdir, optimizer):
    lr = "0.05" if optimizer == "sgd" else "0.003"
    common = (f"--train.optimizer={optimizer}", f"--train.lr={lr}", "--train.iters=6", "--model.layers=5",
              "--comm.bucket_mb=0.001", "--comm.first_bucket_mb=0.001")
    on, _ = run_tiny(2, outdir, "--train.overlap_update=on", *common, name="on.h5")
    off, _ = run_tiny(2, outdir, "--train.overlap_update=off", *common, name="off.h5")
    assert hashes(on) == hashes(off), f"overlap on {hashes(on)} vs off {hashes(off)}"
    assert on["runs/mpi/auto/n2"].attrs["nbuckets"] > 2, "the test needs several buckets to mean something"


@pytest.mark.parametrize("extra", [(), ("--train.overlap_update=off",), ("--comm.overlap=off",)])
def test_sharded_optimizer_trains_what_the_allreduce_trains(outdir, extra):
    """On 2 ranks a sum of two values does not depend on the algorithm, so ZeRO-1
    (reduce-scatter, 1/N update, all-gather) must give the allreduce's bits."""
    common = ("--train.iters=6", "--model.layers=5", "--comm.bucket_mb=0.001", "--comm.first_bucket_mb=0.001", *extra)
    plain, _ = run_tiny(2, outdir, *common, name="plain.h5")
    sharded, p = run_tiny(2, outdir, "--comm.shard_optimizer=on", *common, name="sharded.h5")
    assert sharded["runs/mpi/auto/n2"].attrs["shard_optimizer"] in (b"on", "on")
    assert hashes(sharded) == hashes(plain), p.stdout


def test_sharded_optimizer_keeps_data_parallel_equivalence(outdir):
    """4 ranks x batch 4 (sharded) against 1 rank x batch 16, strong scaling, one launch."""
    f, _ = run_tiny(4, outdir, "--comm.shard_optimizer=on", "--train.scaling=strong", "--train.global_batch=16",
                    "--sweep=1,2,4", "--run.save_params=on", "--train.iters=8", "--comm.bucket_mb=0.001")
    ref = f["runs/mpi/auto/n1/params"][:]
    for n in (2, 4):
        got = f[f"runs/mpi/auto/n{n}/params"][:]
        assert np.allclose(got, ref, rtol=1e-5, atol=1e-6), f"n={n}: max diff {np.abs(got - ref).max()}"
        assert f[f"runs/mpi/auto/n{n}"].attrs["replica_max_abs_diff"] == 0.0


def test_sharded_run_prints_its_mode_and_the_one_rank_baseline(outdir):
    _, p = run_tiny(2, outdir, "--comm.shard_optimizer=on")
    assert "reduce-scattered" in p.stdout and "ZeRO-1" in p.stdout, p.stdout
    assert "1 rank: no communication at all" in p.stdout, p.stdout


@pytest.mark.parametrize("extra", [(), ("--comm.shard_optimizer=on",)])
def test_last_layer_in_row_blocks_trains_the_same(outdir, extra):
    """comm.last_layer_chunks cuts layer 0's weight gradient into row blocks, each its
    own GEMM and bucket: more buckets, the same parameters."""
    common = ("--train.iters=6", "--model.layers=3", "--model.hidden_dim=256", "--run.save_params=on", *extra)
    whole, _ = run_tiny(2, outdir, *common, name="whole.h5")
    cut, p = run_tiny(2, outdir, "--comm.last_layer_chunks=4", *common, name="cut.h5")  # 256 rows: 4 blocks of 64
    assert cut["runs/mpi/auto/n2"].attrs["nbuckets"] == whole["runs/mpi/auto/n2"].attrs["nbuckets"] + 3, p.stdout
    for n in ("n1", "n2"):
        a, b = whole[f"runs/mpi/auto/{n}/params"][:], cut[f"runs/mpi/auto/{n}/params"][:]
        assert np.allclose(a, b, rtol=1e-6, atol=1e-7), f"{n}: max diff {np.abs(a - b).max()}"


@pytest.mark.parametrize("args,names", [
    (("--train.precision=fp16", "--train.grad_dtype=compute"), "train.grad_dtype"),
    (("--train.precision=bf16", "--train.grad_dtype=compute", "--comm.allreduce_dtype=fp32"), "comm.allreduce_dtype"),
    (("--train.precision=fp16", "--train.optimizer_state=compute"), "train.optimizer_state"),
    (("--train.precision=fp16", "--train.master_weights=off"), "train.master_weights"),
    (("--train.gemm_epilogue=backward",), "train.gemm_epilogue"),
    (("--comm.shm_copy=dma",), "comm.shm_copy"),
])
def test_gradient_dtypes_that_cannot_work_are_refused(outdir, args, names):
    p = dpscale(1, "run", "--config", TINY, f"--run.output_dir={outdir}", *args)
    assert p.returncode == 2, p.stdout + p.stderr
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 1 and names in errors[0], p.stderr
    assert not list(outdir.iterdir()), "no result file"


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("key,value", [("train.optimizer_state", "compute"), ("train.master_weights", "off")])
def test_16_bit_optimizer_keys_change_nothing_in_an_fp32_run(outdir, optimizer, key, value):
    """train.optimizer_state = compute keeps the state in the compute dtype, and
    train.master_weights = off updates the compute copy of the weights in place: in an
    fp32 run (the CPU's) both are fp32 already, so the parameters are bit-identical,
    and the run records the key."""
    common = ("--train.iters=5", f"--train.optimizer={optimizer}", "--run.save_params=on")
    a, _ = run_tiny(2, outdir, *common, name="plain.h5")
    b, p = run_tiny(2, outdir, f"--{key}={value}", *common, name="keyed.h5")
    for n in ("n1", "n2"):
        assert a[f"runs/mpi/auto/{n}"].attrs["params_hash"] == b[f"runs/mpi/auto/{n}"].attrs["params_hash"], p.stdout
    assert b["config"].attrs[key] == value, "the key is recorded"

"""The ResNet (model.type = resnet) on the CPU backend, with real MPI ranks: its
gradients against float32 finite differences (dpscale gradcheck) and against float64
differences of an independent NumPy ResNet (resnet_reference.py), a 2-rank sweep
whose report counts images, data-parallel equivalence, the update beside backward
and ZeRO-1 against the plain allreduce, a learnable image task, the operations
dpscale bench names.

Data-parallel equivalence and batch norm: with model.batchnorm = batch (the default)
each rank normalises over its own batch, as DDP without SyncBatchNorm does, so N ranks
x batch B do NOT train what 1 rank x batch N*B trains (whose statistics are over all
N*B images): the test asserts that they differ. With model.batchnorm = frozen the
running statistics (mean 0, variance 1) normalise instead, the loss is a sum over
images, and the parameters match to float rounding, as the other models' do."""
import subprocess

import h5py
import numpy as np
import pytest

from conftest import BINARY, ROOT, dpscale, mpi_env
from resnet_reference import ResNet

TINY = ROOT / "configs" / "resnet-tiny.ini"


def run(np_, outdir, *args, name="r.h5"):
    p = dpscale(np_, "run", "--config", TINY, f"--run.output_dir={outdir}", f"--run.output={name}", *args)
    assert p.returncode == 0, f"dpscale failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return h5py.File(outdir / name, "r"), p


def hashes(f):
    return {n: f[f"runs/mpi/auto/{n}"].attrs["params_hash"] for n in ("n1", "n2") if f"runs/mpi/auto/{n}" in f}


@pytest.mark.parametrize("ranks", [1, 2])
def test_gradients_match_float32_finite_differences(ranks):
    p = dpscale(ranks, "gradcheck", "--config", TINY)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASS" in p.stdout and "layer2.0.downsample.conv.weight" in p.stdout and "bn1.gamma" in p.stdout, p.stdout


def test_gradients_match_float64_differences_of_a_numpy_resnet(outdir):
    """The backward pass of a 4-stage ResNet, dumped, against central differences (step
    1e-6) of resnet_reference.py's float64 loss on the same parameters and images: the
    precise check, where float32 differences resolve the ReLU network only coarsely
    (src/model/families/resnet.c). Relative 1e-3, or 1e-5 absolute below gradients of 1e-2
    (float32's own rounding in backward). Frozen batch norm's backward is the kernel
    test's (tests/unit/test_resnet_kernels.c)."""
    p = dpscale(1, "dump", "--config", TINY, "--model.blocks=1,2,1,1", f"--run.output_dir={outdir}",
                "--run.output=d.h5")
    assert p.returncode == 0, p.stdout + p.stderr
    f = h5py.File(outdir / "d.h5", "r")
    net = ResNet(f)
    params, grads = f["dump/params"][:].astype(np.float64), f["dump/grads"][:]
    images, labels = f["dump/inputs/images"][:], f["dump/inputs/labels"][:]
    assert net.loss(params, images, labels) == pytest.approx(f["dump"].attrs["loss"], rel=1e-5)
    rng, worst, step = np.random.default_rng(16), (0.0, ""), 1e-6
    for name, (offset, rows, cols) in net.table.items():
        for i in rng.choice(rows * cols, 2, replace=False):
            k = offset + int(i)
            q = params.copy()
            q[k] += step
            plus = net.loss(q, images, labels)
            q[k] -= 2 * step
            numeric = (plus - net.loss(q, images, labels)) / (2 * step)
            rel = abs(grads[k] - numeric) / max(abs(grads[k]) + abs(numeric), 1e-2)
            worst = max(worst, (rel, f"{name}[{i}]: backward {grads[k]:.6e}, float64 differences {numeric:.6e}"))
    print(f"worst: {worst[0]:.2e} ({worst[1]})")
    assert worst[0] <= 1e-3, worst[1]
    # the batch norms' running statistics after the step, in the table's order of the gains
    net.loss(params, images, labels)
    mean, var = net.running_after_one_step()
    got_mean, got_var = f["dump/inputs/bn_running_mean"][:], f["dump/inputs/bn_running_var"][:]
    assert got_mean.shape == mean.shape and got_var.shape == var.shape
    assert np.abs(got_mean - mean).max() <= 1e-4 * max(np.abs(mean).max(), 1e-3), np.abs(got_mean - mean).max()
    assert np.abs(got_var - var).max() <= 1e-4 * np.abs(var).max(), np.abs(got_var - var).max()


def test_a_two_rank_sweep_writes_its_file_and_the_report_counts_images(outdir):
    """`mpirun -np 2 dpscale run --config configs/resnet-tiny.ini --run.sweep=1,2`."""
    f, p = run(2, outdir, "--run.sweep=1,2")
    m = f["model"]
    assert m.attrs["type"] == "resnet" and m.attrs["unit"] == "images" and m.attrs["units_per_sample"] == 1
    assert m.attrs["stages"] == 5 and "ResNet v1.5, 32 x 32 x 3 images (NHWC), blocks 1,2, width 8" in p.stdout
    names = [n.decode() for n in m["tensors"][:]["name"]]
    assert names[0] == "fc.bias" and names[-1] == "conv1.weight" and "layer2.1.conv2.weight" in names
    assert f["runs/mpi/auto/n2"].attrs["replica_max_abs_diff"] == 0.0
    md = subprocess.run([BINARY, "report", outdir / "r.h5"], capture_output=True, text=True).stdout
    assert "| images/s | images/s per GPU |" in md and "J/image" in md, md
    s = {int(r["nranks"]): r for r in f["summary"][:]}
    row = [l for l in md.splitlines() if l.startswith("| 2 |")][0]
    assert float(row.split("|")[3]) == pytest.approx(s[2]["samples_per_s"], abs=0.1)  # an image is a sample


@pytest.mark.parametrize("batchnorm", ["frozen", "batch"])
def test_two_ranks_train_what_one_rank_trains_only_with_frozen_batchnorm(outdir, batchnorm):
    """Strong scaling, 2 ranks x batch 4 against 1 rank x batch 8, SGD with momentum."""
    f, _ = run(2, outdir, "--train.scaling=strong", "--train.global_batch=8", "--sweep=1,2", "--run.save_params=on",
               "--train.iters=6", f"--model.batchnorm={batchnorm}")
    ref, got = f["runs/mpi/auto/n1/params"][:], f["runs/mpi/auto/n2/params"][:]
    worst = np.abs(got - ref).max() / np.abs(ref).max()
    if batchnorm == "frozen":
        assert worst <= 1e-5, f"max |diff| / max |p| = {worst}"
    else:  # each rank's statistics are over its own 4 images
        assert worst > 1e-3, f"per-rank batch norm should train otherwise than one rank: {worst}"


def test_update_beside_backward_and_zero1_train_the_same_bits(outdir):
    common = ("--train.iters=4", "--comm.bucket_mb=0.01", "--comm.first_bucket_mb=0.001")
    on, _ = run(2, outdir, "--train.overlap_update=on", *common, name="on.h5")
    off, _ = run(2, outdir, "--train.overlap_update=off", *common, name="off.h5")
    sharded, p = run(2, outdir, "--comm.shard_optimizer=on", *common, name="zero.h5")
    assert on["runs/mpi/auto/n2"].attrs["nbuckets"] > 3, "several buckets, or the test means little"
    assert hashes(on) == hashes(off) == hashes(sharded), p.stdout


def test_the_synthetic_images_are_learnable(outdir):
    f, _ = run(1, outdir, "--sweep=1", "--train.warmup=0", "--train.iters=60", "--train.batch_per_gpu=16")
    loss = f["runs/mpi/auto/n1/loss"][:]
    assert loss[-5:].mean() < loss[:5].mean() - 1.0, loss


def test_bench_names_the_resnets_operations():
    p = dpscale(1, "bench", "--config", TINY, "--train.iters=3")
    assert p.returncode == 0, p.stdout + p.stderr
    for op in ("im2col / col2im", "batchnorm forward", "batchnorm + add + ReLU", "batchnorm backward", "pooling"):
        assert op in p.stdout, p.stdout


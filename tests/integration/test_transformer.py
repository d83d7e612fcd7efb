"""The transformers (model.type = gpt, bert) on the CPU backend, with real MPI ranks:
their gradients against finite differences, data-parallel equivalence, the update
beside backward and ZeRO-1 against the plain allreduce, the /model table, that the
synthetic token task is learnable, `dpscale dump`, and the errors of an impossible shape."""
import numpy as np
import pytest

from conftest import ROOT, dpscale

CONFIGS = {"gpt": ROOT / "configs" / "gpt-tiny.ini", "bert": ROOT / "configs" / "bert-tiny.ini"}


def run(kind, np_, outdir, *args, name="t.h5"):
    import h5py
    p = dpscale(np_, "run", "--config", CONFIGS[kind], f"--run.output_dir={outdir}", f"--run.output={name}", *args)
    assert p.returncode == 0, f"dpscale failed ({p.returncode}):\n{p.stdout}\n{p.stderr}"
    return h5py.File(outdir / name, "r"), p


def hashes(f):
    return {n: f[f"runs/mpi/auto/{n}"].attrs["params_hash"] for n in ("n1", "n2") if f"runs/mpi/auto/{n}" in f}


@pytest.mark.parametrize("kind", ["gpt", "bert"])
@pytest.mark.parametrize("ranks", [1, 2])
def test_gradients_match_finite_differences(kind, ranks):
    p = dpscale(ranks, "gradcheck", "--config", CONFIGS[kind], "--train.batch_per_gpu=2")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PASS" in p.stdout and "block0.qkv.weight" in p.stdout and "wte" in p.stdout, p.stdout


@pytest.mark.parametrize("kind", ["gpt", "bert"])
def test_two_ranks_train_what_one_rank_trains_on_their_batch(kind, outdir):
    """Strong scaling, 2 ranks x batch 4 against 1 rank x batch 8: the same parameters, to
    float rounding (the sums of the two halves' gradients come in another order, and
    AdamW's normalised step passes such differences on at the scale of the learning rate)."""
    f, _ = run(kind, 2, outdir, "--train.scaling=strong", "--train.global_batch=8", "--sweep=1,2",
               "--run.save_params=on", "--train.iters=6")
    ref, got = f["runs/mpi/auto/n1/params"][:], f["runs/mpi/auto/n2/params"][:]
    worst = np.abs(got - ref).max() / np.abs(ref).max()
    assert worst <= 1e-5, f"max |diff| / max |p| = {worst}"
    assert f["runs/mpi/auto/n2"].attrs["replica_max_abs_diff"] == 0.0


@pytest.mark.parametrize("kind", ["gpt", "bert"])
def test_update_beside_backward_and_zero1_train_the_same_bits(kind, outdir):
    common = ("--train.iters=5", "--comm.bucket_mb=0.01", "--comm.first_bucket_mb=0.001")
    on, _ = run(kind, 2, outdir, "--train.overlap_update=on", *common, name="on.h5")
    off, _ = run(kind, 2, outdir, "--train.overlap_update=off", *common, name="off.h5")
    sharded, p = run(kind, 2, outdir, "--comm.shard_optimizer=on", *common, name="zero.h5")
    assert on["runs/mpi/auto/n2"].attrs["nbuckets"] > 3, "several buckets, or the test means little"
    assert hashes(on) == hashes(off) == hashes(sharded), p.stdout


def test_model_table_and_tokens_as_the_unit(outdir):
    f, p = run("gpt", 1, outdir, "--sweep=1")
    m = f["model"]
    assert m.attrs["type"] == "gpt" and m.attrs["unit"] == "tokens" and m.attrs["units_per_sample"] == 16
    t = m["tensors"][:]
    names = [n.decode() for n in t["name"]]
    assert names[0] == "lnf.gamma" and names[-1] == "wte" and "block1.qkv.weight" in names
    assert (t["stage"][1:] <= t["stage"][:-1]).all() and t["stage"][0] == 3 and t["stage"][-1] == 0
    assert int(t["count"].sum()) == m.attrs["parameters"]
    L, C, T, V = 2, 32, 16, 64  # the preset: docs/models.md's formula per token, times T per sequence
    assert m.attrs["gemm_flops_per_sample"] == pytest.approx(T * (72 * L * C * C + 12 * L * C * T + 6 * C * V))
    assert "pre-LN decoder, 2 x 32, 4 heads" in p.stdout


@pytest.mark.parametrize("kind,args", [
    ("gpt", ("--train.iters=150", "--train.lr=0.01", "--train.batch_per_gpu=8")),
    # BERT reads each masked token off an unmasked copy a period away: slower to find
    ("bert", ("--train.iters=400", "--train.lr=0.003", "--train.batch_per_gpu=16")),
])
def test_the_synthetic_tokens_are_learnable(kind, args, outdir):
    f, _ = run(kind, 1, outdir, "--sweep=1", "--train.warmup=0", *args)
    loss = f["runs/mpi/auto/n1/loss"][:]
    assert loss[-5:].mean() < loss[:5].mean() - 1.0, loss


@pytest.mark.parametrize("args,names", [
    (("--model.hidden_dim=30",), "model.heads"),
    (("--model.seq_len=1",), "model.seq_len"),
    (("--model.type=bert", "--model.mask_fraction=0"), "model.mask_fraction"),
    (("--train.attention=flash",), "train.attention"),  # the fused kernels are the GPU's, in bf16 or fp16
])
def test_impossible_transformers_are_refused(outdir, args, names):
    p = dpscale(1, "run", "--config", CONFIGS["gpt"], f"--run.output_dir={outdir}", *args)
    assert p.returncode != 0, p.stdout
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert len(errors) == 1 and names in errors[0], p.stderr
    assert not list(outdir.iterdir()), "no result file"


@pytest.mark.parametrize("kind", ["gpt", "bert"])
def test_dump_lays_open_the_first_step_of_a_run(kind, outdir):
    """`dpscale dump` writes the model table, the initial parameters, the step's inputs,
    its loss and every gradient: its loss is the first step's loss of `dpscale run` on
    one rank, and no tensor's gradient is left empty (tests/gpu/torch_reference.py
    recomputes it all with PyTorch)."""
    import h5py
    p = dpscale(1, "dump", "--config", CONFIGS[kind], f"--run.output_dir={outdir}", "--run.output=d.h5")
    assert p.returncode == 0, p.stdout + p.stderr
    d = h5py.File(outdir / "d.h5", "r")
    f, _ = run(kind, 1, outdir, "--sweep=1", "--train.warmup=0", name="r.h5")
    assert d["dump"].attrs["loss"] == pytest.approx(f["runs/mpi/auto/n1/loss"][0], rel=1e-6)
    grads, table = d["dump/grads"][:], d["model/tensors"][:]
    for row in table:
        g = grads[int(row["offset"]):int(row["offset"]) + int(row["count"])]
        assert np.abs(g).max() > 0, f"{row['name']}: no gradient"
    names = set(d["dump/inputs"].keys())
    assert names == ({"tokens", "targets", "segments", "mask_rows"} if kind == "bert" else {"tokens", "targets"})
    assert d["dump/params"].shape == grads.shape == (d["model"].attrs["parameters"],)


@pytest.mark.parametrize("kind", ["gpt", "bert"])
def test_a_padded_vocabulary_is_masked_and_never_trained(kind, outdir):
    """A vocabulary of 61 pads the head to 64 rows: the padding rows of wte start at 0,
    get a zero gradient (were the padding's logits, 0, in the softmax, theirs would not
    be 0 and neither would the rows'), and stay 0 through training."""
    import h5py
    p = dpscale(1, "dump", "--config", CONFIGS[kind], "--model.vocab=61", f"--run.output_dir={outdir}",
                "--run.output=d.h5")
    assert p.returncode == 0, p.stdout + p.stderr
    d = h5py.File(outdir / "d.h5", "r")
    wte = next(r for r in d["model/tensors"][:] if r["name"].decode() == "wte")
    assert int(wte["rows"]) == 64
    off, C = int(wte["offset"]), int(wte["cols"])
    pad = slice(off + 61 * C, off + 64 * C)
    assert not d["dump/params"][pad].any() and not d["dump/grads"][pad].any()
    assert np.abs(d["dump/grads"][off:off + 61 * C]).max() > 0
    f, _ = run(kind, 1, outdir, "--model.vocab=61", "--sweep=1", "--train.iters=4", "--run.save_params=on")
    assert not f["runs/mpi/auto/n1/params"][pad].any()


def test_dump_is_one_rank(outdir):
    p = dpscale(2, "dump", "--config", CONFIGS["gpt"], f"--run.output_dir={outdir}")
    assert p.returncode == 2 and "one rank" in p.stderr, p.stderr
    assert not list(outdir.iterdir())


def test_report_counts_tokens(outdir):
    """A transformer's report tables count tokens (samples x seq_len) in Markdown; CSV keeps
    the per-sample figures and names the unit."""
    import csv
    import io
    import subprocess
    from conftest import BINARY
    f, _ = run("gpt", 2, outdir, name="g.h5")
    s = {int(r["nranks"]): r for r in f["summary"][:]}
    md = subprocess.run([BINARY, "report", outdir / "g.h5"], capture_output=True, text=True).stdout
    assert "| tokens/s | tokens/s per GPU |" in md and "J/token" in md, md
    rows = [l for l in md.splitlines() if l.startswith("| 2 |")]
    assert float(rows[0].split("|")[3]) == pytest.approx(16 * s[2]["samples_per_s"], abs=0.1)
    out = subprocess.run([BINARY, "report", "--format", "csv", outdir / "g.h5"], capture_output=True, text=True).stdout
    table = list(csv.DictReader(io.StringIO(out)))
    assert table[0]["unit"] == "tokens" and table[0]["units_per_sample"] == "16"
    assert float(table[-1]["samples_per_s"]) == pytest.approx(s[2]["samples_per_s"], rel=1e-9)


def test_bench_breaks_the_step_down_by_operation():
    """`dpscale bench` times every backend operation of a few steps and names the
    largest that is not a GEMM (the transformer benchmark reports it)."""
    p = dpscale(1, "bench", "--config", CONFIGS["gpt"], "--train.iters=3")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "where the step goes, by operation" in p.stdout and "attention forward" in p.stdout, p.stdout
    lines = p.stdout.splitlines()
    first = next(i for i, l in enumerate(lines) if l.startswith("operation") and "calls/step" in l) + 1
    table = lines[first:next(i for i, l in enumerate(lines) if l.startswith("largest operation"))]
    shares = [float(l.split()[-1].rstrip("%")) for l in table]
    assert abs(sum(shares) - 100.0) < 1.0, shares
    assert "largest operation that is not a GEMM:" in p.stdout


def test_bench_lists_the_gemms_by_shape_with_the_head_padded():
    """bench's table of GEMMs by shape holds every GEMM call of the step (GPT-tiny:
    6 per block forward and backward, plus the head's 3) and, with a vocabulary of 61,
    runs the head on 64 rows: no GEMM has 61 as a dimension."""
    p = dpscale(1, "bench", "--config", CONFIGS["gpt"], "--train.iters=3", "--model.vocab=61")
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    first = next(i for i, l in enumerate(lines) if l.startswith("the step's GEMMs by shape")) + 2
    rows = [l.split() for l in lines[first:first + 100] if l.strip()]
    rows = rows[:next((i for i, r in enumerate(rows) if r[0] == "where"), len(rows))]
    dims = [tuple(int(x) for x in r[3:6]) for r in rows]
    assert any(d == (16 * 4, 64, 32) for d in dims), dims  # forward head: [B T x C] wte^T over 64 rows
    assert not any(61 in d for d in dims), dims
    first = next(i for i, l in enumerate(lines) if l.startswith("operation") and "calls/step" in l) + 1
    ops = {" ".join(l.split()[:-3]): float(l.split()[-3])
           for l in lines[first:next(i for i, l in enumerate(lines) if l.startswith("largest operation"))]}
    assert sum(float(r[7]) for r in rows if r[0] in ("gemm", "gemm+C")) == pytest.approx(ops["gemm"]), (rows, ops)

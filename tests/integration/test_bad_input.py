"""Bad input: a one-line error naming the problem, a non-zero exit, no result
file; a rank that dies takes the job down within seconds."""
import re
import time

import h5py
import pytest

from conftest import TINY, dpscale


def error_lines(p):
    return [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]


BAD = [
    (["--model.layers=0"], "expected an integer in [1, 4096]"),
    (["--model.activaton=gelu"], "unknown option '--model.activaton=gelu'"),
    (["--train.lr=abc"], "'abc' is not accepted for train.lr"),
    (["--sweep=1,2,8"], "asks for 8 ranks but the launch has 2"),
    (["--train.scaling=strong", "--train.global_batch=3"], "cannot be split evenly over 2 ranks"),
    (["--run.backend=cuda"], None),  # without CUDA: rebuild hint; with CUDA but no GPU: no GPU visible
    (["--precision=bf16", "--run.backend=cpu"], "the cpu backend runs fp32 only"),
    (["--train.batch_per_gpu=1000000000", "--model.hidden_dim=1000000"], "lower train.batch_per_gpu"),
]


@pytest.mark.parametrize("args,message", BAD, ids=[a[0] for a, _ in BAD])
def test_bad_input_fails_cleanly(outdir, args, message):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", *args)
    assert p.returncode != 0
    errors = error_lines(p)
    assert len(errors) >= 1, p.stderr
    if message:
        assert message in p.stderr, p.stderr
    assert list(outdir.iterdir()) == [], "a failed run left a file behind"


def test_bad_ini_file_names_file_and_line(tmp_path, outdir):
    ini = tmp_path / "bad.ini"
    ini.write_text("[model]\nlayers = 2\n[train]\nitres = 5\n")
    p = dpscale(2, "run", "--config", ini, f"--run.output_dir={outdir}")
    assert p.returncode == 2
    assert error_lines(p) == [f"dpscale: error: {ini}:4: unknown key 'itres' in [train]; accepted keys: "
                              + error_lines(p)[0].split("accepted keys: ")[1]]
    assert len(error_lines(p)) == 1, "every rank printed the same error"


def test_existing_result_is_never_overwritten(outdir):
    target = outdir / "keep.h5"
    target.write_bytes(b"precious")
    p = dpscale(1, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=keep.h5")
    assert p.returncode != 0
    assert "already exists and is never overwritten" in p.stderr
    assert target.read_bytes() == b"precious"


@pytest.mark.parametrize("kind", ["kill", "exit", "error"])
def test_a_dying_rank_ends_the_whole_job_quickly(outdir, kind):
    start = time.monotonic()
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--train.iters=50",
                env={"DPSCALE_FAULT": f"1:3:{kind}"}, timeout=60)
    elapsed = time.monotonic() - start
    assert p.returncode != 0
    assert elapsed < 30, f"job took {elapsed:.1f} s to end"
    # what was measured is kept (the 1-rank point, done before the fault), marked
    # incomplete; no claim (NAME.tmp) is left behind
    files = list(outdir.iterdir())
    assert [f for f in files if f.suffix != ".h5"] == [], files
    for f in files:
        with h5py.File(f, "r") as h:
            assert h.attrs["complete"] == 0 and h.attrs["points_completed"] < h.attrs["points_planned"]
    if kind == "error":
        assert "dpscale: error:" in p.stderr and ":1 " in p.stderr, p.stderr  # names host:rank 1
    else:  # mpirun names the dead process: "Process name: [[job,1],1]" or "rank 1"
        assert re.search(r"\[\[\d+,\d+\],1\]|rank 1", p.stderr), p.stderr


@pytest.mark.parametrize("where", ["file", "command line"])
def test_the_former_comm_transport_key_names_comm_path(tmp_path, outdir, where):
    """comm.transport became comm.path (library = who reduces, path = the way NCCL's bytes go)."""
    if where == "file":
        ini = tmp_path / "old.ini"
        ini.write_text(open(TINY).read() + "\n[comm]\ntransport = nvlink\n")
        p = dpscale(2, "run", "--config", ini, f"--run.output_dir={outdir}")
    else:
        p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--comm.transport=nvlink")
    assert p.returncode == 2, p.stderr
    errors = error_lines(p)
    assert len(errors) == 1, p.stderr
    assert "comm.transport is now comm.path" in errors[0]
    if where == "file":
        assert str(tmp_path / "old.ini") in errors[0]
    else:
        assert "--comm.transport=nvlink" in errors[0]
    assert list(outdir.iterdir()) == []

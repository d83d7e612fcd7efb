"""A run whose loss or parameters stop being finite is an error, never a figure: one
line naming the point, the step and the rank; a non-zero exit; the points completed
before it kept in the file, marked incomplete, and the diverged one named there."""
import h5py

from conftest import TINY, dpscale


def error_lines(p):
    return [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]


def test_a_diverging_learning_rate_ends_the_run_with_one_line_and_no_file(outdir):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--train.lr=10", "--train.momentum=0.99")
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    errors = error_lines(p)
    assert len(errors) == 1 and "the 1-GPU point diverged at step" in errors[0] and "on rank 0" in errors[0], p.stderr
    assert "nothing is written" in errors[0], errors[0]
    assert "samples/s" not in p.stdout.split("n=1")[-1], "a figure of the diverged run was printed"
    assert list(outdir.iterdir()) == [], "a diverged first point left a file"


def test_a_point_that_diverges_keeps_the_points_before_it_and_is_named_in_the_file(outdir):
    """DPSCALE_FAULT=1:1:nan: rank 1's losses turn NaN half-way through its first run."""
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.sweep=1,2", "--run.output=d.h5",
                env={"DPSCALE_FAULT": "1:1:nan"})
    assert p.returncode == 1, (p.returncode, p.stderr[-2000:])
    errors = error_lines(p)
    assert len(errors) == 1 and "the 2-GPU point diverged at step 4 of 6 on rank 1: the loss is nan" in errors[0], \
        p.stderr
    assert sorted(f.name for f in outdir.iterdir()) == ["d.h5"]
    with h5py.File(outdir / "d.h5", "r") as f:
        assert f.attrs["complete"] == 0 and f.attrs["points_completed"] == 1 and f.attrs["points_planned"] == 2
        diverged = f.attrs["diverged"]
        diverged = diverged.decode() if isinstance(diverged, bytes) else diverged
        assert diverged == "the 2-GPU point diverged at step 4 of 6 on rank 1: the loss is nan", diverged
        assert list(f["summary"]["nranks"]) == [1], "the diverged point's row was written"


def test_a_run_that_stays_finite_has_no_divergence_mark(outdir):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", "--run.output=ok.h5")
    assert p.returncode == 0, p.stderr[-2000:]
    with h5py.File(outdir / "ok.h5", "r") as f:
        assert "diverged" not in f.attrs and f.attrs["complete"] == 1

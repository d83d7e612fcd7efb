"""Bad input: a one-line error naming the problem, a non-zero exit, no result
file; a rank that dies takes the job down within seconds."""
import os
import re
import subprocess
import time

import h5py
import pytest

from conftest import BINARY, TINY, dpscale, mpi_env


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


def refused_once(p, message=None):
    """Bad input on 2 ranks: exit 2, one error line (not one per rank), before the
    run header; returns that line."""
    assert p.returncode == 2, f"exit {p.returncode}\n{p.stdout}\n{p.stderr}"
    errors = error_lines(p)
    assert len(errors) == 1, "expected one error line for all ranks:\n" + p.stderr
    if message:
        assert message in errors[0], errors[0]
    assert "data-parallel scaling" not in p.stdout, "the error came after the run header"
    return errors[0]


@pytest.mark.parametrize("args,message", BAD, ids=[a[0] for a, _ in BAD])
def test_bad_input_fails_cleanly(outdir, args, message):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", *args)
    refused_once(p, message)
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


# ---- inputs that used to run a wrong experiment, hang, or print once per rank

def fifo(tmp_path):
    path = tmp_path / "config.fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("kind,message", [("directory", "is a directory, not a file"),
                                          ("fifo", "is a FIFO (named pipe), not a file"),
                                          ("device", "/dev/zero is a character device, not a file")])
def test_a_config_that_is_not_a_regular_file_is_refused_without_hanging(tmp_path, outdir, kind, message):
    path = {"directory": lambda: tmp_path, "fifo": lambda: fifo(tmp_path), "device": lambda: "/dev/zero"}[kind]()
    p = dpscale(2, "run", "--config", path, f"--run.output_dir={outdir}", timeout=60)
    refused_once(p, message)
    assert list(outdir.iterdir()) == []


def test_an_option_without_its_value_does_not_swallow_the_next_option(tmp_path):
    """--run.output_dir --train.iters=3 used to write into a folder named '--train.iters=3'."""
    cmd = ["mpirun", "-np", "2", str(BINARY), "run", "--config", str(TINY), "--run.output_dir", "--train.iters=3"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=mpi_env(), timeout=120, cwd=tmp_path)
    refused_once(p, "option --run.output_dir has no value: the next argument '--train.iters=3' is an option")
    assert list(tmp_path.iterdir()) == [], "a folder was made of the next option"


def test_a_nul_byte_in_the_config_is_refused_with_its_line(tmp_path, outdir):
    ini = tmp_path / "nul.ini"
    ini.write_bytes(open(TINY, "rb").read() + b"\n[train]\niters = 1\x000\n")
    line = len(ini.read_bytes().split(b"\n")) - 1
    p = dpscale(2, "run", "--config", ini, f"--run.output_dir={outdir}")
    refused_once(p, f"{ini}:{line}: a NUL byte at column 10")
    assert list(outdir.iterdir()) == []


@pytest.mark.parametrize("flag,message", [
    ("--train.lr=0x1p-3", "'0x1p-3' is not accepted for train.lr; expected a decimal number"),
    ("--train.lr=inf", "'inf' is not accepted for train.lr"),
    ("--train.seed=4611686018427387905", "expected an integer in [0, 4611686018427387904]"),
    ("--train.overlap=off", "did you mean --train.overlap_update?"),
])
def test_hex_floats_huge_seeds_and_abbreviations_are_refused(outdir, flag, message):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={outdir}", flag)
    refused_once(p, message)
    assert list(outdir.iterdir()) == []


def test_a_long_line_is_refused_with_its_true_line_and_a_long_comment_is_fine(tmp_path, outdir):
    ini = tmp_path / "long.ini"
    ini.write_text("; " + "c" * 6000 + "\n" + open(TINY).read() + "\n[run]\noutput_dir = " + "d" * 4300 + "\n")
    line = ini.read_text().count("\n")
    p = dpscale(2, "run", "--config", ini, f"--run.output_dir={outdir}")
    refused_once(p, f"{ini}:{line}: a line of 4313 characters")
    assert list(outdir.iterdir()) == []


def resolved(*args):
    p = subprocess.run([str(BINARY), "config", *map(str, args)], capture_output=True, text=True, timeout=30)
    return p


@pytest.mark.parametrize("where", ["file", "command line"])
def test_a_long_output_dir_is_taken_alike_in_a_file_and_on_the_command_line(tmp_path, where):
    """One limit for a text value, wherever it is written: 4,095 characters."""
    long_dir = "/tmp/" + "d" * 3000
    ini = tmp_path / "long.ini"
    ini.write_text(f"[run]\noutput_dir = {long_dir}\n" if where == "file" else "[train]\niters = 3\n")
    p = resolved("--config", ini, *([] if where == "file" else [f"--run.output_dir={long_dir}"]))
    assert p.returncode == 0 and f"run.output_dir = {long_dir}\n" in p.stdout, p.stderr
    p = resolved(f"--run.output_dir=/{'d' * 4095}")
    assert p.returncode == 2 and "text of at most 4095 characters" in p.stderr, p.stderr


@pytest.mark.parametrize("eol", ["\r", "\r\n", "\n"], ids=["CR", "CRLF", "LF"])
def test_cr_crlf_and_lf_line_endings_are_read_alike(tmp_path, eol):
    ini = tmp_path / "eol.ini"
    ini.write_bytes(eol.join(["[model]", "layers = 3", "hidden_dim = 48", "; a comment", "[train]", "iters = 7", ""]).encode())
    p = resolved("--config", ini)
    assert p.returncode == 0, p.stderr
    for line in ["model.layers = 3\n", "model.hidden_dim = 48\n", "train.iters = 7\n"]:
        assert line in p.stdout, (eol, line, p.stdout)


@pytest.mark.parametrize("header", ["[model] junk", "[model]junk", "[model] = 3"])
def test_text_after_a_section_header_is_refused_with_its_line(tmp_path, header):
    ini = tmp_path / "header.ini"
    ini.write_text(f"[train]\niters = 3\n{header}\nlayers = 2\n")
    p = resolved("--config", ini)
    assert p.returncode == 2 and f"{ini}:3: text after the section header" in p.stderr, p.stderr


def test_a_comment_after_a_section_header_is_fine(tmp_path):
    ini = tmp_path / "header.ini"
    ini.write_text("[model] ; the network\nlayers = 2\n[train] # and the steps\niters = 4\n")
    p = resolved("--config", ini)
    assert p.returncode == 0 and "model.layers = 2\n" in p.stdout and "train.iters = 4\n" in p.stdout, p.stderr


@pytest.mark.parametrize("flag", ["--run.sweep=1,,2", "--run.sweep=1,2,", "--run.sweep=,1,2", "--run.sweep=1 2",
                                  "--comm.paths=nvlink,,host", "--comm.paths=host,"])
def test_an_empty_list_item_is_refused(flag):
    """A typo or a cut list must not run as a smaller experiment."""
    p = resolved(flag)
    assert p.returncode == 2 and len([l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]) == 1, \
        (flag, p.stdout, p.stderr)


@pytest.mark.parametrize("flag,expected", [("--run.sweep=1, 2,4", "run.sweep = 1,2,4\n"),
                                           ("--comm.paths=nvlink, host", "comm.paths = nvlink, host\n")])
def test_spaces_around_list_items_are_fine(flag, expected):
    p = resolved(flag)
    assert p.returncode == 0 and expected in p.stdout, (p.stdout, p.stderr)


def test_an_indented_key_is_read_as_a_key(tmp_path):
    ini = tmp_path / "indented.ini"
    ini.write_text("[model]\nlayers = 2\n    hidden_dim = 48\n")
    p = subprocess.run([str(BINARY), "config", "--config", str(ini)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "model.layers = 2\n" in p.stdout and "model.hidden_dim = 48\n" in p.stdout, p.stdout


def test_an_unknown_command_is_named_once():
    p = dpscale(2, "frobnicate")
    refused_once(p, "unknown command 'frobnicate'")


HUGE = ["--train.batch_per_gpu=100000000", "--model.hidden_dim=1000000"]


@pytest.mark.parametrize("command,args,message", [
    ("run", HUGE, "the run on 1 rank needs"),
    ("gradcheck", HUGE, "gradcheck needs"),
    ("comm", ["--collective.min_mib=65536", "--collective.max_mib=65536", "--collective.in_place=off"],
     "the largest allreduce (65536 MiB) needs 192.00 GiB of host memory per rank"),
])
def test_a_plan_that_does_not_fit_in_memory_is_bad_input_said_once(outdir, command, args, message):
    p = dpscale(2, command, "--config", TINY, f"--run.output_dir={outdir}", *args)
    refused_once(p, message)
    assert "the limit is " in p.stderr, p.stderr  # which of MemAvailable, the cgroup, RLIMIT_AS bound it
    assert p.stderr.count("hint:") == 1, p.stderr
    assert list(outdir.iterdir()) == []


@pytest.mark.parametrize("flag", ["--model.name=a\x1b]0;owned\x07b", "--run.system_label=x\ny", "--run.output_dir=/tmp/a\tb"])
def test_a_text_value_with_a_control_character_is_refused(flag):
    """Labels and paths reach terminals, job logs and result files: no ESC, BEL or newline."""
    p = resolved(flag)
    assert p.returncode == 2 and "without control characters" in p.stderr, (flag, p.stderr)


@pytest.mark.parametrize("command", ["run", "project", "project's result"])
def test_a_fifo_named_as_an_input_file_is_refused_without_hanging(tmp_path, outdir, command):
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    if command == "run":
        p = dpscale(1, "run", "--config", TINY, f"--run.output_dir={outdir}", f"--topo.fixture={pipe}", timeout=30)
        what = "topology file"
    elif command == "project":
        p = subprocess.run([str(BINARY), "project", "--system", str(pipe),
                            str(os.path.join(os.path.dirname(__file__), "../../results/h200x2-bert-large.h5"))],
                           capture_output=True, text=True, timeout=30)
        what = "system description"
    else:
        p = subprocess.run([str(BINARY), "project", "--system",
                            str(os.path.join(os.path.dirname(__file__), "../../configs/systems/a100-sxm-8.ini")),
                            str(pipe)], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and f"result file {pipe} is a FIFO (named pipe), not a file" in p.stderr, p.stderr
        return
    assert p.returncode != 0 and f"{what} {pipe} is a FIFO (named pipe), not a file" in p.stderr, p.stderr

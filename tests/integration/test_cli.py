"""The command line: every subcommand's own --help, one error for a bad option,
and the progress lines of a launch (timestamped, on stderr, silenced by --quiet)
that leave stdout's tables as they were."""
import re
import subprocess

import pytest

from conftest import BINARY, TINY, dpscale, mpi_env

# subcommand -> options its --help must name (besides its own name)
OWN_OPTIONS = {
    "run": ["--config", "--section.key=VALUE", "--output", "--quiet"],
    "comm": ["--config", "--section.key=VALUE", "--output", "[collective]"],
    "topo": ["--config", "--section.key=VALUE", "--output", "[topo]"],
    "bench": ["--config", "--section.key=VALUE", "[model]"],
    "gradcheck": ["--config", "--section.key=VALUE", "[model]"],
    "dump": ["--config", "--section.key=VALUE", "--output"],
    "config": ["--config", "--get", "[collective]"],
    "project": ["--comm", "--system", "--no-interference", "--output"],
    "report": ["--format", "--table", "--compare", "--plot"],
}
TRAINING = ["run", "comm", "topo", "bench", "gradcheck", "dump"]  # they start MPI, read the configuration
# "dpscale: 2026-12-01T10:00:05Z n=2 (point 2/3) real pass, timed step 12/20; launch 45% done, 17 s left"
PROGRESS = re.compile(r"^dpscale: (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) n=(\d+) \(point (\d+)/(\d+)\) (.*); "
                      r"launch (\d+)% done(?:, (.+) left|, no estimate yet| in (.+))$")


def direct(*args, env=None):
    """bin/dpscale ARGS without mpirun."""
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, text=True, env=mpi_env(env),
                          timeout=60)


def progress_lines(text):
    return [l for l in text.splitlines() if PROGRESS.match(l)]


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("command", sorted(OWN_OPTIONS))
def test_each_command_has_its_own_help(command, flag):
    p = direct(command, flag)
    assert p.returncode == 0, p.stdout + p.stderr
    first = p.stdout.splitlines()[0]
    assert first.startswith("usage:") and f"dpscale {command} " in first, f"expected {command}'s usage, got: {first}"
    missing = [o for o in OWN_OPTIONS[command] if o not in p.stdout]
    assert missing == [], f"dpscale {command} {flag} does not name {missing}:\n{p.stdout}"
    assert p.stderr == ""


@pytest.mark.parametrize("command", ["run", "bench"])
def test_help_is_printed_once_under_mpirun(command):
    p = dpscale(2, command, "--help")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.count("usage:") == 1, p.stdout
    p = dpscale(2, "--help")
    assert p.returncode == 0 and p.stdout.count("usage:") == 1, p.stdout


def test_dpscale_help_lists_every_command_with_one_line():
    p = direct("--help")
    assert p.returncode == 0 and p.stderr == ""
    for command in OWN_OPTIONS:
        lines = [l for l in p.stdout.splitlines() if re.match(rf"^  {command} +\S", l)]
        assert len(lines) == 1, f"expected one line for {command} in:\n{p.stdout}"


def test_help_command_is_the_commands_own_help():
    assert direct("help", "comm").stdout == direct("comm", "--help").stdout
    assert direct("help", "report").stdout == direct("report", "--help").stdout


def test_keys_a_command_does_not_read_are_left_out_of_its_help():
    comm = direct("comm", "--help").stdout
    assert "[model]" not in comm and "batch_per_gpu" not in comm
    assert "[collective]" not in direct("run", "--help").stdout


@pytest.mark.parametrize("command", sorted(OWN_OPTIONS))
def test_an_unknown_option_is_one_error_and_exit_2(command):
    p = dpscale(2, command, "--bogus") if command in TRAINING else direct(command, "--bogus")
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert p.returncode == 2, p.stdout + p.stderr
    assert len(errors) == 1 and "--bogus" in errors[0], p.stderr


def test_an_unknown_command_is_one_error_and_exit_2():
    p = dpscale(2, "sweep")
    errors = [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]
    assert p.returncode == 2 and len(errors) == 1 and "unknown command 'sweep'" in errors[0], p.stderr


def run(outdir, *args, env=None, name="r.h5"):
    p = dpscale(2, *args, "--config", TINY, f"--run.output_dir={outdir}", f"--run.output={name}", "--sweep=1,2",
                env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    return p


def test_a_run_says_on_stderr_where_it_is_and_how_long_is_left(outdir):
    p = run(outdir, "run", env={"DPSCALE_PROGRESS_S": "0"})  # a line after every step
    lines = progress_lines(p.stderr)
    assert lines, p.stderr
    fields = [PROGRESS.match(l).groups() for l in lines]
    assert {(n, point, count) for _, n, point, count, *_ in fields} == {("1", "1", "2"), ("2", "2", "2")}
    what = [f[4] for f in fields]
    for pass_ in ["compute-only pass begins", "comm-only pass begins", "real pass begins",
                  "real pass, warm-up step 1/1", "real pass, timed step 5/5", "compute-only pass, timed step 3/5"]:
        assert any(w.startswith(pass_) for w in what), f"no line '{pass_}' in:\n" + "\n".join(lines)
    left = [f[6] for f in fields if f[6]]
    assert any(re.fullmatch(r"\d+(\.\d)? s", t) for t in left), lines
    assert fields[-1][4].startswith("done in") and fields[-1][5] == "100" and fields[-1][7], lines[-1]
    assert [int(f[5]) for f in fields] == sorted(int(f[5]) for f in fields), "the launch went backwards"
    assert not progress_lines(p.stdout) and "dpscale: 20" not in p.stdout


def test_progress_waits_a_few_seconds_between_lines_within_a_pass(outdir):
    """The tiny run takes well under the default 5 s: starts and ends only."""
    p = run(outdir, "run")
    what = [PROGRESS.match(l).group(5) for l in progress_lines(p.stderr)]
    assert not [w for w in what if " step " in w], what
    assert len(what) == 2 + 1 + 3 + 2, what  # each point's start and end, each pass's start


@pytest.mark.parametrize("where", ["after", "before"])
def test_quiet_leaves_the_tables_alone(outdir, where):
    loud = run(outdir, "run", name="loud.h5")
    args = ["run", "--quiet"] if where == "after" else ["--quiet", "run"]
    quiet = run(outdir, *args, name="quiet.h5")
    assert progress_lines(quiet.stderr) == [] and quiet.stderr == "", quiet.stderr
    assert "data-parallel scaling" in loud.stdout and "data-parallel scaling" not in quiet.stdout

    def shape(text):  # the numbers vary from run to run, and the file's name; the lines and columns must not
        lines = [l for l in text.splitlines() if not l.startswith("wrote ")]
        return [" ".join(re.sub(r"\b[0-9a-f]{16}\b|-?\d+(\.\d+)?", "#", l).split()) for l in lines]

    header = len(shape(loud.stdout)) - len(shape(quiet.stdout))
    assert header > 0 and shape(loud.stdout)[header:] == shape(quiet.stdout)
    assert "wrote " in loud.stdout and "wrote " in quiet.stdout

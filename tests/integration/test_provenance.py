"""Every result file says where it came from, in the names of src/result/schema.h (read by
tests/gpu/check.py, as the GPU script reads them): the dpscale version and git commit,
the libraries built with and loaded, the launcher and the exact command line, start
and end, the Slurm allocation, the user's system label, the NCCL_* and CUDA_*
environment, and each rank's host, CPU and GPU. Every dataset has its units; every
string is UTF-8 of variable length (str in pandas through check.summary_frame);
every count an integer. Run, comm, topo and projection files alike."""
import re
import shlex
import socket
import subprocess
import sys
from datetime import datetime

import h5py
import numpy as np
import pytest

from conftest import BINARY, ROOT, TINY, dpscale, mpi_env, run_tiny

sys.path.insert(0, str(ROOT / "tests" / "gpu"))
import check  # noqa: E402  (the schema parser of the GPU script)

SCHEMA = check.schema()
LABEL = "rig 'A', rack 12 \u00e9"  # a quote, a comma, a space and a non-ASCII letter
ENV = {"NCCL_DEBUG": "WARN", "CUDA_CACHE_DISABLE": "1", "NCCL_IB_HCA": "mlx5_0:1,mlx5_1:1"}
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def git_short_head():
    p = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    top = subprocess.run(["git", "-C", ROOT, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 and top.stdout.strip() == str(ROOT.resolve()) else None


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("prov")
    args = ["--sweep=1,2", "--train.iters=3", "--train.warmup=1", f"--run.system_label={LABEL}"]
    f, p = run_tiny(2, out, *args, env=ENV)
    argv = [str(BINARY), "run", "--config", str(TINY), f"--run.output_dir={out}", "--run.output=r.h5", *args]
    return f, argv


def test_the_root_says_who_ran_what_when_and_how(run):
    f, argv = run
    a = f.attrs
    for name in list(SCHEMA["SCHEMA_LAUNCH_ATTRS"]) + ["dpscale_version", "command_line", "job_id", "created_utc"]:
        assert isinstance(a[name], str), name
    head = git_short_head()
    if head is None:
        assert a["git_commit"] == "unknown"
    else:  # git describe --always --dirty: the short hash, perhaps after a tag, perhaps -dirty
        assert a["git_commit"].removesuffix("-dirty").endswith(head), (a["git_commit"], head)
    assert ISO.match(a["started_utc"]) and ISO.match(a["ended_utc"]) and a["created_utc"] == a["started_utc"]
    assert datetime.fromisoformat(a["started_utc"][:-1]) <= datetime.fromisoformat(a["ended_utc"][:-1])
    assert list(a["argv"]) == argv  # exactly what was run
    assert shlex.split(a["command_line"]) == argv  # and as a shell reads it back
    assert a["launcher"] == "mpirun (Open MPI)" and "-np 2" in a["launcher_command_line"]
    assert a["system_label"] == LABEL
    assert a["job_id"] == a["slurm_partition"] == a["slurm_nodelist"] == ""  # not under Slurm


def test_system_names_every_library_built_with_and_loaded(run):
    f, _ = run
    s = f["system"].attrs
    for name in SCHEMA["SCHEMA_LIBRARY_ATTRS"]:
        assert isinstance(s[name], str), name
    assert re.match(r"\d+\.\d+\.\d+$", s["hdf5_version"]) and re.match(r"\d+\.\d+\.\d+$", s["hdf5_version_built"])
    assert "MPI" in s["mpi_library_version"] and re.match(r"\d\.\d$", s["mpi_standard_version"])
    assert s["mpi_library_version"].startswith(s["mpi_library"])  # the old attribute holds its first line
    assert "OpenBLAS" in s["blas_library"] and s["compiler"]
    if s["nccl_version_built"]:  # a CUDA build: versions as numbers, also where no GPU answers
        assert re.match(r"\d+\.\d+\.\d+$", s["nccl_version_built"]) and re.match(r"\d+\.\d+\.\d+$", s["cublas_version_built"])
    else:
        assert s["nccl_version"] == s["cuda_runtime_version"] == s["cublas_version"] == ""


def cpu_has(flag):
    return re.search(rf"^flags\s*:.*\b{flag}\b", open("/proc/cpuinfo").read(), re.M) is not None


@pytest.mark.skipif(not cpu_has("avx2"), reason="a CPU without AVX2 may rightly run OpenBLAS's SSE3 kernels")
def test_openblas_runs_the_kernels_the_cpu_has_on_every_rank(tmp_path):
    """OpenBLAS 0.3.21 takes some virtualised AVX-512 CPUs for a Prescott; dpscale
    starts itself again with OPENBLAS_CORETYPE set, on every rank, without a word."""
    env = {k: v for k, v in mpi_env().items() if k != "OPENBLAS_CORETYPE"}
    p = subprocess.run(["mpirun", "-np", "2", BINARY, "run", "--config", TINY, f"--run.output_dir={tmp_path}",
                        "--run.output=r.h5", "--train.iters=2", "--train.warmup=0"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "warning" not in p.stderr, p.stderr
    with h5py.File(tmp_path / "r.h5") as f:
        blas = f["system"].attrs["blas_library"]
    blas = blas.decode() if isinstance(blas, bytes) else blas
    assert "Prescott" not in blas, blas


@pytest.mark.skipif(not cpu_has("avx2"), reason="Prescott is the right core for a CPU without AVX2")
def test_a_core_type_the_user_forces_is_kept_and_a_slow_one_is_named_once(tmp_path):
    p = dpscale(2, "run", "--config", TINY, f"--run.output_dir={tmp_path}", "--run.output=r.h5", "--train.iters=2",
                "--train.warmup=0", env={"OPENBLAS_CORETYPE": "Prescott"})
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("dpscale: warning: OpenBLAS chose its Prescott") == 1, p.stderr
    assert p.stderr.count("hint: export OPENBLAS_CORETYPE=") == 1, p.stderr


def test_every_rank_describes_itself(run):
    f, _ = run
    ranks = check.table_frame(f["system/ranks"])
    assert list(ranks["rank"]) == [0, 1] and list(ranks["local_rank"]) == [0, 1]
    assert set(ranks["host"]) == {socket.gethostname()}
    cpuinfo = open("/proc/cpuinfo").read()
    model = re.search(r"^model name\s*:\s*(.*)$", cpuinfo, re.M)
    assert (ranks["cpu_model"] == (model.group(1) if model else ranks["cpu_model"][0])).all() and ranks["cpu_model"][0]
    assert (ranks["cpus"] > 0).all()
    # the cpu backend: no GPU, so its fields are empty, not made up
    assert (ranks["gpu_index"] == -1).all() and (ranks["gpu_uuid"] == "").all() and (ranks["gpu_memory_bytes"] == -1).all()
    assert ranks["gpu_power_limit_w"].isna().all() and (ranks["gpu_app_clock_graphics_mhz"] == -1).all()
    for env in ranks["environment"]:
        for k, v in ENV.items():
            assert f"{k}={v}\n" in env
        assert all(line.startswith(("NCCL_", "CUDA_")) for line in env.splitlines())


def test_the_environment_is_recorded_as_launched(run):
    f, _ = run
    env = f["system/environment"].attrs
    for k, v in ENV.items():
        assert env[k] == v
    assert all(k.startswith(("NCCL_", "CUDA_")) for k in env if k != "note")


def test_summary_tells_rows_apart_without_a_join(run):
    f, _ = run
    df = check.summary_frame(f)
    assert list(df.columns) == list(check.summary_columns())
    for name in SCHEMA["SCHEMA_SUMMARY_TEXT"]:
        info = h5py.check_string_dtype(f["summary"].dtype[name])
        assert info.encoding == "utf-8" and info.length is None, name
        assert all(isinstance(v, str) for v in df[name]), name
    for name in SCHEMA["SCHEMA_SUMMARY_INTS"]:
        assert df[name].dtype.kind == "i", name
    for name in SCHEMA["SCHEMA_SUMMARY_REALS"]:
        assert df[name].dtype.kind == "f", name
    row = df.iloc[1]
    assert (row["model"], row["precision"], row["library"], row["path"]) == ("mlp-tiny", "fp32", "mpi", "auto")
    assert (row["overlap"], row["shard_optimizer"], row["system_label"], row["gpus_per_node"]) == ("on", "off", LABEL, 2)
    assert list(f["summary"].attrs["units"]) == list(check.summary_columns().values())


def schema_units(path):
    """The units schema.h gives the dataset at `path`: a string, or {column: units} of a table."""
    leaf = path.rsplit("/", 1)[-1]
    single = {"runs/": "SCHEMA_RUN_DATASETS", "collectives/": "SCHEMA_COLLECTIVE_DATASETS",
              "system/topology/": "SCHEMA_TOPOLOGY_DATASETS", "system/hosts": "SCHEMA_SYSTEM_DATASETS",
              "dump/": "SCHEMA_DUMP_DATASETS", "projection/": "SCHEMA_PROJECTION_DATASETS"}
    tables = {"summary": ["SCHEMA_SUMMARY_TEXT", "SCHEMA_SUMMARY_INTS", "SCHEMA_SUMMARY_REALS"],
              "system/ranks": ["SCHEMA_RANK_INTS", "SCHEMA_RANK_TEXT", "SCHEMA_RANK_REALS"],
              "model/tensors": ["SCHEMA_TENSOR_COLUMNS"]}
    if path in tables:
        return {k: u for name in tables[path] for k, (u, _) in SCHEMA[name].items()}
    if path.startswith("dump/inputs/"):
        leaf = "input"  # the model names its inputs; one entry gives their units
    prefix = next(p for p in single if path.startswith(p))
    return SCHEMA[single[prefix]][leaf][0]


def check_units_and_types(f):
    """Every dataset: the units schema.h gives it; strings UTF-8 of variable length; counts integers."""
    seen = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset):
            return
        seen.append(name)
        units = schema_units(name)
        if obj.dtype.names:
            assert list(obj.dtype.names) == list(units), name
            assert list(obj.attrs["units"]) == list(units.values()), name
            members = [obj.dtype[n] for n in obj.dtype.names]
        else:
            assert obj.attrs["units"] == units, name
            members = [obj.dtype]
        for dt in members:
            info = h5py.check_string_dtype(dt)
            if info is not None or dt.kind in "SO":
                assert info is not None and info.encoding == "utf-8" and info.length is None, name
        if name.endswith(("size_bytes", "wrong_elements", "bucket_elements", "nvlink_count", "nic_numa_node")):
            assert obj.dtype.kind == "i", name

    f.visititems(visit)
    return seen


def test_every_dataset_has_the_units_of_the_schema(run):
    f, _ = run
    seen = check_units_and_types(f)
    assert "summary" in seen and "system/ranks" in seen and "runs/mpi/auto/n2/bucket_elements" in seen


def test_comm_topo_and_projection_files_carry_provenance_too(tmp_path):
    env = {**ENV, "SLURM_JOB_ID": "4242", "SLURM_JOB_PARTITION": "gpu", "SLURM_CLUSTER_NAME": "lab",
           "SLURM_JOB_NODELIST": "node[01-02]"}
    p = dpscale(2, "comm", "--backend=cpu", "--collective.min_mib=0.001", "--collective.max_mib=0.004",
                f"--run.output_dir={tmp_path}", "--run.output=c.h5", env=ENV)
    assert p.returncode == 0, p.stderr
    p = dpscale(1, "topo", "--backend=cpu", f"--run.output_dir={tmp_path}", "--run.output=t.h5", env=ENV)
    assert p.returncode == 0, p.stderr
    # a projection is one process, no MPI launcher: the Slurm variables are read as they are
    source = ROOT / "results/h200x2-comm-bound-pcie.h5"
    p = subprocess.run([BINARY, "project", source, "--comm", ROOT / "results/h200x2-comm-p2p-disabled.h5",
                        "--output", tmp_path / "p.h5"], capture_output=True, text=True, timeout=60,
                       env={**dict(__import__("os").environ), **env})
    assert p.returncode == 0, p.stderr
    for name in ("c.h5", "t.h5", "p.h5"):
        f = h5py.File(tmp_path / name)
        assert f.attrs["schema_version"] == 6 and f.attrs["git_commit"] and ISO.match(f.attrs["ended_utc"]), name
        assert f.attrs["argv"][1] == {"c.h5": "comm", "t.h5": "topo", "p.h5": "project"}[name]
        if name != "p.h5":
            check_units_and_types(f)
            assert f["system/environment"].attrs["NCCL_DEBUG"] == "WARN"
            assert len(f["system/ranks"]) == f["system"].attrs["world_size"]
            assert f["system"].attrs["mpi_library_version"]
    f = h5py.File(tmp_path / "p.h5")
    assert (f.attrs["job_id"], f.attrs["slurm_partition"], f.attrs["slurm_cluster"], f.attrs["slurm_nodelist"]) == (
        "4242", "gpu", "lab", "node[01-02]")
    assert f.attrs["launcher"] == "none"
    src = h5py.File(source)  # the source's own identity, kept beside its copied /system
    assert f["projection/source"].attrs["command_line"] == src.attrs["command_line"]
    assert f["projection/source"].attrs["schema_version"] == src.attrs["schema_version"]
    rows = check.summary_frame(f)
    assert (rows["library"] == "proj").all() and (rows["model"] == src["config"].attrs["model.name"]).all()


def test_version_names_the_commit_and_the_libraries():
    p = subprocess.run([BINARY, "--version"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    first = p.stdout.splitlines()[0]
    assert re.match(r"dpscale \d+\.\d+\.\d+ \(git \S+\)$", first), first
    head = git_short_head()
    if head is not None:
        assert head in first
    for library in ("MPI", "HDF5", "OpenBLAS", "CUDA"):
        assert re.search(rf"^{library}\s", p.stdout, re.M), library


def test_check_py_reads_a_fresh_file_by_the_schema_names(run):
    f, _ = run
    p = subprocess.run([sys.executable, ROOT / "tests/gpu/check.py", "summary", f.filename], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.split()[:len(check.SUMMARY_COLUMNS)] == check.SUMMARY_COLUMNS
    assert set(check.SUMMARY_COLUMNS) <= set(check.summary_columns())


def test_the_report_shows_the_label_and_still_reads_every_file_in_results(run):
    f, _ = run
    p = subprocess.run([BINARY, "report", f.filename, ROOT / "results"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"{LABEL}: " in p.stdout
    for old in sorted((ROOT / "results").glob("*.h5")):
        assert str(old) in p.stdout, old

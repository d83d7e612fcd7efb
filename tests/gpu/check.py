"""check.py — assertions of the GPU test script on dpscale's HDF5 files.

  check.py loss-close A.h5 B.h5 RTOL        loss curves of two runs agree within RTOL (relative, every step)
  check.py inputs-equal A.h5 B.h5           two `dpscale dump` files hold the same step inputs (CPU vs CUDA)
  check.py params-close F.h5 RTOL           the saved parameters of every run in F agree with those of n1
  check.py summary F.h5                     print the summary table of F (columns named as src/result/schema.h names them)
Prints one line, and exits 1 when the check fails. Reads schema 2 and later: runs in
/runs/<library>/<path>/n<N>.

The names of columns and datasets are not written here but read from src/result/schema.h,
the header the writer and the report use: schema() parses it, so that a column asked
for that the writer does not write fails at once, by name (tests/integration runs
`check.py summary` on a CPU file)."""
import re
import sys
from pathlib import Path

import h5py
import numpy as np

SCHEMA_H = Path(__file__).resolve().parents[2] / "src" / "result" / "schema.h"

# the columns `summary` prints: each must be a /summary column of schema.h
SUMMARY_COLUMNS = ["nranks", "samples_per_s", "efficiency", "step_median_s", "backward_median_s",
                   "comm_exposed_median_s", "allreduce_alone_s", "loss_interference", "loss_comm", "gemm_tflops", "mfu",
                   "allreduce_busbw_GBps", "joules_per_sample", "avg_power_w"]


def schema(path=SCHEMA_H):
    """src/result/schema.h as {list name: {entry: (units or bytes, meaning)}}, e.g.
    schema()["SCHEMA_SUMMARY_REALS"]["step_median_s"] == ("s", "median over ..."); entries in
    the header's order. SCHEMA_FORMER_NAMES maps each former name to the current one."""
    lists, current = {}, None
    for line in Path(path).read_text().splitlines():
        m = re.match(r"#define (SCHEMA_\w+)\(X\)", line)
        if m:
            current = lists.setdefault(m.group(1), {})
            continue
        if current is None:
            continue
        m = re.match(r'\s*X\((\w+), ("[^"]*"|\d+|\w+)(?:, "([^"]*)")?\)', line)
        if m:
            raw = m.group(2)  # "units" quoted; a size in bytes or a current name bare
            value = raw[1:-1] if raw.startswith('"') else int(raw) if raw.isdigit() else raw
            current[m.group(1)] = (value, m.group(3))
        if not line.rstrip().endswith("\\"):
            current = None
    return lists


def summary_columns():
    """/summary's columns in order, with their units: text, then integers, then reals."""
    s = schema()
    out = {}
    for part in ("SCHEMA_SUMMARY_TEXT", "SCHEMA_SUMMARY_INTS", "SCHEMA_SUMMARY_REALS"):
        out.update({name: units for name, (units, _) in s[part].items()})
    return out


def table_frame(dataset):
    """A compound table (/summary, /system/ranks) as a pandas DataFrame, its text as str
    (h5py hands the UTF-8 strings of a compound table over as bytes)."""
    import pandas as pd
    df = pd.DataFrame(dataset[:])
    for c in df.columns:
        if df[c].dtype == object:
            df[c] = df[c].map(lambda v: v.decode("utf-8") if isinstance(v, bytes) else v)
    return df


def summary_frame(f):
    return table_frame(f["summary"])


def first_system(f):
    """/runs/<library>/<path> of the first library and path in the file."""
    library = list(f["runs"].keys())[0]
    path = list(f["runs"][library].keys())[0]
    return f["runs"][library][path]


def first_run(f):
    runs = first_system(f)
    n = sorted(runs.keys(), key=lambda k: int(k[1:]))[0]
    return runs[n]


def loss_close(a, b, rtol):
    la, lb = first_run(h5py.File(a))["loss"][:], first_run(h5py.File(b))["loss"][:]
    rel = np.abs(la - lb) / np.abs(lb)
    ok = rel.max() <= rtol
    print(f"loss curves over {len(la)} steps: max relative difference {rel.max():.3e} (tolerance {rtol:g}); "
          f"first {la[0]:.5f} vs {lb[0]:.5f}, last {la[-1]:.5f} vs {lb[-1]:.5f}: {'PASS' if ok else 'FAIL'}")
    return ok


def params_close(path, rtol):
    f = h5py.File(path)
    runs = first_system(f)
    ref = runs["n1"]["params"][:]
    worst = 0.0
    for name, g in runs.items():
        diff = np.abs(g["params"][:] - ref).max() / np.abs(ref).max()
        worst = max(worst, diff)
    ok = worst <= rtol
    print(f"parameters of {sorted(runs.keys())} vs n1: max |diff| / max|p| = {worst:.3e} "
          f"(tolerance {rtol:g}): {'PASS' if ok else 'FAIL'}")
    return ok


# what /dump/inputs holds beside the step's inputs: the resnet's batch-norm running statistics
# after the step, a result (the torch references compare them), not an input
STEP_RESULTS = {"bn_running_mean", "bn_running_var"}


def inputs_equal(a, b):
    """The step inputs of two `dpscale dump` files (e.g. CPU and CUDA) are the same arrays."""
    ia, ib = h5py.File(a)["dump/inputs"], h5py.File(b)["dump/inputs"]
    ka, kb = sorted(set(ia.keys()) - STEP_RESULTS), sorted(set(ib.keys()) - STEP_RESULTS)
    same = ka == kb and all(np.array_equal(ia[k][:], ib[k][:]) for k in ka)
    print(f"inputs {ka}: {'identical' if same else 'DIFFERENT'}: {'PASS' if same else 'FAIL'}")
    return same


def summary(path):
    """Print SUMMARY_COLUMNS of /summary; fail, naming them, when the schema or the file lacks any."""
    known = summary_columns()
    unknown = [c for c in SUMMARY_COLUMNS if c not in known]
    if unknown:
        print(f"summary: {unknown} are not /summary columns of {SCHEMA_H}: FAIL")
        return False
    s = h5py.File(path)["summary"][:]
    former = {new: old for old, (new, _) in schema()["SCHEMA_FORMER_NAMES"].items()}
    cols = [c if c in s.dtype.names else former.get(c, c) for c in SUMMARY_COLUMNS]  # files before schema 5 too
    missing = [c for c in cols if c not in s.dtype.names]
    if missing:
        print(f"summary: {path} has no column {missing} (schema version "
              f"{h5py.File(path).attrs['schema_version']}): FAIL")
        return False
    print(" ".join(f"{c:>14s}" for c in SUMMARY_COLUMNS))
    for row in s:
        print(" ".join(f"{row[c]:14.4g}" for c in cols))
    return True


if __name__ == "__main__":
    cmd = sys.argv[1]
    ok = {"loss-close": lambda: loss_close(sys.argv[2], sys.argv[3], float(sys.argv[4])),
          "params-close": lambda: params_close(sys.argv[2], float(sys.argv[3])),
          "inputs-equal": lambda: inputs_equal(sys.argv[2], sys.argv[3]),
          "summary": lambda: summary(sys.argv[2])}[cmd]()
    sys.exit(0 if ok else 1)

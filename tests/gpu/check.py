"""check.py — assertions of the GPU test script on dpscale's HDF5 files.

  check.py loss-close A.h5 B.h5 RTOL        loss curves of two runs agree within RTOL (relative, every step)
  check.py inputs-equal A.h5 B.h5           two `dpscale dump` files hold the same step inputs (CPU vs CUDA)
  check.py params-close F.h5 RTOL           the saved parameters of every run in F agree with those of n1
  check.py summary F.h5                     print the summary table of F
Prints one line, and exits 1 when the check fails. Reads schema 2: runs in
/runs/<library>/<path>/n<N>."""
import sys

import h5py
import numpy as np


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


def inputs_equal(a, b):
    """The step inputs of two `dpscale dump` files (e.g. CPU and CUDA) are the same arrays."""
    ia, ib = h5py.File(a)["dump/inputs"], h5py.File(b)["dump/inputs"]
    same = sorted(ia.keys()) == sorted(ib.keys()) and all(np.array_equal(ia[k][:], ib[k][:]) for k in ia.keys())
    print(f"inputs {sorted(ia.keys())}: {'identical' if same else 'DIFFERENT'}: {'PASS' if same else 'FAIL'}")
    return same


def summary(path):
    s = h5py.File(path)["summary"][:]
    cols = ["nranks", "samples_per_s", "efficiency", "step_median_s", "backward_median_s", "comm_exposed_median_s",
            "allreduce_alone_s", "loss_interference", "loss_comm", "gemm_tflops", "mfu", "allreduce_busbw_gbps", "joules_per_sample", "avg_power_w"]
    print(" ".join(f"{c:>14s}" for c in cols))
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

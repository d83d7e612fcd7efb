"""gemm_shapes_reference.py — cuBLAS alone on the shapes of dpscale's step, beside dpscale's own figures.

Why it exists: each GEMM of a step should run at the rate cuBLAS gives that shape alone. `dpscale
bench` prints the step's GEMMs by shape (each one's time in the profiled steps and alone on the same
operands); this script reads that table from bench's output, times the same shape through PyTorch
(torch.matmul, which calls cuBLAS with its default heuristic choice), and prints, per shape and in
total, dpscale's rate in the step over cuBLAS's alone.

  bin/dpscale bench --config configs/gpt2-small.ini > bench.log
  python3 tests/gpu/gemm_shapes_reference.py bench.log [--dtype bf16] [--iters 20]

The operands are random normal (never zeros: tensor cores on zeros run hotter clocks), laid out as
dpscale's are (row-major; tA / tB: the operand is stored transposed). A beta = 1 shape ("gemm+C") is
timed as addmm into C; an output in fp32 ("f32") with out_dtype=float32 where this PyTorch has it.
Epilogue shapes (bias, GELU, GELU') are timed as the plain GEMM: the reference is the GEMM alone.
They are also timed as what a program without the fused epilogue runs for the same output: the
GEMM, then PyTorch's own kernels for the rest (the bias in cuBLAS's addmm; GELU with its input
kept, GELU' reading it; the residual add) — the `unfused` columns. A fused epilogue that loses to
the plain GEMM but beats the unfused pair is a GEMM doing more work, not a slow layout.
Ends with one line `GEMM_SHAPES_REFERENCE worst=<ratio> weighted=<ratio> shapes=<n> ...`, the
ratios against the plain GEMM, then `unfused_worst` and `unfused_weighted` against the unfused
pair where a shape has an epilogue (the plain GEMM where it has none).
"""
import argparse
import re
import sys

import torch

ROW = re.compile(r"^(?P<op>\S+)\s+(?P<ta>[01])\s+(?P<tb>[01])\s+(?P<m>\d+)\s+(?P<n>\d+)\s+(?P<k>\d+)\s+"
                 r"(?P<c>f32|bf16|f16)\s+(?P<calls>[\d.]+)\s+(?P<us>[\d.]+)\s+(?P<tf>[\d.]+)\s+"
                 r"(?P<alone>[\d.]+)\s+(?P<tfa>[\d.]+)\s*$")


def shapes(path):
    """The rows of bench's table of GEMMs by shape, as dicts."""
    rows, inside = [], False
    with open(path) as f:
        for line in f:
            if line.startswith("the step's GEMMs by shape"):
                inside = True
                continue
            if inside:
                if not line.strip():
                    break
                m = ROW.match(line.strip())
                if m:
                    rows.append({k: (v if k in ("op", "c") else float(v)) for k, v in m.groupdict().items()})
    return rows


def time_us(fn, iters):
    for _ in range(3):
        fn()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return 1e3 * start.elapsed_time(stop) / iters


def reference_us(r, dtype, iters):
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    a = torch.randn(k, m, device="cuda", dtype=dtype).t() if r["ta"] else torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t() if r["tb"] else torch.randn(k, n, device="cuda", dtype=dtype)
    f32 = r["c"] == "f32" and dtype != torch.float32
    c = torch.randn(m, n, device="cuda", dtype=torch.float32 if f32 else dtype)
    if r["op"] == "gemm+C":
        if f32:
            return time_us(lambda: c.add_(torch.mm(a, b, out_dtype=torch.float32)), iters)
        return time_us(lambda: torch.addmm(c, a, b, out=c), iters)
    if f32:
        return time_us(lambda: torch.mm(a, b, out_dtype=torch.float32, out=c), iters)
    return time_us(lambda: torch.mm(a, b, out=c), iters)


def unfused_us(r, dtype, iters):
    """The GEMM and, as separate PyTorch kernels, the rest of what its epilogue writes: the time a
    program without the fused epilogue spends on the same output."""
    op = r["op"]
    if op in ("gemm", "gemm+C"):
        return reference_us(r, dtype, iters)
    m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
    a = torch.randn(k, m, device="cuda", dtype=dtype).t() if r["ta"] else torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t() if r["tb"] else torch.randn(k, n, device="cuda", dtype=dtype)
    bias = torch.randn(n, device="cuda", dtype=dtype)
    h = torch.randn(m, n, device="cuda", dtype=dtype)
    out = torch.empty(m, n, device="cuda", dtype=dtype)
    aten = torch.ops.aten
    if op == "gemm+bias":
        return time_us(lambda: torch.addmm(bias, a, b, out=out), iters)
    if op == "gemm+bias+GELU":  # pre-activation kept for the backward, as the epilogue's aux
        return time_us(lambda: (torch.addmm(bias, a, b, out=h), aten.gelu.out(h, approximate="tanh", out=out)), iters)
    if op == "gemm*GELU'":  # dL/d(pre-activation) from the GEMM's product and the kept pre-activation
        dg = torch.empty(m, n, device="cuda", dtype=dtype)
        return time_us(lambda: (torch.mm(a, b, out=dg),
                                aten.gelu_backward.grad_input(dg, h, approximate="tanh", grad_input=out)), iters)
    if op == "gemm+bias+residual":
        res = torch.randn(m, n, device="cuda", dtype=dtype)
        return time_us(lambda: (torch.addmm(bias, a, b, out=out), out.add_(res)), iters)
    raise TypeError(f"no unfused form of {op}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("bench_log", help="the output of `dpscale bench` on a GPU")
    ap.add_argument("--dtype", choices=["bf16", "f16", "f32"], default="bf16", help="the operands' dtype (bench's)")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    rows = shapes(a.bench_log)
    if not rows:
        sys.exit(f"{a.bench_log}: no table of GEMMs by shape (run `dpscale bench` of this version on a GPU)")
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[a.dtype]
    torch.backends.cuda.matmul.allow_tf32 = False
    print(f"{'op':<20s} {'tA':>2s} {'tB':>2s} {'m':>6s} {'n':>6s} {'k':>6s} {'C':<4s} {'calls':>6s} "
          f"{'step TF/s':>9s} {'alone TF/s':>10s} {'cuBLAS TF/s':>11s} {'step/cuBLAS':>11s} "
          f"{'unfused us':>10s} {'step/unfused':>12s}")
    worst, t_step, t_ref = None, 0.0, 0.0
    worst_u, t_unf = None, 0.0
    for r in rows:
        flop = 2.0 * r["m"] * r["n"] * r["k"]
        try:
            ref = reference_us(r, dtype, a.iters)
        except (RuntimeError, TypeError) as e:  # an out_dtype this PyTorch lacks, memory
            print(f"{r['op']:<20s} m={int(r['m'])} n={int(r['n'])} k={int(r['k'])}: no reference ({e})")
            continue
        try:
            unf = unfused_us(r, dtype, a.iters)
        except (RuntimeError, TypeError) as e:
            print(f"{r['op']:<20s} m={int(r['m'])} n={int(r['n'])} k={int(r['k'])}: no unfused reference ({e})")
            unf = ref
        ratio, ratio_u = ref / r["us"], unf / r["us"]
        worst = ratio if worst is None else min(worst, ratio)
        worst_u = ratio_u if worst_u is None else min(worst_u, ratio_u)
        t_step += r["us"] * r["calls"]
        t_ref += ref * r["calls"]
        t_unf += unf * r["calls"]
        print(f"{r['op']:<20s} {int(r['ta']):2d} {int(r['tb']):2d} {int(r['m']):6d} {int(r['n']):6d} {int(r['k']):6d} "
              f"{r['c']:<4s} {r['calls']:6.1f} {flop / r['us'] / 1e6:9.1f} {flop / r['alone'] / 1e6:10.1f} "
              f"{flop / ref / 1e6:11.1f} {ratio:11.3f} {unf:10.1f} {ratio_u:12.3f}")
    if worst is None:
        sys.exit("no shape could be timed")
    print(f"GEMM_SHAPES_REFERENCE worst={worst:.3f} weighted={t_ref / t_step:.3f} shapes={len(rows)} "
          f"step_ms={t_step / 1e3:.3f} cublas_ms={t_ref / 1e3:.3f} unfused_worst={worst_u:.3f} "
          f"unfused_weighted={t_unf / t_step:.3f} unfused_ms={t_unf / 1e3:.3f}")


if __name__ == "__main__":
    main()

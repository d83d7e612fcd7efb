#!/usr/bin/env bash
# bench_mlp.sh — the MLP's step and scaling on the 2 x H200 machine, beside PyTorch DDP:
# dpscale's honest 1-GPU baseline and its faster step, the bit-identity of the overlapped
# update and of ZeRO-1, the interference knobs, and the PyTorch DDP reference
# (tests/gpu/ddp_reference.py) measured on the same machine, so that the "framework DDP"
# figures are measured, not quoted. The bars, each printed with PASS/FAIL at the end:
# 1: M1's 1-GPU step <= 11.9 ms and <= 0.9 x the framework's; 2: M1 over NVLink >= 0.95
# at 2 GPUs; 3: M1 at batch 16384 through host memory >= 0.93; 4: a small fp32 model
# (5 x 1024) over NVLink >= 0.85.
# All sections take more than one 10-minute device call: run them in groups
# (results/h200x2-mlp-step-vs-ddp/ holds the calls).
# Labels with "pcie" (D-pcie-*, F-M1-pcie-*) keep the names of the files in results/: the
# path through host memory, which was comm.path = pcie before schema 6 and is host now.
#
#   tests/gpu/bench_mlp.sh OUTDIR [SECTIONS]      from the repo root, bin/dpscale prebuilt
#   e.g. in a device call:   tests/gpu/bench_mlp.sh "$OUT" BGAF     (~5 min)
#                            tests/gpu/bench_mlp.sh "$OUT" DEC      (~6 min)
#
# Sections (SECTIONS = letters of these, run in the order given, default all; each dpscale
# launch is 2 MPI ranks, sweep 1,2, so every file holds the 1-GPU baseline and the 2-GPU
# run; G is 1 rank):
#   A  bars 1+2: M1 over NVLink, allreduce in fp32 / in the compute dtype, bf16 gradients,
#      with and without the sharded optimizer (6 launches)
#   B  bit-identity: a small M1 with overlap_update on vs off, and ZeRO-1; the params hashes
#      of n=1 and n=2 must be equal between the files; NCCL lines of a 1-GPU launch (0)
#   C  the interference knobs on M1 NVLink, bf16 gradients: GEMM SM margin, NCCL CTAs,
#      update priority, registered and symmetric buffers, CTA policies, bucket sizes (11)
#   D  bar 3: M1 at batch 16384 per GPU through host memory (comm.path = host), plain,
#      sharded, bf16 gradients (3)
#   E  bar 4: a small fp32 model (5 x 1024) over NVLink, three bucket layouts (3)
#   F  the PyTorch DDP reference on 1 and on 2 GPUs: M1 bf16, M1 autocast, the bar-4 model
#      in fp32, M1 at batch 16384 with NCCL_P2P_DISABLE=1 (8 torchrun launches; F_QUICK=1:
#      the two M1 ones)
#   G  the 1-GPU step of M1: overlapped update, autotuning, priority, SM margin, bf16
#      gradients, cuBLASLt epilogues (1-rank launches), then `dpscale bench`; G_QUICK=1 runs
#      only the bf16-gradient launches
#   H  ZeRO-1 on symmetric buffers with the zero-CTA policy (bars 2-4) and its bit-identity
#   I  layer 0's weight gradient in row blocks (comm.last_layer_chunks)
#   J  bars 3 and 4 again: NCCL's host-memory (SHM) copies on copy engines
#      (NCCL_SHM_USE_CUDA_MEMCPY), NCCL_BUFFSIZE; symmetric buffers, CTAs, LL protocols and
#      bucket sizes for the small model (DP_ENV="VAR=VALUE ..." sets NCCL variables for one launch)
#   K  the four bars once more with the later changes (forward epilogue, bf16
#      optimizer state, comm.shm_copy = ce, robust autotuning), key runs twice; K_PARTS picks
#      bars (default 1234)
#   L  bar 4 explored: GEMM SM margin, LL with 2-4 NCCL CTAs, priorities, buckets, the GPUs
#      in the other order (does the slower rank follow the GPU?), registration, autotuning
#   M  bar 1 in the framework's own configuration, pure bf16 (train.master_weights = off),
#      against the fp32-master step, twice; its bit-identity (overlap, ZeRO-1)
#   then ALL RUNS (one table), CHECKS (section B) and BARS (each bar with PASS/FAIL).
#
# Writes into OUTDIR, no subfolders, three files (the device call brings back 8 at most,
# 16 MiB each):
#   bench-mlp.log        everything printed: each command line, its exit status and wall
#                        time, dpscale's own tables, the per-run lines, the summary
#   bench-mlp.tsv        one row per run and rank count (dpscale and DDP), ms and ratios
#   bench-mlp-h5.tar     every dpscale result file, appended as each launch ends (so a call
#                        cut short keeps what was done); B's saved parameters are left out
#                        (params_hash stays); gzipped to .tar.gz only if over 15 MiB
# Exit status: 0 when every launch exited 0, else 1. The bars are verdicts in the log, not
# in the status. One failing launch never stops the others (no `set -e`).
#
# Time budget (the device runs a command for 10 minutes at most): a launch of M1 is about
# 10-20 s (mpirun, CUDA and NCCL start, then for n=1 and n=2: 5 + 30 steps of ~10-15 ms,
# three times: the step, the step without allreduce, the allreduce alone); D about 25 s;
# B and E about 10 s; a torchrun of the reference about 10-15 s. About 21 x 15 s + 8 x 12 s
# = ~7 min in all. A guard keeps it inside BENCH_BUDGET_S (default 520 s): a launch gets
# at most what is left (and BENCH_RUN_TIMEOUT_S, default 120 s), and once less than 20 s
# is left the remaining launches are logged as SKIPPED and the summary and tar still run.
# Lower BENCH_BUDGET_S when the same device command does other work before this script.
#
# Other knobs (environment): DPSCALE (default bin/dpscale), PYTHON (default python3, needs
# numpy and h5py; torch for F), TORCHRUN (default "python3 -m torch.distributed.run", the
# same launcher as `torchrun`).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

usage="usage: tests/gpu/bench_mlp.sh OUTDIR [SECTIONS, letters of ABCDEFGHIJKLM; default ABCDEFGHIJKLM]"
if [ $# -lt 1 ] || [ -z "$1" ]; then echo "$usage" >&2; exit 2; fi
SECTIONS=${2:-ABCDEFGHIJKLM}
if ! [[ $SECTIONS =~ ^[A-M]+$ ]]; then echo "$usage; got '$SECTIONS'" >&2; exit 2; fi
for s in A B C D E F G H I J K L M; do
    if [[ $SECTIONS == *$s*$s* ]]; then echo "$usage; section $s is named twice in '$SECTIONS'" >&2; exit 2; fi
done
mkdir -p "$1" || exit 2
OUTDIR=$(cd "$1" && pwd) || exit 2
LOG=$OUTDIR/bench-mlp.log
TSV=$OUTDIR/bench-mlp.tsv
TAR=$OUTDIR/bench-mlp-h5.tar

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
# NVLink multicast stays off on the lent machines (it can take the host's GPUs out of service).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
DPSCALE=${DPSCALE:-bin/dpscale}
PY=${PYTHON:-python3}
read -r -a TORCHRUN <<<"${TORCHRUN:-python3 -m torch.distributed.run}"
BUDGET_S=${BENCH_BUDGET_S:-520}
RUN_TIMEOUT_S=${BENCH_RUN_TIMEOUT_S:-120}
RESERVE_S=25 # kept for the summary and the tar at the end

TMPD=$(mktemp -d "${TMPDIR:-/tmp}/bench-mlp.XXXXXX") || exit 2
trap 'rm -rf "$TMPD"' EXIT
H5DIR=$TMPD/h5      # dpscale writes here; only the tar goes to OUTDIR
PACKDIR=$TMPD/pack  # the copies that go into the tar
CHECKS=$TMPD/checks.txt
HELPER=$TMPD/bench_mlp_helper.py
mkdir -p "$H5DIR" "$PACKDIR" && : >"$CHECKS" || exit 2

# ---- the figures out of the result files: one small python, written once -------------
cat >"$HELPER" <<'PYEOF'
"""bench_mlp helper: table lines from dpscale's /summary and from DDP_REFERENCE lines,
the params_hash comparison of section B, the copy for the tar, and the bars.
  init TSV | row LABEL FILE.h5 TSV | ddp LABEL OUTPUT.txt TSV | hash ON.h5 OFF.h5
  pack SRC.h5 DST.h5 | bars TSV"""
import math
import re
import shutil
import sys

NAN = float("nan")
COLS = ["label", "n", "fwd_ms", "bwd_ms", "exposed_ms", "update_ms", "step_ms", "p05_ms", "p95_ms",
        "efficiency", "samples_per_s", "compute_only_ms", "allreduce_alone_ms", "loss_interference",
        "loss_comm", "source"]
HEAD = (f"  {'label':<24s} {'n':>2s} {'fwd':>8s} {'bwd':>8s} {'exposed':>8s} {'update':>8s} {'step_ms':>8s} "
        f"{'effic':>6s} | {'samples/s':>10s} {'comp_only':>9s} {'ar_alone':>8s} {'l_interf':>8s} {'l_comm':>7s}")


def num(v, spec):
    """v formatted by spec; a missing value (None, NaN) as '-', as wide as spec says."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        width = re.match(r"\d*", spec).group()
        return "-".rjust(int(width)) if width else "-"
    return format(v, spec)


def line(r):
    return (f"  {r['label']:<24s} {r['n']:>2d} {num(r['fwd_ms'], '8.3f')} {num(r['bwd_ms'], '8.3f')} "
            f"{num(r['exposed_ms'], '8.3f')} {num(r['update_ms'], '8.3f')} {num(r['step_ms'], '8.3f')} "
            f"{num(r['efficiency'], '6.3f')} | {num(r['samples_per_s'], '10.1f')} {num(r['compute_only_ms'], '9.3f')} "
            f"{num(r['allreduce_alone_ms'], '8.3f')} {num(r['loss_interference'], '8.4f')} {num(r['loss_comm'], '7.4f')}")


def tsv_append(path, recs):
    with open(path, "a") as t:
        for r in recs:
            t.write("\t".join(str(r[c]) if isinstance(r[c], (str, int)) else f"{r[c]:.6g}" for c in COLS) + "\n")


def tsv_read(path):
    rows = []
    try:
        with open(path) as t:
            head = t.readline().rstrip("\n").split("\t")
            for ln in t:
                v = dict(zip(head, ln.rstrip("\n").split("\t")))
                r = {c: float(v.get(c, "nan")) for c in COLS if c not in ("label", "n", "source")}
                r.update(label=v["label"], n=int(v["n"]), source=v.get("source", ""))
                rows.append(r)
    except OSError:
        pass
    return rows


def cmd_init(tsv):
    with open(tsv, "w") as t:
        t.write("\t".join(COLS) + "\n")


def cmd_row(label, path, tsv):
    import h5py
    with h5py.File(path, "r") as f:
        if "summary" not in f:
            print(f"   {label}: no /summary in {path}")
            return 1
        s = f["summary"][()]
        enq = []  # the host's time to enqueue a step, per run: launch-bound when it reaches the step
        f.visititems(lambda name, o: enq.append((int(o.attrs.get("nranks", -1)), float(o.attrs["host_enqueue_s"])))
                     if "host_enqueue_s" in getattr(o, "attrs", {}) else None)
    names = s.dtype.names or ()

    def fld(row, name, scale=1.0):  # absent fields (an older or newer schema) read as NaN
        try:
            return float(row[name]) * scale if name in names else NAN
        except (TypeError, ValueError):
            return NAN

    recs = []
    for row in s:
        recs.append(dict(label=label, n=int(row["nranks"]) if "nranks" in names else -1,
                         fwd_ms=fld(row, "forward_median_s", 1e3), bwd_ms=fld(row, "backward_median_s", 1e3),
                         exposed_ms=fld(row, "comm_exposed_median_s", 1e3), update_ms=fld(row, "update_median_s", 1e3),
                         step_ms=fld(row, "step_median_s", 1e3), p05_ms=fld(row, "step_p05_s", 1e3),
                         p95_ms=fld(row, "step_p95_s", 1e3), efficiency=fld(row, "efficiency"),
                         samples_per_s=fld(row, "samples_per_s"), compute_only_ms=fld(row, "compute_only_s", 1e3),
                         allreduce_alone_ms=fld(row, "allreduce_alone_s", 1e3),
                         loss_interference=fld(row, "loss_interference"), loss_comm=fld(row, "loss_comm"),
                         source="dpscale"))
    print(HEAD)
    for r in recs:
        print(line(r))
    if enq:
        print("   host enqueue per step (shortest): " + ", ".join(f"n={n}: {t * 1e3:.3f} ms" for n, t in sorted(enq)))
    tsv_append(tsv, recs)
    return 0


def cmd_ddp(label, output, tsv):
    try:
        with open(output, errors="replace") as f:
            found = [ln for ln in f if "DDP_REFERENCE " in ln]
    except OSError:
        found = []
    if not found:
        print(f"   {label}: no DDP_REFERENCE line in its output")
        return 1
    kv = dict(re.findall(r"(\w+)=(\S+)", found[-1][found[-1].index("DDP_REFERENCE "):]))
    world, step = int(kv["world"]), float(kv["step_ms"])
    eff = 1.0 if world == 1 else NAN
    if world > 1:  # weak scaling: efficiency = step(1) / step(N), the 1-GPU run of the same label
        one = [r for r in tsv_read(tsv) if r["label"] == label and r["n"] == 1 and r["source"] == "ddp"]
        if one:
            eff = one[-1]["step_ms"] / step
    r = dict(label=label, n=world, fwd_ms=NAN, bwd_ms=NAN, exposed_ms=NAN, update_ms=NAN, step_ms=step,
             p05_ms=float(kv.get("p05_ms", "nan")), p95_ms=float(kv.get("p95_ms", "nan")), efficiency=eff,
             samples_per_s=float(kv.get("samples_per_s", "nan")), compute_only_ms=NAN, allreduce_alone_ms=NAN,
             loss_interference=NAN, loss_comm=NAN, source="ddp")
    print(HEAD)
    print(line(r))
    if world > 1:
        print(f"   {label}: reference efficiency step(1)/step({world}) = {num(eff, '.3f')}")
    tsv_append(tsv, [r])
    return 0


def hashes(path):
    """{last path component (n1, n2): [(group, hash)]} from every params_hash attribute in the file,
    wherever the schema puts the run groups (/runs/<transport>/nN or /runs/<library>/<path>/nN)."""
    import h5py
    import numpy as np
    found = {}

    def visit(name, obj):
        if "params_hash" in obj.attrs:
            v = obj.attrs["params_hash"]
            if isinstance(v, np.ndarray):
                v = v.reshape(-1)[0] if v.size else ""
            if isinstance(v, (bytes, np.bytes_)):
                v = v.decode(errors="replace")
            found.setdefault(name.rsplit("/", 1)[-1], []).append((name, str(v).strip("\0 ")))

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    return found


def params_diff(a, ga, b, gb):
    """max |a - b| of the saved parameters of two run groups; None when either was not saved."""
    import h5py
    import numpy as np
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        if ga + "/params" not in fa or gb + "/params" not in fb:
            return None
        pa, pb = fa[ga + "/params"][()], fb[gb + "/params"][()]
    if pa.shape != pb.shape:
        return float("inf")
    return float(np.max(np.abs(pa.astype(np.float64) - pb.astype(np.float64)))) if pa.size else 0.0


def cmd_hash(on, off):
    try:
        hon, hoff = hashes(on), hashes(off)
    except (OSError, KeyError) as e:
        print(f"FAIL B bit-identity: cannot read the two files ({e})")
        return 1
    ok = True
    for n in ("n1", "n2"):
        a, b = hon.get(n, []), hoff.get(n, [])
        if not a or not b:
            print(f"FAIL B bit-identity {n}: no params_hash for {n} in {'overlap_update=on' if not a else 'overlap_update=off'}")
            ok = False
            continue
        va, vb = sorted({h for _, h in a}), sorted({h for _, h in b})
        same = len(va) == 1 and va == vb
        diff = params_diff(on, a[0][0], off, b[0][0])
        extra = "" if diff is None else f"; saved params max |on - off| = {diff:.3e}"
        print(f"{'PASS' if same else 'FAIL'} B bit-identity {n}: overlap_update=on {','.join(va)} "
              f"{'==' if same else '!='} off {','.join(vb)} ({a[0][0]}){extra}")
        ok = ok and same
    return 0 if ok else 1


def copy_attrs(src, dst):
    for name in src.attrs:
        aid = src.attrs.get_id(name)
        try:
            dst.attrs.create(name, src.attrs[name], shape=aid.shape, dtype=aid.dtype)
        except Exception:  # noqa: BLE001 (a type h5py cannot re-create as it was: keep the value)
            dst.attrs[name] = src.attrs[name]


def copy_tree(src, dst, left_out):
    import h5py
    copy_attrs(src, dst)
    for name, obj in src.items():
        if isinstance(obj, h5py.Group):
            copy_tree(obj, dst.create_group(name), left_out)
        elif isinstance(obj, h5py.Dataset) and name == "params":
            left_out.append(obj.name)
        else:
            src.copy(obj, dst, name=name)


def cmd_pack(src, dst):
    """The result file as it is, or without its saved parameters (42 MB a run in section B)."""
    import h5py
    with h5py.File(src, "r") as fi:
        params = []
        fi.visititems(lambda n, o: params.append(n) if isinstance(o, h5py.Dataset) and n.rsplit("/", 1)[-1] == "params" else None)
    if not params:
        shutil.copyfile(src, dst)
        return 0
    left_out = []
    with h5py.File(src, "r") as fi, h5py.File(dst, "w") as fo:
        copy_tree(fi, fo, left_out)
        fo.attrs["archive_note"] = "copy for the archive: the saved parameters (params datasets) were left out; params_hash kept"
    print(f"   archived without {len(left_out)} params dataset(s): {', '.join(left_out)}")
    return 0


def cmd_bars(tsv):
    rows = tsv_read(tsv)
    print("\n== ALL RUNS (ms; dpscale rows from /summary, ddp rows from DDP_REFERENCE; effic of ddp = step(1)/step(2))")
    print(HEAD + "  source")
    for r in rows:
        print(line(r) + "  " + r["source"])

    def get(label, n, source):
        m = [r for r in rows if r["label"] == label and r["n"] == n and r["source"] == source]
        return m[-1] if m else None

    def best(pred, key, pick):
        m = [r for r in rows if pred(r) and not math.isnan(r[key])]
        return pick(m, key=lambda r: r[key]) if m else None

    def verdict(ok):
        return "NO DATA" if ok is None else ("PASS" if ok else "FAIL")

    def val(r, key):
        return NAN if r is None else r[key]

    def dp(r):
        return r is not None and r["source"] == "dpscale"

    print("\n== BARS")
    # bar 1: the honest 1-GPU baseline of M1 is fast: <= 11.9 ms and <= 0.9 x the framework's 1-GPU bf16 step
    b1 = best(lambda r: dp(r) and r["label"][0] in "AG" and r["n"] == 1, "step_ms", min)
    ddp1 = get("F-M1-bf16", 1, "ddp")
    s1, d1 = val(b1, "step_ms"), val(ddp1, "step_ms")
    ok_abs = None if b1 is None else s1 <= 11.9
    ok_ddp = None if b1 is None or ddp1 is None else s1 <= 0.9 * d1
    print(f"bar1  M1 1-GPU step, best of A and G (n=1): {num(s1, '.3f')} ms ({b1['label'] if b1 else '-'})")
    print(f"      vs 11.9 ms: {verdict(ok_abs)}")
    print(f"      vs 0.9 x DDP bf16 1-GPU step {num(d1, '.3f')} ms = {num(0.9 * d1, '.3f')} ms: {verdict(ok_ddp)}"
          f"  (DDP autocast 1-GPU: {num(val(get('F-M1-autocast', 1, 'ddp'), 'step_ms'), '.3f')} ms)")
    # bar 2: the 2-GPU efficiency of M1 over NVLink with the compute-dtype allreduce or the sharded optimizer
    b2 = best(lambda r: dp(r) and r["n"] == 2 and (r["label"].startswith("C") or r["label"].startswith("H-M1") or (
        r["label"].startswith("A") and ("compute" in r["label"] or "shard" in r["label"]))), "efficiency", max)
    e2 = val(b2, "efficiency")
    print(f"bar2  M1 NVLink 2-GPU efficiency, best of A (compute dtype or shard), C and H: {num(e2, '.3f')} "
          f"({b2['label'] if b2 else '-'}) vs 0.95: {verdict(None if b2 is None else e2 >= 0.95)}")
    print(f"      fp32 allreduce (A1-fp32): {num(val(get('A1-fp32', 2, 'dpscale'), 'efficiency'), '.3f')}; "
          f"DDP bf16: {num(val(get('F-M1-bf16', 2, 'ddp'), 'efficiency'), '.3f')}, "
          f"DDP autocast: {num(val(get('F-M1-autocast', 2, 'ddp'), 'efficiency'), '.3f')}")
    # bar 3: M1 at batch 16384 through host memory
    b3 = best(lambda r: dp(r) and r["label"].startswith("D") and r["n"] == 2, "efficiency", max)
    e3 = val(b3, "efficiency")
    print(f"bar3  M1 batch 16384 host-memory 2-GPU efficiency, best of D: {num(e3, '.3f')} ({b3['label'] if b3 else '-'}) "
          f"vs 0.93: {verdict(None if b3 is None else e3 >= 0.93)}; "
          f"DDP (NCCL_P2P_DISABLE=1): {num(val(get('F-M1-pcie-b16384', 2, 'ddp'), 'efficiency'), '.3f')}")
    # bar 4: the small fp32 model over NVLink
    b4 = best(lambda r: dp(r) and r["label"].startswith("E") and r["n"] == 2, "efficiency", max)
    e4 = val(b4, "efficiency")
    print(f"bar4  5 x 1024 fp32 NVLink 2-GPU efficiency, best of E: {num(e4, '.3f')} ({b4['label'] if b4 else '-'}) "
          f"vs 0.85: {verdict(None if b4 is None else e4 >= 0.85)}; "
          f"DDP fp32: {num(val(get('F-bar4-fp32', 2, 'ddp'), 'efficiency'), '.3f')}")
    return 0


def main(argv):
    cmds = {"init": (cmd_init, 1), "row": (cmd_row, 3), "ddp": (cmd_ddp, 3), "hash": (cmd_hash, 2),
            "pack": (cmd_pack, 2), "bars": (cmd_bars, 1)}
    if len(argv) < 2 or argv[1] not in cmds or len(argv) - 2 != cmds[argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        return cmds[argv[1]][0](*argv[2:])
    except Exception as e:  # noqa: BLE001 (one unreadable file must not stop the script)
        print(f"   bench_mlp helper {argv[1]}: {type(e).__name__}: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
PYEOF

# ---- the launches ------------------------------------------------------------------------
# M1, the GEMM-heavy MLP of these bars (9 x 8192, bf16), split so D can change the batch alone.
M1_MODEL=(--model.layers=9 --model.input_dim=8192 --model.hidden_dim=8192 --model.classes=1024 --train.precision=bf16)
M1=("${M1_MODEL[@]}" --train.batch_per_gpu=2048)
SHORT=(--train.iters=30 --train.warmup=5)

main() {
    local nfail=0 nskip=0 failed=()

    # run LABEL COMMAND...: one launch, its command line, exit status and wall time in the log;
    # never aborts the script. Returns the command's status (99: skipped, time budget spent).
    run() {
        local label=$1; shift
        local left=$((BUDGET_S - RESERVE_S - SECONDS))
        if ((left < 20)); then
            echo "== $label: SKIPPED, time budget spent (${SECONDS} s of ${BUDGET_S} s): $*"
            nskip=$((nskip + 1))
            return 99
        fi
        local limit=$((left < RUN_TIMEOUT_S ? left : RUN_TIMEOUT_S))
        echo
        echo "== $label [t=${SECONDS}s, limit ${limit}s]: $*"
        local t0 t1 rc
        t0=$(date +%s.%N)
        timeout -k 10 "$limit" "$@" </dev/null 2>&1 | tee "$TMPD/$label.out"
        rc=${PIPESTATUS[0]}
        t1=$(date +%s.%N)
        local wall
        wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
        if ((rc == 0)); then
            echo "== $label: exit 0, wall ${wall} s"
        else
            local why=""
            ((rc == 124 || rc == 137)) && why=" (timed out at ${limit} s)"
            echo "== $label: FAILED, exit ${rc}${why}, wall ${wall} s"
            nfail=$((nfail + 1))
            failed+=("$label")
        fi
        return "$rc"
    }

    # dp LABEL FLAGS...: dpscale on 2 ranks (sweep 1,2) into LABEL.h5; its table lines; into the tar.
    dp() {
        local label=$1; shift
        local h5=$H5DIR/$label.h5 rc
        rm -f "$h5"
        # $DP_ENV unquoted on purpose: zero or more VAR=VALUE words for env (NCCL knobs of section J)
        # shellcheck disable=SC2086
        run "$label" env ${DP_ENV:-} mpirun -np 2 --bind-to none "$DPSCALE" run --run.backend=cuda --run.sweep=1,2 \
            --run.output_dir="$H5DIR" --run.output="$label.h5" "$@"
        rc=$?
        if [ -f "$h5" ]; then
            "$PY" "$HELPER" row "$label" "$h5" "$TSV"
            if "$PY" "$HELPER" pack "$h5" "$PACKDIR/$label.h5"; then
                tar -rf "$TAR" -C "$PACKDIR" "$label.h5" && rm -f "$PACKDIR/$label.h5"
            fi
        elif ((rc != 99)); then
            echo "   $label: no result file"
        fi
        return "$rc"
    }

    # dp1 LABEL ARGS...: one dpscale launch on one GPU (the 1-GPU step alone).
    dp1() {
        local label=$1; shift
        local h5=$H5DIR/$label.h5 rc
        rm -f "$h5"
        run "$label" mpirun -np 1 --bind-to none "$DPSCALE" run --run.backend=cuda --run.sweep=1 \
            --run.output_dir="$H5DIR" --run.output="$label.h5" "$@"
        rc=$?
        [ -f "$h5" ] && "$PY" "$HELPER" row "$label" "$h5" "$TSV"
        return "$rc"
    }

    # ddp LABEL "VAR=VALUE ..." ARGS...: the PyTorch reference on 1 GPU, then on 2.
    ddp() {
        local label=$1 envs=$2 np; shift 2
        for np in 1 2; do
            # $envs unquoted on purpose: zero or more VAR=VALUE words for env
            # shellcheck disable=SC2086
            run "$label-n$np" env $envs "${TORCHRUN[@]}" --standalone --nproc_per_node="$np" \
                tests/gpu/ddp_reference.py "$@" && "$PY" "$HELPER" ddp "$label" "$TMPD/$label-n$np.out" "$TSV"
        done
    }

    echo "bench_mlp: sections $SECTIONS, output $OUTDIR, budget ${BUDGET_S} s, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
    git log -1 --oneline 2>/dev/null || true
    nvidia-smi -L 2>&1 || echo "nvidia-smi failed"
    [ -x "$DPSCALE" ] || echo "WARNING: $DPSCALE is missing or not executable: every dpscale launch will fail"
    echo "env: NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE NCCL_P2P_DISABLE=${NCCL_P2P_DISABLE:-unset} python=$PY torchrun=${TORCHRUN[*]}"
    rm -f "$TAR" "$TAR.gz"
    "$PY" "$HELPER" init "$TSV" || echo "WARNING: $PY cannot run the helper (numpy, h5py?): no figures will be extracted"

    section_A() {
        echo; echo "######## A. bars 1+2: M1 over NVLink, allreduce dtype and sharded optimizer"
        dp A1-fp32 "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=fp32
        dp A2-compute "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute
        dp A3-compute-shard "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute --comm.shard_optimizer=on
        dp A4-fp32-shard "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=fp32 --comm.shard_optimizer=on
        # gradients written in bf16 by backward: no cast, half the bytes into the optimizer
        dp A5-grad16 "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute --train.grad_dtype=compute
        dp A6-grad16-shard "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute \
            --train.grad_dtype=compute --comm.shard_optimizer=on
    }

    section_B() {
        echo; echo "######## B. bit-identity: overlap_update on vs off, the same parameters at n=1 and at n=2"
        local small=(--model.layers=3 --model.input_dim=2048 --model.hidden_dim=2048 --model.classes=1024
            --train.precision=bf16 --train.batch_per_gpu=512 "${SHORT[@]}" --comm.path=nvlink
            --comm.allreduce_dtype=compute --run.save_params=on)
        # one GEMM algorithm per shape for both launches: autotuning may pick another by timing noise
        small+=(--train.gemm_autotune=off)
        dp B-overlap-on "${small[@]}" --train.overlap_update=on
        dp B-overlap-off "${small[@]}" --train.overlap_update=off
        "$PY" "$HELPER" hash "$H5DIR/B-overlap-on.h5" "$H5DIR/B-overlap-off.h5" | tee -a "$CHECKS"
        dp B-shard-on "${small[@]}" --comm.shard_optimizer=on
        "$PY" "$HELPER" hash "$H5DIR/B-overlap-on.h5" "$H5DIR/B-shard-on.h5" | tee -a "$CHECKS"
        echo "NCCL INFO lines of a 1-GPU launch (0: no communicator): $(NCCL_DEBUG=INFO mpirun -np 1 --bind-to none \
            "$DPSCALE" run --run.backend=cuda --run.sweep=1 "${small[@]}" --run.output_dir="$TMPD" 2>&1 | grep -c 'NCCL INFO')" \
            | tee -a "$CHECKS"
    }

    section_C() {
        echo; echo "######## C. interference knobs on M1, NVLink, compute-dtype allreduce"
        local c=("${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute --train.grad_dtype=compute)
        dp C-margin8 "${c[@]}" --train.gemm_sm_margin=8
        dp C-margin16 "${c[@]}" --train.gemm_sm_margin=16
        dp C-margin16-ctas16 "${c[@]}" --train.gemm_sm_margin=16 --comm.nccl_max_ctas=16
        dp C-ctas8 "${c[@]}" --comm.nccl_max_ctas=8
        dp C-update-high "${c[@]}" --train.update_priority=high
        dp C-shard-symmetric-zero "${c[@]}" --comm.shard_optimizer=on --comm.symmetric=on --comm.cta_policy=zero
        dp C-register-cta-zero "${c[@]}" --comm.register=on --comm.cta_policy=zero
        dp C-symmetric "${c[@]}" --comm.symmetric=on
        dp C-cta-efficiency "${c[@]}" --comm.cta_policy=efficiency
        dp C-bucket50-first1 "${c[@]}" --comm.bucket_mb=50 --comm.first_bucket_mb=1
        dp C-bucket12.5-first4 "${c[@]}" --comm.bucket_mb=12.5 --comm.first_bucket_mb=4
    }

    section_D() {
        echo; echo "######## D. bar 3: M1 at batch 16384 per GPU through host memory"
        local d=("${M1_MODEL[@]}" --train.batch_per_gpu=16384 --comm.path=host --comm.allreduce_dtype=compute
            --train.iters=10 --train.warmup=2)
        dp D-pcie-b16384 "${d[@]}"
        dp D-pcie-b16384-shard "${d[@]}" --comm.shard_optimizer=on
        dp D-pcie-b16384-grad16 "${d[@]}" --train.grad_dtype=compute
    }

    section_E() {
        echo; echo "######## E. bar 4: 5 x 1024 fp32 over NVLink, bucket layouts"
        local e=(--model.layers=5 --model.input_dim=1024 --model.hidden_dim=1024 --model.classes=1024
            --train.precision=fp32 --train.batch_per_gpu=256 --comm.path=nvlink --train.iters=200 --train.warmup=20)
        dp E-default "${e[@]}"
        dp E-bucket4-first1 "${e[@]}" --comm.bucket_mb=4 --comm.first_bucket_mb=1
        dp E-bucket2 "${e[@]}" --comm.bucket_mb=2
    }

    section_G() {
        echo; echo "######## G. the 1-GPU step of M1: overlapped update, GEMM autotuning, priorities, SM margin"
        if [ -z "${G_QUICK:-}" ]; then  # G_QUICK=1: only the bf16-gradient runs (the fastest step)
            dp1 G-default "${M1[@]}" "${SHORT[@]}"
            dp1 G-overlap-off "${M1[@]}" "${SHORT[@]}" --train.overlap_update=off
            dp1 G-autotune-off "${M1[@]}" "${SHORT[@]}" --train.gemm_autotune=off
            dp1 G-autotune-off-overlap-off "${M1[@]}" "${SHORT[@]}" --train.gemm_autotune=off --train.overlap_update=off
        fi
        dp1 G-grad16 "${M1[@]}" "${SHORT[@]}" --train.grad_dtype=compute --comm.allreduce_dtype=compute
        dp1 G-grad16-overlap-off "${M1[@]}" "${SHORT[@]}" --train.grad_dtype=compute --comm.allreduce_dtype=compute \
            --train.overlap_update=off
        [ -z "${G_QUICK:-}" ] && dp1 G-grad16-update-high "${M1[@]}" "${SHORT[@]}" --train.grad_dtype=compute \
            --comm.allreduce_dtype=compute --train.update_priority=high
        dp1 G-grad16-epilogue "${M1[@]}" "${SHORT[@]}" --train.grad_dtype=compute --comm.allreduce_dtype=compute \
            --train.gemm_epilogue=on
        dp1 G-grad16-epilogue-overlap-off "${M1[@]}" "${SHORT[@]}" --train.grad_dtype=compute \
            --comm.allreduce_dtype=compute --train.gemm_epilogue=on --train.overlap_update=off
        "$DPSCALE" bench --run.backend=cuda "${M1[@]}" "${SHORT[@]}" 2>&1 | tail -12
    }

    section_H() {
        echo; echo "######## H. ZeRO-1 with symmetric buffers and NCCL's zero-CTA policy: bars 2-4, and its bit-identity"
        local z=(--comm.shard_optimizer=on --comm.symmetric=on --comm.cta_policy=zero)
        dp H-M1-grad16-zero "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute \
            --train.grad_dtype=compute "${z[@]}"
        dp H-M1-compute-zero "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute "${z[@]}"
        dp H-M1-fp32-zero "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=fp32 "${z[@]}"
        local small=(--model.layers=3 --model.input_dim=2048 --model.hidden_dim=2048 --model.classes=1024
            --train.precision=bf16 --train.batch_per_gpu=512 "${SHORT[@]}" --comm.path=nvlink
            --comm.allreduce_dtype=compute --train.grad_dtype=compute --train.gemm_autotune=off)
        dp H-small-plain "${small[@]}"
        dp H-small-zero "${small[@]}" "${z[@]}"
        "$PY" "$HELPER" hash "$H5DIR/H-small-plain.h5" "$H5DIR/H-small-zero.h5" | sed 's/overlap_update=on/plain/; s/== off/== sharded+symmetric+zero/' | tee -a "$CHECKS"
        dp D-pcie-b16384-grad16-shard "${M1_MODEL[@]}" --train.batch_per_gpu=16384 --comm.path=host \
            --comm.allreduce_dtype=compute --train.grad_dtype=compute --comm.shard_optimizer=on --train.iters=10 --train.warmup=2
        local e=(--model.layers=5 --model.input_dim=1024 --model.hidden_dim=1024 --model.classes=1024
            --train.precision=fp32 --train.batch_per_gpu=256 --comm.path=nvlink --train.iters=200 --train.warmup=20)
        dp E-bucket2-zero "${e[@]}" --comm.bucket_mb=2 "${z[@]}"
        dp E-bucket1 "${e[@]}" --comm.bucket_mb=1 --comm.first_bucket_mb=0.5
    }

    section_I() {
        echo; echo "######## I. layer 0's weight gradient in row blocks (comm.last_layer_chunks): the exposed tail"
        local d=("${M1_MODEL[@]}" --train.batch_per_gpu=16384 --comm.path=host --comm.allreduce_dtype=compute
            --train.grad_dtype=compute --train.iters=10 --train.warmup=2)
        dp D-pcie-b16384-grad16-again "${d[@]}"
        dp D-pcie-b16384-grad16-chunks4 "${d[@]}" --comm.last_layer_chunks=4
        dp D-pcie-b16384-grad16-chunks8 "${d[@]}" --comm.last_layer_chunks=8
        dp H-M1-grad16-zero-chunks4 "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute \
            --train.grad_dtype=compute --comm.shard_optimizer=on --comm.symmetric=on --comm.cta_policy=zero \
            --comm.last_layer_chunks=4
        dp A5-grad16-chunks4 "${M1[@]}" "${SHORT[@]}" --comm.path=nvlink --comm.allreduce_dtype=compute \
            --train.grad_dtype=compute --comm.last_layer_chunks=4
        local e=(--model.layers=5 --model.input_dim=1024 --model.hidden_dim=1024 --model.classes=1024
            --train.precision=fp32 --train.batch_per_gpu=256 --comm.path=nvlink --train.iters=200 --train.warmup=20)
        dp E-bucket1-chunks4 "${e[@]}" --comm.bucket_mb=1 --comm.first_bucket_mb=0.5 --comm.last_layer_chunks=4
        dp E-bucket2-chunks4 "${e[@]}" --comm.bucket_mb=2 --comm.last_layer_chunks=4
    }

    section_F() {
        echo; echo "######## F. the PyTorch DDP reference (tests/gpu/ddp_reference.py), 1 and 2 GPUs"
        local m1=(--layers 9 --input-dim 8192 --hidden-dim 8192 --classes 1024)
        ddp F-M1-bf16 "" "${m1[@]}" --batch 2048 --mode bf16
        ddp F-M1-autocast "" "${m1[@]}" --batch 2048 --mode autocast
        [ -n "${F_QUICK:-}" ] && return  # F_QUICK=1: M1 only
        ddp F-bar4-fp32 "" --layers 5 --input-dim 1024 --hidden-dim 1024 --classes 1024 --batch 256 --mode fp32 \
            --iters 200 --warmup 20
        ddp F-M1-pcie-b16384 "NCCL_P2P_DISABLE=1" "${m1[@]}" --batch 16384 --mode bf16 --iters 10 --warmup 2
    }

    section_J() {
        echo; echo "######## J. bars 3 and 4 once more: NCCL's host-memory copies on copy engines, small-message knobs"
        local d=("${M1_MODEL[@]}" --train.batch_per_gpu=16384 --comm.path=host --comm.allreduce_dtype=compute
            --train.grad_dtype=compute --train.iters=10 --train.warmup=2)
        dp D-pcie-b16384-grad16-chunks8-again "${d[@]}" --comm.last_layer_chunks=8
        DP_ENV="NCCL_SHM_USE_CUDA_MEMCPY=1" dp D-pcie-b16384-grad16-chunks8-ce "${d[@]}" --comm.last_layer_chunks=8
        DP_ENV="NCCL_SHM_USE_CUDA_MEMCPY=1 NCCL_SHM_MEMCPY_MODE=3" dp D-pcie-b16384-grad16-chunks8-ce3 "${d[@]}" \
            --comm.last_layer_chunks=8
        DP_ENV="NCCL_SHM_USE_CUDA_MEMCPY=1" dp D-pcie-b16384-grad16-shard-ce "${d[@]}" --comm.shard_optimizer=on
        DP_ENV="NCCL_BUFFSIZE=16777216" dp D-pcie-b16384-grad16-chunks8-buf16 "${d[@]}" --comm.last_layer_chunks=8
        local e=(--model.layers=5 --model.input_dim=1024 --model.hidden_dim=1024 --model.classes=1024
            --train.precision=fp32 --train.batch_per_gpu=256 --comm.path=nvlink --train.iters=200 --train.warmup=20)
        dp E-bucket2-again "${e[@]}" --comm.bucket_mb=2
        dp E-bucket2-symmetric "${e[@]}" --comm.bucket_mb=2 --comm.symmetric=on
        dp E-bucket2-ctas8 "${e[@]}" --comm.bucket_mb=2 --comm.nccl_max_ctas=8
        DP_ENV="NCCL_PROTO=LL,LL128" dp E-bucket2-ll "${e[@]}" --comm.bucket_mb=2
        dp E-bucket3-autotune-off "${e[@]}" --comm.bucket_mb=3 --train.gemm_autotune=off
        dp E-bucket2-update-high "${e[@]}" --comm.bucket_mb=2 --train.update_priority=high
        echo "nsys: $(command -v nsys || echo none); ncu: $(command -v ncu || echo none)"
    }

    section_K() {
        echo; echo "######## K. the bars once more, with the later changes, each key run twice (K_PARTS=1234)"
        local parts=${K_PARTS:-1234} long=(--train.iters=60 --train.warmup=10) r
        local g16=(--train.grad_dtype=compute --comm.allreduce_dtype=compute)
        if [[ $parts == *1* ]]; then  # bar 1: M1 on 1 GPU
            for r in 1 2; do
                dp1 G-K-grad16-r$r "${M1[@]}" "${long[@]}" "${g16[@]}"
                dp1 G-K-grad16-epifwd-r$r "${M1[@]}" "${long[@]}" "${g16[@]}" --train.gemm_epilogue=forward
                dp1 G-K-grad16-epifwd-state16-r$r "${M1[@]}" "${long[@]}" "${g16[@]}" --train.gemm_epilogue=forward \
                    --train.optimizer_state=compute
                dp1 G-K-grad16-epifwd-state16-overlap-off-r$r "${M1[@]}" "${long[@]}" "${g16[@]}" \
                    --train.gemm_epilogue=forward --train.optimizer_state=compute --train.overlap_update=off
            done
        fi
        if [[ $parts == *2* ]]; then  # bar 2: M1 on 2 GPUs over NVLink; fp32 reported too
            local z=(--comm.shard_optimizer=on --comm.symmetric=on --comm.cta_policy=zero --comm.path=nvlink)
            dp H-K-M1-grad16-zero "${M1[@]}" "${long[@]}" "${g16[@]}" "${z[@]}"
            dp H-K-M1-grad16-zero-epifwd-state16 "${M1[@]}" "${long[@]}" "${g16[@]}" "${z[@]}" \
                --train.gemm_epilogue=forward --train.optimizer_state=compute
            dp A-K-M1-fp32-zero "${M1[@]}" "${long[@]}" --comm.allreduce_dtype=fp32 "${z[@]}"
            dp A-K-M1-fp32 "${M1[@]}" "${long[@]}" --comm.allreduce_dtype=fp32 --comm.path=nvlink
        fi
        if [[ $parts == *3* ]]; then  # bar 3: batch 16384 through host memory
            local d=("${M1_MODEL[@]}" --train.batch_per_gpu=16384 --comm.path=host "${g16[@]}" --train.iters=20
                --train.warmup=3 --comm.last_layer_chunks=8)
            for r in 1 2; do
                dp D-K-pcie-b16384-chunks8-sm-r$r "${d[@]}"
                dp D-K-pcie-b16384-chunks8-ce-r$r "${d[@]}" --comm.shm_copy=ce
            done
        fi
        if [[ $parts == *4* ]]; then  # bar 4: the small fp32 model over NVLink
            local e=(--model.layers=5 --model.input_dim=1024 --model.hidden_dim=1024 --model.classes=1024
                --train.precision=fp32 --train.batch_per_gpu=256 --comm.path=nvlink --train.iters=500 --train.warmup=50)
            for r in 1 2; do
                dp E-K-bucket2-r$r "${e[@]}" --comm.bucket_mb=2
                DP_ENV="NCCL_PROTO=LL,LL128" dp E-K-bucket2-ll-r$r "${e[@]}" --comm.bucket_mb=2
            done
            dp E-K-default "${e[@]}"
            dp E-K-bucket1 "${e[@]}" --comm.bucket_mb=1 --comm.first_bucket_mb=0.5
        fi
    }

    section_L() {
        echo; echo "######## L. bar 4 explored: SMs left to NCCL, fewer NCCL CTAs with LL, priorities, buckets, GPU order"
        local e=(--model.layers=5 --model.input_dim=1024 --model.hidden_dim=1024 --model.classes=1024
            --train.precision=fp32 --train.batch_per_gpu=256 --comm.path=nvlink --train.iters=500 --train.warmup=50
            --comm.bucket_mb=2)
        dp E-L-base "${e[@]}"
        DP_ENV="CUDA_VISIBLE_DEVICES=1,0" dp E-L-gpus-swapped "${e[@]}"
        dp E-L-margin16 "${e[@]}" --train.gemm_sm_margin=16
        dp E-L-margin48 "${e[@]}" --train.gemm_sm_margin=48
        DP_ENV="NCCL_PROTO=LL" dp E-L-ll-ctas4 "${e[@]}" --comm.nccl_max_ctas=4
        DP_ENV="NCCL_PROTO=LL" dp E-L-ll-ctas2 "${e[@]}" --comm.nccl_max_ctas=2
        dp E-L-update-high "${e[@]}" --train.update_priority=high
        dp E-L-overlap-update-off "${e[@]}" --train.overlap_update=off
        dp E-L-bucket9 "${e[@]}" --comm.bucket_mb=9 --comm.first_bucket_mb=4.5
        dp E-L-cta-efficiency "${e[@]}" --comm.cta_policy=efficiency
        dp E-L-register "${e[@]}" --comm.register=on
        dp E-L-autotune-off "${e[@]}" --train.gemm_autotune=off
    }

    section_M() {
        echo; echo "######## M. bar 1 in the framework's configuration: pure bf16 (train.master_weights = off), and its bit-identity"
        local long=(--train.iters=60 --train.warmup=10) r
        local g16=(--train.grad_dtype=compute --comm.allreduce_dtype=compute --train.gemm_epilogue=forward
            --train.optimizer_state=compute)
        for r in 1 2; do
            dp1 G-M-master-r$r "${M1[@]}" "${long[@]}" "${g16[@]}"
            dp1 G-M-pure-r$r "${M1[@]}" "${long[@]}" "${g16[@]}" --train.master_weights=off
            dp1 G-M-pure-overlap-off-r$r "${M1[@]}" "${long[@]}" "${g16[@]}" --train.master_weights=off \
                --train.overlap_update=off
        done
        dp H-M-M1-pure-zero "${M1[@]}" "${long[@]}" "${g16[@]}" --train.master_weights=off --comm.path=nvlink \
            --comm.shard_optimizer=on --comm.symmetric=on --comm.cta_policy=zero
        local small=(--model.layers=3 --model.input_dim=2048 --model.hidden_dim=2048 --model.classes=1024
            --train.precision=bf16 --train.batch_per_gpu=512 "${SHORT[@]}" --comm.path=nvlink --run.save_params=on
            --train.gemm_autotune=off "${g16[@]}" --train.master_weights=off)
        dp B-pure-overlap-on "${small[@]}" --train.overlap_update=on
        dp B-pure-overlap-off "${small[@]}" --train.overlap_update=off
        "$PY" "$HELPER" hash "$H5DIR/B-pure-overlap-on.h5" "$H5DIR/B-pure-overlap-off.h5" | sed 's/^/pure bf16: /' | tee -a "$CHECKS"
        dp B-pure-shard "${small[@]}" --comm.shard_optimizer=on
        "$PY" "$HELPER" hash "$H5DIR/B-pure-overlap-on.h5" "$H5DIR/B-pure-shard.h5" | sed 's/^/pure bf16, ZeRO-1 vs allreduce: /; s/== off/== sharded/' | tee -a "$CHECKS"
    }

    # The sections in the order given (ABCDEF by default; e.g. FABCDE measures the reference first).
    local i
    for ((i = 0; i < ${#SECTIONS}; i++)); do
        case ${SECTIONS:i:1} in
            A) section_A ;; B) section_B ;; C) section_C ;; D) section_D ;; E) section_E ;; F) section_F ;;
            G) section_G ;; H) section_H ;; I) section_I ;; J) section_J ;; K) section_K ;; L) section_L ;; M) section_M ;;
        esac
    done

    "$PY" "$HELPER" bars "$TSV"
    echo
    echo "== CHECKS"
    if [ -s "$CHECKS" ]; then cat "$CHECKS"; else echo "(section B not run)"; fi
    echo
    echo "== launches: $nfail failed${failed[*]:+: ${failed[*]}}; $nskip skipped for time; ${SECONDS} s in all"

    if [ -f "$TAR" ]; then
        local size
        size=$(stat -c %s "$TAR")
        echo "== $TAR: $(tar -tf "$TAR" | wc -l) result files, $size bytes"
        if ((size > 15 * 1024 * 1024)); then  # a file over 16 MiB does not come back from the device
            gzip -9 -f "$TAR" && echo "   over 15 MiB: compressed to $TAR.gz, $(stat -c %s "$TAR.gz") bytes"
        fi
    else
        echo "== no result files to archive"
    fi
    ((nfail == 0))
}

main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"

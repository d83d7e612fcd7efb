"""dpscale report on damaged result files. Copies of files of every
kind and schema (run, comm, topo, projection; schemas 1 to 5; from results/ and fresh)
get one seeded byte flip each, at every kind of place in an HDF5 file: the
superblock, object headers, attribute values, dataset values, the global heap that
holds variable-length strings, B-trees and local heaps, and the end. Each damaged file
is reported beside a good one, as tables (JSON), and unless they named it as unreadable
as the procurement document with its figures drawn by gnuplot and (one flip in four)
as a plot, and the report

- never crashes (exit status 0 or 1, never a signal) and never hangs (a deadline per call);
- never runs a command: the damaged file's name and a file's device and model names
  hold gnuplot and shell commands that would create pwned* files in the call's folder;
- still reports the good file of the same call, exactly as alone;
- either reports the damaged file exactly as the undamaged one, or names it on stderr
  as unreadable. Every file has checksums (dpscale writes them; the files of results/
  were sealed with `dpscale seal` on 2026-11-30), so every flip that changes what is
  reported must be named. A file without checksums is reported with a note on stderr
  instead: nothing in it can tell a changed byte.

The CI run takes one file of each kind and schema in results/ and 300 flips;
`make fuzz-report` every file and 3000 (DPSCALE_FUZZ_MUTATIONS, DPSCALE_FUZZ_SEED,
DPSCALE_FUZZ_ALL=1)."""
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import time
from collections import Counter, defaultdict

import h5py
import numpy as np
import pytest

from conftest import BINARY, ROOT, dpscale, edit_h5, run_tiny

MUTATIONS = int(os.environ.get("DPSCALE_FUZZ_MUTATIONS", "300"))
SEED = int(os.environ.get("DPSCALE_FUZZ_SEED", "15"))
EVERY_FILE = os.environ.get("DPSCALE_FUZZ_ALL") == "1"
CALL_TIMEOUT_S = 60  # per call; a file's own deadline is --file-timeout 5
# The damaged file's name in every call, and the strings of one file: were any to reach
# gnuplot or a shell unquoted, a pwned* file would appear in the call's folder.
NAME = "x'.system('touch pwned1').'`touch pwned2`$(touch pwned3).h5"
GOOD = "good.h5"
HOSTILE = "GPU'\nsystem('touch pwned4')\n#`touch pwned5`$(touch pwned6)"
PCIE_FIXTURE = ROOT / "tests/fixtures/topo-pcie-dual-socket-8gpu.txt"
CLASSES = ("superblock", "object header", "attribute value", "dataset value", "string heap", "index", "end")


def kind_of(path):
    with h5py.File(path, "r") as f:
        kind = ("projection" if "projection" in f else "run" if "summary" in f else "comm" if "collectives" in f
                else "topo" if "system/topology" in f else "other")
        return kind, int(f.attrs["schema_version"])


def seal(*paths):
    subprocess.run([BINARY, "seal", *paths], check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """(label, path) of every file to damage, each sealed, and the good file."""
    d = tmp_path_factory.mktemp("corpus")
    f, _ = run_tiny(2, d, "--sweep=1,2", name="run.h5")
    f.close()
    shutil.copy(d / "run.h5", d / GOOD)
    shutil.copy(d / "run.h5", d / "hostile.h5")
    with edit_h5(d / "hostile.h5") as f:
        f["system"].attrs["device_name"] = HOSTILE
        f["config"].attrs["model.name"] = HOSTILE
        f.attrs["system_label"] = HOSTILE
    seal(d / "hostile.h5")
    p = dpscale(2, "comm", "--backend=cpu", "--collective.min_mib=0.25", "--collective.max_mib=1",
                "--collective.iters=2", f"--run.output_dir={d}", "--run.output=comm.h5")
    assert p.returncode == 0, p.stderr
    p = dpscale(1, "topo", "--backend=cpu", f"--topo.fixture={PCIE_FIXTURE}", f"--run.output_dir={d}",
                "--run.output=topo.h5")
    assert p.returncode == 0, p.stderr
    p = subprocess.run([BINARY, "project", ROOT / "results/h200x2-comm-bound-pcie.h5", "--comm",
                        ROOT / "results/h200x2-comm-p2p-disabled.h5", "--output", d / "projection.h5"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    files = [(f"new {n}", d / f"{n}.h5") for n in ("run", "hostile", "comm", "topo", "projection")]
    # results/: one of each kind and schema (every one with DPSCALE_FUZZ_ALL)
    groups = defaultdict(list)
    for path in sorted(ROOT.glob("results/**/*.h5")):
        groups[kind_of(path)].append(path)
    rng = random.Random(SEED)
    for (kind, schema), paths in sorted(groups.items()):
        for i, path in enumerate(paths if EVERY_FILE else rng.sample(paths, 1)):
            copy = d / f"{kind}-{schema}-{i}.h5"
            shutil.copy(path, copy)
            files.append((f"{path.relative_to(ROOT)} ({kind}, schema {schema})", copy))
    return files, d / GOOD


def test_every_file_of_results_is_sealed():
    unsealed = []
    for path in sorted(ROOT.glob("results/**/*.h5")):
        with h5py.File(path, "r") as f:
            if "checksums" not in f.attrs:
                unsealed.append(str(path.relative_to(ROOT)))
    assert not unsealed, f"without checksums (seal them: bin/dpscale seal FILE): {unsealed}"


def regions(path):
    """Byte ranges of each class of place in the file (those it has)."""
    data = path.read_bytes()
    size = len(data)
    r = {c: [] for c in CLASSES}
    r["superblock"].append((0, min(96, size)))
    r["end"].append((max(0, size - 64), size))
    with h5py.File(path, "r") as f:
        objects = [f]
        f.visititems(lambda name, o: objects.append(o))
        for o in objects:
            info = h5py.h5o.get_info(o.id)
            header = (info.addr, min(size, info.addr + max(16, info.hdr.space.total)))
            r["object header"].append(header)
            for name in o.attrs:
                try:
                    v = o.attrs[name]
                except Exception:  # a type h5py does not read: its bytes are in the header anyway
                    continue
                values = [v] if isinstance(v, (str, bytes)) else list(np.ravel(v)) if isinstance(v, np.ndarray) else [v]
                for x in values[:8]:
                    pattern = x.encode() if isinstance(x, str) else x if isinstance(x, bytes) else np.asarray(x).tobytes()
                    if len(pattern) < 3:
                        continue
                    at = data.find(pattern)
                    if at >= 0:
                        r["attribute value"].append((at, at + len(pattern)))
            if isinstance(o, h5py.Dataset):
                offset, stored = o.id.get_offset(), o.id.get_storage_size()
                if offset is not None and stored > 0:
                    r["dataset value"].append((offset, min(size, offset + stored)))
    for signature, cls in ((b"GCOL", "string heap"), (b"TREE", "index"), (b"HEAP", "index"), (b"SNOD", "index")):
        at = data.find(signature)
        while at >= 0:
            end = at + 64
            if signature == b"GCOL":  # the collection's size follows its signature and version
                end = at + int.from_bytes(data[at + 8:at + 16], "little")
            r[cls].append((at, min(size, max(end, at + 16))))
            at = data.find(signature, at + 4)
    return data, {c: ranges for c, ranges in r.items() if ranges}


def call(folder, data, good, plot=False):
    """The report of NAME (these bytes) beside the good file, as JSON, as the document
    with its figures, and with `plot` as a plot too (gnuplot is the slow part): (json
    call, doc call, doc text, pwned files, plot call or None)."""
    folder.mkdir()
    (folder / NAME).write_bytes(data)
    os.link(good, folder / GOOD)
    common = ["--file-timeout", "5", NAME, GOOD]
    runs = []
    for args in (["--format", "json"], ["--doc", "out.md"]) + ((["--plot", "out.svg"],) if plot else ()):
        if runs and (runs[0] is None or named(runs[0]) is not None):
            runs.append(SKIPPED)  # the tables named it: the document and the plot leave it out just the same
            continue
        try:
            runs.append(subprocess.run([BINARY, "report", *args, *common], cwd=folder, capture_output=True,
                                       timeout=CALL_TIMEOUT_S))
        except subprocess.TimeoutExpired:
            runs.append(None)
    doc = (folder / "out.md").read_bytes() if (folder / "out.md").exists() else b""
    return runs[0], runs[1], doc, sorted(p.name for p in folder.glob("pwned*")), runs[2] if plot else None


# a call not made: the damaged file was named by the one before
SKIPPED = subprocess.CompletedProcess([], 0, b"", b"")


def named(p):
    """The reason the damaged file was named with on stderr, or None."""
    prefix = f"dpscale: error: {NAME}: "
    lines = [l for l in p.stderr.decode("utf-8", "replace").splitlines() if l.startswith(prefix)]
    return lines[0][len(prefix):] if lines else None


def sanitizer_errors(stderr):
    """ASan and UBSan reports whose innermost frame past the interceptor is dpscale's, not
    libhdf5's (HDF5 1.10 copies from wherever a damaged heap ID points: its own bug,
    which the child process contains)."""
    found = []
    for report in stderr.decode("utf-8", "replace").split("=================================================================")[1:]:
        frames = [l for l in report.splitlines() if l.strip().startswith("#")]
        first = next((f for f in frames if "sanitizer_common" not in f and "libsanitizer" not in f), "")
        if "libhdf5" not in first:
            found.append(report.strip())
    text = stderr.decode("utf-8", "replace")
    found += [l for l in text.splitlines() if "runtime error:" in l]
    return "\n".join(found)


def good_records(p):
    doc = json.loads(p.stdout)
    return {table: [r for r in rows if r.get("file") == GOOD] for table, rows in doc.items() if table != "unreadable"}


def test_no_damaged_file_crashes_hangs_or_runs_a_command_and_every_changed_figure_is_named(corpus, tmp_path):
    files, good = corpus
    start = time.monotonic()
    base = {}
    for k, (label, path) in enumerate(files):
        data, where = regions(path)
        j, d, doc, pwned, _ = call(tmp_path / f"base-{k}", data, good)
        assert j is not None and d is not None and j.returncode == 0 and d.returncode == 0, (label, j and j.stderr, d and d.stderr)
        assert named(j) is None and not pwned, label
        base[k] = (data, where, j.stdout, doc, good_records(j))
    alone = good_records(subprocess.run([BINARY, "report", "--format", "json", GOOD], cwd=good.parent, capture_output=True))
    assert all(b[4] == alone for b in base.values())  # the good file is reported the same beside any other

    rng = random.Random(SEED)
    plan = []
    for i in range(MUTATIONS):
        k = i % len(files)
        data, where, *_ = base[k]
        classes = sorted(where)
        cls = classes[(i // len(files) + k) % len(classes)]
        lo, hi = rng.choice(where[cls])
        plan.append((i, k, cls, rng.randrange(lo, hi), rng.randrange(1, 256)))

    def one(item):
        i, k, cls, offset, xor = item
        data = bytearray(base[k][0])
        data[offset] ^= xor
        return item, call(tmp_path / f"m{i}", bytes(data), good, plot=i % 4 == 0)

    failures, counts, why = [], Counter(), Counter()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(3, min(4, os.cpu_count() or 1))) as pool:
        for (i, k, cls, offset, xor), (j, d, doc, pwned, plot) in pool.map(one, plan):
            label, _ = files[k]
            where = f"{label}: {cls} byte {offset} ^ 0x{xor:02x}"
            counts["mutations"] += 1
            counts[cls] += 1
            if j is None or d is None or (i % 4 == 0 and plot is None):
                failures.append(f"{where}: a call did not end within {CALL_TIMEOUT_S} s")
                continue
            if plot is not None and plot.returncode not in (0, 1):
                counts["crashes"] += 1
                failures.append(f"{where}: --plot's exit status {plot.returncode} (a signal is negative)")
            if j.returncode not in (0, 1) or d.returncode not in (0, 1):
                counts["crashes"] += 1
                failures.append(f"{where}: exit status {j.returncode} and {d.returncode} (a signal is negative)")
                continue
            if pwned:
                failures.append(f"{where}: a command ran: {pwned}")
            if ours := sanitizer_errors(j.stderr + d.stderr + (plot.stderr if plot is not None else b"")):  # DPSCALE_BINARY from make test-sanitize
                failures.append(f"{where}: the sanitizers found an error in dpscale:\n{ours}")
            if f"dpscale: error: {GOOD}" in (j.stderr + d.stderr).decode("utf-8", "replace") or good_records(j) != base[k][4]:
                failures.append(f"{where}: the good file of the call was not reported as alone")
            # each call either names the file or reports it as the undamaged one (the
            # document reads more of it than the tables, and can meet damage they do not)
            silent = [what for what, p, same in (("tables", j, j.stdout == base[k][2]), ("document", d, doc == base[k][3]))
                      if p is not SKIPPED and named(p) is None and not same]
            reasons = [r for r in (named(j), named(d)) if r is not None]
            if silent:
                counts["silent"] += 1
                failures.append(f"{where}: the {' and '.join(silent)} changed and the file was not named (it has checksums)")
            elif reasons:
                counts["named"] += 1
                r = reasons[0]
                why["checksum" if r.startswith("corrupt:") else "crashed HDF5" if "crashed" in r
                    else "timed out" if "longer than" in r else "refused"] += 1
            else:
                counts["identical"] += 1
    elapsed = time.monotonic() - start
    summary = (f"{counts['mutations']} mutations of {len(files)} files in {elapsed:.0f} s: {counts['named']} named "
               f"({', '.join(f'{n} {w}' for w, n in sorted(why.items()))}), {counts['identical']} identical, "
               f"{counts['silent']} changed silently, {counts['crashes']} crashes; "
               f"by place: {', '.join(f'{c} {counts[c]}' for c in CLASSES)}")
    print("\n" + summary)
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40]) + "\n" + summary
    assert counts["mutations"] == MUTATIONS and all(counts[c] > 0 for c in CLASSES), summary


@pytest.mark.parametrize("form", [[], ["--compare"], ["--format", "csv"], ["--format", "json"], ["--doc", "out.md"]])
def test_a_file_without_checksums_is_reported_with_a_note(corpus, tmp_path, form):
    """One note on stderr per file without checksums written before dpscale sealed its
    files (schema 5 and older: a copy of each kind from results/), in every form of the
    report; the tables as they were, the exit status 0."""
    files, good = corpus
    old = {kind: p for label, p in files for kind in ("run", "comm", "topo") if f"({kind}, schema " in label
           and int(label.rsplit(" ", 1)[1][:-1]) < 6}
    names = [GOOD] + [f"{kind}.h5" for kind in sorted(old)]
    out = {}
    for sealed in (True, False):
        d = tmp_path / ("sealed" if sealed else "unsealed")
        d.mkdir()
        shutil.copy(good, d / GOOD)
        for name in names[1:]:
            shutil.copy(old[name[:-3]], d / name)
            if not sealed:
                with edit_h5(d / name):  # the checksums dropped, nothing else
                    pass
        p = subprocess.run([BINARY, "report", *form, *names], cwd=d, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
        out[sealed] = p.stdout if form[:1] != ["--doc"] else (d / "out.md").read_text()
        notes = [l for l in p.stderr.splitlines() if "no checksums" in l]
        assert notes == ([] if sealed else [
            f"dpscale: note: {name} has no checksums (written before dpscale sealed its files, schema "
            f"{h5py.File(d / name, 'r').attrs['schema_version']}): a damaged byte "
            f"in it could change a figure unnoticed; seal a copy you trust with `dpscale seal {name}`"
            for name in names[1:]]), p.stderr
    assert out[True] == out[False]  # the note is beside the tables, never in them


def test_a_new_file_without_checksums_is_refused(corpus, tmp_path):
    """dpscale has sealed every file of schema 6 and later as it wrote it: one without
    checksums lost them, and is named, of every kind."""
    files, good = corpus
    names = [f"{kind}.h5" for kind in ("run", "comm", "topo", "projection")]
    shutil.copy(good, tmp_path / GOOD)
    for name in names:
        shutil.copy(next(p for label, p in files if label == f"new {name[:-3]}"), tmp_path / name)
        with h5py.File(tmp_path / name, "r+") as f:
            del f.attrs["checksums"], f.attrs["checksum_algorithm"]
    p = subprocess.run([BINARY, "report", GOOD, *names], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert [l.split(": corrupt: ")[0] for l in p.stderr.splitlines() if "it has no checksums, yet" in l] == \
        [f"dpscale: error: {name}" for name in names], p.stderr


def test_a_fifo_or_a_device_is_named_and_never_opened(corpus, tmp_path):
    files, good = corpus
    shutil.copy(good, tmp_path / GOOD)
    os.mkfifo(tmp_path / "fifo.h5")  # opening it would wait for a writer forever
    p = subprocess.run([BINARY, "report", "--format", "json", tmp_path, "/dev/zero"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 1, p.stderr
    assert "fifo.h5: not a regular file (a FIFO)" in p.stderr and "/dev/zero: not a regular file (a device)" in p.stderr
    assert [r["file"] for r in json.loads(p.stdout)["scaling"]] == [str(tmp_path / GOOD)] * 2


def test_a_changed_number_names_the_file_and_its_dataset(corpus, tmp_path):
    files, good = corpus
    bad = tmp_path / "bad.h5"
    shutil.copy(good, bad)
    with h5py.File(bad, "r+") as f:  # changed without dropping its checksums: as a flipped bit would
        s = f["summary"][:]
        s["samples_per_s"][0] *= 1.01
        f["summary"][...] = s
    p = subprocess.run([BINARY, "report", bad, good], capture_output=True, text=True, timeout=30)
    assert p.returncode == 1
    assert (f"{bad}: corrupt: the checksum of /summary does not match its contents; the file was changed after it "
            "was written") in p.stderr
    assert str(good) in p.stdout and str(bad) not in p.stdout


@pytest.mark.parametrize("fault, reason", [("crash", "damaged: reading it crashed the HDF5 library (signal 11"),
                                           ("hang", "reading it took longer than 1 s")])
def test_a_file_that_crashes_or_hangs_the_reader_costs_that_file_not_the_call(corpus, tmp_path, fault, reason):
    """A damaged file can crash or hang the HDF5 library itself (HDF5 1.10 copies a string
    from wherever a corrupt global-heap ID points): here the reader is made to."""
    files, good = corpus
    shutil.copy(good, tmp_path / "bad.h5")
    env = dict(os.environ, DPSCALE_REPORT_FAULT=f"{fault}:bad.h5")
    for args in (["--format", "json"], ["--doc", tmp_path / "d.md"]):
        t = time.monotonic()
        p = subprocess.run([BINARY, "report", "--file-timeout", "1", *args, tmp_path / "bad.h5", good], capture_output=True,
                           text=True, timeout=30, env=env)
        assert p.returncode == 1 and time.monotonic() - t < 10, p.stderr
        assert f"{tmp_path / 'bad.h5'}: {reason}" in p.stderr, p.stderr
        out = p.stdout if args[0] == "--format" else (tmp_path / "d.md").read_text()
        assert str(good) in out


def test_a_plot_named_like_a_command_is_a_file(corpus, tmp_path):
    """gnuplot writes to a command when the output's name starts with |."""
    files, good = corpus
    for args in (["--plot", "|touch pwned.svg"], ["--doc", "|touch pwned.md"]):
        p = subprocess.run([BINARY, "report", *args, good], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
    assert b"<svg" in (tmp_path / "|touch pwned.svg").read_bytes()[:400]
    assert list((tmp_path / "|touch pwned-figs").glob("*.svg"))
    assert not list(tmp_path.glob("pwned*"))

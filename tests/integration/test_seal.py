"""dpscale seal: checksums added to a result file written before dpscale
sealed its files, on a copy renamed over it, so that the report names any later
change; a file already sealed is left alone, one whose checksums do not match is
refused. No MPI."""
import shutil
import subprocess

import h5py
import numpy as np

from conftest import BINARY, ROOT, edit_h5

SOURCE = ROOT / "results/h200x2-comm-bound-pcie.h5"  # a run file of schema 2, 1 and 2 GPUs
NOTE = "has no checksums (written before dpscale sealed its files, schema 2)"


def seal(*paths):
    return subprocess.run([BINARY, "seal", *map(str, paths)], capture_output=True, text=True, timeout=120)


def report(*paths):
    return subprocess.run([BINARY, "report", *map(str, paths)], capture_output=True, text=True, timeout=120)


def errors(p):
    return [l for l in p.stderr.splitlines() if l.startswith("dpscale: error:")]


def unsealed_copy(folder, name="r.h5"):
    """A copy of SOURCE as dpscale wrote it before it sealed its files: no checksums."""
    path = folder / name
    shutil.copy(SOURCE, path)
    with edit_h5(path):
        pass
    return path


def contents(path):
    """Every attribute and value of the file, by object path (as text: NaN equals NaN)."""
    out = {}
    with h5py.File(path, "r") as f:
        def add(name, o):
            out[name] = ({k: repr(np.asarray(v).tolist()) for k, v in o.attrs.items()},
                         repr(o[()].tolist()) if isinstance(o, h5py.Dataset) else sorted(o))
        add("/", f)
        f.visititems(add)
    return out


def test_an_unsealed_file_is_sealed_and_reported_exactly_as_before(tmp_path):
    path = unsealed_copy(tmp_path)
    before, values = report(path), contents(path)
    assert before.returncode == 0 and f"{path} {NOTE}" in before.stderr, before.stderr
    p = seal(path)
    assert p.returncode == 0 and p.stdout == f"sealed {path}\n" and p.stderr == "", p.stdout + p.stderr
    after = report(path)
    assert after.returncode == 0 and after.stdout == before.stdout
    assert "no checksums" not in after.stderr and after.stderr == before.stderr.replace(before.stderr.splitlines()[0] + "\n", "")
    sealed = contents(path)
    root_attrs = sealed.pop("/")[0]
    assert sorted(set(root_attrs) - set(values["/"][0])) == ["checksum_algorithm", "checksums"]
    assert root_attrs["checksum_algorithm"] == repr("xxh64")
    assert {k: root_attrs[k] for k in values["/"][0]} == values.pop("/")[0] and sealed == values  # no value changed
    assert sorted(f.name for f in tmp_path.iterdir()) == ["r.h5"]  # no copy left beside it


def test_a_sealed_file_is_left_as_it_is(tmp_path):
    path = unsealed_copy(tmp_path)
    assert seal(path).returncode == 0
    data, mtime = path.read_bytes(), path.stat().st_mtime_ns
    p = seal(path)
    assert p.returncode == 0 and p.stdout == f"{path}: already sealed, its checksums match\n", p.stdout + p.stderr
    assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime


def test_a_sealed_file_that_changed_is_refused_in_one_line(tmp_path):
    path = unsealed_copy(tmp_path)
    assert seal(path).returncode == 0
    with h5py.File(path, "r+") as f:  # changed without dropping its checksums: as a flipped bit would
        s = f["summary"][:]
        s["samples_per_s"][0] *= 1.01
        f["summary"][...] = s
    data = path.read_bytes()
    p = seal(path)
    assert p.returncode == 2 and p.stdout == "", p.stdout
    assert p.stderr.splitlines() == [f"dpscale: error: {path} is sealed and its checksums do not match: it changed since "
                                     "it was written; refusing to vouch for it"]
    assert path.read_bytes() == data and sorted(f.name for f in tmp_path.iterdir()) == ["r.h5"]


def test_what_the_report_cannot_read_is_refused_and_the_rest_sealed(tmp_path):
    junk, missing = tmp_path / "junk.h5", tmp_path / "missing.h5"
    junk.write_bytes(b"not a result file")
    good = unsealed_copy(tmp_path)
    p = seal(junk, missing, tmp_path, good)
    assert p.returncode == 2 and p.stdout == f"sealed {good}\n", p.stdout
    assert errors(p) == [
        f"dpscale: error: {junk}: not an HDF5 file (truncated, or not a dpscale result); only a result file that "
        "dpscale report reads can be sealed",
        f"dpscale: error: {missing}: cannot open it: No such file or directory; only a result file that dpscale "
        "report reads can be sealed",
        f"dpscale: error: {tmp_path}: a folder, not a result file; only a result file that dpscale report reads can "
        "be sealed"], p.stderr
    assert junk.read_bytes() == b"not a result file"


def test_a_copy_left_by_another_seal_is_left_alone(tmp_path):
    path = unsealed_copy(tmp_path)
    left = tmp_path / "r.h5.seal.tmp"
    left.write_text("another seal's")
    data = path.read_bytes()
    p = seal(path)
    assert p.returncode == 1 and errors(p) == [
        f"dpscale: error: {path} was not sealed, and is left as it was: {left} exists: a seal of this file is running "
        "or was interrupted; remove it if none is running"], p.stderr
    assert path.read_bytes() == data and left.read_text() == "another seal's"


def test_a_full_disk_leaves_the_file_as_it_was_and_no_copy(small_disk):
    """The copy does not fit beside the file: the write fails as on any full disk."""
    disk = small_disk(SOURCE.stat().st_size * 3 // 2)
    path = unsealed_copy(disk)
    data = path.read_bytes()
    p = seal(path)
    assert p.returncode == 1 and errors(p) == [
        f"dpscale: error: {path} was not sealed, and is left as it was: copying it to {path}.seal.tmp failed: No space "
        "left on device; free space there"], p.stderr
    assert path.read_bytes() == data and sorted(f.name for f in disk.iterdir()) == ["r.h5"]


def test_bad_options_and_no_file_exit_2():
    for args in (["--bogus", "x.h5"], []):
        p = subprocess.run([BINARY, "seal", *args], capture_output=True, text=True, timeout=30)
        assert p.returncode == 2 and "usage: dpscale seal FILE.h5" in p.stderr, p.stderr
    p = subprocess.run([BINARY, "help", "seal"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "FILE.seal.tmp" in p.stdout

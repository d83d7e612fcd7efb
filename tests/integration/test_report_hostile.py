"""dpscale report treats result files, and the folders it writes into, as hostile: a
result file is data from whoever could write it, and a shared output folder (/tmp, a
cluster's scratch) holds whatever its other users planted there.

- The plot, the document and its figures are written through exclusive temporaries
  beside them and renamed (src/base/safe_file.h); gnuplot writes to its stdout, never to a
  name. Links planted at every name a temporary used to take (OUT.tmp-<pid>), at OUT
  itself or at OUT-figs never lead a write to another file.
- A plot, figure or document that a full disk cut short is never renamed over the one
  there: it must end as its format ends (SVG's </svg>, PNG's IEND), or it is removed.
- OUT-figs is opened once and every figure is written inside its descriptor: a folder
  swapped for a link afterwards is never written through.
- An output name with a control character, in a folder that is not there, too long
  for its temporary, or only an extension (".svg") is refused in one line, exit 2,
  before any file is read.
- A file of schema 6 or later is always sealed by its writer: one without checksums,
  or with a list that is not one (wrong type, cut, not hex), is refused as corrupt,
  naming the file. Only older schemas are read unsealed, with a note.
- Strings from a file never reach a terminal, a browser or an SVG viewer raw: control
  characters come out as \\xNN, Markdown and the document write < and & as entities,
  the SVG is well-formed XML, "]]>" in a name too.
- Figures that no measurement gives (negative, infinite, NaN where the schema has no
  unknown, 301 digits) are refused as damage, naming the file and the field; prices
  outside 1e-06 to 1e+09 are refused with the range.
- A file whose training diverged (root attribute `diverged`) says so: on stderr, in
  the tables and in the document.

No MPI: every file is a copy of one in results/, edited with h5py."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import BINARY, ROOT, edit_h5

RUN6 = ROOT / "results/h200x2-projection-checks/session7/callA/comm-bound-host-on.h5"  # schema 6, sealed: 1 and 2 GPUs
COMM6 = ROOT / "results/h200x2-projection-checks/session7/callA/comm-nvlink.h5"      # schema 6, sealed: a comm sweep
RUN2 = ROOT / "results/h200x2-comm-bound-pcie.h5"                           # schema 2, sealed with dpscale seal
COMM2 = ROOT / "results/h200x2-comm-nvlink.h5"                              # schema 2: /collectives/nccl/auto/n2

# terminal title, bell, clear screen, CSI as one C1 byte, carriage return, DEL, tab
CONTROLS = "\x1b]0;pwned\x07\x1b[2J\u009b1m\r\x7f\t"


def report(*args, cwd=None, env=None):
    return subprocess.run([str(BINARY), "report", *map(str, args)], capture_output=True, cwd=cwd, timeout=120,
                          env=None if env is None else {**os.environ, **env})


def errors(p):
    return [l for l in p.stderr.decode("utf-8", "replace").splitlines() if l.startswith("dpscale: error:")]


def seal(path):
    p = subprocess.run([str(BINARY), "seal", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"expected dpscale seal to seal {path}, got {p.returncode}: {p.stderr}"


def hostile_copy(src, dst, device=None, model=None, label=None, host=None, sealed=True):
    """A copy of src with these strings in its device name, model label, system label and
    first host; sealed again (dpscale seal) unless `sealed` is false."""
    shutil.copy(src, dst)
    with edit_h5(dst) as f:
        if device is not None:
            f["system"].attrs["device_name"] = device
        if model is not None:
            f["config"].attrs["model.name"] = model
        if label is not None:
            f.attrs["system_label"] = label
        if host is not None:
            n = len(f["system/hosts"])
            del f["system/hosts"]
            f["system"].create_dataset("hosts", data=[host] * n, dtype=h5py.string_dtype("utf-8"))
    if sealed:
        seal(dst)
    return dst


def raw_controls(data, allowed=b"\n"):
    """The control characters of bytes that a terminal would obey: C0 but the newline (and
    what else the format has, such as SVG's tabs), DEL, and C1 (U+0080 to U+009F, two
    bytes in UTF-8)."""
    found = sorted({f"0x{c:02x}" for c in data if (c < 0x20 and c not in allowed) or c == 0x7F})
    found += sorted({"U+%04X" % (m[1] & 0x3F | 0x80) for m in re.findall(rb"\xc2[\x80-\x9f]", data)})
    return found


# ---- planted links --------------------------------------------------------------------------------------------


def attacker_can_run():
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return "needs root and setpriv to stand for an unprivileged user (uid 65534)"
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "true"], capture_output=True)
    return None if p.returncode == 0 else f"setpriv cannot drop to uid 65534: {p.stderr.decode().strip()}"


def as_attacker(code, *args):
    """Python `code` run as uid 65534 (nobody), args in sys.argv[1:]."""
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", code,
                        *map(str, args)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, f"the attacker's step failed: {p.stderr}"


PLANT_PID_LINKS = """import os, sys
victim, out, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
for pid in range(first, last):
    for name in (f"{out}.svg.tmp-{pid}", f"{out}.md.tmp-{pid}"):
        os.symlink(victim, name)
"""


@pytest.fixture
def shared(request, tmp_path):
    """A folder in /tmp that every user can write to, with the mode asked (sticky as /tmp
    itself, or not: where fs.protected_symlinks is 0, root follows a link in either),
    and a root-only victim file in the test's own folder."""
    why = attacker_can_run()
    if why:
        pytest.skip(why)
    folder = Path(tempfile.mkdtemp(prefix="dpscale-shared-", dir="/tmp"))
    folder.chmod(request.param)
    victim = tmp_path / "victim"
    victim.write_bytes(b"root's own secret\n")
    victim.chmod(0o600)
    yield folder, victim
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("shared", [0o1777, 0o777], ids=["sticky", "world-writable"], indirect=True)
def test_links_planted_at_the_temporaries_names_are_never_followed(shared):
    folder, victim = shared
    before = victim.read_bytes()
    last_pid = Path("/proc/sys/kernel/ns_last_pid")
    first = int(last_pid.read_text()) if last_pid.exists() else 0  # the pids the next processes take
    as_attacker(PLANT_PID_LINKS, victim, folder / "out", first + 1, first + 400)
    p = report("--doc", folder / "out.md", "--plot", folder / "out.svg", RUN6)
    assert victim.read_bytes() == before and victim.stat().st_mode & 0o777 == 0o600, \
        f"expected the root-only victim unchanged, got {victim.read_bytes()[:80]!r}..."
    assert p.returncode == 0, f"expected the document and the plot written, got {p.returncode}: {p.stderr.decode()}"
    for name in ("out.md", "out.svg", "out-figs"):
        assert not (folder / name).is_symlink() and (folder / name).exists(), f"expected {name} written as dpscale's own"
    links = [l for l in folder.iterdir() if l.is_symlink()]
    assert len(links) == 2 * 399 and all(os.readlink(l) == str(victim) for l in links), \
        f"expected the {2 * 399} planted links left as they were, got {len(links)}"
    assert not [l.name for l in folder.iterdir() if l.name.startswith(".")], "expected no temporary left behind"


@pytest.mark.parametrize("shared", [0o1777], ids=["sticky"], indirect=True)
@pytest.mark.parametrize("planted", ["out.svg", "out.md", "out-figs", "dangling.svg"])
def test_a_link_at_the_output_itself_is_refused_in_one_line(shared, planted):
    folder, victim = shared
    before = victim.read_bytes()
    target = folder / planted
    as_attacker("import os, sys; os.symlink(sys.argv[1], sys.argv[2])",
                victim.parent if planted == "out-figs" else victim if planted != "dangling.svg" else folder / "nothing",
                target)
    option = ["--plot", target] if planted.endswith(".svg") else ["--doc", folder / "out.md"]
    p = report(*option, RUN6)
    assert p.returncode == 2, f"expected exit status 2 (a bad output name), got {p.returncode}: {p.stderr.decode()}"
    assert errors(p) == p.stderr.decode().splitlines() and len(errors(p)) == 1 and "symbolic link" in errors(p)[0], \
        f"expected one error line naming the link, got {p.stderr.decode()!r}"
    assert p.stdout == b"" and victim.read_bytes() == before
    assert sorted(os.listdir(victim.parent)) == ["victim"], "expected nothing written into the victim's folder"
    assert os.listdir(folder) == [planted], f"expected only the planted link there, got {os.listdir(folder)}"


@pytest.mark.parametrize("shared", [0o1777], ids=["sticky"], indirect=True)
def test_a_figures_folder_of_another_user_is_refused(shared):
    folder, _ = shared
    as_attacker("import os, sys; os.mkdir(sys.argv[1], 0o777)", folder / "out-figs")
    p = report("--doc", folder / "out.md", RUN6)
    assert p.returncode == 2 and len(errors(p)) == 1 and "belongs to another user" in errors(p)[0], \
        f"expected one error line about the folder's owner, got {p.returncode}: {p.stderr.decode()!r}"
    assert not (folder / "out.md").exists() and os.listdir(folder / "out-figs") == []


# ---- control characters in output names -----------------------------------------------------------------------


@pytest.mark.parametrize("option,name", [("--plot", "a\nb.svg"), ("--plot", "a\x1b[2Jb.png"), ("--doc", "x\ny.md"),
                                         ("--doc", "x\ty.md")])
def test_an_output_name_with_a_control_character_is_refused_in_one_line(tmp_path, option, name):
    p = report(option, tmp_path / name, RUN6)
    lines = p.stderr.decode().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"dpscale: error: {option} "), \
        f"expected exit status 2 and one error line, got {p.returncode}: {lines}"
    assert "control character" in lines[0] and not raw_controls(p.stderr), lines[0]
    assert os.listdir(tmp_path) == [], f"expected nothing written, got {os.listdir(tmp_path)}"


# ---- damaged seals --------------------------------------------------------------------------------------------


def checksum_list(path):
    with h5py.File(path, "r") as f:
        return f.attrs["checksums"]


SEAL_DAMAGE = {
    "removed": lambda f, s: [f.attrs.__delitem__("checksums"), f.attrs.__delitem__("checksum_algorithm")],
    "list removed": lambda f, s: f.attrs.__delitem__("checksums"),
    "algorithm removed": lambda f, s: f.attrs.__delitem__("checksum_algorithm"),
    "an integer": lambda f, s: f.attrs.__setitem__("checksums", np.int64(7)),
    "fixed-length bytes": lambda f, s: f.attrs.__setitem__("checksums", np.bytes_(s.encode())),
    "an array": lambda f, s: f.attrs.__setitem__("checksums", [s, s]),
    "not hex": lambda f, s: f.attrs.__setitem__("checksums", re.sub(r"^xxh64:[0-9a-f]{4}", "xxh64:zzzz", s)),
    "cut short": lambda f, s: f.attrs.__setitem__("checksums", s[: len(s) // 2]),
    "a digit short": lambda f, s: f.attrs.__setitem__("checksums", re.sub(r"^xxh64:([0-9a-f]{15})[0-9a-f]", r"xxh64:\1",
                                                                          s)),
    "empty": lambda f, s: f.attrs.__setitem__("checksums", ""),
    "algorithm an integer": lambda f, s: f.attrs.__setitem__("checksum_algorithm", np.int64(1)),
}


@pytest.mark.parametrize("damage", sorted(SEAL_DAMAGE))
def test_a_damaged_seal_of_schema_6_is_refused_naming_the_file(tmp_path, damage):
    path = tmp_path / "r.h5"
    shutil.copy(RUN6, path)
    listed = checksum_list(path)
    with h5py.File(path, "r+") as f:
        SEAL_DAMAGE[damage](f, listed)
    p = report(path, RUN2)
    assert p.returncode == 1, f"expected exit status 1 (a file refused), got {p.returncode}: {p.stderr.decode()}"
    assert len(errors(p)) == 1 and errors(p)[0].startswith(f"dpscale: error: {path}: corrupt: "), \
        f"expected one error naming {path} as corrupt, got {errors(p)}"
    assert "no checksums (written before" not in p.stderr.decode(), "expected no note of an old unsealed file"
    assert str(path).encode() not in p.stdout and str(RUN2).encode() in p.stdout, "expected the other file still reported"


@pytest.mark.parametrize("damage", ["not hex", "cut short", "an integer", "list removed"])
def test_a_damaged_seal_of_an_old_schema_is_refused_too(tmp_path, damage):
    path = tmp_path / "r.h5"
    shutil.copy(RUN2, path)
    listed = checksum_list(path)
    with h5py.File(path, "r+") as f:
        SEAL_DAMAGE[damage](f, listed)
    p = report(path)
    assert p.returncode == 1 and len(errors(p)) == 1 and errors(p)[0].startswith(f"dpscale: error: {path}: corrupt: "), \
        f"expected one error naming {path} as corrupt, got {p.returncode}: {errors(p)}"


def test_an_old_schema_without_checksums_is_still_read_with_its_note(tmp_path):
    path = tmp_path / "r.h5"
    shutil.copy(RUN2, path)
    with edit_h5(path):
        pass
    p = report(path)
    assert p.returncode == 0 and errors(p) == [], f"expected a schema 2 file read, got {p.returncode}: {errors(p)}"
    assert f"dpscale: note: {path} has no checksums (written before dpscale sealed its files, schema 2)" in \
        p.stderr.decode(), p.stderr.decode()


LOOKUP_FAILS = """import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    f.attrs["schema_version"], f["summary"][:]
    try:
        "checksums" in f.attrs
    except Exception:
        sys.exit(0)
sys.exit(1)
"""


def test_a_root_whose_attributes_cannot_be_read_is_refused_not_read_as_unsealed(tmp_path):
    """A flipped byte of the root's header (this one, of RUN6) makes H5Aexists fail rather
    than say no, while the rest of the file reads: the report took that for a file written
    before dpscale sealed its files, and showed what was left of it with a note."""
    data = bytearray(RUN6.read_bytes())
    data[968] ^= 0xFF
    path = tmp_path / "r.h5"
    path.write_bytes(bytes(data))
    check = subprocess.run(["/usr/bin/python3", "-c", LOOKUP_FAILS, str(path)], capture_output=True, timeout=60)
    if check.returncode != 0:  # in a process of its own: HDF5 can crash on a damaged file
        pytest.skip("that byte of this file no longer makes its root's attributes unreadable alone")
    p = report("--file-timeout", "10", path)
    assert p.returncode == 1 and errors(p) == [f"dpscale: error: {path}: corrupt: its root's attributes cannot be read, "
                                               "so whether it has checksums cannot be told; the file was changed after it "
                                               "was written"], f"expected the file refused, got {p.returncode}: {p.stderr}"
    assert b"no checksums" not in p.stderr and p.stdout == b"", "expected no note of an old unsealed file, and no table"


# ---- strings from a file --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    d = tmp_path_factory.mktemp("hostile")
    run = hostile_copy(RUN6, d / "run.h5", device="GPU" + CONTROLS, model="m" + CONTROLS, label="L" + CONTROLS,
                       host="h" + CONTROLS)
    comm = hostile_copy(COMM6, d / "comm.h5", device="GPU" + CONTROLS, host="h" + CONTROLS)
    old = hostile_copy(RUN2, d / "old.h5", device="GPU" + CONTROLS, model="m" + CONTROLS, sealed=False)
    return d, run, comm, old


@pytest.mark.parametrize("args", [[], ["--format", "csv"], ["--format", "json"], ["--compare"],
                                  ["--compare", "--format", "csv"], ["--table", "comm", "--format", "csv"],
                                  ["--table", "comm"]], ids=lambda a: " ".join(a) or "markdown")
def test_control_characters_of_a_file_never_reach_the_terminal(hostile, args):
    d, run, comm, old = hostile
    p = report(*args, run, RUN6, comm, old)
    assert p.returncode == 0, f"expected every file reported, got {p.returncode}: {p.stderr.decode()}"
    for stream, data in (("stdout", p.stdout), ("stderr", p.stderr)):
        assert not raw_controls(data), f"expected no raw control character on {stream}, got {raw_controls(data)}"
    if "json" in args:  # JSON's own escapes (\\u001B), and so the very string to a JSON reader
        devices = {r["device"] for r in json.loads(p.stdout)["scaling"]}
        assert "GPU" + CONTROLS in devices, f"expected the device name as the file holds it, got {devices}"
    else:
        assert b"\\x1b]0;pwned\\x07\\x1b[2J\\x9b1m" in p.stdout, "expected the control characters shown escaped"
    assert "GPU\x1b" not in p.stdout.decode()


def test_text_that_is_not_a_control_character_is_kept(tmp_path):
    path = hostile_copy(RUN6, tmp_path / "r.h5", device="Grafikkarte ü ✓ \"x\" 'y' a>b")
    out = report(path).stdout.decode()
    assert "### Grafikkarte ü ✓ \"x\" 'y' a>b, nccl over host memory (P2P off)" in out, out.splitlines()[0]
    rows = report("--format", "csv", path).stdout.decode()
    assert "\"Grafikkarte ü ✓ \"\"x\"\" 'y' a>b\"" in rows, rows


def test_html_of_a_file_never_reaches_the_document_raw(tmp_path):
    path = hostile_copy(RUN6, tmp_path / "r.h5", device="<script>alert(1)</script> & co",
                        model="<img src=x onerror=alert(1)>", label="<b onmouseover=x>", host="<iframe src=//x>")
    out = tmp_path / "doc.md"
    p = report("--doc", out, path, RUN6)
    assert p.returncode == 0, p.stderr.decode()
    doc = out.read_text()
    for tag in ("<script", "<img", "<b ", "<iframe"):
        assert tag not in doc.lower(), f"expected no raw {tag} in the document, got: " + \
            next(l for l in doc.splitlines() if tag in l.lower())
    assert "&lt;script>alert(1)&lt;/script> &amp; co" in doc and "&lt;img src=x onerror=alert(1)>" in doc
    tables = report(path).stdout.decode()
    assert "<script" not in tables and "&lt;script>" in tables


def test_a_plot_of_hostile_names_is_well_formed_svg(tmp_path):
    nasty = "<a href='x'>&amp; \"q\"" + CONTROLS
    path = hostile_copy(RUN6, tmp_path / "r.h5", device="D" + nasty, model="M<&'\">", label="L" + nasty,
                        host="H" + nasty)
    plot, doc = tmp_path / "p.svg", tmp_path / "d.md"
    p = report("--plot", plot, "--doc", doc, path, RUN6)
    assert p.returncode == 0, p.stderr.decode()
    for svg in [plot] + sorted((tmp_path / "d-figs").glob("*.svg")):
        try:
            root = ElementTree.parse(svg).getroot()
        except ElementTree.ParseError as e:
            pytest.fail(f"expected {svg.name} to be well-formed XML, got: {e}")
        text = " ".join(t for t in root.itertext())
        assert "M<&'\">" in text, f"expected the title's model as it is named, got {text[:300]!r}"
        assert not raw_controls(svg.read_bytes(), allowed=b"\n\t"), f"expected no control character in {svg.name}"


# ---- figures --------------------------------------------------------------------------------------------------


def with_summary(src, dst, column, value, row=0):
    shutil.copy(src, dst)
    with edit_h5(dst) as f:
        s = f["summary"][:]
        s[column][row] = value
        f["summary"][...] = s
    return dst


@pytest.mark.parametrize("column,value", [("samples_per_s", -1e300), ("samples_per_s", np.inf), ("samples_per_s", np.nan),
                                          ("samples_per_s", 1e300), ("step_median_s", 0.0),
                                          ("efficiency", np.inf), ("speedup", -2.0),
                                          ("comm_exposed_median_s", -1.0), ("allreduce_busbw_gbps", np.inf),
                                          ("joules_per_sample", -1e-3)])
def test_a_figure_no_measurement_gives_is_refused_naming_the_file_and_the_field(tmp_path, column, value):
    path = with_summary(RUN2, tmp_path / "r.h5", column, value)  # schema 2: read unsealed, its figures checked
    p = report(path)
    field = column if column != "allreduce_busbw_gbps" else "allreduce_busbw_GBps"
    assert p.returncode == 1 and len(errors(p)) == 1, f"expected one error, got {p.returncode}: {p.stderr.decode()}"
    assert errors(p)[0].startswith(f"dpscale: error: {path}: damaged: /summary's {field} of row 1 is "), errors(p)[0]
    assert re.search(rb"\d{30}", p.stdout + p.stderr) is None, "expected no figure printed at 30 digits or more"


def test_nan_where_the_schema_says_unknown_is_still_read(tmp_path):
    path = with_summary(RUN2, tmp_path / "r.h5", "efficiency", np.nan, row=1)  # the 2-GPU row: no 1-GPU run to compare
    p = report(path)
    assert p.returncode == 0 and errors(p) == [], f"expected NaN efficiency read as unknown, got {errors(p)}"


@pytest.mark.parametrize("dataset,value", [("time_s", np.inf), ("time_s", -1.0), ("busbw_gbps", 1e300),
                                           ("size_bytes", np.nan), ("wrong_elements", -3.0)])
def test_a_comm_figure_that_is_not_one_is_refused_naming_it(tmp_path, dataset, value):
    path = tmp_path / "c.h5"
    shutil.copy(COMM2, path)
    with edit_h5(path) as f:  # schema 2: read unsealed, its figures checked
        d = f["collectives/nccl/auto/n2"][dataset]
        v = d[...]
        v.flat[0] = value
        d[...] = v
    p = report(path)
    at = "[0][0]" if dataset == "time_s" else "[0]"
    assert p.returncode == 1 and len(errors(p)) == 1 and \
        f"damaged: /collectives/nccl/auto/n2/{dataset}{at} is {value:g}" in errors(p)[0], \
        f"expected {dataset} named, got {p.returncode}: {errors(p)}"


def test_a_sealed_file_cannot_vouch_for_a_figure_either(tmp_path):
    """The checksums tell a changed byte, not who wrote it: dpscale seal itself refuses a
    figure no measurement gives, and so does the report of a file sealed by other means."""
    path = with_summary(RUN6, tmp_path / "r.h5", "samples_per_s", -1e300)
    p = subprocess.run([str(BINARY), "seal", str(path)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "damaged: /summary's samples_per_s of row 1 is -1e+300" in p.stderr, p.stderr


@pytest.mark.parametrize("price", ["inf", "nan", "1e-320", "1e-300", "0", "-2", "1e300", "abc", "2,inf", "", ","])
def test_a_price_outside_its_range_is_refused_with_the_range(price):
    p = report(f"--price-per-gpu-hour={price}", RUN6)
    lines = p.stderr.decode().splitlines()
    assert p.returncode == 2 and len(lines) == 1, f"expected exit status 2 and one line, got {p.returncode}: {lines}"
    assert lines[0].startswith("dpscale: error: --price-per-gpu-hour ") and "from 1e-06 to 1e+09" in lines[0], lines[0]


def test_a_price_in_its_range_is_taken():
    p = report("--compare", "--price-per-gpu-hour=2.5", RUN6)
    assert p.returncode == 0 and errors(p) == [], p.stderr.decode()


# ---- diverged -------------------------------------------------------------------------------------------------

WHY = "the 2-GPU point diverged at step 7 on rank 1: the loss is nan"


def diverged_copy(src, dst, why=WHY, sealed=True):
    shutil.copy(src, dst)
    with edit_h5(dst) as f:
        f.attrs["diverged"] = why
    if sealed:
        seal(dst)
    return dst


@pytest.mark.parametrize("src", [RUN6, RUN2], ids=["schema 6, sealed again", "schema 2, unsealed"])
def test_a_diverged_file_says_so_on_stderr_in_the_tables_and_in_the_document(tmp_path, src):
    path = diverged_copy(src, tmp_path / "r.h5", sealed=src == RUN6)
    p = report(path)
    assert p.returncode == 0, f"expected the file reported, got {p.returncode}: {p.stderr.decode()}"
    notes = [l for l in p.stderr.decode().splitlines() if "the training diverged" in l]
    assert notes == [f"dpscale: note: {path}: the training diverged, and the sweep stopped there (root attribute "
                     f"diverged): {WHY}; the points before it are reported"], p.stderr.decode()
    assert f"**The training diverged:** {WHY} ({path}; " in p.stdout.decode(), p.stdout.decode()[:600]
    compare = report("--compare", path).stdout.decode()
    assert f"**The training diverged:** {WHY}" in compare
    p = report("--doc", tmp_path / "d.md", path)
    doc = (tmp_path / "d.md").read_text()
    assert p.returncode == 0 and f"**The training diverged:** {WHY}" in doc, p.stderr.decode()
    assert f"| diverged | {WHY} |" in doc, "expected the attribute in the provenance appendix too"


def test_a_file_that_did_not_diverge_has_no_such_note():
    p = report(RUN6)
    assert b"diverged" not in p.stdout + p.stderr


def test_the_diverged_message_is_escaped_like_every_string(tmp_path):
    path = diverged_copy(RUN6, tmp_path / "r.h5", why="<script>x</script>" + CONTROLS)
    p = report(path)
    out = tmp_path / "d.md"
    d = report("--doc", out, path)
    assert p.returncode == 0 and d.returncode == 0
    for what, data in (("stdout", p.stdout), ("stderr", p.stderr), ("document", out.read_bytes())):
        assert not raw_controls(data), f"expected no raw control character in {what}, got {raw_controls(data)}"
    for what, data in (("the tables", p.stdout), ("the document", out.read_bytes())):  # Markdown, where HTML is read
        assert b"<script" not in data and b"&lt;script>x&lt;/script>" in data, f"expected the HTML of {what} escaped"


def test_a_schema_6_file_given_the_attribute_without_a_new_seal_is_refused(tmp_path):
    path = tmp_path / "r.h5"
    shutil.copy(RUN6, path)
    with h5py.File(path, "r+") as f:  # its checksums kept: the root's no longer matches
        f.attrs["diverged"] = WHY
    p = report(path)
    assert p.returncode == 1 and errors(p) == [f"dpscale: error: {path}: corrupt: the checksum of / does not match its "
                                               "contents; the file was changed after it was written"], errors(p)


# ---- a full disk ----------------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 200 KiB tmpfs at tmp_path/small (skipped where mount is not allowed), unmounted after."""
    small = tmp_path / "small"
    small.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200k", "tmpfs", str(small)], capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"needs mount -t tmpfs: {p.stderr.strip()}")
    yield small
    subprocess.run(["umount", "-l", str(small)], capture_output=True)


def fill(folder):
    """Every free byte of folder's file system taken by folder/fill."""
    with open(folder / "fill", "wb", buffering=0) as f:
        try:
            while f.write(b"\0" * 4096):
                pass
        except OSError:
            pass


@pytest.mark.parametrize("ext", [".svg", ".png"])
def test_a_full_disk_leaves_the_previous_plot_whole(small_disk, ext):
    plot = small_disk / f"p{ext}"
    p = report("--plot", plot, RUN6)
    assert p.returncode == 0, p.stderr.decode()
    before = plot.read_bytes()
    fill(small_disk)
    p = report("--plot", plot, RUN6)
    assert p.returncode == 1 and len(errors(p)) == 1 and "could not be written completely" in errors(p)[0], \
        f"expected exit status 1 and one error line about the plot, got {p.returncode}: {p.stderr.decode()!r}"
    assert "wrote" not in p.stderr.decode(), p.stderr.decode()
    assert plot.read_bytes() == before, f"expected the previous plot whole, got {len(plot.read_bytes())} bytes"
    assert sorted(os.listdir(small_disk)) == ["fill", plot.name], f"expected no temporary, got {os.listdir(small_disk)}"


def test_a_full_disk_leaves_the_previous_document_and_figures_whole(small_disk):
    doc = small_disk / "d.md"
    p = report("--doc", doc, RUN6)
    assert p.returncode == 0, p.stderr.decode()
    figures = sorted((small_disk / "d-figs").iterdir())
    before = {f: f.read_bytes() for f in [doc, *figures]}
    fill(small_disk)
    p = report("--doc", doc, RUN6)
    assert p.returncode == 1 and errors(p) and all("could not be written completely" in e for e in errors(p)), \
        f"expected exit status 1 and errors about incomplete writes, got {p.returncode}: {p.stderr.decode()!r}"
    assert "wrote" not in p.stderr.decode(), p.stderr.decode()
    for f, data in before.items():
        assert f.read_bytes() == data, f"expected {f.name} whole, got {len(f.read_bytes())} bytes"
    left = [n for d in (small_disk, small_disk / "d-figs") for n in os.listdir(d) if n.startswith(".")]
    assert not left, f"expected no temporary left behind, got {left}"


def test_tables_to_a_full_disk_exit_1(small_disk):
    fill(small_disk)
    with open(small_disk / "fill", "ab") as out:
        p = subprocess.run([str(BINARY), "report", str(RUN6)], stdout=out, stderr=subprocess.PIPE, timeout=120)
    assert p.returncode == 1 and b"could not be written completely" in p.stderr, \
        f"expected exit status 1 naming the short write, got {p.returncode}: {p.stderr.decode()!r}"


# ---- "]]>" in a name ------------------------------------------------------------------------------------------


def test_a_name_holding_the_end_of_a_cdata_section_is_still_well_formed_svg(tmp_path):
    path = hostile_copy(RUN6, tmp_path / "r.h5", model="x]]>y", label="l]]>m")
    plot, doc = tmp_path / "p.svg", tmp_path / "d.md"
    p = report("--plot", plot, "--doc", doc, path)
    assert p.returncode == 0, p.stderr.decode()
    figures = sorted((tmp_path / "d-figs").glob("*.svg"))
    assert figures, "expected the document's figure"
    for svg in [plot, *figures]:
        try:
            root = ElementTree.parse(svg).getroot()
        except ElementTree.ParseError as e:
            pytest.fail(f"expected {svg.name} to be well-formed XML, got: {e}")
        assert "x]]>y" in " ".join(root.itertext()), f"expected the model named as it is in {svg.name}"
        if shutil.which("xmllint"):
            lint = subprocess.run(["xmllint", "--noout", str(svg)], capture_output=True, text=True)
            assert lint.returncode == 0, f"expected xmllint to accept {svg.name}, got: {lint.stderr}"


# ---- the figures' folder held open ----------------------------------------------------------------------------


def test_figures_are_written_into_the_folder_made_not_one_swapped_in_later(tmp_path):
    """OUT-figs renamed away and replaced by a link once the report has opened it: the
    figure lands in the folder dpscale made (now under its new name), never through the link."""
    victim = tmp_path / "victim"
    victim.mkdir()
    doc, figs, moved = tmp_path / "d.md", tmp_path / "d-figs", tmp_path / "moved"
    # a gnuplot on PATH that swaps the folder while it draws, between the open and the figure's rename
    shim = tmp_path / "bin"
    shim.mkdir()
    real = shutil.which("gnuplot")
    (shim / "gnuplot").write_text(f"#!/bin/sh\n[ -L '{figs}' ] || {{ mv '{figs}' '{moved}' && ln -s '{victim}' '{figs}'; }}\n"
                                  f"exec '{real}' \"$@\"\n")
    (shim / "gnuplot").chmod(0o755)
    p = report("--doc", doc, RUN6, env={"PATH": f"{shim}:{os.environ['PATH']}"})
    assert p.returncode == 0, p.stderr.decode()
    assert os.listdir(victim) == [], f"expected nothing written through the link, got {os.listdir(victim)}"
    assert [f.suffix for f in moved.iterdir()] == [".svg"], f"expected the figure in the folder made, got {os.listdir(moved)}"


# ---- output names checked at start-up ------------------------------------------------------------------------


@pytest.mark.parametrize("option,name,words", [
    ("--plot", "nodir/x.svg", "No such file or directory"),
    ("--doc", "nodir/x.md", "No such file or directory"),
    ("--plot", "afile/x.svg", "Not a directory"),
    ("--plot", "p" * 248 + ".svg", "too long"),
    ("--doc", "d" * 245 + ".md", "too long"),
    ("--plot", ".svg", "extension alone"),
    ("--plot", ".png", "extension alone"),
    ("--doc", ".md", "extension alone"),
])
def test_an_output_that_cannot_be_written_is_refused_before_any_file_is_read(tmp_path, option, name, words):
    (tmp_path / "afile").write_text("")
    missing = tmp_path / "not-there.h5"  # read, it would be named as unreadable first
    p = report(option, tmp_path / name, missing, RUN6)
    lines = p.stderr.decode().splitlines()
    assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith(f"dpscale: error: {option} "), \
        f"expected exit status 2 and one error line, got {p.returncode}: {lines}"
    assert words in lines[0], f"expected {words!r} in {lines[0]!r}"
    assert sorted(os.listdir(tmp_path)) == ["afile"], f"expected nothing written, got {os.listdir(tmp_path)}"

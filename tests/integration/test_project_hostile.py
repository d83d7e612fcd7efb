"""`dpscale project` on files and catalog entries made to hurt it: datasets of the wrong
rank or length, figures tampered with (sealed again, or not), control characters in
the strings it prints, a lax catalog entry, and --output names that `dpscale run` would
refuse. Each is one `dpscale: error:` line, exit 2, before any work where the name is
the problem. Reads files only: no GPU and no MPI launch needed."""
import os
import shutil
import subprocess

import h5py
import numpy as np
import pytest

from conftest import BINARY, ROOT

RESULTS = ROOT / "results"
SOURCE = RESULTS / "h200x2-transformers/G-gpt2-small-nvlink.h5"
N1 = "runs/nccl/nvlink/n1"
NVLINK = RESULTS / "h200x2-comm-nvlink.h5"
H100 = ROOT / "configs/systems/h100-sxm-8.ini"


def dpscale(*args):
    return subprocess.run([str(BINARY), *map(str, args)], capture_output=True, timeout=120)


def project(*args):
    return dpscale("project", *args)


def one_error(p, *says):
    """exit 2, one `dpscale: error:` line on stderr saying each of `says`, no core"""
    err = p.stderr.decode("utf-8", "replace")
    assert p.returncode == 2, (p.returncode, err)
    assert err.startswith("dpscale: error: ") and err.count("\n") == 1, err
    for s in says:
        assert s in err, (s, err)
    return err


def edited(tmp_path, edit, seal=True, name="edited.h5"):
    """a copy of SOURCE changed by edit(h5py.File); sealed again (as anyone can) unless not"""
    path = tmp_path / name
    shutil.copy(SOURCE, path)
    with h5py.File(path, "r+") as f:
        edit(f)
        if seal:
            for a in ("checksums", "checksum_algorithm"):
                if a in f.attrs:
                    del f.attrs[a]
    if seal:
        s = dpscale("seal", path)
        assert s.returncode == 0, s.stderr
    return path


def replace(f, name, data):
    if name in f:
        del f[name]
    f[name] = data


def assert_no_control(p):
    for stream in (p.stdout, p.stderr):
        bad = [b for b in stream if (b < 0x20 and b != 0x0A) or b == 0x7F]
        assert not bad, stream


# --- 1. shapes -------------------------------------------------------------------------

@pytest.mark.parametrize("what,edit,says", [
    ("rank 8", lambda f: replace(f, f"{N1}/step_s", np.ones((2, 1, 1, 1, 1, 1, 1, 1))), "step_s has 8 dimensions"),
    ("shorter than step_s", lambda f: replace(f, f"{N1}/forward_s", np.ones((1, 1))), "forward_s is [1 x 1 x 1]"),
    ("longer step_s", lambda f: replace(f, f"{N1}/step_s", np.ones((200000, 1))), "step_s is [200000 x 1 x 1]"),
    ("empty", lambda f: replace(f, f"{N1}/step_s", np.ones((0, 1))), "step_s is empty"),
    ("a scalar", lambda f: replace(f, f"{N1}/update_s", 1.0), "update_s has 0 dimensions"),
    ("ready times of another length",
     lambda f: replace(f, f"{N1}/bucket_ready_compute_only_s", np.ones((3, 1, 2))), "bucket_ready_compute_only_s"),
    ("a multi-GPU run's backward of another length",
     lambda f: replace(f, "runs/nccl/nvlink/n2/compute_only_s", np.ones((1, 2))), "n2/compute_only_s"),
])
def test_a_dataset_of_the_wrong_shape_is_one_error_naming_it(tmp_path, what, edit, says):
    path = edited(tmp_path, edit)
    err = one_error(project(path, "--comm", NVLINK), says)
    assert str(path) in err, err


def test_a_comm_file_with_fewer_times_than_sizes_is_refused(tmp_path):
    path = tmp_path / "comm.h5"
    shutil.copy(NVLINK, path)
    with h5py.File(path, "r+") as f:
        groups = []
        f.visititems(lambda n, o: groups.append(n) if isinstance(o, h5py.Group) and "time_s" in o else None)
        replace(f, f"{groups[0]}/time_s", np.ones((1, 1)))
    one_error(project(SOURCE, "--comm", path), str(path), "time_s")


# --- 2. seal and figures ------------------------------------------------------------------

def negative(f):
    for k in ("step_s", "forward_s", "backward_s"):
        replace(f, f"{N1}/{k}", np.full(f[f"{N1}/{k}"].shape, -1e300))


def nan(f):
    for k in ("step_s", "forward_s", "backward_s", "update_s"):
        replace(f, f"{N1}/{k}", np.full(f[f"{N1}/{k}"].shape, np.nan))


@pytest.mark.parametrize("edit", [negative, nan])
def test_a_tampered_file_is_refused_as_the_report_refuses_it(tmp_path, edit):
    path = edited(tmp_path, edit, seal=False)  # its checksums no longer match
    out = tmp_path / "p.h5"
    one_error(project(path, "--comm", NVLINK, "--output", out), str(path), "corrupt")
    assert not out.exists()


def test_a_tampered_calibration_is_refused(tmp_path):
    path = edited(tmp_path, negative, seal=False)
    one_error(project(SOURCE, "--comm", NVLINK, "--interference-from", path), str(path), "corrupt")


@pytest.mark.parametrize("edit,says", [(negative, "-1e+300"), (nan, "nan")])
def test_tampered_figures_sealed_again_are_not_projected(tmp_path, edit, says):
    path = edited(tmp_path, edit)
    out = tmp_path / "p.h5"
    one_error(project(path, "--comm", NVLINK, "--output", out), str(path), "damaged", says)
    assert not out.exists()


def test_an_absurd_peak_is_refused(tmp_path):
    path = edited(tmp_path, lambda f: f[N1].attrs.modify("peak_tflops", 1e300))
    one_error(project(path, "--system", H100), str(path), "peak_tflops")


# --- 3. control characters from files ------------------------------------------------------

def test_a_device_name_with_escapes_reaches_the_terminal_escaped(tmp_path):
    path = edited(tmp_path, lambda f: f["system"].attrs.modify("device_name", "NVIDIA \x1b]0;pwned\x07\x1b[31mRED"))
    p = project(path, "--system", H100)  # another GPU: the device is named in the compute note
    assert p.returncode == 0, p.stderr
    assert_no_control(p)
    assert b"\\x1b" in p.stdout, p.stdout


def test_a_path_with_escapes_reaches_the_terminal_escaped(tmp_path):
    path = tmp_path / "bad\x1b[31m.h5"
    shutil.copy(SOURCE, path)
    p = project(path, "--comm", NVLINK)
    assert p.returncode == 0, p.stderr
    assert_no_control(p)


# --- 4. the catalog reader ----------------------------------------------------------------

GOOD = H100.read_bytes().decode("utf-8")


@pytest.mark.parametrize("line,says", [
    ("[system] junk", "text after the section header"),
    ("gpus_per_node = 8abc", "gpus_per_node = 8abc is not accepted"),
    ("gpus_per_node = 8.5", "a whole number"),
    ("peak_tflops_fp32 = -1e300", "peak_tflops_fp32 = -1e300 is not accepted"),
    ("peak_tflops_bf16 = inf", "peak_tflops_bf16 = inf is not accepted"),
    ("bogus_key = 1", "unknown key 'bogus_key'"),
    ("[bogus]", "unknown section [bogus]"),
    ("gpu = AMD \x1b[31mEPYC", "control character"),
    ("gpu = caf\xe9", "not UTF-8"),
    ("name = x\x07", "control character"),
])
def test_each_bad_system_line_is_refused_with_its_line_number(tmp_path, line, says):
    lines = GOOD.splitlines()
    at = lines.index("[system]") + 1  # inside [system]; a header line replaces nothing
    if line.startswith("[system]"):
        lines[at - 1] = line
    else:
        lines.insert(at, line)
    bad = tmp_path / "bad.ini"
    text = "\n".join(lines).encode("utf-8") + b"\n"
    bad.write_bytes(text.replace("caf\xe9".encode("utf-8"), b"caf\xe9"))  # a Latin-1 byte, not UTF-8
    p = project(SOURCE, "--system", bad)
    err = one_error(p, f"{bad}:{at if line.startswith('[system]') else at + 1}:", says)
    assert_no_control(p)
    assert "\x1b" not in err


@pytest.mark.parametrize("key,value,says", [
    ("busbw_gbps", "nan, inf", "busbw_gbps = nan, inf is not accepted"),
    ("busbw_gbps", "57.5, -1, 1, 1, 1, 1", "is not accepted"),
    ("sizes_mib", "1, 4, , 64", "is not accepted"),
    ("gpus", "8x", "gpus = 8x is not accepted"),
    ("source", "\x1b]0;pwned\x07\x1b[31mRED", "control character"),
])
def test_each_bad_curve_line_is_refused_with_its_line_number(tmp_path, key, value, says):
    lines = GOOD.splitlines()
    at = next(i for i, l in enumerate(lines) if l.startswith(f"{key} =") and i > lines.index("[curve.n8]"))
    lines[at] = f"{key} = {value}"
    bad = tmp_path / "bad.ini"
    bad.write_text("\n".join(lines) + "\n")
    p = project(SOURCE, "--system", bad)
    one_error(p, f"{bad}:{at + 1}:", says)
    assert_no_control(p)


def test_the_reviews_bad_entry_is_refused_at_its_first_line(tmp_path):
    bad = tmp_path / "sys1.ini"
    bad.write_bytes(b"[system] junk\nname = evil\ngpus_per_node = 8abc\n[curve.n8]\ngpus = 8\n"
                    b"source = \x1b]0;pwned\x07\n")
    p = project(SOURCE, "--system", bad)
    one_error(p, f"{bad}:1:")
    assert_no_control(p)


def test_every_committed_catalog_entry_is_read():
    for ini in sorted((ROOT / "configs/systems").glob("*.ini")):
        p = project(SOURCE, "--system", ini)
        assert p.returncode == 0, (ini, p.stderr)


# --- 5. --output ------------------------------------------------------------------------

@pytest.mark.parametrize("name,says", [
    ("", "--output is empty"),
    ("p.txt", "ends in .h5"),
    (".h5", "ends in .h5"),
    ("dir/.h5", "ends in .h5"),
    ("p\x1b[31m.h5", "control character"),
    ("p\n.h5", "control character"),
])
def test_a_bad_output_name_is_refused_before_any_work(tmp_path, name, says):
    (tmp_path / "dir").mkdir()
    before = set(os.listdir(tmp_path))
    # a result that does not exist: refused for the name first, so no file was read at all
    p = subprocess.run([str(BINARY), "project", str(tmp_path / "missing.h5"), "--comm", str(NVLINK),
                        f"--output={tmp_path}/{name}" if name else "--output="], capture_output=True, timeout=60)
    one_error(p, says)
    assert_no_control(p)
    assert set(os.listdir(tmp_path)) == before


@pytest.mark.parametrize("kind", ["dangling link", "link to a file", "existing file", "folder"])
def test_something_at_the_output_name_is_refused_before_any_work(tmp_path, kind):
    out = tmp_path / "p.h5"
    if kind == "dangling link":
        out.symlink_to(tmp_path / "nowhere.h5")
    elif kind == "link to a file":
        (tmp_path / "there.h5").write_bytes(b"x")
        out.symlink_to(tmp_path / "there.h5")
    elif kind == "existing file":
        out.write_bytes(b"keep")
    else:
        out.mkdir()
    p = project(tmp_path / "missing.h5", "--comm", NVLINK, "--output", out)
    one_error(p, str(out))
    assert not (tmp_path / "nowhere.h5").exists()
    if kind == "existing file":
        assert out.read_bytes() == b"keep"

"""The house rules of docs/layout.md, on the sources as built: no circle of modules, at
most 7 dependencies running up a layer, no folder over 30 source files, includes that
name their folder, kernels/ a leaf, a README a newcomer reads (tools/layout_check.py).
The checker is first shown to find what it looks for, on a small tree of its own."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "layout_check.py"


def check(*args):
    p = subprocess.run([sys.executable, str(TOOL), "--json", *args], capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def write(root, rel, text):
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def compile_tree(root):
    for c in root.rglob("*.c"):
        obj = root / "build" / c.relative_to(root).with_suffix(".o")
        obj.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-c", "-I", str(root / "src"), "-o", str(obj), str(c)], check=True)


def test_the_checker_finds_a_circle_through_calls_and_an_arrow_through_a_header(tmp_path):
    # base/a.c calls config's b(), config/b.c calls a(): a circle no header shows;
    # base/a.h includes config/b.h: a dependency up a layer.
    write(tmp_path, "src/base/a.h", '#include "config/b.h"\nint a(void);\n')
    write(tmp_path, "src/base/a.c", '#include "base/a.h"\nint a(void) { return b() + 1; }\n')
    write(tmp_path, "src/config/b.h", "int b(void);\n")
    write(tmp_path, "src/config/b.c", 'int a(void);\nint b(void) { return 1; }\nint c(void) { return a(); }\n')
    write(tmp_path, "src/config/d.c", "int d(void) { return 4; }\n")
    compile_tree(tmp_path)
    found = check("--root", str(tmp_path))
    assert found["circles"] == [["src/base/a", "src/config/b"]]
    assert ["src/base/a", "src/config/b"] in found["arrows"]
    assert found["folders"] == {"src/base": 2, "src/config": 3}

    # the same tree with the call that closes the circle taken out: none left
    write(tmp_path, "src/config/b.c", "int b(void) { return 1; }\n")
    compile_tree(tmp_path)
    assert check("--root", str(tmp_path))["circles"] == []


def test_the_sources_have_no_circle_few_arrows_up_and_small_folders():
    assert (ROOT / "build" / "src").is_dir(), "make first: the calls are read from build/'s objects"
    found = check()
    assert found["objects"] > 50
    assert found["circles"] == [], "circles of modules:\n" + "\n".join(" <-> ".join(c) for c in found["circles"])
    assert len(found["arrows"]) <= 7, "dependencies up a layer:\n" + "\n".join(" -> ".join(a) for a in found["arrows"])
    big = {d: n for d, n in found["folders"].items() if n > 30}
    assert not big, f"folders over 30 source files: {big}"
    assert found["unplaced"] == [], f"sources in no layer of tools/layout_check.py: {found['unplaced']}"


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def quoted_includes(top):
    for path in sorted((ROOT / top).rglob("*")):
        if path.suffix in (".c", ".h", ".cu", ".cuh"):
            for name in INCLUDE.findall(path.read_text()):
                yield path.relative_to(ROOT), name


def test_includes_name_their_folder():
    bad = []
    for path, name in quoted_includes("src"):
        if name == "git_commit.h":  # generated into build/gen
            continue
        if name.startswith("..") or not ((ROOT / "src" / name).is_file() or (ROOT / name).is_file()):
            bad.append(f"{path}: #include \"{name}\"")
    assert not bad, "includes that do not name their folder from src/ (or kernels/):\n" + "\n".join(bad)


def test_kernels_are_a_leaf():
    bad = [f"{path}: {name}" for path, name in quoted_includes("kernels")
           if not name.startswith("kernels/") or not (ROOT / name).is_file()]
    assert not bad, "kernels/ includes outside kernels/:\n" + "\n".join(bad)


def test_the_readme_is_a_users_guide():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines"
    first = next((i for i, line in enumerate(lines, 1) if "sbatch jobs/scale8.sh" in line), None)
    assert first is not None and first <= 100, f"sbatch jobs/scale8.sh first at line {first}"


WORK_LOG = re.compile(r"\b(issue|ticket|session|call) ?#?\d+\b|(?<![\w/&])#\d+\b", re.I)
# The names of recorded files (results/h200x2-resnet/call3/, `call7-bars.log`) are the
# evidence's own and are cited as they are: code spans and paths are not prose.
NOT_PROSE = re.compile(r"`[^`]*`|\S*/\S*")


@pytest.mark.parametrize("doc", ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
def test_user_facing_text_names_no_issue_or_session(doc):
    hits = [f"{doc}:{i}: {line.strip()[:120]}" for i, line in enumerate((ROOT / doc).read_text().splitlines(), 1)
            if WORK_LOG.search(NOT_PROSE.sub(" ", line))]
    assert not hits, "issue or work-log references:\n" + "\n".join(hits)


def test_gpu_scripts_are_named_by_purpose():
    named = [p.name for p in (ROOT / "tests").rglob("*") if re.search(r"(issue|session|call)\d", p.name, re.I)]
    assert not named, f"named after a ticket: {named}"


# The ResNet's own files (docs/models.md, "Adding a model family"), and what names it.
RESNET_OWN = re.compile(r"^(src/model/families/resnet|src/backend/rn_ops\.h|src/backend/cpu_resnet\.c"
                        r"|src/backend/cuda/resnet_cuda\.|kernels/resnet/)")
RESNET_NAMES = re.compile(r"\b(rn_ops|cuda_rn_ops|cpu_rn_ops|MODEL_RESNET|resnet_describe|conv_shape|im2col|col2im"
                          r"|batchnorm\w*|BATCHNORM\w*|maxpool\w*|avgpool\w*|synth_images|synth_pixel|IM2COL|POOL"
                          r"|image_size|rn_supported)\b|->rn\b|\.rn\b|\"resnet\"")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def test_a_model_family_costs_at_most_six_existing_files():
    """Every source outside the ResNet's own files that names one of its types,
    operations, kinds or keys in code (comments aside) is a file a family touches."""
    touched = []
    for top in ("src", "kernels"):
        for path in sorted((ROOT / top).rglob("*")):
            rel = str(path.relative_to(ROOT))
            if path.suffix not in (".c", ".h", ".cu", ".cuh") or RESNET_OWN.match(rel):
                continue
            if RESNET_NAMES.search(COMMENT.sub(" ", path.read_text())):
                touched.append(rel)
    assert len(touched) <= 6, f"the ResNet reaches {len(touched)} files beyond its own: {touched}"

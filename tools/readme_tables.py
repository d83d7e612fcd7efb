#!/usr/bin/env python3
"""readme_tables.py — README's tables of measured figures, checked against the files
they come from (issue 14: every figure traceable to a file in results/).

A table in README.md that `dpscale report` printed is fenced by two comments:

    <!-- report: results/FILE.h5 [more report arguments] -->
    ... the table(s), with headings and prose of README's own between them ...
    <!-- /report -->

Every row of the block (a line starting with "| ") must be, in order, the rows that
`bin/dpscale report ARGUMENTS` prints now. Prints each block's verdict and a diff of a
mismatch; exits 1 when a block does not match or names a file that is missing.

    tools/readme_tables.py [README.md]          (from the repo root, bin/dpscale built)
"""
import difflib
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPEN = re.compile(r"^<!-- report: (.+?) -->\s*$")
CLOSE = "<!-- /report -->"


def rows(text):
    return [line.rstrip() for line in text.splitlines() if line.startswith("| ")]


def blocks(lines):
    """(line number, arguments, rows) of each fenced block."""
    out, i = [], 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != CLOSE:
            if OPEN.match(lines[j]):
                raise SystemExit(f"README line {j + 1}: a report block opens inside the one of line {i + 1}")
            j += 1
        if j == len(lines):
            raise SystemExit(f"README line {i + 1}: the report block is never closed ({CLOSE})")
        out.append((i + 1, m.group(1), rows("\n".join(lines[i + 1:j]))))
        i = j + 1
    return out


def main():
    readme = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "README.md"
    found = blocks(readme.read_text().splitlines())
    if not found:
        print(f"{readme}: no report blocks")
        return 1
    bad = 0
    for line, args, mine in found:
        argv = shlex.split(args)
        missing = [a for a in argv if a.endswith(".h5") and not (ROOT / a).exists()]
        if missing:
            print(f"line {line}: MISSING {' '.join(missing)}")
            bad += 1
            continue
        p = subprocess.run([str(ROOT / "bin" / "dpscale"), "report", *argv], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        theirs = rows(p.stdout)
        if p.returncode != 0 or not theirs or mine != theirs:
            bad += 1
            print(f"line {line}: MISMATCH dpscale report {args} (exit {p.returncode})")
            sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(mine, theirs, "README", "report", lineterm="", n=0))
        else:
            print(f"line {line}: ok, {len(mine)} rows: dpscale report {args}")
    print(f"{len(found) - bad} of {len(found)} blocks match their files")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

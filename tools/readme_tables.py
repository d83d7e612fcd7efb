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

With --update, a block that does not match but has as many rows as the report gives
takes the report's rows, one for one, in place (the headings and prose between them
stay as README has them), and the file is rewritten; a block of another row count is
left for a hand edit and still fails.

    tools/readme_tables.py [--update] [README.md]    (from the repo root, bin/dpscale built)
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
    """(line number, arguments, indices of its row lines) of each fenced block."""
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
        out.append((i + 1, m.group(1), [k for k in range(i + 1, j) if lines[k].startswith("| ")]))
        i = j + 1
    return out


def main():
    argv = sys.argv[1:]
    update = "--update" in argv
    argv = [a for a in argv if a != "--update"]
    readme = Path(argv[0]) if argv else ROOT / "README.md"
    text = readme.read_text()
    lines = text.splitlines()
    found = blocks(lines)
    if not found:
        print(f"{readme}: no report blocks")
        return 1
    bad = updated = 0
    for line, args, at in found:
        mine = [lines[k].rstrip() for k in at]
        argv = shlex.split(args)
        missing = [a for a in argv if a.endswith(".h5") and not (ROOT / a).exists()]
        if missing:
            print(f"line {line}: MISSING {' '.join(missing)}")
            bad += 1
            continue
        p = subprocess.run([str(ROOT / "bin" / "dpscale"), "report", *argv], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        theirs = rows(p.stdout)
        if p.returncode == 0 and theirs and mine != theirs and update and len(mine) == len(theirs):
            for k, row in zip(at, theirs):
                lines[k] = row
            updated += 1
            print(f"line {line}: UPDATED, {len(mine)} rows: dpscale report {args}")
        elif p.returncode != 0 or not theirs or mine != theirs:
            bad += 1
            print(f"line {line}: MISMATCH dpscale report {args} (exit {p.returncode})"
                  + (f": {len(mine)} rows in README, {len(theirs)} from the report; edit by hand" if update else ""))
            sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(mine, theirs, "README", "report", lineterm="", n=0))
        else:
            print(f"line {line}: ok, {len(mine)} rows: dpscale report {args}")
    if updated:
        readme.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""))
    print(f"{len(found) - bad} of {len(found)} blocks match their files" + (f" ({updated} updated)" if updated else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

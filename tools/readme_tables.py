#!/usr/bin/env python3
"""readme_tables.py — the documentation's tables of measured figures, checked against the
files they come from (every figure traceable to a file in results/).

A table in README.md or docs/*.md that `dpscale report` printed is fenced by two comments:

    <!-- report: results/FILE.h5 [more report arguments] -->
    ... the table(s), with headings and prose of the page's own between them ...
    <!-- /report -->

Every row of the block (a line starting with "| ") must be, in order, the rows that
`bin/dpscale report ARGUMENTS` prints now. Prints each block's verdict and a diff of a
mismatch; exits 1 when a block does not match or names a file that is missing.

With --update, a block that does not match but has as many rows as the report gives
takes the report's rows, one for one, in place (the headings and prose between them
stay as the page has them), and the file is rewritten; a block of another row count is
left for a hand edit and still fails.

    tools/readme_tables.py [--update] [PAGE.md ...]    (from the repo root, bin/dpscale built)
    tools/readme_tables.py --help

Without pages it checks README.md and every docs/*.md that holds a block.
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


def blocks(name, lines):
    """(line number, arguments, indices of its row lines) of each fenced block of page NAME."""
    out, i = [], 0
    while i < len(lines):
        m = OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != CLOSE:
            if OPEN.match(lines[j]):
                raise SystemExit(f"{name} line {j + 1}: a report block opens inside the one of line {i + 1}")
            j += 1
        if j == len(lines):
            raise SystemExit(f"{name} line {i + 1}: the report block is never closed ({CLOSE})")
        out.append((i + 1, m.group(1), [k for k in range(i + 1, j) if lines[k].startswith("| ")]))
        i = j + 1
    return out


def check(page, update):
    """(blocks, bad, updated) of one page: each block's verdict printed, the page rewritten
    with --update where a block took the report's rows."""
    text = page.read_text()
    lines = text.splitlines()
    name = page.relative_to(ROOT) if page.is_relative_to(ROOT) else page
    found = blocks(name, lines)
    bad = updated = 0
    for line, args, at in found:
        mine = [lines[k].rstrip() for k in at]
        argv = shlex.split(args)
        missing = [a for a in argv if a.endswith(".h5") and not (ROOT / a).exists()]
        if missing:
            print(f"{name}:{line}: MISSING {' '.join(missing)}")
            bad += 1
            continue
        p = subprocess.run([str(ROOT / "bin" / "dpscale"), "report", *argv], cwd=ROOT, capture_output=True,
                           text=True, timeout=120)
        theirs = rows(p.stdout)
        if p.returncode == 0 and theirs and mine != theirs and update and len(mine) == len(theirs):
            for k, row in zip(at, theirs):
                lines[k] = row
            updated += 1
            print(f"{name}:{line}: UPDATED, {len(mine)} rows: dpscale report {args}")
        elif p.returncode != 0 or not theirs or mine != theirs:
            bad += 1
            print(f"{name}:{line}: MISMATCH dpscale report {args} (exit {p.returncode})"
                  + (f": {len(mine)} rows in the page, {len(theirs)} from the report; edit by hand" if update else ""))
            sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(mine, theirs, str(name), "report", lineterm="", n=0))
        else:
            print(f"{name}:{line}: ok, {len(mine)} rows: dpscale report {args}")
    if updated:
        page.write_text("\n".join(lines) + ("\n" if text.endswith("\n") else ""))
    return len(found), bad, updated


def main():
    argv = sys.argv[1:]
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    unknown = [a for a in argv if a.startswith("-") and a != "--update"]
    if unknown:
        print(f"readme_tables.py: unknown option {unknown[0]} (--update, --help)", file=sys.stderr)
        return 2
    update = "--update" in argv
    pages = [Path(a).resolve() for a in argv if a != "--update"]
    if not pages:
        pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = [p for p in pages if not p.is_file()]
    if missing:
        print(f"readme_tables.py: no such page: {missing[0]}", file=sys.stderr)
        return 2
    total = bad = updated = 0
    for page in pages:
        n, b, u = check(page, update)
        total, bad, updated = total + n, bad + b, updated + u
    if not total:
        print(f"{' '.join(str(p) for p in pages)}: no report blocks")
        return 1
    print(f"{total - bad} of {total} blocks match their files" + (f" ({updated} updated)" if updated else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

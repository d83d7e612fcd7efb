"""The documentation's tables of measured figures are the files': every table of README.md
and docs/*.md fenced by <!-- report: ARGS --> ... <!-- /report --> is, row for row, what
`dpscale report ARGS` prints from the committed result files now (tools/readme_tables.py).
Reads files only."""
import subprocess
import sys

from conftest import ROOT

TOOL = ROOT / "tools" / "readme_tables.py"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a row of BERT-Large's 2-GPU table over NVLink, in the measured results
PAGE = ROOT / "docs" / "results.md"
ROW = "| 2 | 1 | 345383.4 | 172691.7 | 1.907 | 0.954 |"


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=300)


def test_every_fenced_table_is_what_its_files_say():
    p = run()
    assert p.returncode == 0, p.stdout + p.stderr
    # every block the pages fence, and no fewer than the 13 they hold today (a lost fence fails)
    blocks = sum(line.startswith("<!-- report: ") for page in PAGES for line in page.read_text().splitlines())
    assert blocks >= 13 and f"{blocks} of {blocks} blocks match their files" in p.stdout, p.stdout


def test_a_changed_figure_is_caught(tmp_path):
    text = PAGE.read_text()
    assert ROW in text
    (tmp_path / "results.md").write_text(text.replace(ROW, ROW.replace("0.954", "0.959"), 1))
    p = run(tmp_path / "results.md")
    assert p.returncode == 1 and "MISMATCH" in p.stdout and "0.959" in p.stdout, p.stdout


def test_update_puts_back_what_the_files_say_and_keeps_the_prose(tmp_path):
    text = PAGE.read_text()
    changed = text.replace(ROW, ROW.replace("0.954", "0.959"), 1)
    (tmp_path / "results.md").write_text(changed)
    p = run("--update", tmp_path / "results.md")
    assert p.returncode == 0 and "(1 updated)" in p.stdout, p.stdout
    assert (tmp_path / "results.md").read_text() == text


def test_update_leaves_a_block_of_another_row_count_for_a_hand_edit(tmp_path):
    text = PAGE.read_text()
    cut = "".join(l for l in text.splitlines(keepends=True) if not l.startswith(ROW))
    assert cut != text
    (tmp_path / "results.md").write_text(cut)
    p = run("--update", tmp_path / "results.md")
    assert p.returncode == 1 and "edit by hand" in p.stdout, p.stdout
    assert (tmp_path / "results.md").read_text() == cut

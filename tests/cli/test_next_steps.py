"""The next steps printed on quitting the app: commands a shell reads back as written (tmux walk:
tests/ui/test_terminal_first_contact.py)."""

from __future__ import annotations

import shlex
import sys

from tui_rater.cli.annotating import next_steps
from tui_rater.judge.hub import FIRST_JUDGE


def commands(lines: list[str]) -> list[list[str]]:
    text = "\n".join(lines).replace("\\\n", " ")
    return [shlex.split(line) for line in text.splitlines() if line.split() and line.split()[0].endswith("tui-rater")]


def test_every_command_fits_80_columns_and_pastes_back_to_its_words(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/tui_rater/cli/__main__.py"])  # as `python -m` runs it
    db, annotator = "/tmp/a folder with spaces/and a long name for a study/study.db", "o'brien"
    lines = next_steps(db, "hanna", annotator)
    assert max(map(len, lines)) <= 78
    assert commands(lines) == [
        ["tui-rater", "report", "--db", db, "--task", "hanna"],
        [
            "tui-rater",
            "judge",
            "--db",
            db,
            "--task",
            "hanna",
            "--model",
            FIRST_JUDGE,
            "--mode",
            "constrained",
            "--limit",
            "20",
        ],
        ["tui-rater", "annotate", "--db", db, "--task", "hanna", "--annotator", annotator],
    ]


def test_the_program_is_named_as_the_readme_started_it(monkeypatch, tmp_path):
    """`.venv/bin/tui-rater demo` (the README's first command) with no tui-rater on the PATH: the next steps
    name `.venv/bin/tui-rater`, which runs from where the person is; `tui-rater` alone would not be found."""
    monkeypatch.setattr(sys, "argv", [".venv/bin/tui-rater", "demo"])
    monkeypatch.setenv("PATH", str(tmp_path))
    lines = next_steps("tui-rater.db", "hanna", "me")
    assert [words[0] for words in commands(lines)] == [".venv/bin/tui-rater"] * 3

"""A newcomer's first hour, as one walk (issue 22, "Done means"): the README's first command on a fresh study
(the agreement pane is live on first open), the README's first-judge line (a real small instruct model, served
by a loopback Hugging Face Hub) giving usable readings, and reports written in the format their file's extension
names. Each command is taken from the README itself, so the walk breaks when the README stops working."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
from pathlib import Path

import pytest

from tests.judge.test_hub_model import FILE, REPO, SMOLLM2, Hub, _env, needs_smollm2
from tests.support import ROOT, run_cli_process
from tests.ui.test_terminal_first_contact import CLI, LIVE_ROW
from tests.ui.tmux import TmuxApp, flat, needs_tmux

pytestmark = [pytest.mark.terminal, needs_tmux, needs_smollm2]


def _readme_lines() -> list[str]:
    return (ROOT / "README.md").read_text(encoding="utf-8").splitlines()


def _first_command() -> list[str]:
    """The app's part of the README's first line: `python3 -m venv .venv && … && .venv/bin/tui-rater demo`."""
    first = next(line for line in _readme_lines() if line.startswith("python3 -m venv"))
    words = shlex.split(first.split("&&")[-1])
    assert words[0].endswith("tui-rater")
    return words[1:]


def _first_judge() -> list[str]:
    (line,) = [line for line in _readme_lines() if line.startswith("tui-rater judge --model hf:")]
    return shlex.split(line)[1:]


def test_a_newcomer_sees_the_live_comparison_a_usable_first_judge_and_reports_in_their_formats(tmp_path):
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    # 1. the README's first command, in a fresh folder: the comparison is alive on the first screen's `a`
    command = [*CLI, *_first_command(), "--annotator", "newcomer"]
    app = TmuxApp(command, tmp_path, env=f"cd {shlex.quote(str(fresh))} && env PYTHONPATH={shlex.quote(str(ROOT))}")
    try:
        app.wait_text("q quit", timeout=60)
        app.keys("a")
        pane = app.wait_screen(lambda s: LIVE_ROW.search(s) is not None)
        assert "No human and LLM ratings" not in flat(pane)
        app.key("Escape")
        app.wait_text("item 1/", "1-5 rate")
        app.keys("q")
        assert app.wait_status() == 0
        assert "Next steps (copy and paste):" in app.transcript()
    finally:
        app.close()
    db = fresh / "tui-rater.db"
    assert db.exists()

    # 2. the README's first-judge line, as written but for fewer items and samples (time), on that study
    judge = _first_judge()
    assert judge[judge.index("--model") + 1] == f"hf:{REPO}/{FILE}"
    hub = Hub({(REPO, FILE): SMOLLM2})
    try:
        words = [w for w in judge if w not in ("--limit", "10")]
        run = run_cli_process(*words, "--db", db, "--limit", "2", "--samples", "1", env=_env(tmp_path, hub.url),
                              cwd=fresh, timeout=900)  # fmt: skip
    finally:
        hub.close()
    assert run.returncode == 0, run.stderr
    usable = re.search(r"(\d+) of (\d+) readings usable", run.stdout)
    assert usable and int(usable[1]) == int(usable[2]) > 0, run.stdout
    with sqlite3.connect(db) as conn:
        values = [
            v for (v,) in conn.execute("SELECT value FROM ratings WHERE parse_status = 'ok' AND job_id IS NOT NULL")
        ]
    assert values and all(v in (1, 2, 3, 4, 5) for v in values)

    # 3. reports: the format is the one the file's extension names
    for name, check in (
        ("r.html", lambda text: text.lstrip().lower().startswith("<!doctype html") and "</html>" in text.lower()),
        ("r.md", lambda text: "|" in text and "┃" not in text and "<html" not in text),
        ("r.json", lambda text: "tasks" in json.loads(text)),
        ("r.csv", lambda text: text.startswith("table,task,attribute")),
    ):
        out = fresh / name
        made = run_cli_process("report", "--db", db, "--task", "hanna", "--out", out, cwd=fresh, timeout=600)
        assert made.returncode == 0, (name, made.stderr)
        assert check(Path(out).read_text(encoding="utf-8")), name

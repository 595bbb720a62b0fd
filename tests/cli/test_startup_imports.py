"""Start-up pays only for what the command uses (issue 35): `--help` and `info` import no numpy, polars, openai or
sqlite-utils, and read no installed package's metadata (sqlite-utils' plugin scan parsed every distribution's entry
points); `judge --model api:...` begins importing openai before it queues its first jobs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import Script, ok_body, story_study
from tui_rater.store.study import Study

HEAVY = (
    "numpy",
    "polars",
    "openai",
    "llama_cpp",
    "importlib.metadata",
    "textual",
    # imported at the first write or query through sqlite-utils (``store.db.StudyConnection``): `info` only reads
    # counts through the connection (the import was ~40 % of its time: click, pluggy, dateutil)
    "sqlite_utils",
    # the reply parser compiles ~100 regular expressions on import (~40 ms); `tui_rater/__init__` loads it lazily,
    # and --mode's choices are constants (domain/mode_names.py) instead of the modes and the protocols
    "tui_rater.domain.parsing",
    "tui_rater.domain.modes",
    "tui_rater.domain.protocols",
)


def _imported(*args: str) -> set[str]:
    """The modules a real `tui-rater` process imported, from ``python -X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tui_rater.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert lines, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in lines}


@pytest.mark.parametrize("command", [["--help"], ["annotate", "--help"], ["report", "--help"], ["judge", "--help"]])
def test_help_imports_nothing_heavy(command):
    imported = _imported(*command)
    assert "tui_rater.cli" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_info_imports_nothing_heavy(tmp_path):
    study = Study.open(tmp_path / "s.db")
    study.human("ann")
    study._db.conn.close()
    imported = _imported("info", "--db", str(tmp_path / "s.db"))
    assert "sqlite3" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_mode_names_are_the_modes():
    """--mode's choices are built from constants; they name exactly the built-in modes, in their order."""
    from tui_rater.domain.mode_names import MODE_NAMES
    from tui_rater.domain.modes import MODES

    assert tuple(MODES) == MODE_NAMES


def test_the_package_still_exports_the_parser():
    import tui_rater
    from tui_rater.domain import parsing

    assert tui_rater.parse_score is parsing.parse_score
    assert tui_rater.ParseResult is parsing.ParseResult
    assert tui_rater.parse_score("Score: 4", (1, 5)) == parsing.ParseResult(4.0)


# `judge` in a process of its own, its store observed (not replaced): at the first job queued, had the openai import
# begun (the module is in sys.modules from the start of its import), or was the thread doing it running?
_OBSERVED_JUDGE = """
import json, sys, threading
from tui_rater.cli import main
from tui_rater.judge import queue

seen = []
enqueue = queue.enqueue_task

def observed(*args, **kwargs):
    if not seen:
        seen.append({"openai": "openai" in sys.modules,
                     "warming": any(t.name == "judge-warm-up" for t in threading.enumerate())})
    return enqueue(*args, **kwargs)

queue.enqueue_task = observed
code = main(sys.argv[1:])
print(json.dumps({"code": code, "seen": seen}))
"""


def test_judge_begins_the_openai_import_before_it_queues_jobs(tmp_path, fake_server):
    """`import openai` is half of `judge --model api:...`'s launch; begun in a thread at the command's start, it goes
    on while the study is opened and the first jobs are queued (it was begun only when the workers started)."""
    db = story_study(tmp_path / "s.db")
    url = fake_server(Script([(200, {}, ok_body("4"), 0)]))
    args = ["judge", "--db", str(db), "--model", "api:m", "--base-url", url, "--task", "story", "--limit", "1"]
    done = subprocess.run(
        [sys.executable, "-c", _OBSERVED_JUDGE, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1", "OPENAI_API_KEY": "sk-test"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    said = json.loads(done.stdout.strip().splitlines()[-1])
    assert said["code"] == 0, done.stderr[-2000:]
    assert said["seen"] and (said["seen"][0]["openai"] or said["seen"][0]["warming"]), said
    study = Study.open(db, create=False)
    try:  # and the run judged what it judged before: the first item's questions, each read from the reply
        rows = [r for r in study.current_ratings("story") if r["kind"] == "llm"]
        assert {(r["item"], r["value"]) for r in rows} == {("s0", 4.0)}
        assert {r["attribute"] for r in rows} == {a.name for a in study.task("story").attributes}
    finally:
        study.close()

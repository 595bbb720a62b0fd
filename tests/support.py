"""Helpers the tests share: paths, small functions and data. Not fixtures -- those live in the
``conftest.py`` files (pytest finds them; no test module imports another)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"  # the excerpts the tests compare against, kept in the clone
SAMPLE = ROOT / "sample_data"
# the team's reference folder beside the clone; TUI_RATER_SHARED points elsewhere (a missing folder: as a fresh clone)
SHARED = Path(os.environ.get("TUI_RATER_SHARED", ROOT.parent / "shared"))

# four short stories for the judge tests (items x attributes x samples stay small)
STORIES = [
    {
        "id": f"s{i}",
        "system": "human" if i % 2 else "gpt2",
        "prompt": f"Prompt number {i}.",
        "story": f"Story {i}. The cat sat on the mat and thought about fish for a while. Then it slept.",
    }
    for i in range(4)
]


def story_study(db: Path, stories: list[dict] | None = None) -> Path:
    """A study file at ``db`` holding ``stories`` (default: all of STORIES) for task `story`, closed again."""
    from tui_rater.store.study import Study

    study = Study.open(db)
    study.add_items(study.task("story"), STORIES if stories is None else stories)
    study.close()
    return db


def digest(path: Path) -> str | None:
    """SHA-256 of a file (None if absent): 'the database is byte-for-byte unchanged'."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def run_cli_process(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "tui_rater.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def copy_demo(original: Path, folder: Path, name: str = "study.db") -> Path:
    """A copy of the demo study in ``folder``, its to change (the command closed the file: no -wal to carry)."""
    assert not Path(f"{original}-wal").exists() or Path(f"{original}-wal").stat().st_size == 0
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(original, folder / name))


# --- servers on loopback ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listening on {port}")


class Script:
    """What the fake API server (the ``fake_server`` fixture) answers, request by request:
    (status, headers, body, delay) tuples; the last one is repeated. It keeps when each request came,
    its headers and its JSON body (None if it was not JSON)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.times: list[float] = []
        self.headers: list[dict[str, str]] = []
        self.bodies: list[object] = []
        self.lock = threading.Lock()

    def next(self, headers: dict[str, str] | None = None, body: object = None):
        with self.lock:
            self.times.append(time.monotonic())
            self.headers.append(headers or {})
            self.bodies.append(body)
            return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def ok_body(text="I would rate it a 4."):
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
    )


ERR = json.dumps({"error": {"message": "nope", "type": "x"}})


# --- judges and the app -------------------------------------------------------------------------


def judge(study, spec, task="story", workers=1):
    """Judge every item of a task to the end (the service the CLI uses); return (rater, progress, rating rows)."""
    from tui_rater.service.judging import judge_study

    run = judge_study(study, spec.validate(), [task], workers=workers)
    rater, progress = run.plan.rater, run.progress
    assert progress.fatal is None, progress.fatal
    rows = list(
        study._db.query("SELECT * FROM ratings WHERE rater_id = ? ORDER BY item_key, attribute, sample", [rater.id])
    )
    return rater, progress, rows


def ratings_of(study, annotator):
    """(item id, attribute, value) of an annotator's ratings in force, in the order given."""
    return [
        tuple(r)
        for r in study._db.conn.execute(
            "SELECT i.id, r.attribute, r.value FROM ratings r JOIN items i ON i.key = r.item_key "
            "JOIN raters ra ON ra.id = r.rater_id WHERE ra.name = ? AND r.retracted = 0 ORDER BY r.id",
            [annotator],
        )
    ]


async def wait_until(pilot, condition, what: str, timeout: float = 60.0) -> None:
    """Let the app run until ``condition()`` holds (polled every 10 ms); fail after ``timeout``: a wait that proves
    it happens, not how fast (the workers behind it share 2 cores with the whole suite on CI)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        await pilot.pause(0.01)


async def settle(app, pilot):
    """Until every change typed so far is committed and the screen shows it as saved."""
    await pilot.pause()
    await wait_until(pilot, lambda: not app.view.unsaved, "every change saved and shown as saved")
    await pilot.pause()


# --- excerpts of the papers and of HANNA (tests/data), checked against ../shared where it is ------------

PAPERS = {"chiang_lee_2023": "001_29096bd7282ac109.txt", "chen_2023": "004_2ef064783dfcafc3.txt"}


def paper_excerpt(name: str) -> str:
    """The runs of lines kept verbatim from a paper (tests/data/papers/<name>.txt), joined by a line '@@'.

    Where the team's copy of the paper is beside the clone, every run is checked to be in it verbatim,
    so the excerpt cannot drift from its source.
    """
    text = (DATA / "papers" / f"{name}.txt").read_text(encoding="utf-8")
    runs = [run.split("\n", 1)[1].rstrip("\n") for run in text.split("\n@@ lines ")[1:]]
    paper = SHARED / "seeds" / PAPERS[name]
    if paper.exists():
        full = paper.read_text(encoding="utf-8")
        for run in runs:
            assert run in full, f"tests/data/papers/{name}.txt has a run not in {paper}: {run[:80]!r}"
    return "\n@@\n".join(runs)


def _read_csv(path: Path) -> list[dict[str, str]]:
    import csv

    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def hanna_explanations() -> list[str]:
    """The distinct LLM answers in HANNA's user study (each begins with its 1-5 rating); checked against
    shared/data/hanna/user_study.csv where it is."""
    texts = [r["Input.explanation"] for r in _read_csv(DATA / "hanna" / "user_study_explanations.csv")]
    full = SHARED / "data" / "hanna" / "user_study.csv"
    if full.exists():
        assert texts == list(dict.fromkeys(r["Input.explanation"] for r in _read_csv(full)))
    return texts


def spec_of(model: str, **settings):
    """A JudgeSpec from flat settings, as a table of test cases writes them (samples=..., mode=...): the fields of
    ``Decoding`` go into its decoding, the rest to the spec."""
    from tui_rater.domain.decoding import KNOBS, Decoding
    from tui_rater.judge.spec import JudgeSpec

    knobs = {knob.name for knob in KNOBS}
    decoding = Decoding(**{name: value for name, value in settings.items() if name in knobs})
    return JudgeSpec(model, decoding=decoding, **{name: value for name, value in settings.items() if name not in knobs})


# one Likert question on a 'panel' task: the small studies of the jury and degenerate-report tests
PANEL_TASK = """
[[task]]
name = "panel"
instructions = "Rate the reply."
fields = ["text"]

[[task.attributes]]
name = "quality"
question = "How good is it? (1-5)"
scale = { kind = "likert", low = 1, high = 5 }
"""

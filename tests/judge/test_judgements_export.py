"""`export --what judgements` through the real CLI: every judge rating with its whole stored record.

A deterministic loopback judge rates the story tasks in several modes; the export (CSV and JSONL)
must carry exactly what SQLite holds -- the distribution, scale mass and seed of a pass on every one
of its samples, the regenerated replies, a pair's order and answered letter, the implicit score's
top-k, the earlier replies of a conversation -- and be written like every other export.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3
import stat

import pytest

from tests.support import digest, run_cli_process, spec_of
from tui_rater.service.judging import judge_study
from tui_rater.store.study import Study

STORIES = [
    {"id": f"{s}{i}", "system": s, "prompt": f"Prompt {i}: a dragon learns to knit.", "story": f"{s} story {i}."}
    for i in range(3)
    for s in ("human", "gpt2")
]
PAIRS = [
    {"id": f"p{i}", "system": "gpt2 vs human", "prompt": f"P{i}", "story_a": f"A{i}.", "story_b": f"B{i}."}
    for i in range(3)
]
# (task, spec flags, --judge-name)
JUDGES = [
    ("story", dict(samples=4, mode="distribution"), "dist"),
    ("story", dict(samples=2), "text"),
    ("story", dict(samples=1, conversation=True), "chat"),
    ("story-pairwise", dict(samples=1, temperature=0.0, variant="v1"), "pairs"),
    ("story-explicit", dict(samples=1, mode="implicit"), "implicit"),
]


@pytest.fixture(scope="module")
def judged(tmp_path_factory, deterministic_judge):
    db = tmp_path_factory.mktemp("judgements") / "judged.db"
    study = Study.open(db)
    study.add_items(study.task("story"), STORIES)
    study.add_items(study.task("story-explicit"), STORIES)
    study.add_items(study.task("story-pairwise"), PAIRS)
    labels = {}
    for task, flags, name in JUDGES:
        spec = spec_of("api:det", base_url=deterministic_judge, judge_name=name, **flags).validate()
        run = judge_study(study, spec, [task])
        assert run.progress.fatal is None and run.progress.failed == 0
        labels[name] = run.plan.rater
    study.close()
    os.chmod(db, 0o640)
    exported = {}
    for suffix in ("csv", "jsonl"):
        out = db.parent / f"judgements.{suffix}"
        result = run_cli_process("export", "--what", "judgements", "--db", db, "--out", out)
        assert result.returncode == 0, result.stderr
        exported[suffix] = out
    return db, labels, exported


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _stored(db):
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = {r["id"]: dict(r) for r in conn.execute("SELECT * FROM ratings")}
    for row in rows.values():
        row["details"] = json.loads(row["details"]) if row["details"] else {}
    return rows


def test_every_judge_rating_is_exported_once_with_its_label(judged):
    db, raters, exported = judged
    stored = _stored(db)
    rows = _jsonl(exported["jsonl"])
    assert sorted(r["rating_id"] for r in rows) == sorted(stored)  # every rating, once (no human ratings here)
    for row in rows:
        rating = stored[row["rating_id"]]
        assert (row["value"], row["parse_status"], row["reply"]) == (
            rating["value"],
            rating["parse_status"],
            rating["raw"],
        )
        assert (row["sample"], row["presentation"], row["job_id"]) == (
            rating["sample"],
            rating["presentation"],
            rating["job_id"],
        )
        assert row["details"] == (rating["details"] or None)  # the stored record, verbatim
        assert row["in_force"] is True
    by_id = {r.id: r for r in raters.values()}
    assert {(r["judge_id"], r["judge"], r["rater"]) for r in rows} == {(r.id, r.label, r.name) for r in by_id.values()}
    assert {r.label for r in raters.values()} == {"J1 dist", "J2 text", "J3 chat", "J4 pairs", "J5 implicit"}


def test_a_distribution_pass_is_on_every_one_of_its_samples(judged):
    db, raters, exported = judged
    stored = _stored(db)
    rows = [r for r in _jsonl(exported["jsonl"]) if r["judge"] == raters["dist"].label]
    passes: dict[tuple[int, str], list[dict]] = {}
    for row in rows:
        passes.setdefault((row["job_id"], row["attribute"]), []).append(row)
    assert len(passes) == 6 * 4 and all(len(samples) == 4 for samples in passes.values())
    for (job_id, attribute), samples in passes.items():
        first = next(r for r in stored.values() if (r["job_id"], r["attribute"], r["sample"]) == (job_id, attribute, 0))
        facts = first["details"]
        assert "distribution" in facts and "mass" in facts and "seed" in facts
        later = [stored[s["rating_id"]]["details"] for s in samples if s["sample"] > 0]
        assert later and all("distribution" not in d for d in later)  # stored once, with sample 0 ...
        for sample in samples:  # ... exported with each sample
            assert sample["distribution"] == facts["distribution"]
            assert sample["probabilities"] == facts["raw"]
            assert sample["mass"] == facts["mass"] and sample["seed"] == facts["seed"]
            assert sample["expected"] == facts["expected"]
            assert sample["value"] == stored[sample["rating_id"]]["value"]
    # the CSV holds the same numbers, nested values as JSON text
    with open(exported["csv"], encoding="utf-8", newline="") as handle:
        flat = {int(r["rating_id"]): r for r in csv.DictReader(handle)}
    for row in rows:
        assert json.loads(flat[row["rating_id"]]["distribution"]) == row["distribution"]
        assert float(flat[row["rating_id"]]["mass"]) == row["mass"]
        assert flat[row["rating_id"]]["judge"] == "J1 dist"


def test_regenerated_replies_seeds_and_finish_reasons(judged):
    db, raters, exported = judged
    stored = _stored(db)
    rows = [r for r in _jsonl(exported["jsonl"]) if r["judge"] == raters["text"].label]
    retried = [r for r in rows if r["earlier_replies"]]
    assert retried, "the deterministic judge's unreadable replies are regenerated"
    for row in rows:
        details = stored[row["rating_id"]]["details"]
        assert row["earlier_replies"] == details.get("earlier_replies")
        assert row["seed"] == details["seed"] and row["attempts"] == details["attempts"]
        assert row["finish_reason"] == details["finish_reason"] == "stop"
        assert row["template_id"] == details["template_id"]
    assert all(r["attempts"] == len(r["earlier_replies"]) + 1 for r in retried if r["parse_status"] == "ok")


def test_pairs_carry_their_order_and_answered_letter(judged):
    db, raters, exported = judged
    stored = _stored(db)
    rows = [r for r in _jsonl(exported["jsonl"]) if r["judge"] == raters["pairs"].label]
    assert sorted(r["presentation"] for r in rows) == ["original"] * 3 + ["swapped"] * 3
    for row in rows:
        details = stored[row["rating_id"]]["details"]
        assert row["answered"] == details.get("answered")
    assert {r["answered"] for r in rows if r["parse_status"] == "ok"} <= {"A", "B", "C"}


def test_the_implicit_score_carries_its_top_k(judged):
    db, raters, exported = judged
    stored = _stored(db)
    rows = [r for r in _jsonl(exported["jsonl"]) if r["judge"] == raters["implicit"].label]
    assert len(rows) == 6
    for row in rows:
        details = stored[row["rating_id"]]["details"]
        assert row["top_k"] == details["top5"] and len(row["top_k"]) == 5
        assert (row["p_yes"], row["p_no"]) == (details["p_yes"], details["p_no"])


def test_a_conversation_carries_the_replies_before_each_question(judged):
    db, raters, exported = judged
    stored = _stored(db)
    rows = [r for r in _jsonl(exported["jsonl"]) if r["judge"] == raters["chat"].label]
    order = ["grammaticality", "cohesiveness", "likability", "relevance"]
    for row in rows:
        earlier = [
            {"attribute": name, "reply": r["raw"]}
            for name in order[: order.index(row["attribute"])]
            for r in stored.values()
            if r["job_id"] == row["job_id"] and r["attribute"] == name
        ]
        assert row["conversation"] == earlier
    assert max(len(r["conversation"]) for r in rows) == 3


def test_the_export_is_written_like_every_export(judged, tmp_path):
    db, _, exported = judged
    for path in exported.values():
        assert stat.S_IMODE(path.stat().st_mode) == 0o640  # the study file's mode
    assert not [p for p in db.parent.iterdir() if p.name.endswith(".partial")]
    before = digest(db)
    other = tmp_path / "other.jsonl"
    Study.open(other).close()  # an SQLite file, whatever its name says
    other_before = digest(other)
    refused = run_cli_process("export", "--what", "judgements", "--db", db, "--out", other)
    assert refused.returncode != 0 and "it is an SQLite database" in refused.stderr
    assert digest(other) == other_before and digest(db) == before
    one_task = tmp_path / "pairs.csv"
    result = run_cli_process(
        "export", "--what", "judgements", "--task", "story-pairwise", "--db", db, "--out", one_task
    )
    assert result.returncode == 0 and "wrote 6 rows of judgements" in result.stdout
    with open(one_task, encoding="utf-8", newline="") as handle:
        assert {r["task"] for r in csv.DictReader(handle)} == {"story-pairwise"}

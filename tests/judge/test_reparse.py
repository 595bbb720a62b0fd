"""`tui-rater reparse` reads every stored reply the way the judge read it: every protocol x mode.

A deterministic loopback judge (its answer is a function of the request) rates every protocol in
every mode it supports; reparse with the unchanged parser must change nothing, and a stored value
that was tampered with must come back -- which proves reparse recomputes rather than skips.
"""

from __future__ import annotations

import json

import pytest

from tests.support import spec_of
from tui_rater.domain.tasks import task_from_definition
from tui_rater.service.judging import judge_study
from tui_rater.store import spa
from tui_rater.store.study import Study

CUSTOM = {
    "name": "dialogue",
    "instructions": "Read the exchange.",
    "fields": ["context", "response"],
    "attributes": [
        {
            "name": "kind",
            "question": "Is the response a question, an answer or other?",
            "scale": {"kind": "choice", "choices": ["question", "answer", "other"]},
        },
        {"name": "quality", "question": "How good is it, 0-100?", "scale": {"kind": "continuous"}},
    ],
}
# (task, spec flags): every protocol in every mode it supports
CASES = [
    ("story", dict(samples=2, max_retries=0)),
    ("story", dict(samples=1, variant="explain")),
    ("story", dict(samples=2, mode="constrained")),
    ("story", dict(samples=4, mode="distribution")),
    ("story-explicit", dict(samples=1, temperature=0.0, variant="v1")),
    ("story-explicit", dict(samples=1, temperature=0.0, variant="v4")),
    ("story-explicit", dict(samples=2, temperature=1.0, variant="v5")),
    ("story-explicit", dict(samples=1, temperature=0.0, variant="v4", mode="constrained")),
    ("story-explicit", dict(samples=1, mode="implicit")),
    ("story-pairwise", dict(samples=1, temperature=0.0, variant="v1")),
    ("story-pairwise", dict(samples=1, temperature=0.0, variant="v3")),
    ("story-pairwise", dict(samples=3, temperature=1.0, variant="v4")),
    ("story-pairwise", dict(samples=1, temperature=0.0, variant="v2", mode="constrained")),
    ("story-pairwise", dict(samples=3, variant="v1", mode="distribution")),
    ("spa", dict(samples=2)),
    ("spa", dict(samples=1, mode="constrained")),
    ("dialogue", dict(samples=2)),
]


@pytest.fixture
def full_study(tmp_path):
    study = Study.open(tmp_path / "all.db")
    stories = [
        {"id": f"{s}{i}", "system": s, "prompt": f"Prompt {i}: a dragon learns to knit.", "story": f"{s} story {i}."}
        for i in range(4)
        for s in ("human", "gpt2")
    ]
    study.add_items(study.task("story"), stories)
    study.add_items(study.task("story-explicit"), stories)
    study.add_items(
        study.task("story-pairwise"),
        [
            {"id": f"p{i}", "system": "gpt2 vs human", "prompt": f"P{i}", "story_a": f"A{i}.", "story_b": f"B{i}."}
            for i in range(4)
        ],
    )
    spa.setup(study, ["human", "gpt2"], m=3, packets=2, likert=True)
    custom = task_from_definition(CUSTOM)
    study.add_items(custom, [{"id": f"d{i}", "context": f"Hi {i}?", "response": f"Hello {i}."} for i in range(3)])
    return study


def _ratings(study):
    return {
        r[0]: (r[1], r[2])
        for r in study._db.conn.execute("SELECT id, value, parse_status FROM ratings WHERE job_id IS NOT NULL")
    }


def test_reparse_changes_nothing_then_restores_tampered_values(full_study, deterministic_judge, cli):
    for task, flags in CASES:
        spec = spec_of("api:det", seed=5, base_url=deterministic_judge, **flags).validate()
        run = judge_study(full_study, spec, [task])
        assert run.progress.fatal is None and run.progress.failed == 0, (task, flags, run.progress.fatal)
    before = _ratings(full_study)
    statuses = {status for _, status in before.values()}
    assert len(before) > 300 and {"ok", "refusal", "ambiguous"} <= statuses  # typed failures included

    code, out, _ = cli("reparse", "--db", full_study.path)
    assert code == 0 and " 0 changed" in out, out
    assert _ratings(full_study) == before

    tampered = _tamper(full_study)
    code, out, _ = cli("reparse", "--db", full_study.path)
    assert code == 0 and f" {len(tampered)} changed" in out, (out, tampered)
    assert _ratings(full_study) == before


def _tamper(study) -> list[str]:
    """Corrupt one stored value of each kind of reading reparse must recompute."""
    conn = study._db.conn
    rows = conn.execute(
        """SELECT r.id, r.value, r.presentation, r.details, ra.config, i.task FROM ratings r
           JOIN raters ra ON ra.id = r.rater_id JOIN items i ON i.key = r.item_key
           WHERE r.job_id IS NOT NULL AND r.value IS NOT NULL ORDER BY r.id"""
    ).fetchall()
    picks: dict[str, int] = {}
    for rating_id, _value, presentation, details, config, task in rows:
        config, details = json.loads(config), json.loads(details or "{}")
        if task == "story-pairwise" and presentation == "swapped" and config["mode"] == "text":
            picks.setdefault("swapped pair", rating_id)
        elif config["mode"] == "distribution":
            picks.setdefault(f"distribution {task}", rating_id)
        elif config["mode"] == "implicit":
            picks.setdefault("implicit", rating_id)
        elif "stars" in details:
            picks.setdefault("stars", rating_id)
    assert len(picks) == 5, picks
    with conn:
        for rating_id in picks.values():
            conn.execute("UPDATE ratings SET value = -7 WHERE id = ?", [rating_id])
    return sorted(picks)

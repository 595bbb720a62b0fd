"""Judge readings: typed failures, scale mass, and the agreement-ready verdict, marked wherever the judge's
agreement numbers appear (issue 13, item 2). With controlled stored readings, and with a real llama.cpp
judge whose random weights put almost no next-token probability on the scale."""

from __future__ import annotations

import pytest

from tests.stats.ratings import insert
from tests.support import STORIES, judge
from tui_rater.domain.decoding import Decoding
from tui_rater.domain.protocols import FAILURES
from tui_rater.judge.spec import JudgeSpec
from tui_rater.stats import render
from tui_rater.stats.report import build_report
from tui_rater.stats.sections.readings import NOT_READY
from tui_rater.store.study import Study


@pytest.fixture
def study(tmp_path):
    study = Study.open(tmp_path / "readings.db")
    study.add_items(study.task("story"), [{**s, "id": f"s{i}"} for i, s in enumerate(STORIES * 3)])
    human = study.human("teacher")
    for i, item in enumerate(study.items("story")):
        study.add_rating(item.key, "likability", human.id, 1 + i % 5)
    return study


def _judge(study, name, answers):
    """answers: per item, (value, status, mass or None)."""
    rater = study.judge(name, {"api_model": name, "mode": "distribution"})
    for item, (value, status, mass) in zip(study.items("story"), answers):
        insert(study, item.key, "likability", rater.id, value, status=status, details={"mass": mass} if mass else None)
    return rater


def test_counts_mass_and_verdicts(study):
    n = len(study.items("story"))
    _judge(study, "steady", [(1 + (i * 2) % 5, "ok", 0.9) for i in range(n)])
    _judge(study, "noisy", [(3, "ok", 0.3) if i % 2 else (None, "low_mass", 0.001) for i in range(n)])
    _judge(study, "refuses", [(None, "refusal", None)] * 3 + [(2 + i % 3, "ok", None) for i in range(n - 3)])
    records = build_report(study, "story")
    readings = {(r.evaluator, r.statistic): r for r in records if r.table == "readings"}
    assert readings[("steady", "readings")].value == n and readings[("steady", "ok_share")].value == 1
    assert readings[("steady", "mass_mean")].value == pytest.approx(0.9)
    assert readings[("steady", "agreement_ready")].value == 1 and readings[("steady", "agreement_ready")].note == ""
    assert readings[("noisy", "failures_low_mass")].value == n // 2
    assert readings[("noisy", "mass_min")].value == pytest.approx(0.001)
    assert readings[("noisy", "mass_mean")].value == pytest.approx((0.3 + 0.001) / 2)
    noisy = readings[("noisy", "agreement_ready")]
    assert noisy.value == 0 and "typed failures (low_mass 6)" in noisy.note and f"{n} passes" in noisy.note
    refuses = readings[("refuses", "agreement_ready")]
    assert readings[("refuses", "failures_refusal")].value == 3 and refuses.value == 0
    assert "3 of 12 readings are typed failures (refusal 3)" in refuses.note
    for status in FAILURES:  # every typed failure has its count, zero or not
        assert ("steady", f"failures_{status}") in readings


def test_a_judge_not_ready_is_marked_wherever_its_agreement_numbers_appear(study):
    n = len(study.items("story"))
    _judge(study, "steady", [(1 + i % 5, "ok", 0.95) for i in range(n)])
    _judge(study, "noisy", [(1 + i % 5, "ok", 0.01) for i in range(n)])  # stored ok under --min-mass 0
    records = build_report(study, "story")
    agreement = [
        r
        for r in records
        if r.table in ("table2", "pairs", "table1")
        and "noisy" in (r.evaluator, r.evaluator_b)
        and r.attribute == "likability"  # readiness is per question: it rated only this one
    ]
    assert agreement and all(NOT_READY in r.note for r in agreement)
    assert not any(NOT_READY in r.note for r in records if "steady" in (r.evaluator, r.evaluator_b))
    text = render.to_markdown(records, "story")
    assert "noisy ⚠ not agreement-ready" in text and "steady ⚠" not in text
    assert "not agreement-ready: 12 of 12 passes put less than 0.5 of the next-token probability on the scale" in text


def test_a_real_judge_without_scale_mass_is_not_agreement_ready(tmp_path, tiny_gguf):
    study = Study.open(tmp_path / "gguf.db")
    study.add_items(study.task("story"), STORIES)
    human = study.human("teacher")
    for item in study.items("story"):
        study.add_rating(item.key, "grammaticality", human.id, 3)
    spec = JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=2), mode="distribution", min_mass=0.0)
    rater, _, rows = judge(study, spec)
    assert {r["parse_status"] for r in rows} == {"ok"}  # every pass stored: --min-mass 0
    records = build_report(study, "story")
    ready = next(
        r for r in records if r.table == "readings" and r.statistic == "agreement_ready" and r.evaluator == rater.label
    )
    assert ready.value == 0 and "of the next-token probability on the scale" in ready.note
    mass = next(r for r in records if r.statistic == "mass_mean" and r.attribute == ready.attribute)
    assert mass.value < 0.5 and mass.n == len(STORIES)  # one pass (its mass) per item
    table2 = [r for r in records if r.table == "table2" and r.evaluator_b == rater.label]
    assert table2 and all(NOT_READY in r.note for r in table2)


def test_imported_judge_ratings_are_read_values(hanna):
    """`import-ratings` stores a judge's values with the status "imported": values, not failures."""
    _, index, _ = hanna
    ready = index[("readings", "relevance", "all", "llama-13b", None, "agreement_ready")]
    assert ready.value == 1 and index[("readings", "relevance", "all", "llama-13b", None, "ok_share")].value == 1
    assert index[("readings", "relevance", "all", "llama-13b", None, "failures_no_number")].value == 0
    assert NOT_READY not in index[("table2", "relevance", "all", "humans", "llama-13b", "kendall_tau")].note


def test_an_implicit_score_of_100_without_a_no_token_is_a_warning(tmp_path, cli):
    """Chen et al.'s Implicit = max(p(yes), 1 - p(no)): with no "No" among the top 5 tokens p(no) is 0 and the
    score is 100 whatever p(yes) was (0.47 here). The paper's formula stays; the report warns."""
    from tui_rater.domain.protocols.scores import ImplicitScore

    study = Study.open(tmp_path / "implicit.db")
    study.add_items(study.task("story-explicit"), [{**s, "id": f"s{i}"} for i, s in enumerate(STORIES * 3)])
    attribute = study.task("story-explicit").attributes[0]
    rater = study.judge("yes-no", {"api_model": "m", "mode": "implicit"})
    protocol = ImplicitScore()
    answered = [("Yes", 0.40), ("No", 0.35), ("The", 0.1), ("I", 0.05), ("A", 0.02)]
    jumped = [("Yes", 0.47), ("The", 0.2), ("I", 0.1), ("A", 0.05), ("It", 0.03)]
    items = study.items("story-explicit")
    readings = [protocol.read_top_tokens(jumped if i % 3 == 0 else answered, attribute) for i in range(len(items))]
    assert readings[0].value == 100.0 and readings[1].value == pytest.approx(65.0)  # the jump, and 1 - 0.35
    for item, reading in zip(items, readings):
        insert(study, item.key, attribute.name, rater.id, reading.value, details=reading.details)
    study.close()
    records = build_report(Study.open(tmp_path / "implicit.db"), "story-explicit")
    (warning,) = [r for r in records if r.statistic == "implicit_no_outside_top5"]
    jumps = sum(1 for i in range(len(items)) if i % 3 == 0)
    assert warning.value == jumps and warning.n == len(items) and warning.evaluator == "yes-no"
    assert warning.note.startswith(f"⚠ {jumps} of {len(items)} Implicit Scores are 100 only because")
    assert "p(yes) as low as 0.47" in warning.note
    code, out, err = cli("report", "--db", tmp_path / "implicit.db", "--task", "story-explicit")
    assert code == 0, err
    assert "Implicit Scores are 100 only because" in " ".join(out.split())

"""The retest summary on simulated raters with a known answer, checked against krippendorff directly."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from tui_rater.service.retest import retest_summary
from tui_rater.stats.retest import retest_reliability
from tui_rater.store.study import Study

N = 80


@pytest.fixture
def titles(tmp_path):
    study = Study.open(tmp_path / "t.db")
    study.add_items(study.task("title-fluency"), [{"id": f"t{i}", "title": f"Title {i}"} for i in range(N)])
    return study, study.items("title-fluency")


def rate(study, rater, items, values, retest_of=None):
    """Each item rated in turn; returns the rating ids."""
    return [
        study.add_rating(item.key, "fluency", rater.id, float(v), parse_status="human", retest_of=of)
        for item, v, of in zip(items, values, retest_of or [None] * len(items))
    ]


def test_a_consistent_rater_a_copying_judge_and_a_random_judge(titles):
    study, items = titles
    rng = np.random.default_rng(0)
    truth = rng.integers(1, 6, N)
    alice = study.human("alice")
    first = rate(study, alice, items, truth)
    rate(study, alice, items[:40], truth[:40], retest_of=first[:40])  # the same answers, blind, later
    copy, noise = study.judge("copy", {"m": "copy"}), study.judge("random", {"m": "random"})
    drawn = rng.integers(1, 6, (3, N))  # the random judge's three samples of each item
    for sample in range(3):
        for item, value, guess in zip(items, truth, drawn[sample]):
            study.add_rating(item.key, "fluency", copy.id, float(value), sample=sample)
            study.add_rating(item.key, "fluency", noise.id, float(guess), sample=sample)
    found = retest_summary(study, "title-fluency", "alice").attribute("fluency")
    assert found is not None
    overall = found.reliability.overall
    assert found.reliability.pairs == 40 and overall.alpha.value == pytest.approx(1.0)
    assert overall.exact.value == 100.0 and found.reliability.shift.value == 0.0
    judges = {j.judge: j.agreement for j in found.judges}
    assert judges["copy"].alpha.value == pytest.approx(1.0) and judges["copy"].pairs == N
    # the random judge's value of an item: its samples' mean, at the nearer scale point (a mean of three
    # integers is never a half); ordinal alpha against alice's first ratings, by krippendorff
    random_values = np.round(drawn.mean(axis=0))
    direct = krippendorff.alpha(
        reliability_data=np.vstack([truth, random_values]).astype(float),
        level_of_measurement="ordinal",
        value_domain=[1, 2, 3, 4, 5],
    )
    assert judges["random"].pairs == N and judges["random"].alpha.value == pytest.approx(direct, abs=1e-12)
    assert abs(direct) < 0.2  # a random judge: no better than chance


def test_intra_rater_alpha_matches_krippendorff_and_calibration_leaves_the_first_items_out(titles):
    study, items = titles
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, N)
    bob = study.human("bob")
    first = rate(study, bob, items, truth)
    # the retests: the first 10 items rated (while calibrating) come back 2 points off, the rest the same
    again = np.where(np.arange(N) < 10, np.clip(truth + 2, 1, 5), truth)
    again[40:] = np.clip(truth[40:] + rng.integers(-1, 2, N - 40), 1, 5)  # some noise later on too
    rate(study, bob, items, again, retest_of=first)
    reliability = retest_summary(study, "title-fluency", "bob").attribute("fluency").reliability
    direct = krippendorff.alpha(
        reliability_data=np.vstack([truth, again]).astype(float),
        level_of_measurement="ordinal",
        value_domain=[1, 2, 3, 4, 5],
    )
    assert reliability.level == "ordinal" and reliability.overall.alpha.value == pytest.approx(direct)
    assert reliability.calibrated.pairs == N - 10  # first rated at positions 0-9: left out
    settled = krippendorff.alpha(
        reliability_data=np.vstack([truth[10:], again[10:]]).astype(float),
        level_of_measurement="ordinal",
        value_domain=[1, 2, 3, 4, 5],
    )
    assert reliability.calibrated.alpha.value == pytest.approx(settled)
    assert settled > reliability.overall.alpha.value
    assert reliability.shift.value == pytest.approx(float(np.mean(again - truth)))


def test_undone_retests_and_other_raters_do_not_count(titles):
    study, items = titles
    alice, carol = study.human("alice"), study.human("carol")
    first = rate(study, alice, items[:5], [1, 2, 3, 4, 5])
    retests = rate(study, alice, items[:5], [1, 2, 3, 4, 1], retest_of=first)
    study.retract_rating(retests[-1])
    rate(study, carol, items[:5], [5, 5, 5, 5, 5])
    summary = retest_summary(study, "title-fluency", "alice")
    assert summary.pairs == 4 and summary.attribute("fluency").reliability.overall.exact.value == 100.0
    assert retest_summary(study, "title-fluency", "carol").pairs == 0
    assert retest_summary(study, "title-fluency", "nobody").pairs == 0


def test_a_pairwise_judge_counts_as_its_protocol_combines_both_orders(tmp_path):
    study = Study.open(tmp_path / "p.db")
    pairs = [{"id": f"p{i}", "prompt": "P", "story_a": f"A{i}.", "story_b": f"B{i}."} for i in range(4)]
    study.add_items(study.task("story-pairwise"), pairs)
    items = study.items("story-pairwise")
    alice, judge = study.human("alice"), study.judge("j", {"m": "j"})
    attribute = study.task("story-pairwise").attributes[0].name
    for item in items:
        study.add_rating(item.key, attribute, alice.id, 0.0, parse_status="human")  # A every time
    conn = study._db.conn
    # the judge: A in both orders on p0 and p1 (agrees), A then B on p2 and p3 (order-dependent: a tie)
    for n, item in enumerate(items):
        for presentation, value in (("original", 0.0), ("swapped", 0.0 if n < 2 else 1.0)):
            conn.execute(
                "INSERT INTO ratings (item_key, attribute, rater_id, presentation, value, created_at) "
                "VALUES (?, ?, ?, ?, ?, 'now')",
                [item.key, attribute, judge.id, presentation, value],
            )
    found = retest_summary(study, "story-pairwise", "alice").attribute(attribute)
    assert found is not None and found.reliability.pairs == 0
    (agreement,) = [j.agreement for j in found.judges]
    assert agreement.pairs == 4 and agreement.exact.value == 50.0


def test_the_report_has_a_retest_table_equal_to_the_summary(titles, cli):
    study, items = titles
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, N)
    alice = study.human("alice")
    first = rate(study, alice, items, truth)
    drifted = np.clip(truth[:50] + rng.integers(-1, 2, 50), 1, 5)  # a person not quite consistent
    rate(study, alice, items[:50], drifted, retest_of=first[:50])
    judge = study.judge("copy", {"m": "copy"})
    for item, value in zip(items, truth):
        study.add_rating(item.key, "fluency", judge.id, float(value))
    code, out, err = cli("report", "--db", study.path, "--task", "title-fluency", "--format", "json")
    assert code == 0, err
    records = [r for r in __import__("json").loads(out)["tasks"]["title-fluency"] if r["table"] == "retest"]
    by = {(r["statistic"], r["evaluator_b"]): r for r in records}
    expected = retest_summary(study, "title-fluency", "alice").attribute("fluency")
    assert by[("retest_alpha", "alice")]["value"] == pytest.approx(expected.reliability.overall.alpha.value)
    assert by[("retest_alpha", "alice")]["n"] == 50
    assert by[("retest_exact", "alice")]["value"] == pytest.approx(100 * float(np.mean(drifted == truth[:50])))
    assert by[("first_vs_judge_alpha", "copy")]["value"] == pytest.approx(1.0)
    # retest ratings never count as the person's ratings anywhere else in the report
    means = [r for r in __import__("json").loads(out)["tasks"]["title-fluency"] if r["statistic"] == "mean"]
    human_mean = next(r for r in means if r["evaluator"] == "humans" and r["system"] in ("-", "all"))
    assert human_mean["value"] == pytest.approx(float(truth.mean())) and human_mean["n"] == N
    code, text, _ = cli("report", "--db", study.path, "--task", "title-fluency")
    assert code == 0 and "Test–retest" in text and "alice" in text


def test_a_retested_choice_gets_agreement_statistics_only(tmp_path, cli):
    """A choice's codes are categories: no mean shift (it read `retest_shift -0.25`) and no drift of codes."""
    study = Study.open(tmp_path / "c.db")
    pairs = [{"id": f"p{i}", "prompt": "P", "story_a": f"A{i}.", "story_b": f"B{i}."} for i in range(12)]
    study.add_items(study.task("story-pairwise"), pairs)
    items = study.items("story-pairwise")
    attribute = study.task("story-pairwise").attributes[0].name
    alice = study.human("alice")
    first = [0.0, 1.0, 2.0] * 4
    again = [0.0, 1.0, 2.0, 2.0, 1.0, 0.0, 0.0, 1.0, 2.0, 0.0, 1.0, 2.0]  # codes that "shift" by -1/6 on average
    ids = [study.add_rating(item.key, attribute, alice.id, v, parse_status="human") for item, v in zip(items, first)]
    for item, v, of in zip(items, again, ids):
        study.add_rating(item.key, attribute, alice.id, v, parse_status="human", retest_of=of)
    found = retest_summary(study, "story-pairwise", "alice").attribute(attribute)
    assert found is not None and found.reliability.pairs == 12 and found.reliability.level == "nominal"
    assert found.reliability.shift.value is None and found.reliability.drift == []
    assert found.reliability.overall.exact.value == pytest.approx(100 * 10 / 12)
    code, out, err = cli("report", "--db", study.path, "--task", "story-pairwise", "--format", "json")
    assert code == 0, err
    records = __import__("json").loads(out)["tasks"]["story-pairwise"]
    mine = {r["statistic"] for r in records if r["table"] == "retest"}
    assert {"retest_alpha", "retest_kappa", "retest_exact"} <= mine
    assert not {s for s in mine if s.startswith(("retest_shift", "retest_drift"))}
    # the same codes on an ordered scale keep their shift and drift
    ordered = retest_reliability(first, again, np.arange(12), level="ordinal", labels=[0.0, 1.0, 2.0])
    assert ordered.shift.value == pytest.approx(np.mean(np.subtract(again, first))) and ordered.drift


def test_the_reports_summary_scores_the_judges_only_on_the_questions_retested(tmp_path):
    """The report shows a person's agreement with the judges only beside a retest; it asks for that alone
    (``only_retested``): the same figures where it is shown, none computed elsewhere (issue 35: scoring every judge
    on every question was 30 % of a 10k report without retests)."""
    study = Study.open(tmp_path / "s.db")
    task = study.task("story")
    study.add_items(task, [{"id": f"s{i}", "prompt": "p", "story": f"Story {i}"} for i in range(N)])
    items = study.items("story")
    rng = np.random.default_rng(5)
    ann, cy, judge = study.human("ann"), study.human("cy"), study.judge("j", {"m": "j"})
    for attribute in [a.name for a in task.attributes]:
        truth = rng.integers(1, 6, N)
        first = [
            study.add_rating(i.key, attribute, ann.id, float(v), parse_status="human") for i, v in zip(items, truth)
        ]
        for i, v in zip(items, truth):
            study.add_rating(i.key, attribute, cy.id, float(v), parse_status="human")
            study.add_rating(i.key, attribute, judge.id, float(min(5, v + rng.integers(0, 2))))
        if attribute == "relevance":  # ann retests one question
            for i, v, of in zip(items[:30], truth[:30], first[:30]):
                study.add_rating(i.key, attribute, ann.id, float(v), parse_status="human", retest_of=of)
    full = retest_summary(study, "story", "ann")
    asked = retest_summary(study, "story", "ann", only_retested=True)
    for every, only in zip(full.attributes, asked.attributes, strict=True):
        assert repr(every.reliability) == repr(only.reliability)  # (NaN bounds: compared as written)
        assert only.judges == (every.judges if every.attribute == "relevance" else [])
        assert every.judges  # the pane's summary still scores every question
    assert all(a.judges == [] for a in retest_summary(study, "story", "cy", only_retested=True).attributes)

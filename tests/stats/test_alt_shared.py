"""The alt-test's indicators scored once per question and judge and shared by the report's verdict, its
intervals, the pooled test, the convergence prefixes and the anytime curve (issue 35 item 2: they were scored
4 + one per person times per question and judge, from dicts built item by item) -- counted, not timed.

Each prefix of the convergence curve, as the report writes it, is checked against the alt-test written from the
paper item by item (``test_alt_test_columns._paper``) on the first n items the people rated; the anytime curve
against an e-process and e-BH written here from Wang & Ramdas (2022) and the module's documented bets."""

from __future__ import annotations

import math
import sys
from collections import Counter

import numpy as np
import pytest

from tests.stats.simulated import likert_study
from tests.stats.test_alt_test_columns import _paper
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats.report import build_report

SCORED = {"_indicators", "scored", "from_dicts"}  # before: alternative_annotator._indicators; now alt_columns


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    # 4 people and 3 judges on 2 questions, 120 items rated in a shuffled order
    return likert_study(tmp_path_factory.mktemp("shared") / "sim.db", prompts=60)


@pytest.fixture(scope="module")
def report(simulated):
    calls: Counter[str] = Counter()

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_name in SCORED:
            path = frame.f_code.co_filename
            if path.endswith(("alternative_annotator.py", "alt_columns.py")):
                calls[frame.f_code.co_name] += 1

    study = simulated.open()
    sys.setprofile(profile)
    try:
        records = build_report(study, "story")
    finally:
        sys.setprofile(None)
        study.close()
    return records, calls


def test_each_questions_indicators_are_scored_once_per_judge(simulated, report):
    records, calls = report
    judges = {r.evaluator for r in records if r.table == "verdict_convergence"}
    assert judges == {"copycat", "random", "close"}
    # the verdict, its intervals, the pooled test, the fixed-n curve and the anytime curve all read them: before,
    # 2 questions x 3 judges x (4 + 4 people) = 48 scorings
    assert sum(calls.values()) == len(simulated.attributes) * len(judges), calls


def _curve(records, attribute, judge, statistic):
    return {
        r.n: r.value
        for r in records
        if (r.table, r.attribute, r.evaluator, r.statistic) == ("verdict_convergence", attribute, judge, statistic)
    }


def test_each_prefix_of_the_reports_curve_is_the_papers_test_on_those_items(simulated, report):
    records, _ = report
    checked = 0
    for attribute in simulated.attributes:
        humans = simulated.humans[attribute]
        for judge, values in simulated.judges[attribute].items():
            omegas = _curve(records, attribute, judge, "winning_rate")
            rhos = _curve(records, attribute, judge, "advantage_probability")
            assert len(omegas) >= 10 and max(omegas) == len(simulated.order)
            for n, omega in omegas.items():
                first = set(simulated.order[:n])
                prefix = {h: {i: v for i, v in r.items() if i in first} for h, r in humans.items()}
                expected_omega, expected_rho = _paper(prefix, values, epsilon=0.2)
                assert omega == pytest.approx(expected_omega, abs=1e-12), (attribute, judge, n)
                assert rhos[n] == pytest.approx(expected_rho, abs=1e-12), (attribute, judge, n)
                checked += 1
    assert checked >= 60


def _anytime(humans, judge, order, n, epsilon=0.2, alpha=0.05, cap=0.75):
    """The anytime alt-test after the first n items, written out: per person d = W^h - W^f item by item in
    ``order`` (the paper's -RMSE alignment), the e-process Π (1 + λ_i (ε - d_i)) with the aGRAPA bet (the past
    mean of ε - d over its past second moment, one pseudo-observation, clipped to [0, cap/(1-ε)]), e-BH."""
    e_values = {}
    for h, mine in humans.items():
        capital, total, squares, t = 0.0, 0.0, 0.0, 0
        for i in order[:n]:
            others = [r[i] for g, r in humans.items() if g != h and i in r]
            if i not in mine or not others:
                continue
            judge_score = -math.sqrt(sum((o - judge[i]) ** 2 for o in others) / len(others))
            human_score = -math.sqrt(sum((o - mine[i]) ** 2 for o in others) / len(others))
            tol = 1e-12 * max(1, abs(judge_score), abs(human_score))
            d = float(human_score >= judge_score - tol) - float(judge_score >= human_score - tol)
            x = epsilon - d
            bet = min(max((total / (t + 1)) / ((1 + squares) / (t + 1)), 0.0), cap / (1 - epsilon))
            capital += math.log1p(bet * x)
            total, squares, t = total + x, squares + x * x, t + 1
        if t >= 30:
            e_values[h] = math.exp(min(700.0, capital))
    m = len(e_values)
    ranked = sorted(e_values.values(), reverse=True)
    k = max((k for k in range(1, m + 1) if ranked[k - 1] >= m / (alpha * k)), default=0)
    return k / m if m >= 3 else None


def test_the_reports_anytime_curve_is_the_e_process_written_out(simulated, report):
    records, _ = report
    attribute = simulated.attributes[0]
    for judge in ("copycat", "close"):
        curve = _curve(records, attribute, judge, "anytime_winning_rate")
        assert curve
        for n, omega in curve.items():
            expected = _anytime(simulated.humans[attribute], simulated.judges[attribute][judge], simulated.order, n)
            assert omega == pytest.approx(expected, abs=1e-12), (judge, n)


@pytest.mark.parametrize("scoring", ["neg_rmse", "accuracy"])
def test_the_columns_indicators_are_the_scoring_functions_item_by_item(scoring):
    """Each (person, item)'s W^f and W^h from the matrix equal ``accuracy`` / ``neg_rmse`` called on that item's
    ratings, with the paper's >= (and a person missing from some items, a judge from others)."""
    from tui_rater.stats import alt_columns as ac

    rng = np.random.default_rng(7)
    names = ["a", "b", "c", "d"]
    humans = {h: {i: float(rng.integers(1, 6)) for i in range(200) if rng.random() < 0.7} for h in names}
    judge = {i: float(rng.integers(1, 6)) + (0.5 if scoring == "neg_rmse" else 0.0) for i in range(190)}
    found = ac.from_dicts(humans, judge, scoring)
    score = at.SCORINGS[scoring]
    for j, h in enumerate(found.humans):
        expected = []
        for i in sorted(humans[h]):  # the rows: the items sorted
            others = [humans[g][i] for g in names if g != h and i in humans[g]]
            if i in judge and others:
                a, b = score(judge[i], others), score(humans[h][i], others)
                expected.append((i, at._better_or_equal(a, b), at._better_or_equal(b, a)))
        assert [found.keys[r] for r in found.rows[j]] == [i for i, _, _ in expected]
        assert found.w_judge[j].tolist() == [float(f) for _, f, _ in expected]
        assert found.w_human[j].tolist() == [float(w) for _, _, w in expected]

"""Calibration of a judge's distribution against the people (``stats/calibration.py``): each figure checked against
scikit-learn (``calibration_curve``, ``brier_score_loss``, ``IsotonicRegression``), scipy (``jensenshannon``),
statsmodels (the item-clustered standard error), and the ranked probability score written here from Epstein (1969)."""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon
from sklearn.calibration import calibration_curve
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import brier_score_loss

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tests.support import run_cli_process
from tui_rater.stats import calibration as cal
from tui_rater.store.study import Study

K = 5


def simulated(seed: int = 0, items: int = 120, people: int = 3, sharpness: float = 3.0):
    """Items with a true point; people rate near it; the judge's distribution a softmax peaked near it
    (overconfident for large ``sharpness``). Returns (judge items x K, people's counts items x K, people x items)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, K, items)
    ratings = np.clip(truth[None, :] + rng.choice([-1, 0, 0, 1], (people, items)), 0, K - 1)
    centre = np.clip(truth + rng.choice([-1, 0, 0, 0, 1], items), 0, K - 1)
    logits = -sharpness * (np.arange(K)[None, :] - centre[:, None]) ** 2 + rng.normal(0, 0.5, (items, K))
    judge = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    counts = np.stack([np.bincount(ratings[:, j], minlength=K) for j in range(items)]).astype(float)
    return judge, counts, ratings


def observations(judge, counts):
    """One row per (item, person's rating), written out with loops."""
    p, y, item = [], [], []
    for j in range(judge.shape[0]):
        for k in range(K):
            for _ in range(int(counts[j, k])):
                p.append(judge[j])
                y.append(k)
                item.append(j)
    return np.array(p), np.array(y), np.array(item)


def test_ece_and_the_reliability_bins_are_scikit_learns_calibration_curve():
    judge, counts, _ = simulated(sharpness=1.5)
    p, y, _ = observations(judge, counts)
    confidence, hit = p.max(axis=1), (p.argmax(axis=1) == y).astype(int)
    share, mean_confidence = calibration_curve(hit, confidence, n_bins=10, strategy="uniform")
    bin_counts = np.histogram(confidence, bins=np.linspace(0, 1, 11))[0]
    bin_counts = bin_counts[bin_counts > 0]
    expected = float(np.sum(bin_counts / len(y) * np.abs(share - mean_confidence)))
    found = cal.scores(judge, counts, ordinal=True)
    assert found.ece == pytest.approx(expected, abs=1e-12)
    assert found.reliability.accuracy == pytest.approx(share.tolist())
    assert found.reliability.confidence == pytest.approx(mean_confidence.tolist())
    assert found.reliability.counts == bin_counts.tolist()
    assert found.ratings == len(y) and found.items == judge.shape[0]


def test_brier_is_the_sum_over_points_of_scikit_learns_binary_brier_score():
    judge, counts, _ = simulated(seed=1)
    p, y, _ = observations(judge, counts)
    expected = sum(brier_score_loss((y == k).astype(int), p[:, k]) for k in range(K))
    assert cal.scores(judge, counts, ordinal=True).brier.value == pytest.approx(expected, abs=1e-12)


def test_rps_is_epsteins_ranked_probability_score():
    judge, counts, _ = simulated(seed=2)
    p, y, _ = observations(judge, counts)
    total = 0.0
    for row, rating in zip(p, y):  # Epstein (1969): squared differences of the cumulative forecasts and outcomes
        forecast = outcome = score = 0.0
        for k in range(K - 1):
            forecast += row[k]
            outcome += 1.0 if rating == k else 0.0
            score += (forecast - outcome) ** 2
        total += score / (K - 1)
    assert cal.scores(judge, counts, ordinal=True).rps.value == pytest.approx(total / len(y), abs=1e-12)
    assert cal.scores(judge, counts, ordinal=False).rps is None  # interval scales: no ranked score


def test_the_js_distance_is_scipys_and_its_interval_is_clustered_by_item_as_statsmodels_does():
    import statsmodels.api as sm

    judge, counts, _ = simulated(seed=3)
    counts[0] = [1, 0, 0, 0, 0]  # one rating: no distribution of the people to compare with
    expected = np.array([jensenshannon(judge[j], counts[j] / counts[j].sum(), base=2) for j in range(1, len(judge))])
    found = cal.scores(judge, counts, ordinal=True).js
    assert found.value == pytest.approx(expected.mean(), abs=1e-12) and found.n == len(judge) - 1
    fit = sm.OLS(expected, np.ones(len(expected))).fit(
        cov_type="cluster", cov_kwds={"groups": np.arange(len(expected))}
    )
    half = 1.959963984540054 * fit.bse[0]
    assert (found.ci_low, found.ci_high) == pytest.approx((expected.mean() - half, expected.mean() + half))
    # an observation-level mean (Brier) clusters by item too: several ratings of one item are one draw
    p, y, item = observations(judge, counts)
    values = ((p - np.eye(K)[y]) ** 2).sum(axis=1)
    fit = sm.OLS(values, np.ones(len(values))).fit(cov_type="cluster", cov_kwds={"groups": item})
    brier = cal.scores(judge, counts, ordinal=True).brier
    assert brier.ci_high - brier.value == pytest.approx(1.959963984540054 * fit.bse[0])


def test_the_split_half_ceiling_splits_each_items_ratings_as_documented():
    _, _, ratings = simulated(seed=4, people=4)
    ratings = ratings.copy()
    ratings[0, 5] = -1  # an unrated slot
    ratings[1:, 9] = -1  # an item with one rating: no split
    keys = np.random.default_rng(cal.SEED).random(ratings.shape)
    distances = []
    for j in range(ratings.shape[1]):
        people = [i for i in range(ratings.shape[0]) if ratings[i, j] >= 0]
        if len(people) < 2:
            continue
        order = [ratings[i, j] for i in sorted(people, key=lambda i: keys[i, j])]
        a = np.bincount(order[: len(order) // 2], minlength=K)
        b = np.bincount(order[len(order) // 2 :], minlength=K)
        distances.append(jensenshannon(a / a.sum(), b / b.sum(), base=2))
    found = cal.split_half(ratings, K)
    assert found.value == pytest.approx(float(np.mean(distances)), abs=1e-12)
    assert found.n == ratings.shape[1] - 1


def test_recalibration_is_scikit_learns_isotonic_regression_cross_fitted_over_items():
    judge, counts, _ = simulated(seed=5, items=60, sharpness=4.0)
    mapped = cal.recalibrated(judge, counts)
    folds = np.array_split(np.random.default_rng(cal.SEED).permutation(60), cal.FOLDS)
    for held in folds:
        train = np.setdiff1d(np.arange(60), held)
        p, y, _ = observations(judge[train], counts[train])
        expected = np.column_stack(
            [
                IsotonicRegression(out_of_bounds="clip").fit(p[:, k], (y == k).astype(float)).predict(judge[held, k])
                for k in range(K)
            ]
        )
        expected = expected / expected.sum(axis=1, keepdims=True)
        assert mapped[held] == pytest.approx(expected, abs=1e-9)


def test_no_item_is_scored_by_a_map_fitted_on_its_own_ratings():
    judge, counts, _ = simulated(seed=6, items=50)
    before = cal.recalibrated(judge, counts)
    changed = counts.copy()
    changed[7] = [0, 0, 0, 0, 3]  # item 7's people now all say 5
    after = cal.recalibrated(judge, changed)
    assert after[7] == pytest.approx(before[7])  # its own row did not see the change
    assert not np.allclose(after, before)  # other folds' maps did


def test_an_overconfident_judge_is_better_calibrated_after_recalibration():
    judge, counts, ratings = simulated(seed=7, items=400, sharpness=8.0)
    found = cal.calibration(judge, counts, ratings, ordinal=True)
    assert found.after is not None and found.after.ece < found.before.ece / 2
    assert found.after.brier.value < found.before.brier.value


def test_too_few_items_have_no_recalibration_and_say_why():
    judge, counts, ratings = simulated(seed=8, items=6)
    found = cal.calibration(judge, counts, ratings, ordinal=True)
    assert found.after is None and "too few rated items" in found.note


# --- through the report ----------------------------------------------------------------------------------


def _distribution_study(tmp_path):
    sim = likert_study(tmp_path / "s.db", humans=3, prompts=20, seed=11)
    study = Study.open(sim.path)
    key = {item.id: item.key for item in study.items("story")}
    reader = study.judge("reader", {"api_model": "r", "mode": "distribution"})
    rng = np.random.default_rng(3)
    stored = {}
    for item in sim.ids:
        centre = sim.judges["likability"]["close"][item] - 1
        logits = -2.0 * (np.arange(K) - centre) ** 2 + rng.normal(0, 0.4, K)
        p = np.exp(logits) / np.exp(logits).sum()
        stored[item] = p
        details = {"distribution": {str(k + 1): float(p[k]) for k in range(K)}, "mass": 0.9}
        insert(study, key[item], "likability", reader.id, float(np.argmax(p) + 1), details=details)
    study.close()
    return sim, stored


def test_the_report_shows_calibration_checked_against_scikit_learn_and_scipy(tmp_path):
    sim, stored = _distribution_study(tmp_path)
    out = run_cli_process("report", "--db", sim.path, "--format", "json")
    assert out.returncode == 0, out.stderr
    records = [r for r in json.loads(out.stdout)["tasks"]["story"] if r["table"] == "calibration"]
    mine = {r["statistic"]: r for r in records if r["evaluator"] == "reader" and r["attribute"] == "likability"}
    # the people's ratings read straight from the file
    rows = sqlite3.connect(sim.path).execute(
        "SELECT i.id, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id JOIN items i ON i.key = r.item_key "
        "WHERE ra.kind = 'human' AND r.attribute = 'likability'"
    )
    p, y = [], []
    people: dict[str, list[int]] = {}
    for item, value in rows:
        p.append(stored[item])
        y.append(int(value) - 1)
        people.setdefault(item, []).append(int(value) - 1)
    p, y = np.array(p), np.array(y)
    expected_brier = sum(brier_score_loss((y == k).astype(int), p[:, k]) for k in range(K))
    assert mine["brier"]["value"] == pytest.approx(expected_brier, abs=1e-9)
    assert mine["brier"]["ci_low"] < mine["brier"]["value"] < mine["brier"]["ci_high"]
    share, confidence = calibration_curve((p.argmax(axis=1) == y).astype(int), p.max(axis=1), n_bins=10)
    counts = np.histogram(p.max(axis=1), bins=np.linspace(0, 1, 11))[0]
    counts = counts[counts > 0]
    assert mine["ece"]["value"] == pytest.approx(float(np.sum(counts / len(y) * np.abs(share - confidence))))
    js = [jensenshannon(stored[i], np.bincount(v, minlength=K) / len(v), base=2) for i, v in people.items()]
    assert mine["js_distance"]["value"] == pytest.approx(float(np.mean(js)), abs=1e-9)
    assert {"rps", "js_ceiling", "ece_after", "brier_after", "rps_after"} <= set(mine)
    assert "against each person's rating" in mine["brier"]["note"]
    # the text judges were sampled once: no distribution, so no calibration row for them
    assert {r["evaluator"] for r in records} == {"reader"}
    table = run_cli_process("report", "--db", sim.path, "--format", "table")
    assert table.returncode == 0 and "split-half" in table.stdout and math.isfinite(mine["js_ceiling"]["value"])


def test_the_html_report_draws_the_reliability_diagram_and_says_what_it_is_measured_against(tmp_path):
    sim, _ = _distribution_study(tmp_path)
    page = tmp_path / "r.html"
    out = run_cli_process("report", "--db", sim.path, "--format", "html", "--out", page, timeout=300)
    assert out.returncode == 0, out.stderr
    text = page.read_text(encoding="utf-8")
    assert "likability: reliability diagram" in text and "Calibration of the judges&#x27; distributions" in text
    assert "against each person&#x27;s rating of the item" in text  # the table's caption says it
    assert "recalibrated PPI++" in text  # beside the PPI tables

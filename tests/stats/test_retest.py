"""Test-retest reliability of a solo rater: simulated raters with a known answer, and the
building blocks against direct formulas."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pytest
from scipy import stats as sp

from tui_rater.stats import retest as rt

LIKERT = [1.0, 2.0, 3.0, 4.0, 5.0]


def session(rng, items=120, retested=60, noise=0.0, calibrating=0, drift_per_item=0.0):
    """A rater sees ``items`` items; ``retested`` of them come back later. Their first rating is
    the item's quality (plus noise, and more noise during the first ``calibrating`` ratings); the
    retest adds ``drift_per_item`` for every item rated in between."""
    quality = rng.integers(1, 6, items).astype(float)
    first = quality + rng.normal(0, noise, items).round() if noise else quality.copy()
    if calibrating:
        first[:calibrating] = rng.integers(1, 6, calibrating)
    chosen = rng.choice(items, retested, replace=False)
    retest_position = items + rng.permutation(retested)  # spaced: after every first rating
    base = quality[chosen] + (rng.normal(0, noise, retested).round() if noise else 0)
    retest = base + np.round(drift_per_item * (retest_position - chosen))
    return np.clip(first[chosen], 1, 5), np.clip(retest, 1, 5), chosen, retest_position


def test_a_perfectly_consistent_rater():
    first, retest, position, retest_position = session(np.random.default_rng(0))
    result = rt.retest_reliability(
        first, retest, position, level="ordinal", labels=LIKERT, retest_position=retest_position
    )
    for block in (result.overall, result.calibrated):
        assert block.alpha.value == pytest.approx(1.0)
        assert block.kappa.value == pytest.approx(1.0) and block.kappa_weights == "quadratic"
        assert block.exact.value == 100.0
    assert result.pairs == 60 and result.calibrated.pairs == int(np.sum(position >= 10))
    assert result.shift.value == 0.0
    assert all(d.slope == 0.0 for d in result.drift)


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_a_random_rater_agrees_with_itself_at_chance(level):
    alphas, kappas = [], []
    for seed in range(30):
        rng = np.random.default_rng(seed)
        first, retest = rng.integers(1, 6, 200).astype(float), rng.integers(1, 6, 200).astype(float)
        result = rt.retest_reliability(first, retest, np.arange(200), level=level, labels=LIKERT)
        alphas.append(result.overall.alpha.value)
        kappas.append(result.overall.kappa.value)
        assert result.overall.exact.value == pytest.approx(100 * np.mean(first == retest))
    assert abs(np.mean(alphas)) < 0.03 and abs(np.mean(kappas)) < 0.03
    assert max(map(abs, alphas)) < 0.25


def test_agreement_matches_krippendorff_and_a_direct_weighted_kappa():
    rng = np.random.default_rng(3)
    first, retest, position, _ = session(rng, noise=0.8)
    result = rt.retest_reliability(first, retest, position, level="ordinal", labels=LIKERT, calibration_items=0)
    expected = krippendorff.alpha(np.vstack([first, retest]), level_of_measurement="ordinal", value_domain=LIKERT)
    assert result.overall.alpha.value == pytest.approx(expected)
    # quadratic-weighted κ from its definition: 1 - sum w O / sum w E over the 5 x 5 table
    observed = np.zeros((5, 5))
    for a, b in zip(first, retest):
        observed[int(a) - 1, int(b) - 1] += 1
    expected_table = np.outer(observed.sum(1), observed.sum(0)) / observed.sum()
    weights = np.array([[(i - j) ** 2 for j in range(5)] for i in range(5)])
    kappa = 1 - (weights * observed).sum() / (weights * expected_table).sum()
    assert result.overall.kappa.value == pytest.approx(kappa)
    assert result.calibrated == result.overall  # K = 0 keeps every pair


def test_nominal_uses_unweighted_kappa():
    first = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 2], dtype=float)
    retest = np.array([0, 1, 2, 0, 2, 2, 1, 1, 2, 0], dtype=float)
    result = rt.retest_reliability(first, retest, np.arange(10), level="nominal", labels=[0, 1, 2])
    p_o = np.mean(first == retest)
    p_e = sum(np.mean(first == k) * np.mean(retest == k) for k in (0, 1, 2))
    assert result.overall.kappa_weights == "none"
    assert result.overall.kappa.value == pytest.approx((p_o - p_e) / (1 - p_e))


def test_calibration_items_are_left_out_of_the_settled_agreement():
    better = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        first, retest, position, _ = session(rng, items=60, retested=40, noise=0.3, calibrating=10)
        result = rt.retest_reliability(first, retest, position, level="ordinal", labels=LIKERT)
        assert result.calibrated.pairs == int(np.sum(position >= 10))
        better += result.calibrated.alpha.value > result.overall.alpha.value
    assert better >= 18  # erratic first ratings lower the overall α, not the settled one


def test_drift_is_detected_with_its_interval():
    rng = np.random.default_rng(7)
    first, retest, position, retest_position = session(rng, items=200, retested=100, drift_per_item=0.01)
    result = rt.retest_reliability(first, retest, position, labels=LIKERT, retest_position=retest_position)
    spacing = next(d for d in result.drift if d.against.startswith("items between"))
    assert spacing.ci_low > 0 and spacing.p < 0.001
    assert result.shift.value > 0 and result.shift.extra["ci_low"] > 0
    # against an independent least-squares fit with its textbook standard error
    d = retest - first
    x = retest_position - position
    slope, intercept = np.polyfit(x, d, 1)
    residual = d - (slope * x + intercept)
    se = math.sqrt(residual @ residual / (d.size - 2) / np.sum((x - x.mean()) ** 2))
    t = sp.t.ppf(0.975, d.size - 2)
    assert spacing.slope == pytest.approx(slope)
    assert (spacing.ci_low, spacing.ci_high) == pytest.approx((slope - t * se, slope + t * se))


def test_drift_against_time():
    rng = np.random.default_rng(8)
    first, retest, position, _ = session(rng, noise=0.5)
    seconds = 1_700_000_000 + position * 30.0  # one item every 30 s
    result = rt.retest_reliability(first, retest, position, labels=LIKERT, first_time=seconds)
    by_position, by_time = result.drift
    assert by_time.against == "hours since the first rating"
    assert by_time.slope == pytest.approx(by_position.slope * 120)  # 120 items an hour


def test_continuous_scale_and_undefined_cases():
    first = np.array([10.0, 55.0, 80.0, 30.0])
    result = rt.retest_reliability(first, first + 1, np.arange(4), level="interval")
    assert result.overall.kappa.value is None and "discrete" in result.overall.kappa.note
    assert result.overall.alpha.value > 0.99
    assert result.calibrated.pairs == 0 and result.calibrated.alpha.value is None
    empty = rt.retest_reliability([], [], [], labels=LIKERT)
    assert empty.pairs == 0 and empty.overall.alpha.value is None and empty.note == "no item was rated twice"
    assert empty.drift[0].slope is None and empty.shift.value is None
    same_place = rt.drift([1, 2, 3], [4, 4, 4], "position")
    assert same_place.slope is None and "same position" in same_place.note

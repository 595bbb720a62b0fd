"""The item-bootstrap intervals (stats/intervals.py) against the same bootstrap done the slow way: each resample's
items repeated as drawn, and the figure recomputed by code nobody here wrote (``krippendorff``, scipy,
scikit-learn), then the same percentiles. A vectorised formula that is wrong for one resample moves the interval."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest
from scipy import stats as sp
from sklearn.metrics import cohen_kappa_score

from tui_rater.stats import agreement as ag
from tui_rater.stats import intervals as iv

pytestmark = pytest.mark.usefixtures("item_draws")  # the statistics checked on each resample's items

TAIL = (1 - iv.LEVEL) / 2


def _expanded_interval(columns: np.ndarray, figure) -> tuple[float, float]:
    """The percentile interval of ``figure`` over the resamples, each resample's items (columns) repeated."""
    draws = []
    for block in iv.resamples(columns.shape[-1], 100):
        for w in block.astype(int):
            draws.append(figure(np.repeat(columns, w, axis=-1)))
    values = np.asarray([d for d in draws if d is not None and np.isfinite(d)], dtype=float)
    assert values.size >= iv.LEAST_DEFINED * len(draws)
    low, high = np.quantile(values, [TAIL, 1 - TAIL])
    return float(low), float(high)


def _ratings(seed: int, raters: int = 3, items: int = 30, missing: float = 0.2) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=items)
    m = np.clip(truth + rng.integers(-1, 2, size=(raters, items)), 1, 5).astype(float)
    m[rng.random(m.shape) < missing] = np.nan
    return m


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_alpha_interval_is_the_bootstrap_of_krippendorff_alpha(level):
    m = _ratings(3)
    pairable = m[:, np.sum(~np.isnan(m), axis=0) >= 2]
    expected = _expanded_interval(
        pairable, lambda x: krippendorff.alpha(reliability_data=x, level_of_measurement=level)
    )
    got = iv.alpha(m, level)
    assert got.ok and got.method == iv.METHOD
    assert (got.low, got.high) == pytest.approx(expected, abs=1e-9)
    point = ag.alpha(m, level).value
    assert point is not None and got.low - 0.05 <= point <= got.high + 0.05


def test_alpha_on_continuous_values_uses_every_value_as_a_level():
    rng = np.random.default_rng(5)
    truth = rng.normal(50, 20, size=25)
    m = truth + rng.normal(0, 8, size=(3, 25))
    expected = _expanded_interval(m, lambda x: krippendorff.alpha(reliability_data=x, level_of_measurement="ordinal"))
    assert (iv.alpha(m, "ordinal").low, iv.alpha(m, "ordinal").high) == pytest.approx(expected, abs=1e-9)


def _pair(seed: int, n: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(1, 6, size=(3, n)).mean(axis=0)  # averaged: ties and thirds
    judge = np.clip(np.round(human + rng.normal(0, 1.0, n)), 1, 5)
    judge[rng.random(n) < 0.1] = np.nan
    return human, judge


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (iv.kendall_tau, lambda a, b: sp.kendalltau(a, b).statistic),
        (iv.spearman, lambda a, b: sp.spearmanr(a, b).statistic),
        (iv.pearson, lambda a, b: sp.pearsonr(a, b).statistic),
    ],
    ids=["kendall_tau_b", "spearman", "pearson"],
)
def test_correlation_intervals_are_the_bootstrap_of_scipy(ours, theirs):
    h, j = _pair(11)
    keep = ~(np.isnan(h) | np.isnan(j))
    both = np.vstack([h[keep], j[keep]])

    def figure(x):
        if np.ptp(x[0]) == 0 or np.ptp(x[1]) == 0:
            return None
        return theirs(x[0], x[1])

    got = ours(h, j)
    assert got.ok
    assert (got.low, got.high) == pytest.approx(_expanded_interval(both, figure), abs=1e-9)


def test_weighted_kappa_interval_is_the_bootstrap_of_scikit_learn():
    h, j = _pair(12)
    labels = [1.0, 2.0, 3.0, 4.0, 5.0]
    keep = ~(np.isnan(h) | np.isnan(j))
    both = np.vstack([ag.to_labels(h[keep], labels), ag.to_labels(j[keep], labels)])

    def figure(x):
        return cohen_kappa_score(x[0], x[1], labels=labels, weights="quadratic")

    got = iv.weighted_kappa(h, j, labels)
    assert (got.low, got.high) == pytest.approx(_expanded_interval(both, figure), abs=1e-9)


def test_exact_agreement_and_percent_exact_and_mean_intervals():
    h, j = _pair(13)
    labels = [1.0, 2.0, 3.0, 4.0, 5.0]
    keep = ~(np.isnan(h) | np.isnan(j))
    both = np.vstack([ag.to_labels(h[keep], labels), ag.to_labels(j[keep], labels)])
    got = iv.exact_agreement(h, j, labels)
    assert (got.low, got.high) == pytest.approx(_expanded_interval(both, lambda x: 100 * np.mean(x[0] == x[1])))
    m = _ratings(4)
    rated2 = m[:, np.sum(~np.isnan(m), axis=0) >= 2]
    got = iv.percent_exact(m)
    expected = _expanded_interval(rated2, lambda x: ag.percent_exact(x).value)
    assert (got.low, got.high) == pytest.approx(expected, abs=1e-9)
    got = iv.mean(m)
    assert (got.low, got.high) == pytest.approx(_expanded_interval(m, lambda x: np.nanmean(x)), abs=1e-9)


def test_the_interval_is_the_same_every_time_and_covers_the_figure():
    m = _ratings(21, items=60)
    first, second = iv.alpha(m, "interval"), iv.alpha(m, "interval")
    assert first == second
    assert first.low < ag.alpha(m, "interval").value < first.high


def test_too_many_distinct_values_fall_back_to_fishers_z():
    rng = np.random.default_rng(2)
    x = rng.normal(size=3000)
    y = x + rng.normal(size=3000)
    got = iv.kendall_tau(x, y)
    tau = sp.kendalltau(x, y).statistic
    half = 1.959963984540054 * np.sqrt(0.437 / (3000 - 4))
    assert got.method == iv.FISHER
    assert (got.low, got.high) == pytest.approx((np.tanh(np.arctanh(tau) - half), np.tanh(np.arctanh(tau) + half)))


def test_no_variation_in_most_resamples_gives_no_interval_and_says_why():
    x = np.array([1.0] * 29 + [2.0])
    y = np.array([1.0] * 29 + [2.0])
    got = iv.kendall_tau(x, y)
    assert not got.ok and "resamples" in got.method


def test_tau_of_continuous_scores_counts_item_pairs_and_is_the_bootstrap_of_scipy():
    """Judges' expected values are continuous: every item its own level, where tau is counted over item pairs."""
    rng = np.random.default_rng(17)
    x = rng.normal(size=35)
    y = 0.6 * x + rng.normal(size=35)
    y[[3, 9]] = y[[4, 10]]  # a few ties
    expected = _expanded_interval(np.vstack([x, y]), lambda v: sp.kendalltau(v[0], v[1]).statistic)
    got = iv.kendall_tau(x, y)
    assert got.method == iv.METHOD
    assert (got.low, got.high) == pytest.approx(expected, abs=1e-9)

"""The report's bootstrap draws each figure's resample counts by pattern (issue 35): the count of each group of items
with the same values is drawn as Multinomial(n, sizes / n) -- the sums over groups of a uniform multinomial draw of
the items, by the multinomial's aggregation property -- instead of 1,000 x n item counts.

Checked here: the draw is that definition, written here (numpy's multinomial, seeded by n and a SHA-256 of the
sizes); it has the distribution of the item-level draw summed by group (a two-sample test against counts drawn
item by item, here); each resample's alpha is krippendorff's, and the tau interval the percentiles of scipy's tau,
on the items repeated by the pattern counts; every figure's interval is within Monte-Carlo error of the item-level
bootstrap's; and a figure reads no item-level draw at all.
"""

from __future__ import annotations

import hashlib

import krippendorff
import numpy as np
import pytest
from scipy import stats as sp

from tui_rater.stats import gwet
from tui_rater.stats import intervals as iv


def _seed(n: int, sizes: np.ndarray) -> list[int]:
    digest = hashlib.sha256(np.asarray(sizes, dtype="<i8").tobytes()).digest()
    return [iv.SEED, n, int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")]


def _by_definition(group: np.ndarray, groups: int) -> np.ndarray:
    """Each resample's count of each group: Multinomial(n, sizes / n) over the groups holding items."""
    sizes = np.bincount(group, minlength=groups)
    occupied = np.flatnonzero(sizes)
    n = group.size
    out = np.zeros((iv.RESAMPLES, groups), dtype=np.int64)
    rng = np.random.default_rng(_seed(n, sizes[occupied]))
    out[:, occupied] = rng.multinomial(n, sizes[occupied] / n, size=iv.RESAMPLES)
    return out


@pytest.mark.parametrize(("n", "groups"), [(7, 1), (300, 3), (2500, 40), (120_000, 25)])
def test_group_counts_are_the_multinomial_of_the_groups_sizes(n, groups):
    rng = np.random.default_rng(n)
    group = rng.integers(0, groups, n)
    if groups > 2:
        group[group == 1] = 0  # a group without items: zero in every resample
    found = iv.group_sums(group, groups)
    assert found is not None and found.shape == (iv.RESAMPLES, groups)
    assert np.array_equal(found, _by_definition(group, groups))
    assert np.all(found.sum(axis=1) == n)
    if groups > 2:
        assert not found[:, 1].any()


def test_the_draw_by_pattern_has_the_item_level_draws_distribution():
    """Summed by group, 4,000 item-level draws (numpy's multinomial over the 400 items, seeded here) and 4,000 draws
    by pattern (four seeds' worth of the product's, each a different study of the same sizes) agree: each group's
    marginal by Kolmogorov-Smirnov, and the covariance of two groups' counts with -n p_a p_b."""
    sizes = np.array([4, 36, 120, 240])
    n = int(sizes.sum())
    group = np.repeat(np.arange(sizes.size), sizes)
    items = np.random.default_rng(1).multinomial(n, np.full(n, 1.0 / n), size=4 * iv.RESAMPLES)
    by_items = np.stack([items[:, group == g].sum(axis=1) for g in range(sizes.size)], axis=1)
    by_pattern = []
    for shift in range(4):  # the same sizes in another order: another seed
        order = np.roll(np.arange(sizes.size), shift)
        relabel = np.argsort(order)
        drawn = iv.group_sums(relabel[group], sizes.size)
        assert drawn is not None
        by_pattern.append(drawn[:, relabel])
    pattern = np.concatenate(by_pattern)
    for g in range(sizes.size):
        assert sp.ks_2samp(pattern[:, g], by_items[:, g]).pvalue > 0.001, g
    p = sizes / n
    expected = -n * p[2] * p[3]
    for draws in (pattern, by_items):
        covariance = np.cov(draws[:, 2], draws[:, 3])[0, 1]
        assert abs(covariance - expected) < 0.1 * abs(expected), covariance
    assert abs(pattern[:, 0].mean() - n * p[0]) < 0.1


def test_each_resamples_alpha_and_tau_are_those_of_the_repeated_items():
    """The report's alpha of each resample, drawn by pattern, is krippendorff's on each pattern's items repeated as
    often as the resample drew the pattern (the patterns and their counts computed here); its tau scipy's."""
    rng = np.random.default_rng(5)
    n = 3000
    truth = rng.integers(1, 6, n)
    matrix = np.clip(truth + rng.integers(-1, 2, (3, n)), 1, 5).astype(float)
    matrix[2, rng.random(n) < 0.2] = np.nan
    draws = iv.alpha_draws(matrix, "interval")
    assert isinstance(draws, np.ndarray)
    # the patterns: each item's counts of the values 1..5 (alpha's levels), in np.unique's row order
    counts = np.stack([(matrix == v).sum(axis=0) for v in range(1, 6)], axis=1)
    pairable = counts.sum(axis=1) >= 2
    rows, first, which = np.unique(counts[pairable], axis=0, return_index=True, return_inverse=True)
    drawn = _by_definition(which.ravel(), rows.shape[0])
    columns = matrix[:, pairable]
    for b in range(0, 40):
        repeated = np.repeat(columns[:, first], drawn[b], axis=1)
        expected = krippendorff.alpha(reliability_data=repeated, level_of_measurement="interval")
        assert draws[b] == pytest.approx(expected, abs=1e-12), b
    x, y = matrix[0], matrix[1]
    joint = iv._joint(x, y)
    assert joint is not None
    tables = np.concatenate(list(joint.tables())).reshape(iv.RESAMPLES, -1)
    assert np.array_equal(tables, _by_definition(joint.cell, tables.shape[1]))
    taus = []
    for b in range(iv.RESAMPLES):  # the interval: scipy's tau-b of every resample's repeated items
        cells = np.repeat(np.arange(tables.shape[1]), tables[b].astype(int))
        xs, ys = joint.x_levels[cells // joint.y_levels.size], joint.y_levels[cells % joint.y_levels.size]
        taus.append(sp.kendalltau(xs, ys).statistic)
    low, high = np.quantile(taus, [0.025, 0.975])
    found = iv.kendall_tau(x, y)
    assert found.low == pytest.approx(low, abs=1e-12) and found.high == pytest.approx(high, abs=1e-12)


def _figures(matrix: np.ndarray) -> dict[str, iv.Interval]:
    iv._tables.clear()
    ac = gwet.ac(matrix, [1.0, 2.0, 3.0, 4.0, 5.0], "ordinal")
    return {
        "mean": iv.mean(matrix),
        "percent_exact": iv.percent_exact(matrix),
        "alpha interval": iv.alpha(matrix, "interval"),
        "alpha ordinal": iv.alpha(matrix, "ordinal"),
        "alpha nominal": iv.alpha(matrix, "nominal"),
        "tau": iv.kendall_tau(matrix[0], matrix[1]),
        "spearman": iv.spearman(matrix[0], matrix[2]),
        "pearson": iv.pearson(matrix[1], matrix[2]),
        "kappa": iv.weighted_kappa(matrix[0], matrix[1], [1, 2, 3, 4, 5]),
        "exact": iv.exact_agreement(matrix[0], matrix[1]),
        "ac2": iv.Interval(ac.extra["ci_low"], ac.extra["ci_high"], str(ac.extra["ci"])),
    }


def test_every_figures_interval_is_the_item_bootstraps_within_monte_carlo_error(monkeypatch):
    """The same figures by pattern and from the item-level resamples: different draws of one bootstrap distribution,
    so each end of each interval within a fifth of the interval's width (the 2.5 % quantile of 1,000 resamples moves
    by about a tenth of the width between seeds) -- and the patterns' interval is not the item-level one."""
    rng = np.random.default_rng(8)
    n = 4000
    truth = rng.integers(1, 6, n)
    matrix = np.clip(truth + rng.integers(-1, 2, (3, n)), 1, 5).astype(float)
    by_pattern = _figures(matrix)
    monkeypatch.setattr(iv, "BY_PATTERN", False)
    by_items = _figures(matrix)
    moved = 0
    for name, found in by_pattern.items():
        expected = by_items[name]
        assert found.ok and expected.ok and found.method == expected.method, name
        assert expected.low is not None and expected.high is not None and found.low is not None
        width = expected.high - expected.low
        assert abs(found.low - expected.low) < 0.2 * width, name
        assert found.high is not None and abs(found.high - expected.high) < 0.2 * width, name
        moved += (found.low, found.high) != (expected.low, expected.high)
    assert moved >= len(by_pattern) - 1


def test_a_figure_reads_no_item_level_draw(monkeypatch):
    """Table 1's mean, % exact and alpha, AC and a pair's joint tables at 20,000 items: no item-level resample is
    drawn or read (before: 1,000 x 20,000 counts drawn, kept and read for each figure)."""
    n = 20_000
    rng = np.random.default_rng(9)
    matrix = rng.integers(1, 6, (3, n)).astype(float)
    blocks: list[int] = []
    original = iv.resample_counts

    def counted(size, per_block):  # type: ignore[no-untyped-def]
        for block in original(size, per_block):
            blocks.append(block.shape[0])
            yield block

    monkeypatch.setattr(iv, "resample_counts", counted)
    monkeypatch.setattr(iv, "_cached", {})
    iv._tables.clear()
    assert iv.mean(matrix).ok and iv.percent_exact(matrix).ok and iv.alpha(matrix, "ordinal").ok
    assert iv.kendall_tau(matrix[0], matrix[1]).ok and iv.spearman(matrix[0], matrix[2]).ok
    assert gwet.ac(matrix, [1.0, 2.0, 3.0, 4.0, 5.0], "ordinal").extra["ci_low"] is not None
    assert blocks == [] and iv._cached == {}


def test_many_patterns_among_many_more_items_are_still_drawn_by_pattern():
    """Two 0-100 scores' joint cells (up to 10,201) at 200,000 items: more than ``DRAWN_GROUPS`` patterns, but a
    sixteenth of the items -- drawn by pattern (1,000 x 10k binomials, not 1,000 x 200k)."""
    n = 200_000
    rng = np.random.default_rng(3)
    cell = rng.integers(0, 101, n) * 101 + rng.integers(0, 101, n)
    found = iv.group_sums(cell, 101 * 101)
    assert np.unique(cell).size > iv.DRAWN_GROUPS
    assert found is not None and np.array_equal(found, _by_definition(cell, 101 * 101))


def test_continuous_values_are_drawn_item_by_item():
    """More distinct values than ``DRAWN_GROUPS`` (a length, a 0-100 score): the item-level draw, as before."""
    n = iv.DRAWN_GROUPS + 500
    values = np.random.default_rng(2).normal(size=n)
    assert iv.group_sums(np.arange(n), n) is None
    sums = iv.resampled_sums(np.stack([values, np.ones(n)], axis=1))
    w = np.random.default_rng([iv.SEED, n]).multinomial(n, np.full(n, 1.0 / n), size=iv.RESAMPLES)
    assert np.allclose(sums, w @ np.stack([values, np.ones(n)], axis=1), rtol=1e-12, atol=1e-9)

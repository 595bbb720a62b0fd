"""The bootstrap's sums over the items on the item-level resamples (``intervals.BY_PATTERN`` off: the draw of figures
with too many distinct values, and the one the statistics are checked on): Table 1's means and % exact and the joint
tables of tau, rho, r and kappa, checked against the resamples drawn afresh from their definition (numpy's multinomial
with the report's seed); the figures against their float products on the same draws. The draw by pattern:
tests/stats/test_pattern_draws.py."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import intervals as iv

pytestmark = pytest.mark.usefixtures("item_draws")  # the statistics checked on each resample's items


def _drawn(n: int) -> np.ndarray:
    """The report's resamples of n items, from their definition: RESAMPLES multinomial draws seeded [SEED, n]."""
    return np.random.default_rng([iv.SEED, n]).multinomial(n, np.full(n, 1.0 / n), size=iv.RESAMPLES)


def _bincounts(w: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    return np.stack([np.bincount(group, weights=row, minlength=groups) for row in w])


@pytest.mark.parametrize("n", [40, 5000])
def test_exact_sums_are_the_float_products_of_the_draw(n):
    rng = np.random.default_rng(n)
    columns = np.stack([rng.integers(3, 16, n) / 2.0, rng.integers(1, 4, n).astype(float)], axis=1)
    found = iv.exact_sums(columns)
    assert found is not None and found.tobytes() == (_drawn(n).astype(float) @ columns).tobytes()


def test_the_mean_and_tau_intervals_are_those_of_the_resampled_data():
    """Each resample's mean and tau-b from the data expanded by its counts (numpy and scipy on the repeated items),
    then the percentile interval: the same bounds."""
    from scipy import stats

    n = 600
    rng = np.random.default_rng(5)
    matrix = rng.integers(1, 6, (3, n)).astype(float)
    matrix[rng.random((3, n)) < 0.2] = np.nan
    rated = ~np.isnan(matrix).all(axis=0)
    w_mean = _drawn(int(rated.sum()))
    kept = matrix[:, rated]
    means = [np.nanmean(np.repeat(kept, w, axis=1)) for w in w_mean]
    interval = iv.mean(matrix)
    low, high = np.quantile(means, [0.025, 0.975])
    assert interval.low == pytest.approx(low, rel=1e-12) and interval.high == pytest.approx(high, rel=1e-12)

    x, y = rng.integers(1, 6, n).astype(float), rng.integers(1, 6, n).astype(float)
    y = np.where(rng.random(n) < 0.6, x, y)
    taus = [stats.kendalltau(np.repeat(x, w), np.repeat(y, w)).statistic for w in _drawn(n)[:200]]
    iv._tables.clear()
    joint = iv._joint(x, y)
    assert joint is not None
    every = np.concatenate(list(joint.tables()))
    assert np.array_equal(every.reshape(iv.RESAMPLES, -1), _bincounts(_drawn(n), joint.cell, every[0].size))
    assert iv.kendall_tau(x, y).ok
    # tau-b of the first 200 resamples, from the tables, against scipy on the repeated items
    t = every[:200]
    ours = _tau_b(t)
    assert np.allclose(ours, taus, rtol=1e-12, atol=0)


def _tau_b(t: np.ndarray) -> np.ndarray:
    """tau-b from joint tables, by brute force over pairs of cells (Kendall 1945)."""
    kx, ky = t.shape[1:]
    out = []
    for table in t:
        c = d = 0.0
        for i in range(kx):
            for j in range(ky):
                c += table[i, j] * table[i + 1 :, j + 1 :].sum()
                d += table[i, j] * table[i + 1 :, :j].sum()
        total = table.sum()
        tx = (total**2 - (table.sum(axis=1) ** 2).sum()) / 2
        ty = (total**2 - (table.sum(axis=0) ** 2).sum()) / 2
        out.append((c - d) / np.sqrt(tx * ty))
    return np.asarray(out)


@pytest.mark.parametrize("columns", [1, 2, 3])
def test_distinct_rows_are_numpys_unique_rows(columns):
    rng = np.random.default_rng(columns)
    whole = rng.integers(-7, 30, (4000, columns))
    distinct, which = iv._distinct_rows(whole)
    expected, inverse = np.unique(whole, axis=0, return_inverse=True)
    assert np.array_equal(distinct, expected) and np.array_equal(which, inverse.ravel())
    wide = np.stack([rng.integers(-(2**40), 2**40, 50), rng.integers(-(2**40), 2**40, 50)], axis=1)
    distinct, which = iv._distinct_rows(wide)  # codes past 62 bits: numpy's rows
    assert np.array_equal(distinct[which], wide)


def test_compact_codes_are_numpys_unique():
    rng = np.random.default_rng(4)
    for codes in (rng.integers(0, 50, 3000), rng.integers(0, 2**40, 3000), np.array([7]), rng.integers(-3, 3, 40)):
        found, which = iv._compact(codes.astype(np.int64))
        expected, inverse = np.unique(codes, return_inverse=True)
        assert np.array_equal(found, expected) and np.array_equal(which, inverse.ravel())

"""alpha's and Gwet's AC item bootstrap summed by rating pattern (stats/patterns.py, issue 35 item 2): the same
draws as the per-item sums they replace (to the bit where those sums are exact), each resample's figure that of
``krippendorff`` / Gwet's Handbook on the resampled items, and no dense resamples x items block held any more."""

from __future__ import annotations

import tracemalloc

import krippendorff
import numpy as np
import pytest

from tests.stats.test_gwet import identity, quadratic, reference_ac
from tui_rater.stats import gwet
from tui_rater.stats import intervals as iv
from tui_rater.stats import patterns as rating_patterns

pytestmark = pytest.mark.usefixtures("item_draws")  # the statistics checked on each resample's items

SCALE = [1.0, 2.0, 3.0, 4.0, 5.0]


def _ratings(seed: int, raters: int, items: int, missing: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=items)
    m = np.clip(truth + rng.integers(-1, 2, size=(raters, items)), 1, 5).astype(float)
    m[rng.random(m.shape) < missing] = np.nan
    return m


def _per_item(monkeypatch, compute):
    """``compute()`` by the per-item code (no matrix of counts by pattern is allowed)."""
    with monkeypatch.context() as patched:
        patched.setattr(rating_patterns, "MOST_PATTERNS", 0)
        return compute()


# terms that are multiples of 1/4 (m_u - 1 of 1, 2 or 4): sums exact in any order, so the same bits
@pytest.mark.parametrize(("raters", "missing"), [(2, 0.0), (3, 0.2), (5, 0.0)])
@pytest.mark.parametrize("level", ["ordinal", "interval", "nominal"])
def test_alpha_by_pattern_is_the_per_item_bootstrap_to_the_bit(monkeypatch, level, raters, missing):
    m = _ratings(raters * 10 + len(level), raters, 2500, missing)
    rating_patterns._kept.clear()
    now = iv.alpha_draws(m, level)
    assert len(rating_patterns._kept) == 1  # the sums by pattern ran
    before = _per_item(monkeypatch, lambda: iv.alpha_draws(m, level))
    assert isinstance(now, np.ndarray) and isinstance(before, np.ndarray)
    assert now.tobytes() == before.tobytes()


@pytest.mark.parametrize("level", ["ordinal", "interval", "nominal", "ratio"])
def test_alpha_by_pattern_with_terms_that_round_differs_in_the_last_digits_only(monkeypatch, level):
    """4 raters and some missing: terms over 3 (and the ratio metric's fractions) round, and their sum in another
    order may differ by a few units in the last place -- never more."""
    m = _ratings(4, 4, 2500, 0.15)
    now = iv.alpha_draws(m, level)
    before = _per_item(monkeypatch, lambda: iv.alpha_draws(m, level))
    assert isinstance(now, np.ndarray) and isinstance(before, np.ndarray)
    assert np.array_equal(np.isfinite(now), np.isfinite(before))
    np.testing.assert_allclose(now, before, rtol=1e-13, atol=0)


@pytest.mark.parametrize(("raters", "exact"), [(2, True), (3, False), (4, False)])
@pytest.mark.parametrize("kind", ["nominal", "ordinal"])
def test_ac_by_pattern_is_the_per_item_bootstrap(monkeypatch, kind, raters, exact):
    m = _ratings(raters, raters, 2500, 0.1)
    rating_patterns._kept.clear()
    now = gwet.ac(m, SCALE, kind)
    assert len(rating_patterns._kept) == 1
    before = _per_item(monkeypatch, lambda: gwet.ac(m, SCALE, kind))
    assert now.value == before.value  # the point estimate is computed as before
    got = (now.extra["ci_low"], now.extra["ci_high"])
    expected = (before.extra["ci_low"], before.extra["ci_high"])
    if exact:  # shares and agreements in halves: the same bits
        assert got == expected
    else:  # over 3 or 12: the same to the last digits (the golden reports moved by 4e-15 at most)
        assert got == pytest.approx(expected, rel=1e-13, abs=0)


@pytest.mark.parametrize("level", ["ordinal", "interval", "nominal"])
def test_alpha_by_pattern_is_krippendorff_alpha_of_each_resample(level):
    """Many items, few patterns (3 raters, some missing): each resample's alpha is krippendorff's on the items
    repeated as drawn."""
    m = _ratings(11, 3, 600, 0.1)
    columns = m[:, np.sum(~np.isnan(m), axis=0) >= 2]
    counts = np.zeros((columns.shape[1], 5))
    for value in range(1, 6):
        counts[:, value - 1] = np.sum(columns == value, axis=0)
    draws = rating_patterns.alpha_draws(
        counts, np.asarray(SCALE), level, iv.resample_counts, iv._block(columns.shape[1] + 5)
    )
    assert draws is not None and np.array_equal(draws, iv.alpha_draws(m, level))
    first = next(iv.resample_counts(columns.shape[1], 60))
    expected = [
        krippendorff.alpha(reliability_data=np.repeat(columns, w, axis=1), level_of_measurement=level) for w in first
    ]
    np.testing.assert_allclose(draws[:60], expected, rtol=0, atol=1e-9)


@pytest.mark.parametrize(("kind", "weight"), [("nominal", identity), ("ordinal", quadratic)])
def test_ac_by_pattern_is_the_bootstrap_of_gwets_handbook(kind, weight):
    """AC1 / AC2 of 3 raters (some items rated once or twice): the interval is the percentile interval of the
    Handbook's AC (tests/stats/test_gwet.py's reference, item by item in plain Python) over the resamples."""
    m = _ratings(12, 3, 60, 0.2)
    rated = m[:, np.sum(~np.isnan(m), axis=0) >= 1]
    draws = [
        reference_ac(np.repeat(rated, w, axis=1).T.tolist(), SCALE, weight)[0]
        for w in np.concatenate(list(iv.resample_counts(rated.shape[1], 100)))
    ]
    low, high = np.quantile(draws, [0.025, 0.975])
    rating_patterns._kept.clear()
    got = gwet.ac(m, SCALE, kind)
    assert len(rating_patterns._kept) == 1
    assert (got.extra["ci_low"], got.extra["ci_high"]) == pytest.approx((low, high), abs=1e-9)


def test_the_bootstrap_holds_no_resamples_x_items_block():
    """Table 1's ordinal and interval alpha and AC2 of 3 raters on 20,000 items: the per-item code held blocks of
    4M floats of resample weights and their products (67 MB at the peak, measured before); by pattern, the memory
    is the ratings' and the 1000 x 35 counts by pattern (5.3 MB). The bound: 5 % of RESAMPLES x items floats."""
    m = _ratings(20, 3, 20_000)
    n = m.shape[1]
    next(iv.resample_counts(n, 1))  # the draw, kept for the report's other figures too: not these figures' memory
    rating_patterns._kept.clear()
    tracemalloc.start()
    try:
        for level in ("ordinal", "interval"):
            assert iv.alpha(m, level).ok
        assert gwet.ac(m, SCALE, "ordinal").extra["ci_low"] is not None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.05 * iv.RESAMPLES * n * 8, f"peak {peak / 1e6:.1f} MB"

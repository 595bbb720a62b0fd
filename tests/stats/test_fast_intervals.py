"""The report's bootstrap intervals made faster (issue 35 item 2) give the same numbers to the bit: each new
computation is compared here with the code it replaced, kept in this file as the reference, on random inputs
(the golden reports check the same on the bundled studies)."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import intervals as iv
from tui_rater.stats import patterns as rating_patterns

pytestmark = pytest.mark.usefixtures("item_draws")  # the statistics checked on each resample's items


def _tables_before(cell: np.ndarray, kx: int, ky: int, n: int):
    """``_Joint.tables`` before: a float64 ``bincount`` of each block's float copy of the counts."""
    cells = kx * ky
    for w in iv.resamples(n, iv._block(max(n, cells))):
        rows = w.shape[0]
        flat = (np.arange(rows)[:, None] * cells + cell[None, :]).ravel()
        yield np.bincount(flat, weights=w.ravel(), minlength=rows * cells).astype(float).reshape(rows, kx, ky)


@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize(("n", "kx", "ky"), [(3, 1, 2), (57, 5, 5), (1200, 7, 3), (9001, 2, 11)])
def test_the_joint_tables_are_the_bincounts_of_before_block_for_block(monkeypatch, cached, n, kx, ky):
    if not cached:  # the counts drawn again for each figure (n above the cache), as at 250,000 items
        monkeypatch.setattr(iv, "CACHED_BYTES", 0)
    iv._cached.clear()
    iv._tables.clear()
    rng = np.random.default_rng(n + kx)
    cell = rng.integers(0, kx * ky, n) if n > 3 else np.array([0, 0, 1])  # some cells empty, some not
    joint = iv._Joint(np.arange(kx, dtype=float), np.arange(ky, dtype=float), cell)
    before = list(_tables_before(cell, kx, ky, n))
    for _ in range(2):  # counted, then kept
        now = list(joint.tables())
        assert [t.shape for t in now] == [t.shape for t in before]
        assert all(a.tobytes() == b.tobytes() for a, b in zip(now, before, strict=True))
    assert len(iv._tables) == 1
    iv._tables.clear()


def _pair_sums_before(counts, m_u, w, z):
    """``intervals._pair_sums`` as it was: each item's term computed for that item."""
    first = counts @ z.T
    second = (counts @ (z**2).T) * m_u[:, None]
    per_item = 2.0 * (second - first**2) / (m_u[:, None] - 1.0)
    return np.einsum("bu,ub->b", w, per_item)


@pytest.mark.parametrize(("n", "levels", "most"), [(40, 3, 2), (1500, 5, 4), (6000, 7, 9), (20000, 5, 4)])
def test_ordinal_pair_sums_by_pattern_are_the_per_item_sums_of_before(n, levels, most):
    rng = np.random.default_rng(n)
    counts = np.zeros((n, levels))
    for u, m in enumerate(rng.integers(2, most + 1, n)):
        np.add.at(counts[u], rng.integers(0, levels, m), 1.0)
    m_u = counts.sum(axis=1)
    patterns = iv._Patterns.of(counts)
    assert patterns is not None and patterns.counts.shape[0] < n
    for w in iv.resamples(n, iv._block(n + levels)):
        n_c = w @ counts
        z = np.cumsum(n_c, axis=1) - n_c / 2.0
        assert patterns.pair_sums(w, z).tobytes() == _pair_sums_before(counts, m_u, w, z).tobytes()


def test_ordinal_alpha_draws_are_the_draws_of_before(monkeypatch):
    """The whole ordinal alpha of each resample, with three raters and a fourth on some items."""
    rng = np.random.default_rng(7)
    truth = rng.integers(1, 6, 3000)
    matrix = np.clip(truth + rng.integers(-1, 2, (4, truth.size)), 1, 5).astype(float)
    matrix[3, rng.random(truth.size) < 0.6] = np.nan
    matrix[0, rng.random(truth.size) < 0.1] = np.nan
    monkeypatch.setattr(rating_patterns, "MOST_PATTERNS", 0)  # _Patterns, not the sums by pattern of stats/patterns
    now = iv.alpha_draws(matrix, "ordinal")
    monkeypatch.setattr(iv._Patterns, "of", staticmethod(lambda counts: None))  # the per-item path of before
    before = iv.alpha_draws(matrix, "ordinal")
    assert isinstance(now, np.ndarray) and now.tobytes() == before.tobytes()


def test_patterns_are_not_used_where_a_term_could_round():
    counts = np.full((3, 2), 1.0)
    assert iv._Patterns.of(counts) is not None
    assert iv._Patterns.of(np.full((2_000_000, 2), 40.0)) is None


def _resampled_before(found, *, epsilon=0.2, alpha=0.05, min_humans=3, min_items_per_human=30):
    """``alt_intervals.resampled`` as it was: one product with the block per sum, three more for the levels."""
    from scipy import stats as sp

    from tui_rater.stats import alt_intervals as ai

    d = (found.w_human - found.w_judge) * found.rated
    levels = [(found.rated > 0) & (d == v) for v in (-1.0, 0.0, 1.0)]
    omegas, rhos = [], []
    n_items = len(found.items)
    for w in iv.resamples(n_items, max(1, min(iv.RESAMPLES, iv.CELLS // max(1, n_items * 6)))):
        n = w @ found.rated
        tested = n >= max(2, min_items_per_human)
        with np.errstate(all="ignore"):
            mean = (w @ d) / n
            variance = ((w @ d**2) - n * mean**2) / (n - 1)
            t = (mean - epsilon) / np.sqrt(np.maximum(variance, 0.0) / n)
            p = sp.t.cdf(t, n - 1)
            rho_judge = (w @ found.w_judge) / n
        distinct = sum(((w > 0).astype(float) @ level.astype(float)) > 0 for level in levels)
        flat = distinct <= 1
        p = np.where(flat, np.where(mean < epsilon, 0.0, 1.0), p)
        p = np.where(np.isfinite(p), p, 1.0)
        count = tested.sum(axis=1)
        verdict = count >= min_humans
        rejected = ai._by_rejections(p, tested, alpha)
        with np.errstate(all="ignore"):
            omegas.append(np.where(verdict, rejected / count, np.nan))
            rhos.append(np.where(verdict, np.sum(np.where(tested, rho_judge, 0.0), axis=1) / count, np.nan))
    return np.concatenate(omegas), np.concatenate(rhos)


def _per_human_before(found):
    draws = []
    n_items = len(found.items)
    for w in iv.resamples(n_items, max(1, min(iv.RESAMPLES, iv.CELLS // max(1, n_items * 3)))):
        n = w @ found.rated
        with np.errstate(all="ignore"):
            draws.append(((w @ found.w_judge) / n, (w @ found.w_human) / n))
    return np.concatenate([a for a, _ in draws]), np.concatenate([b for _, b in draws])


@pytest.mark.parametrize(("n", "humans", "share_flat"), [(12, 3, 0.0), (400, 4, 0.3), (5000, 3, 0.0), (7000, 5, 0.9)])
def test_the_alt_tests_resampled_omega_and_rho_are_those_of_before(n, humans, share_flat):
    from tui_rater.stats import alt_intervals as ai

    rng = np.random.default_rng(n * humans)
    rated = (rng.random((n, humans)) < 0.8).astype(float)
    outcome = rng.integers(0, 3, (n, humans))  # judge better, tie, human better
    outcome[:, : max(1, int(share_flat * humans))] = 1  # some humans always tie: no variation
    w_judge = (outcome <= 1) * rated
    w_human = (outcome >= 1) * rated
    found = ai.PerItem(list(range(n)), [f"h{j}" for j in range(humans)], rated, w_judge, w_human)
    for epsilon, least in ((0.2, 30), (0.0, 2), (-0.1, 5)):
        now = ai.resampled(found, epsilon=epsilon, min_humans=2, min_items_per_human=least)
        before = _resampled_before(found, epsilon=epsilon, min_humans=2, min_items_per_human=least)
        assert n < 400 or np.isfinite(now[1]).any()
        assert now[0].tobytes() == before[0].tobytes() and now[1].tobytes() == before[1].tobytes()
    judge, human = _per_human_before(found)
    shown = ai.per_human(found)
    for j, name in enumerate(found.humans):
        assert shown[name] == (iv.percentile(judge[:, j]), iv.percentile(human[:, j]))


def _mean_before(matrix):
    """``intervals.mean`` as it was: two float products with each block's float copy of the counts."""
    m = np.asarray(matrix, dtype=float)
    present = ~np.isnan(m)
    rated = present.sum(axis=0) > 0
    sums, counts = np.nansum(m, axis=0)[rated], present.sum(axis=0)[rated].astype(float)
    out = [(w @ sums) / (w @ counts) for w in iv.resamples(sums.size, iv._block(sums.size))]
    return iv.percentile(np.concatenate(out))


def _mean_interval_before(per_item, scale=1.0):
    out = [scale * (w @ per_item) / w.sum(axis=1) for w in iv.resamples(per_item.size, iv._block(per_item.size))]
    return iv.percentile(np.concatenate(out))


@pytest.mark.parametrize("values", ["points", "halves", "hundredths", "wide"])
@pytest.mark.parametrize("n", [5, 800, 12000])
def test_the_mean_and_exact_agreement_intervals_are_those_of_before(values, n):
    rng = np.random.default_rng(n)
    matrix = {
        "points": rng.integers(1, 6, (4, n)).astype(float),
        "halves": rng.integers(2, 11, (4, n)) / 2.0,
        "hundredths": rng.integers(0, 101, (4, n)) / 100.0,  # not multiples of a power of two: the float path
        "wide": rng.integers(-(2**30), 2**30, (4, n)).astype(float) * 64.0,  # sums past 2^53: the float path
    }[values]
    matrix[rng.random((4, n)) < 0.3] = np.nan
    assert iv.mean(matrix) == _mean_before(matrix)
    agree = (rng.random(n) < 0.7).astype(float)
    assert iv._mean_interval(agree, 100.0) == _mean_interval_before(agree, 100.0)
    assert iv._mean_interval(matrix[0, :] * 0 + 1.25, 1.0) == _mean_interval_before(matrix[0, :] * 0 + 1.25)


def test_exact_sums_are_the_float_products_and_refuse_what_could_round():
    rng = np.random.default_rng(3)
    columns = np.stack([rng.integers(-5, 6, 3000) / 4.0, np.ones(3000), rng.integers(0, 2, 3000)], axis=1)
    found = iv.exact_sums(columns)
    expected = np.concatenate([w @ columns for w in iv.resamples(3000, 100)])
    assert found is not None and found.tobytes() == expected.tobytes()
    assert iv.exact_sums(np.full((10, 1), 0.1)) is None
    assert iv.exact_sums(np.full((10, 1), np.nan)) is None
    assert iv.exact_sums(np.full((4, 1), 2.0**51)) is None  # 4 x 2^51 = 2^53: could round

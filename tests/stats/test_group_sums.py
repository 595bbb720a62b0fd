"""The bootstrap's sums over groups of items (issue 35 item 2: Table 1's means and % exact, the joint tables of tau,
rho, r and kappa) read the kept draw item by item, once per figure: each resample's count of the items in each group,
checked here against the resamples drawn afresh from their definition (numpy's multinomial with the report's seed)
and summed by ``np.bincount``; the figures against their float products on the same draws."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import intervals as iv


def _drawn(n: int) -> np.ndarray:
    """The report's resamples of n items, from their definition: RESAMPLES multinomial draws seeded [SEED, n]."""
    return np.random.default_rng([iv.SEED, n]).multinomial(n, np.full(n, 1.0 / n), size=iv.RESAMPLES)


def _bincounts(w: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    return np.stack([np.bincount(group, weights=row, minlength=groups) for row in w])


@pytest.mark.parametrize(("n", "groups"), [(7, 1), (300, 3), (2500, 40), (12000, 25)])
def test_group_sums_are_each_resamples_bincount(n, groups):
    rng = np.random.default_rng(n)
    group = rng.integers(0, groups, n)
    if groups > 2:
        group[group == 1] = 0  # a group without items: zero in every resample
    found = iv.group_sums(group, groups)
    assert found is not None and found.shape == (iv.RESAMPLES, groups) and found.flags.c_contiguous
    assert np.array_equal(found, _bincounts(_drawn(n), group, groups))


def test_a_draw_kept_in_16_bits_sums_the_same(monkeypatch):
    n = 900
    group = np.random.default_rng(1).integers(0, 6, n)
    expected = iv.group_sums(group, 6)
    wide = _drawn(n).astype(np.uint16)
    monkeypatch.setattr(iv, "_cached", {n: wide})
    monkeypatch.setattr(iv, "_by_item", {})
    found = iv.group_sums(group, 6)
    assert iv._by_item[n][0].dtype == np.uint16 and iv._by_item[n][1] == 0
    assert found is not None and expected is not None and np.array_equal(found, expected)
    assert np.array_equal(found, _bincounts(wide, group, 6))


def test_many_groups_or_a_draw_not_kept_are_left_to_the_caller(monkeypatch):
    n = 2000
    monkeypatch.setattr(iv, "_partitions", {})
    assert iv.group_sums(np.arange(n) % (iv.GROUPS + 1), iv.GROUPS + 1) is None
    monkeypatch.setattr(iv, "CACHED_BYTES", 0)
    assert iv.group_sums(np.zeros(n, dtype=np.intp), 1) is None


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


def test_a_figure_reads_the_kept_draw_once_not_block_by_block(monkeypatch):
    """With the draw kept, Table 1's mean and % exact and a pair's joint tables make no pass over the draw per block
    of resamples (at 20,000 items: 84 blocks of 12 for a mean, 20 of 50 for the tables, before) -- one gather of
    each group's items instead."""
    n = 20_000
    rng = np.random.default_rng(9)
    matrix = rng.integers(1, 6, (3, n)).astype(float)
    next(iv.resamples(n, 1))  # the draw made and kept
    blocks: list[int] = []
    original = iv.resample_counts

    def counted(size, per_block):  # type: ignore[no-untyped-def]
        for block in original(size, per_block):
            blocks.append(block.shape[0])
            yield block

    monkeypatch.setattr(iv, "resample_counts", counted)
    iv._tables.clear()
    assert iv.mean(matrix).ok and iv.percent_exact(matrix).ok
    assert iv.kendall_tau(matrix[0], matrix[1]).ok and iv.spearman(matrix[0], matrix[2]).ok
    assert blocks == []


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


def test_the_partitions_of_one_set_of_items_are_summed_from_the_draw_a_few_times_not_once_each(monkeypatch):
    """Four raters' values of 3,000 items: each rater's values, each pair's joint cells, the humans' sums -- every
    one the per-resample bincount of the draw, and the draw itself read for the first partitions only (the rest are
    unions of the groups of a finer partition kept); another question's partitions start a partition of their own."""
    n = 3000
    rng = np.random.default_rng(11)
    monkeypatch.setattr(iv, "_partitions", {})
    monkeypatch.setattr(iv, "REFINED", 700)  # a question's 625 patterns, not two questions' (3,000 items hold 1,900)
    w = _drawn(n)
    passes: list[int] = []
    original = iv._summed

    def counted(group, groups):  # type: ignore[no-untyped-def]
        passes.append(groups)
        return original(group, groups)

    monkeypatch.setattr(iv, "_summed", counted)
    for question in range(3):
        values = rng.integers(0, 5, (4, n))
        asked = [values[r] for r in range(4)]
        asked += [values[a] * 5 + values[b] for a in range(4) for b in range(a + 1, 4)]
        asked += [values[:3].sum(axis=0), (values[:3].max(axis=0) == values[:3].min(axis=0)).astype(int)]
        asked += [values[a] * 5 + values[b] for a in range(4) for b in range(a + 1, 4)]  # asked again
        before = len(passes)
        for group in asked:
            groups = int(group.max()) + 2  # one group without items
            found = iv.group_sums(group, groups)
            assert found is not None and np.array_equal(found, _bincounts(w, group, groups)), question
        assert len(passes) - before <= 4, passes  # 4 raters: at most 4 partitions refined, 625 groups
    assert max(passes) <= 625 and len(iv._partitions[n]) <= iv._PARTITIONS


def test_compact_codes_are_numpys_unique():
    rng = np.random.default_rng(4)
    for codes in (rng.integers(0, 50, 3000), rng.integers(0, 2**40, 3000), np.array([7]), rng.integers(-3, 3, 40)):
        found, which = iv._compact(codes.astype(np.int64))
        expected, inverse = np.unique(codes, return_inverse=True)
        assert np.array_equal(found, expected) and np.array_equal(which, inverse.ravel())

"""Intervals for the agreement figures: the item-level bootstrap, vectorised over resamples.

Every figure of Tables 1 and 2 (Chiang & Lee) is a function of the items, each item carrying all of its raters:
the resampling unit is the item (Efron & Tibshirani 1993, ch. 6 and 13, the percentile interval; Hayes &
Krippendorff 2007 bootstrap alpha the same way, resampling units). A resample is a vector of counts ``w`` (how
often each item was drawn), and every statistic here is written as a function of those counts -- sums over
items weighted by ``w`` -- so the ``RESAMPLES`` resamples are a matrix product, not a loop of recomputations:

- Krippendorff's alpha (each level) from per-item pair sums (observed disagreement, linear in ``w``) and the
  pooled value counts (expected disagreement, quadratic in them); the ordinal metric's mid-ranks are recomputed
  from each resample's own value counts, as alpha on the resampled data would;
- Kendall's tau-b, Spearman's rho, Pearson's r, weighted kappa and exact agreement of two evaluators from each
  resample's joint table of (x, y) values: concordant and discordant pairs from the table's cumulative sums;
- Gwet's AC1 / AC2 (``gwet``) from per-item category counts.

A resample's figure equals the figure of the resampled data (each item repeated ``w`` times), which the tests
check against ``krippendorff`` and scipy on the expanded data. A figure's resample counts are drawn by rating pattern
(``group_sums``, below: the same bootstrap distribution at a cost in patterns), with a fixed seed derived from the
number of items and the patterns' sizes, so the same study gives the same interval in every report.

Written here rather than with ``scipy.stats.bootstrap`` because that recomputes the statistic once per resample
(1,000 scipy calls per figure, some hundred figures per report), and because no package computes these
statistics from resample counts.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tui_rater.stats import agreement as ag
from tui_rater.stats import patterns as rating_patterns

FloatArray = npt.NDArray[np.float64]

RESAMPLES = 1000  # of the items, with replacement
LEVEL = 0.95  # the percentile interval's coverage
SEED = 20_071_001  # fixed: a study's report shows the same interval every time (Hayes & Krippendorff 2007)
LEAST_DEFINED = 0.9  # a figure undefined (no variation) in more than 10 % of the resamples gets no interval
CELLS = 4_000_000  # floats held at once per block of resamples (memory, not precision)
BUDGET = 3e9  # resamples x joint-table cells above which tau / rho fall back to Fisher's z (time)
METHOD = f"item bootstrap, {RESAMPLES} resamples, percentile {LEVEL:.0%}"
FISHER = f"Fisher z, Fieller et al. 1957 (too many distinct values for the bootstrap), {LEVEL:.0%}"


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    method: str  # how it was made, or why there is none

    @property
    def ok(self) -> bool:
        return self.low is not None and self.high is not None


def none(reason: str) -> Interval:
    return Interval(None, None, reason)


def with_interval(stat: ag.Stat, interval: Interval | Callable[[], Interval]) -> ag.Stat:
    """The figure with its interval in ``extra`` (``ci_low``, ``ci_high``, ``ci``): the records carry them.
    ``interval`` may be a function, called only when there is a figure (a bootstrap costs)."""
    if not stat.ok:
        interval = none("no figure")
    elif callable(interval):
        interval = interval()
    extra = {**stat.extra, "ci_low": interval.low, "ci_high": interval.high, "ci": interval.method}
    return ag.Stat(stat.value, stat.n, stat.note, stat.p, extra)


# --- resamples --------------------------------------------------------------------------------------


# The item-level resamples: a figure with too many patterns to draw by pattern (``group_sums``, below), and every
# figure with ``BY_PATTERN`` off, draws 1000 x n multinomial counts seeded [SEED, n]. The counts
# of the last few n are kept while they fit in CACHED_BYTES, as bytes (a count above 255 in a resample of n items
# has probability below 1e-300 for any n; it is checked, and such a draw is kept as 16-bit integers): 100 MB at
# 100,000 items. A larger n is drawn again for each figure, as before. The draws are the same either way.
CACHED_BYTES = 240_000_000
_cached: dict[int, npt.NDArray[np.uint8] | npt.NDArray[np.uint16]] = {}
_cache_lock = threading.Lock()


def _all_counts(n: int) -> npt.NDArray[np.uint8] | npt.NDArray[np.uint16] | None:
    if RESAMPLES * n > CACHED_BYTES:
        return None
    with _cache_lock:
        counts = _cached.get(n)
        if counts is None:
            counts = _draw_all(n, np.uint8)
            if counts is None:
                counts = _draw_all(n, np.uint16)
            assert counts is not None  # a count is at most n, and n fits 16 bits wherever it fits the cache
            while _cached and sum(c.nbytes for c in _cached.values()) + counts.nbytes > CACHED_BYTES:
                del _cached[next(iter(_cached))]
            _cached[n] = counts
        return counts


def _draw_all(n: int, dtype: type[np.unsignedinteger[Any]]) -> npt.NDArray[Any] | None:
    """All ``RESAMPLES`` rows, drawn a block at a time (the same rows as one draw: the generator draws row by row)
    into ``dtype``; None where a count does not fit it."""
    rng = np.random.default_rng([SEED, n])
    p = np.full(n, 1.0 / n)
    out = np.empty((RESAMPLES, n), dtype=dtype)
    limit = np.iinfo(dtype).max
    per_block = _block(n)
    for start in range(0, RESAMPLES, per_block):
        rows = rng.multinomial(n, p, size=min(per_block, RESAMPLES - start))
        if rows.max(initial=0) > limit:
            return None
        out[start : start + rows.shape[0]] = rows
    return out


def resamples(n: int, per_block: int) -> Iterator[FloatArray]:
    """The ``RESAMPLES`` count vectors over ``n`` items, in blocks of ``per_block`` rows; the same for the same ``n``
    whatever the block size (the generator draws one row at a time in the same order)."""
    for counts in resample_counts(n, per_block):
        yield counts.astype(float)


def resample_counts(n: int, per_block: int) -> Iterator[npt.NDArray[np.integer[Any]]]:
    """The same resamples as ``resamples``, as their integer counts (no float copy): for sums that are exact in any
    order, such as the joint tables' cell counts."""
    counts = _all_counts(n)
    if counts is not None:
        for start in range(0, RESAMPLES, per_block):
            yield counts[start : start + per_block]
        return
    rng = np.random.default_rng([SEED, n])
    p = np.full(n, 1.0 / n)
    drawn = 0
    while drawn < RESAMPLES:
        rows = min(per_block, RESAMPLES - drawn)
        yield rng.multinomial(n, p, size=rows)
        drawn += rows


# --- resample counts drawn by pattern (issue 35) ---------------------------------------------------------------------
#
# A figure that depends on each item only through a few distinct values -- its *pattern*: a pair's joint cell, a
# rater's value, the value counts alpha and AC read -- depends on a resample only through each pattern's count, the
# sum of the counts of the pattern's items. Those sums of a uniform multinomial draw of n items are themselves
# multinomial: (W_1, ..., W_G) ~ Multinomial(n, s_1/n, ..., s_G/n), s_g the pattern's items (the multinomial's
# aggregation property). So the patterns' counts are drawn directly, G categories a resample instead of n: the same
# bootstrap distribution of every figure as resampling the items, at a cost that grows with the patterns (a 1M-item
# study's figure costs what a 1k-item study's does; the item-level draw was 1,000 x n multinomial categories, kept
# at up to 240 MB, redrawn for every figure past 240k items). Seeded by the number of items and the patterns' sizes,
# so the same study gives the same interval every time. Each figure's resamples are its own (two figures over the
# same items are no longer drawn from one set of item resamples); no figure combines two draws.
# ``BY_PATTERN = False`` (the tests of the statistics, which expand each resample into repeated items) draws every
# figure from the item-level resamples above, the method before; a figure whose patterns are more than
# ``DRAWN_GROUPS`` and more than one in ``ITEMS_PER_PATTERN`` of its items (continuous values) always does: its draw by
# pattern would cost about what drawing the items does (1,000 x G binomials against 1,000 x n, a draw kept for the next
# figure up to 240k items). Two 0-100 scores' joint table at 1M items (10,201 cells) is still drawn by pattern.
BY_PATTERN = True
DRAWN_GROUPS = 4096  # patterns drawn directly: at most 1,000 x 4,096 binomial draws a figure (about 0.2 s) ...
ITEMS_PER_PATTERN = 16  # ... or more, while they are at most a sixteenth of the items


def pattern_seed(n: int, sizes: npt.NDArray[np.integer[Any]]) -> list[int]:
    """The seed of the draw over ``n`` items in patterns of ``sizes`` items (in the patterns' order)."""
    digest = hashlib.sha256(np.ascontiguousarray(sizes, dtype="<i8").tobytes()).digest()
    return [SEED, n, int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")]


def drawn_by_pattern(sizes: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.int64]:
    """RESAMPLES x patterns: each resample's count of the items of each pattern, Multinomial(n, sizes / n) with
    n = sizes.sum() (every size positive)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(sizes.sum())
    rng = np.random.default_rng(pattern_seed(n, sizes))
    drawn: npt.NDArray[np.int64] = rng.multinomial(n, sizes / n, size=RESAMPLES).astype(np.int64, copy=False)
    return drawn


def group_sums(group: npt.NDArray[np.intp], groups: int) -> npt.NDArray[np.int64] | None:
    """Every resample's count of the items in each group (RESAMPLES x groups, C order): ``group`` is each item's
    group, 0 <= group < ``groups``; drawn by pattern (above), a group without items 0 in every resample. None where
    more groups hold items than ``DRAWN_GROUPS`` and a ``ITEMS_PER_PATTERN``-th of the items, or ``BY_PATTERN`` is
    off (the caller's item-level sums then)."""
    if not BY_PATTERN:
        return None
    sizes = np.bincount(np.asarray(group, dtype=np.intp), minlength=groups)
    occupied = np.flatnonzero(sizes)
    if occupied.size > max(DRAWN_GROUPS, group.size // ITEMS_PER_PATTERN) or occupied.size == 0:
        return None
    out = np.zeros((RESAMPLES, groups), dtype=np.int64)
    out[:, occupied] = drawn_by_pattern(sizes[occupied])
    return out


def resampled_sums(columns: npt.ArrayLike) -> FloatArray:
    """``w @ columns`` for every resample ``w`` of the items (RESAMPLES x columns; rows of ``columns``: items,
    finite): exact integer sums where the values allow (``exact_sums``), else summed over the items' distinct rows
    drawn by pattern, else over the item-level resamples."""
    whole = np.asarray(columns, dtype=float)
    exact = exact_sums(whole)
    if exact is not None:
        return exact
    n = whole.shape[0]
    if BY_PATTERN and n > 0 and np.all(np.isfinite(whole)):
        distinct, which = np.unique(whole, axis=0, return_inverse=True)
        grouped = group_sums(which.ravel().astype(np.intp), distinct.shape[0])
        if grouped is not None:
            found: FloatArray = grouped.astype(float) @ distinct
            return found
    out = np.empty((RESAMPLES, whole.shape[1]))
    by_column = [np.ascontiguousarray(whole[:, j]) for j in range(whole.shape[1])]
    start = 0
    for w in resamples(n, _block(n)):  # a product per column, as each figure made its own before
        for j, column in enumerate(by_column):
            out[start : start + w.shape[0], j] = w @ column
        start += w.shape[0]
    return out


def _block(width: int) -> int:
    return max(1, min(RESAMPLES, CELLS // max(1, width)))


def percentile(values: FloatArray) -> Interval:
    finite = values[np.isfinite(values)]
    if finite.size < LEAST_DEFINED * values.size:
        share = 1 - finite.size / values.size
        return none(f"undefined in {share:.0%} of the resamples (too little variation)")
    tail = (1 - LEVEL) / 2
    low, high = np.quantile(finite, [tail, 1 - tail])
    return Interval(float(low), float(high), METHOD)


# --- Krippendorff's alpha ---------------------------------------------------------------------------


def alpha(matrix: npt.ArrayLike, level: str = "interval") -> Interval:
    """The bootstrap interval of ``agreement.alpha(matrix, level)``; ``matrix`` is raters x items, NaN missing."""
    found = alpha_draws(matrix, level)
    return found if isinstance(found, Interval) else percentile(found)


def alpha_draws(matrix: npt.ArrayLike, level: str = "interval") -> FloatArray | Interval:
    """alpha of each resample of the pairable items (or why there is none)."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2:
        return none("no figure")
    present = ~np.isnan(m)
    columns = m[:, present.sum(axis=0) >= 2]
    if columns.shape[1] < 2:
        return none("fewer than 2 items with two ratings")
    by_item = columns.T  # items x raters: values and their items in the same (item-major) order
    levels, codes = np.unique(by_item[~np.isnan(by_item)], return_inverse=True)
    # per item: how many of its values fall on each level (items x levels); integers, as np.add.at counted them
    item = np.nonzero(~np.isnan(by_item))[0]
    cells = np.bincount(item * levels.size + codes.ravel(), minlength=columns.shape[1] * levels.size)
    counts = cells.reshape(columns.shape[1], levels.size).astype(float)
    return _alpha_resampled(counts, levels, level)


def _alpha_resampled(counts: FloatArray, levels: FloatArray, level: str) -> FloatArray:
    """alpha of each resample, from each item's value counts (Krippendorff 2011, "Computing Krippendorff's
    alpha-reliability", the coincidence form): alpha = 1 - (n - 1) sum_ck o_ck d_ck / sum_ck n_c n_k d_ck."""
    pairwise = level in ("nominal", "ratio")  # a levels x levels table per resample; else items x resamples
    per_block = _block(levels.size**2 if pairwise else counts.shape[0] + levels.size)
    by_pattern = rating_patterns.alpha_draws(counts, levels, level, resample_counts, per_block, group_sums)
    if by_pattern is not None:  # the same sums over the items' distinct value counts (issue 35: 100k items)
        return by_pattern
    m_u = counts.sum(axis=1)
    patterns = _Patterns.of(counts) if level == "ordinal" else None
    out: list[FloatArray] = []
    for w in resamples(counts.shape[0], per_block):
        n_c = w @ counts  # resamples x levels: each level's pairable values
        n = n_c.sum(axis=1)
        if level == "ordinal":
            z = np.cumsum(n_c, axis=1) - n_c / 2.0  # mid-ranks of this resample's values
            observed = _pair_sums(counts, m_u, w, z) if patterns is None else patterns.pair_sums(w, z)
            expected = 2.0 * (n * np.sum(n_c * z**2, axis=1) - np.sum(n_c * z, axis=1) ** 2)
        elif level == "interval":  # per item sums of values and of squares: linear in the counts
            s1, s2 = counts @ levels, counts @ levels**2
            observed = w @ (2.0 * (m_u * s2 - s1**2) / (m_u - 1.0))
            expected = 2.0 * (n * (n_c @ levels**2) - (n_c @ levels) ** 2)
        else:
            delta = ag._delta(levels[:, None], levels[None, :], level)
            per_item = np.einsum("uc,ck,uk->u", counts, delta, counts) / (m_u - 1.0)  # d_cc = 0 for both
            observed = w @ per_item
            expected = np.einsum("bc,ck,bk->b", n_c, delta, n_c)
        with np.errstate(all="ignore"):
            out.append(1.0 - (n - 1.0) * observed / expected)
    return np.concatenate(out)


@dataclass(frozen=True)
class _Patterns:
    """The items' distinct value counts (a 4-rater item on a 5-point scale has one of 70): the ordinal pair sums'
    per-item terms are computed once per pattern and handed to each item, not once per item.

    Every number up to the division by ``m_u - 1`` is an integer or a multiple of 1/4 (mid-ranks are half
    integers) below 2^51, so exact whatever the order of its sums: each item's term is the one ``_pair_sums``
    computes, to the bit, and the weighted sum over items is the same ``einsum`` over the same array. ``of``
    returns None where a term could exceed that (then ``_pair_sums`` runs as before)."""

    counts: FloatArray  # patterns x levels
    size: FloatArray  # each pattern's number of values (m_u)
    item: npt.NDArray[np.intp]  # each item's pattern

    @staticmethod
    def of(counts: FloatArray) -> _Patterns | None:
        m_u = counts.sum(axis=1)
        most = float(m_u.max(initial=0.0))
        # a mid-rank is at most a resample's number of values (at most items x most); a term at most (most x that)^2
        if 4.0 * (most * most * counts.shape[0]) ** 2 >= 2.0**51:
            return None
        found, item = np.unique(counts, axis=0, return_inverse=True)
        return _Patterns(found, found.sum(axis=1), item.ravel())

    def pair_sums(self, w: FloatArray, z: FloatArray) -> FloatArray:
        first = self.counts @ z.T  # patterns x resamples
        second = (self.counts @ (z**2).T) * self.size[:, None]
        per_pattern = 2.0 * (second - first**2) / (self.size[:, None] - 1.0)
        sums: FloatArray = np.einsum("bu,ub->b", w, per_pattern[self.item])
        return sums


def _pair_sums(counts: FloatArray, m_u: FloatArray, w: FloatArray, z: FloatArray) -> FloatArray:
    """sum over items of w_u / (m_u - 1) x sum over ordered pairs of its values of (z_i - z_j)^2, where each
    value's position ``z`` may differ between resamples (rows of ``z``): 2 (m_u sum z^2 - (sum z)^2)."""
    first = counts @ z.T  # items x resamples
    second = (counts @ (z**2).T) * m_u[:, None]
    per_item = 2.0 * (second - first**2) / (m_u[:, None] - 1.0)
    sums: FloatArray = np.einsum("bu,ub->b", w, per_item)
    return sums


def percent_exact(matrix: npt.ArrayLike) -> Interval:
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.size == 0:
        return none("no figure")
    columns = m[:, np.sum(~np.isnan(m), axis=0) >= 2]
    if columns.shape[1] < 2:
        return none("fewer than 2 items with two ratings")
    with np.errstate(all="ignore"):
        agree = (np.nanmax(columns, axis=0) == np.nanmin(columns, axis=0)).astype(float)
    return _mean_interval(agree, 100.0)


def _mean_interval(per_item: FloatArray, scale: float = 1.0) -> Interval:
    sums = resampled_sums(np.stack([per_item, np.ones(per_item.size)], axis=1))
    return percentile(scale * sums[:, 0] / sums[:, 1])


EXACT_FRACTION_BITS = 8  # values that are multiples of 1/256 (a scale's points, halves, quarters) sum exactly


def exact_sums(columns: FloatArray) -> FloatArray | None:
    """``w @ columns`` of every resample w (RESAMPLES x columns), where every such sum is exact: each column a
    multiple of 2^-k (k <= ``EXACT_FRACTION_BITS``) and every partial sum an integer multiple of it far below
    2^53. An exact sum is the same double whatever the order of its additions, so this is to the bit the float
    product of the float copy of the counts (BLAS: its threads stall on a loaded machine); it is summed here in
    integers, a few rows at a time, with no float copy of the draw. None where a sum could round (then the
    caller's float product, as before)."""
    n = columns.shape[0]
    if n == 0 or not np.all(np.isfinite(columns)):
        return None
    for bits in range(EXACT_FRACTION_BITS + 1):
        scaled = columns * 2.0**bits
        if np.array_equal(scaled, np.round(scaled)):
            break
    else:
        return None
    largest = float(np.abs(scaled).max(initial=0.0)) * n  # a resample's counts sum to n
    if largest >= 2.0**53:
        return None
    kind = np.int32 if largest < 2.0**31 else np.int64
    whole = scaled.astype(kind)
    distinct, which = _distinct_rows(whole)  # items with the same values: one group
    grouped = group_sums(which, distinct.shape[0])
    if grouped is not None:  # integers: the same sums as below, to the bit
        return np.asarray(grouped @ distinct, dtype=float) / 2.0**bits
    out = np.empty((RESAMPLES, columns.shape[1]))
    start = 0
    for w in resample_counts(n, max(1, min(RESAMPLES, 250_000 // n))):
        out[start : start + w.shape[0]] = np.dot(w.astype(kind), whole)
        start += w.shape[0]
    result: FloatArray = out / 2.0**bits  # a power of two: exact
    return result


def _distinct_rows(whole: npt.NDArray[Any]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """The distinct rows of ``whole`` (items x columns of integers) and each item's row among them: one integer per
    item (the columns' mixed-radix code) sorted once where the codes fit 62 bits, else ``np.unique`` by rows."""
    low = whole.min(axis=0).astype(np.int64)
    spans = whole.max(axis=0).astype(np.int64) - low + 1
    if float(np.prod(spans.astype(float))) < 2.0**62:
        strides = np.cumprod(np.concatenate([[1], spans[:0:-1]]))[::-1]  # the last column varies fastest
        combined = np.zeros(whole.shape[0], dtype=np.int64)
        for j in range(whole.shape[1]):
            combined += (whole[:, j].astype(np.int64) - low[j]) * strides[j]
        codes, which = _compact(combined)
        digits = (codes[:, None] // strides[None, :]) % spans[None, :]
        return digits + low, which
    distinct, which = np.unique(whole, axis=0, return_inverse=True)
    return distinct.astype(np.int64), which.ravel()


def _compact(codes: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.intp]]:
    """``np.unique(codes, return_inverse=True)`` for non-negative integers: counted, not sorted, where they are
    below a few times their number (a scale's values, a joint table's cells)."""
    top = int(codes.max(initial=0))
    if codes.size == 0 or codes.min() < 0 or top > 4 * codes.size + 1024:
        found, which = np.unique(codes, return_inverse=True)
        return found.astype(np.int64), which.ravel().astype(np.intp)
    present = np.flatnonzero(np.bincount(codes, minlength=top + 1))
    lookup = np.zeros(top + 1, dtype=np.intp)
    lookup[present] = np.arange(present.size)
    return present.astype(np.int64), lookup[codes]


def mean(matrix: npt.ArrayLike) -> Interval:
    """The mean of every rating (Table 1's mean), items resampled with all of their ratings."""
    m = np.asarray(matrix, dtype=float)
    present = ~np.isnan(m)
    rated = present.sum(axis=0) > 0
    if rated.sum() < 2:
        return none("fewer than 2 items rated")
    sums, counts = np.nansum(m, axis=0)[rated], present.sum(axis=0)[rated].astype(float)
    resampled = resampled_sums(np.stack([sums, counts], axis=1))
    return percentile(resampled[:, 0] / resampled[:, 1])


# --- two evaluators on the same items --------------------------------------------------------------


@dataclass(frozen=True)
class _Joint:
    """Paired values as codes into each side's sorted distinct values."""

    x_levels: FloatArray
    y_levels: FloatArray
    cell: npt.NDArray[np.intp]  # x code * len(y_levels) + y code, per item

    @property
    def shape(self) -> tuple[int, int]:
        return self.x_levels.size, self.y_levels.size

    def tables(self) -> Iterator[FloatArray]:
        """Each resample's joint table (resamples x x-levels x y-levels), in the blocks they always came in (the
        figures of a block do not depend on it, but the same blocks keep that beyond doubt)."""
        kx, ky = self.shape
        n = self.cell.size
        every = _joint_tables(self.cell, kx * ky).reshape(RESAMPLES, kx, ky)
        per_block = _block(max(n, kx * ky))
        for start in range(0, RESAMPLES, per_block):
            yield every[start : start + per_block]


# Table 1 asks for tau, rho and r of the same two evaluators, and the retest and ceiling sections ask again: each
# pair's tables are counted once (RESAMPLES x cells floats: 200 KB for a 5 x 5 scale) and kept for the next figure.
_TABLES_KEPT = 32
_tables: dict[tuple[bool, int, bytes], FloatArray] = {}
_tables_lock = threading.Lock()


def _joint_tables(cell: npt.NDArray[np.intp], cells: int) -> FloatArray:
    """Every resample's count of items in each cell (RESAMPLES x cells), read-only. A cell count is a sum of
    integers below n, exact in any order, so it is the same to the bit as the float64 ``bincount`` of before: the
    integer counts are summed over each cell's items (sorted by cell, ``reduceat``), with no float copy of them and
    no BLAS call (whose threads stall on a loaded machine)."""
    # keyed by the draw too: with ``BY_PATTERN`` off (the tests' ``item_draws``) a table drawn by pattern before is
    # not the item-level resample's
    key = (BY_PATTERN, cells, np.ascontiguousarray(cell, dtype=np.intp).tobytes())
    with _tables_lock:
        kept = _tables.get(key)
    if kept is not None:
        return kept
    n = cell.size
    grouped = group_sums(np.asarray(cell, dtype=np.intp), cells)
    if grouped is not None:
        every = np.ascontiguousarray(grouped, dtype=float)
    else:
        order = np.argsort(cell, kind="stable")
        present, starts = np.unique(cell[order], return_index=True)
        every = np.zeros((RESAMPLES, cells))
        start = 0
        for w in resample_counts(n, max(1, min(RESAMPLES, 1_000_000 // max(1, n)))):  # a few MB at a time
            counted = np.add.reduceat(w[:, order], starts, axis=1, dtype=np.int64)
            every[start : start + w.shape[0], present] = counted
            start += w.shape[0]
    every.flags.writeable = False
    with _tables_lock:
        while len(_tables) >= _TABLES_KEPT:
            del _tables[next(iter(_tables))]
        _tables[key] = every
    return every


def _joint(x: npt.ArrayLike, y: npt.ArrayLike) -> _Joint | None:
    a, b = ag._paired(x, y)
    if a.size < 3:
        return None
    xl, xc = np.unique(a, return_inverse=True)
    yl, yc = np.unique(b, return_inverse=True)
    return _Joint(xl, yl, xc * yl.size + yc)


def kendall_tau(x: npt.ArrayLike, y: npt.ArrayLike) -> Interval:
    """The bootstrap interval of ``agreement.kendall_tau`` (tau-b): concordant minus discordant pairs over the
    pairs untied in each variable (Kendall 1945), counted from each resample's joint table."""
    joint = _joint(x, y)
    if joint is None:
        return none("fewer than 3 items rated by both")
    n = joint.cell.size
    if RESAMPLES * min(n * n, joint.shape[0] * joint.shape[1]) > BUDGET:
        return _fisher(x, y, "kendall")
    if n * n <= joint.shape[0] * joint.shape[1]:  # many distinct values: count pairs of items, not of cells
        return percentile(_tau_by_pairs(*ag._paired(x, y)))
    out = []
    for t in joint.tables():
        # pairs above and to the right of a cell (both larger): suffix sums shifted by one
        after = np.flip(np.cumsum(np.cumsum(np.flip(t, (1, 2)), axis=1), axis=2), (1, 2))
        above_right = np.zeros_like(t)
        above_right[:, :-1, :-1] = after[:, 1:, 1:]
        larger_x = np.flip(np.cumsum(np.flip(t, 1), axis=1), 1)[:, 1:, :]  # x larger, each y
        below_right = np.zeros_like(t)  # x larger, y smaller: the exclusive prefix sum over y
        below_right[:, :-1, :] = np.cumsum(larger_x, axis=2) - larger_x
        concordant = np.sum(t * above_right, axis=(1, 2))
        discordant = np.sum(t * below_right, axis=(1, 2))
        n = t.sum(axis=(1, 2))
        untied_x = (n**2 - np.sum(t.sum(axis=2) ** 2, axis=1)) / 2.0
        untied_y = (n**2 - np.sum(t.sum(axis=1) ** 2, axis=1)) / 2.0
        with np.errstate(all="ignore"):
            out.append((concordant - discordant) / np.sqrt(untied_x * untied_y))
    return percentile(np.concatenate(out))


def _tau_by_pairs(a: FloatArray, b: FloatArray) -> FloatArray:
    """tau-b of each resample from the items' pair signs: with counts w, the concordant minus discordant pairs
    are w' C w (C = sign(a_i - a_j) sign(b_i - b_j)) and the pairs untied in a are w' |sign(a_i - a_j)| w."""
    sa, sb = np.sign(np.subtract.outer(a, a)), np.sign(np.subtract.outer(b, b))
    out = []
    for w in resamples(a.size, _block(a.size)):
        score = np.sum((w @ (sa * sb)) * w, axis=1)
        untied_a, untied_b = np.sum((w @ np.abs(sa)) * w, axis=1), np.sum((w @ np.abs(sb)) * w, axis=1)
        with np.errstate(all="ignore"):
            out.append(score / np.sqrt(untied_a * untied_b))
    return np.concatenate(out)


def _midranks(counts: FloatArray) -> FloatArray:
    """Each level's mid-rank (1-based, as scipy.stats.rankdata's 'average') from the resamples' level counts."""
    result: FloatArray = np.cumsum(counts, axis=1) - (counts - 1.0) / 2.0
    return result


def _correlation(t: FloatArray, xs: FloatArray, ys: FloatArray) -> FloatArray:
    """Pearson's r of each resample's joint table, with level values ``xs`` / ``ys`` (rows: resamples)."""
    n = t.sum(axis=(1, 2))
    px, py = t.sum(axis=2), t.sum(axis=1)
    mx, my = np.sum(px * xs, axis=1) / n, np.sum(py * ys, axis=1) / n
    cov = np.einsum("bij,bi,bj->b", t, xs, ys) / n - mx * my
    vx = np.sum(px * xs**2, axis=1) / n - mx**2
    vy = np.sum(py * ys**2, axis=1) / n - my**2
    with np.errstate(all="ignore"):
        r: FloatArray = cov / np.sqrt(vx * vy)
    # a resample without variation on one side has a variance of rounding noise: undefined, as scipy says
    r[(vx <= 1e-12 * np.maximum(1.0, mx**2)) | (vy <= 1e-12 * np.maximum(1.0, my**2))] = np.nan
    return r


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> Interval:
    joint = _joint(x, y)
    if joint is None:
        return none("fewer than 3 items rated by both")
    if RESAMPLES * joint.shape[0] * joint.shape[1] > BUDGET:
        return _fisher(x, y, "spearman")
    out = [_correlation(t, _midranks(t.sum(axis=2)), _midranks(t.sum(axis=1))) for t in joint.tables()]
    return percentile(np.concatenate(out))


def pearson(x: npt.ArrayLike, y: npt.ArrayLike) -> Interval:
    joint = _joint(x, y)
    if joint is None:
        return none("fewer than 3 items rated by both")
    if RESAMPLES * joint.shape[0] * joint.shape[1] > BUDGET:
        return _fisher(x, y, "pearson")
    out = []
    for t in joint.tables():
        xs = np.broadcast_to(joint.x_levels, t.shape[:2])
        ys = np.broadcast_to(joint.y_levels, (t.shape[0], t.shape[2]))
        out.append(_correlation(t, xs, ys))
    return percentile(np.concatenate(out))


def _fisher(x: npt.ArrayLike, y: npt.ArrayLike, kind: str) -> Interval:
    """Fisher's z with the variances of Fieller, Hartley & Pearson (1957): 0.437 / (n - 4) for tau, 1.06 / (n - 3)
    for rho, 1 / (n - 3) for r -- for a pair with too many distinct values to bootstrap in the report's time."""
    a, b = ag._paired(x, y)
    n = a.size
    stat = {"kendall": ag.kendall_tau, "spearman": ag.spearman, "pearson": ag.pearson}[kind](a, b)
    if stat.value is None or n < 5:
        return none("too few items")
    variance = {"kendall": 0.437 / (n - 4), "spearman": 1.06 / (n - 3), "pearson": 1.0 / (n - 3)}[kind]
    z = math.atanh(max(-0.999999, min(0.999999, stat.value)))
    half = 1.959963984540054 * math.sqrt(variance)
    return Interval(math.tanh(z - half), math.tanh(z + half), FISHER)


def _labelled(x: npt.ArrayLike, y: npt.ArrayLike, labels: list[float]) -> tuple[_Joint, int] | None:
    a, b = ag._paired(x, y)
    if a.size < 2:
        return None
    scale = np.asarray(sorted(labels), dtype=float)
    xc = np.searchsorted(scale, ag.to_labels(a, labels))
    yc = np.searchsorted(scale, ag.to_labels(b, labels))
    return _Joint(scale, scale, xc * scale.size + yc), scale.size


def weighted_kappa(x: npt.ArrayLike, y: npt.ArrayLike, labels: list[float], weights: str = "quadratic") -> Interval:
    found = _labelled(x, y, labels)
    if found is None:
        return none("fewer than 2 items rated by both")
    joint, k = found
    grid = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float)
    w = {"quadratic": grid**2, "linear": grid, "none": (grid > 0).astype(float)}[weights]
    out = []
    for t in joint.tables():
        p = t / t.sum(axis=(1, 2))[:, None, None]
        expected = np.einsum("bi,bj->bij", p.sum(axis=2), p.sum(axis=1))
        with np.errstate(all="ignore"):
            out.append(1.0 - np.sum(w * p, axis=(1, 2)) / np.sum(w * expected, axis=(1, 2)))
    return percentile(np.concatenate(out))


def exact_agreement(x: npt.ArrayLike, y: npt.ArrayLike, labels: list[float] | None = None) -> Interval:
    a, b = ag._paired(x, y)
    if a.size < 2:
        return none("fewer than 2 items rated by both")
    if labels:
        a, b = ag.to_labels(a, labels), ag.to_labels(b, labels)
    return _mean_interval((a == b).astype(float), 100.0)

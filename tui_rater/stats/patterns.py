"""The item bootstrap of alpha and Gwet's AC summed by rating pattern, not by item (issue 35 item 2).

Krippendorff's alpha (Krippendorff 2011, the coincidence form) and Gwet's AC (Gwet 2014, ch. 2-3) of a resample are
functions of sums over items weighted by the resample's counts ``w``, and each item's term depends only on the
multiset of its values -- its *pattern*: 3 raters on a 5-point scale give at most 35 patterns, however many items.
So ``sum_u w_u t_u = sum_p W_p t_p`` with ``W_p`` the resample's count of items of pattern ``p``: the
``RESAMPLES`` resamples need one resamples x patterns matrix of counts (one pass over the drawn counts, shared by
alpha's levels and AC on the same ratings), and the rest costs in patterns, not items. ``W`` is drawn directly
(``intervals.group_sums``: Multinomial(n, pattern sizes / n), the distribution of the item counts summed by pattern),
or summed from the item-level draw (``intervals.resample_counts``) where that is off.

The same numbers: ``W`` holds integers (exact in any order), and each pattern's term is the very double the
per-item code computed for its items (checked item by item here, or exact by construction for the ordinal
metric's mid-rank terms). Only the order of the sum over items changes, so a sum whose terms are multiples of a
small power of two and whose total stays below 2^53 in those units is the same to the bit: alpha on integer scales
with 2, 3 or 5 raters (terms over m_u - 1 = 1, 2, 4; every alpha of the golden reports but a 6-rater one), AC with 2.
A sum of terms such as 1/6 (AC2 of 3 raters) can differ in its last digits: relative 1e-16 per term, now summed over
``patterns`` terms instead of ``items`` (the golden reports moved by 4.3e-15 at most, a 100k study by 8.4e-15).

Written here because no package computes these statistics from resample counts (``krippendorff`` and ``irrCAC``
take one data set at a time; the tests check the draws against them on the repeated items).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from tui_rater.stats import agreement as ag

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]
# intervals.resample_counts: (items, rows per block) -> the integer counts of every resample, a block at a time
Draw = Callable[[int, int], Iterable[npt.NDArray[np.integer[Any]]]]
# intervals.group_sums: (each item's pattern, patterns) -> every resample's count of each pattern, drawn by pattern
# (RESAMPLES x patterns), or None where the item-level draw must be summed
Grouped = Callable[[IntArray, int], "npt.NDArray[np.int64] | None"]

MOST_PATTERNS = 4000  # resamples x patterns floats held (32 MB); more patterns: the per-item code, blockwise
DRAWN_VALUES = 1_000_000  # drawn counts read per block while summing them by pattern (8 MB as floats)


@dataclass(frozen=True)
class Patterns:
    """The items' distinct rows of value counts (``counts``: patterns x values) and each item's pattern."""

    counts: FloatArray
    item: IntArray
    first: IntArray  # an item of each pattern

    @staticmethod
    def of(counts: FloatArray) -> Patterns:
        """The distinct rows in lexicographic order (``np.unique(counts, axis=0)``'s), whatever the columns: a column
        no item has a value in does not move them (alpha's levels and AC's scale points give the same patterns)."""
        base = float(counts.max(initial=0.0)) + 1.0
        if counts.shape[1] * np.log2(base) < 62 and np.array_equal(counts, np.round(counts)):
            # each row as one integer, its first column the most significant digit in base ``base``: the same order
            # as comparing rows, and an integer sort is 50 times faster than np.unique's row sort (100k items)
            digits = np.int64(base) ** np.arange(counts.shape[1] - 1, -1, -1, dtype=np.int64)
            key = counts.astype(np.int64) @ digits
            _, first, item = np.unique(key, return_index=True, return_inverse=True)
        else:
            _, first, item = np.unique(counts, axis=0, return_index=True, return_inverse=True)
        first = first.astype(np.intp)
        return Patterns(counts[first], item.ravel().astype(np.intp), first)

    @property
    def size(self) -> FloatArray:
        """Each pattern's number of values (an item's ``m_u`` or ``r_i``)."""
        sizes: FloatArray = self.counts.sum(axis=1)
        return sizes

    def of_items(self, per_item: FloatArray) -> FloatArray | None:
        """Each pattern's term from the items' terms (first axis: items), or None where two items of one pattern
        have different terms (a term that is not a function of the values alone: then the per-item code runs)."""
        per_pattern = per_item[self.first]
        return per_pattern if np.array_equal(per_pattern[self.item], per_item, equal_nan=True) else None

    def resampled(self, draw: Draw, grouped: Grouped | None = None) -> FloatArray | None:
        """Every resample's count of items of each pattern (resamples x patterns, read-only): drawn by pattern
        (``grouped``) where it can, else summed from the item-level draw; None where that matrix would be larger than
        the per-item blocks it replaces."""
        if self.counts.shape[0] > MOST_PATTERNS:
            return None
        if grouped is not None:
            direct = grouped(self.item, self.counts.shape[0])
            if direct is not None:
                every = direct.astype(float)
                every.flags.writeable = False
                return every
        return _pattern_counts(self.item, self.counts.shape[0], draw)


# alpha's ordinal and interval levels and AC2 of the same ratings are asked one after the other (Table 1): their
# items and patterns are the same (np.unique orders rows the same with or without a category nobody used), so the
# counts by pattern are summed once and kept for the next figure.
_KEPT = 4
_kept: dict[tuple[int, bytes], FloatArray] = {}
_kept_lock = threading.Lock()


def _pattern_counts(item: IntArray, patterns: int, draw: Draw) -> FloatArray:
    key = (patterns, item.tobytes())
    with _kept_lock:
        kept = _kept.get(key)
    if kept is not None:
        return kept
    # each resample's counts in pattern order (a gather of bytes), then summed per pattern: integers, exact
    order = np.argsort(item, kind="stable")
    starts = np.searchsorted(item[order], np.arange(patterns))  # every pattern has an item
    rows: list[npt.NDArray[np.int64]] = []
    for block in draw(item.size, max(1, DRAWN_VALUES // max(1, item.size))):
        in_order = np.empty(item.size, dtype=block.dtype)
        for w in block:
            np.take(w, order, out=in_order)
            rows.append(np.add.reduceat(in_order, starts, dtype=np.int64))
    every = np.asarray(rows, dtype=float).reshape(len(rows), patterns)
    every.flags.writeable = False
    with _kept_lock:
        while len(_kept) >= _KEPT:
            del _kept[next(iter(_kept))]
        _kept[key] = every
    return every


def alpha_draws(
    counts: FloatArray, levels: FloatArray, level: str, draw: Draw, per_block: int, grouped: Grouped | None = None
) -> FloatArray | None:
    """alpha of each resample from each item's value counts (items x levels), as ``intervals._alpha_resampled``
    computes it item by item, to the same bits where its sums are exact; None where the per-item code must run
    (too many patterns, or ordinal mid-rank terms that could round). ``per_block``: the blocks of resamples that
    code used, kept for the expected disagreement so that its BLAS calls see the same shapes."""
    patterns = Patterns.of(counts)
    m_u = counts.sum(axis=1)
    if level == "ordinal":
        # the bound of intervals._Patterns.of: every number before the division by m_u - 1 exact
        most = float(m_u.max(initial=0.0))
        if 4.0 * (most * most * counts.shape[0]) ** 2 >= 2.0**51:
            return None
        terms = None
    else:
        terms = patterns.of_items(_item_terms(counts, levels, level, m_u))
        if terms is None:
            return None
    w = patterns.resampled(draw, grouped)
    if w is None:
        return None
    size = patterns.size
    every_n_c = w @ patterns.counts  # resamples x levels: integer sums, the same bits as w @ counts item by item
    out: list[FloatArray] = []
    for start in range(0, w.shape[0], per_block):
        n_c, w_block = every_n_c[start : start + per_block], w[start : start + per_block]
        n = n_c.sum(axis=1)
        if level == "ordinal":
            z = np.cumsum(n_c, axis=1) - n_c / 2.0  # mid-ranks of this resample's values
            first = patterns.counts @ z.T  # patterns x resamples
            second = (patterns.counts @ (z**2).T) * size[:, None]
            per_pattern = 2.0 * (second - first**2) / (size[:, None] - 1.0)
            observed = np.einsum("bp,pb->b", w_block, per_pattern)
            expected = 2.0 * (n * np.sum(n_c * z**2, axis=1) - np.sum(n_c * z, axis=1) ** 2)
        else:
            assert terms is not None
            observed = w_block @ terms
            if level == "interval":
                expected = 2.0 * (n * (n_c @ levels**2) - (n_c @ levels) ** 2)
            else:
                delta = ag._delta(levels[:, None], levels[None, :], level)
                expected = np.einsum("bc,ck,bk->b", n_c, delta, n_c)
        with np.errstate(all="ignore"):
            out.append(1.0 - (n - 1.0) * observed / expected)
    return np.concatenate(out)


def _item_terms(counts: FloatArray, levels: FloatArray, level: str, m_u: FloatArray) -> FloatArray:
    """Each item's observed disagreement over its m_u - 1 (interval, nominal, ratio), as the per-item code has it."""
    if level == "interval":
        s1, s2 = counts @ levels, counts @ levels**2
        interval: FloatArray = 2.0 * (m_u * s2 - s1**2) / (m_u - 1.0)
        return interval
    delta = ag._delta(levels[:, None], levels[None, :], level)
    pairwise: FloatArray = np.einsum("uc,ck,uk->u", counts, delta, counts) / (m_u - 1.0)  # d_cc = 0 for both
    return pairwise


@dataclass(frozen=True)
class AcSums:
    """Gwet's per-resample sums: sum of w p_a over items rated twice, the number of those items, and the sum of
    w times each item's category shares with its resample size (resamples, resamples, resamples x categories)."""

    agreement: FloatArray
    twice: FloatArray
    shares: FloatArray
    items: FloatArray


def ac_sums(
    counts: FloatArray,
    pa_i: FloatArray,
    twice: FloatArray,
    share: FloatArray,
    draw: Draw,
    grouped: Grouped | None = None,
) -> AcSums | None:
    """The sums behind each resample's AC (``gwet.ac``) by pattern of category counts (rated items x categories);
    None where the per-item code must run."""
    patterns = Patterns.of(counts)
    agreement = patterns.of_items(np.where(twice > 0, pa_i, 0.0))
    twice_p = patterns.of_items(twice)
    share_p = patterns.of_items(share)
    if agreement is None or twice_p is None or share_p is None:
        return None
    w = patterns.resampled(draw, grouped)
    if w is None:
        return None
    return AcSums(w @ agreement, w @ twice_p, w @ share_p, w.sum(axis=1))

"""Gwet's AC1 (nominal) and AC2 (ordinal, weighted): agreement that skewed labels do not drag down.

Krippendorff's alpha and Cohen's / Fleiss' kappa fall when nearly every rating is the same label even if the raters
almost always agree (the "kappa paradox", Feinstein & Cicchetti 1990). Gwet (2008; Handbook of Inter-Rater
Reliability, 4th ed. 2014, ch. 2 and 3) defines chance agreement through how hard items are to classify, which
stays small then. For ratings of ``n`` items into ``q`` categories with weights ``w_kl`` (the identity for AC1):

    p_a = mean over items rated twice or more of sum_k r_ik (r*_ik - 1) / (r_i (r_i - 1)),  r*_ik = sum_l w_kl r_il
    pi_k = mean over rated items of r_ik / r_i
    p_e = (sum_kl w_kl) / (q (q - 1)) x sum_k pi_k (1 - pi_k)
    AC = (p_a - p_e) / (1 - p_e)

The categories are the scale's points (``q`` is the scale's size, not the number of labels used), as Gwet counts
them. Both means are over items, so the item bootstrap (``intervals``) is two matrix products, summed by the items'
patterns of category counts (``patterns``): one pass over the drawn counts, whatever the number of items.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from tui_rater.stats import intervals as iv
from tui_rater.stats import patterns as rating_patterns
from tui_rater.stats.agreement import Stat

FloatArray = npt.NDArray[np.float64]


def weights(categories: list[float], kind: str) -> FloatArray:
    """Gwet's identity (``nominal``) or quadratic (``ordinal``) weights: 1 - (x_k - x_l)^2 / (x_max - x_min)^2."""
    x = np.asarray(sorted(categories), dtype=float)
    if kind == "nominal" or x.size < 2:
        return np.eye(x.size)
    spread = (x[-1] - x[0]) ** 2
    quadratic: FloatArray = 1.0 - np.subtract.outer(x, x) ** 2 / spread
    return quadratic


def _counts(matrix: npt.ArrayLike, categories: list[float]) -> FloatArray | None:
    """Items x categories: how many raters put each item in each category; None if a rating is off the scale."""
    m = np.asarray(matrix, dtype=float)
    scale = np.asarray(sorted(categories), dtype=float)
    present = ~np.isnan(m.T)  # items x raters: values and their items in the same (item-major) order
    values = m.T[present]
    code = np.searchsorted(scale, values)
    if values.size and (np.any(code >= scale.size) or np.any(scale[np.minimum(code, scale.size - 1)] != values)):
        return None
    cells = np.bincount(np.nonzero(present)[0] * scale.size + code, minlength=m.shape[1] * scale.size)
    counts: FloatArray = cells.reshape(m.shape[1], scale.size).astype(float)
    return counts


def ac(matrix: npt.ArrayLike, categories: list[float], kind: str = "nominal") -> Stat:
    """AC1 (``kind`` nominal) or AC2 with quadratic weights (``ordinal``) of a raters x items matrix (NaN missing),
    with its item-bootstrap interval in ``extra``."""
    m = np.asarray(matrix, dtype=float)
    if m.ndim != 2 or m.shape[0] < 2 or len(categories) < 2:
        return Stat(None, 0, "needs at least two raters and two categories")
    counts = _counts(m, categories)
    if counts is None:
        return Stat(None, 0, "ratings off the scale's points (averaged or continuous scores)")
    r = counts.sum(axis=1)
    counts, r = counts[r > 0], r[r > 0]
    twice = r >= 2
    if twice.sum() < 1:
        return Stat(None, 0, "no item has two ratings")
    w = weights(categories, kind)
    pa_i, share = _per_item(counts, r, w)
    factor = w.sum() / (len(categories) * (len(categories) - 1))
    value = _point(float(pa_i[twice].mean()), share.mean(axis=0), factor)
    stat = Stat(None if value is None else float(value), int(twice.sum()), "" if value is not None else "no variation")
    if value is None:
        return stat
    sums = rating_patterns.ac_sums(counts, pa_i, twice.astype(float), share, iv.resample_counts, iv.group_sums)
    if sums is not None:  # the same sums over the items' distinct category counts (issue 35: 100k items)
        with np.errstate(all="ignore"):  # a resample without an item rated twice: undefined, as before
            pa = sums.agreement / sums.twice
        draws = [_coefficients(pa, sums.shares / sums.items[:, None], factor)]
    else:
        draws = []
        for b in iv.resamples(r.size, iv._block(r.size * (len(categories) + 1))):
            pa = (b @ np.where(twice, pa_i, 0.0)) / (b @ twice.astype(float))
            pi = (b @ share) / b.sum(axis=1)[:, None]
            draws.append(_coefficients(pa, pi, factor))
    return iv.with_interval(stat, iv.percentile(np.concatenate(draws)))


def _per_item(counts: FloatArray, r: FloatArray, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    weighted = counts @ w.T  # r*_ik
    with np.errstate(all="ignore"):
        pa_i = np.sum(counts * (weighted - 1.0), axis=1) / (r * (r - 1.0))
    return np.nan_to_num(pa_i), counts / r[:, None]


def _coefficients(pa: FloatArray, pi: FloatArray, factor: float) -> FloatArray:
    """AC of each resample (rows of ``pi``): (p_a - p_e) / (1 - p_e)."""
    pe = factor * np.sum(pi * (1.0 - pi), axis=-1)
    with np.errstate(all="ignore"):
        coefficients: FloatArray = (pa - pe) / (1.0 - pe)
    return coefficients


def _point(pa: float, pi: FloatArray, factor: float) -> float | None:
    value = float(_coefficients(np.asarray([pa]), pi[None, :], factor)[0])
    return value if np.isfinite(value) else None


SKEWED = 0.6  # the most frequent label's share of the ratings from which skew is named
GAP = 0.2  # how far AC may lie above alpha before the report says why


def with_skew_note(ac_stat: Stat, alpha_stat: Stat, matrix: npt.ArrayLike, ac_name: str, alpha_name: str) -> Stat:
    """``ac_stat`` with a note when it lies well above alpha because one label dominates the ratings (the
    paradox of Feinstein & Cicchetti 1990): the reader is told which figure skew drags down, and why."""
    if ac_stat.value is None or alpha_stat.value is None or ac_stat.value - alpha_stat.value < GAP:
        return ac_stat
    m = np.asarray(matrix, dtype=float)
    values, counts = np.unique(m[~np.isnan(m)], return_counts=True)
    share = counts.max() / counts.sum()
    if share < SKEWED:
        return ac_stat
    label = f"{values[np.argmax(counts)]:g}"
    note = (
        f"{alpha_name} {alpha_stat.value:.2f} and {ac_name} {ac_stat.value:.2f} disagree because the labels are skewed "
        f"({share:.0%} of the ratings are {label}): alpha's chance agreement grows with the skew, {ac_name}'s does not"
    )
    return Stat(ac_stat.value, ac_stat.n, "; ".join(x for x in (ac_stat.note, note) if x), ac_stat.p, ac_stat.extra)

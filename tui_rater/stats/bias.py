"""A judge's biases against the people, each with its item-bootstrap interval (the bias card, issue 32 item 4).

- leniency: the mean of (judge - people) over the items both scored (Zheng et al. 2023 call the opposite a
  "harsh" judge); a pair's scores are preferences (+1 first, -1 second, 0 tie);
- length slope: the least-squares coefficient of the text's length in ``judge ~ 1 + length + people``: how
  many scale points the judge adds per standard deviation of length *beyond* what the people's own score
  explains (a judge that likes long texts only as much as the people do has slope 0; Dubois et al. 2024's
  length-controlled AlpacaEval regresses on the length difference of a pair the same way);
- self-preference: the judge's leniency on the systems the user says share its model family minus its
  leniency on the others (Panickssery et al. 2024); for pairs, its preference for the family's text beyond
  the people's, on the pairs that set one family system against another system;
- the position bias and order consistency of a pair judged in both orders (``systems.position_bias``),
  with a bootstrap over the pairs of the two ratios.

Every interval resamples items with the report's seed scheme (``intervals.resampled_sums``: the items' sums drawn by
pattern where their values repeat, else over the item-level resamples), percentile 95 %. The regression is solved
per resample from weighted normal equations (three by three), so the 1,000 resamples are one matrix product and a
batched solve; numpy's ``lstsq`` and statsmodels fit one data set at a time, which would be 1,000 calls per judge
and question.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tui_rater.stats import intervals as iv

FloatArray = npt.NDArray[np.float64]
MIN_ITEMS = 3  # fewer items leave a mean difference without a spread, a three-term regression without residual


@dataclass(frozen=True)
class Estimate:
    value: float | None
    n: int  # items (or pairs) it is computed from
    interval: iv.Interval
    note: str = ""


def _none(n: int, reason: str) -> Estimate:
    return Estimate(None, n, iv.none(reason), reason)


def _paired(*columns: npt.ArrayLike) -> list[FloatArray]:
    arrays = [np.asarray(c, dtype=float) for c in columns]
    keep = np.all([np.isfinite(a) for a in arrays], axis=0)
    return [a[keep] for a in arrays]


def _block(n: int) -> int:
    return max(1, min(iv.RESAMPLES, iv.CELLS // max(1, 9 * n)))


def mean_difference(judge: npt.ArrayLike, people: npt.ArrayLike) -> Estimate:
    """Leniency: mean(judge - people) over the items both scored."""
    j, p = _paired(judge, people)
    if j.size < MIN_ITEMS:
        return _none(j.size, f"{j.size} items scored by both (at least {MIN_ITEMS} needed)")
    d = j - p
    sums = iv.resampled_sums(np.column_stack([d, np.ones_like(d)]))
    return Estimate(float(d.mean()), int(d.size), iv.percentile(sums[:, 0] / sums[:, 1]))


def length_slope(judge: npt.ArrayLike, people: npt.ArrayLike, length: npt.ArrayLike) -> Estimate:
    """Scale points per standard deviation of ``length`` in ``judge ~ 1 + length + people`` (least squares);
    the SD is the items' own (ddof 1), held fixed across resamples. For pairs: ``length`` is the difference."""
    j, p, x = _paired(judge, people, length)
    if j.size < MIN_ITEMS + 1:
        return _none(j.size, f"{j.size} items with a length and both scores (at least {MIN_ITEMS + 1} needed)")
    sd = float(np.std(x, ddof=1))
    if not sd > 0:
        return _none(j.size, "every text has the same length")
    design = np.column_stack([np.ones_like(x), (x - x.mean()) / sd, p])
    if np.linalg.matrix_rank(design) < 3:
        return _none(j.size, "the people's score is constant or follows the length exactly")
    beta = np.linalg.lstsq(design, j, rcond=None)[0]
    outer = np.einsum("ui,uj->uij", design, design).reshape(j.size, 9)
    moment = design * j[:, None]
    draws = []
    every = iv.resampled_sums(np.hstack([outer, moment]))
    for start in range(0, every.shape[0], _block(j.size)):
        gram = every[start : start + _block(j.size), :9].reshape(-1, 3, 3)
        right = every[start : start + _block(j.size), 9:]
        singular = np.abs(np.linalg.det(gram)) <= 1e-9 * np.maximum(1.0, np.abs(gram).max(axis=(1, 2))) ** 3
        gram[singular] = np.eye(3)  # a resample whose design is singular has no slope
        solved = np.linalg.solve(gram, right[:, :, None])[:, 1, 0]
        solved[singular] = np.nan
        draws.append(solved)
    note = f"score points per SD of length ({sd:.3g}), the people's score held fixed"
    return Estimate(float(beta[1]), int(j.size), iv.percentile(np.concatenate(draws)), note)


def group_difference(judge: npt.ArrayLike, people: npt.ArrayLike, in_group: npt.ArrayLike) -> Estimate:
    """Self-preference on scores: mean(judge - people) on the group's items minus that on the others."""
    mask = np.asarray(in_group, dtype=bool)
    j, p, g = _paired(judge, people, mask.astype(float))
    member = g > 0.5
    inside, outside = int(member.sum()), int((~member).sum())
    if inside < 2 or outside < 2:
        return _none(j.size, f"{inside} items of the family's systems and {outside} of others (2 of each needed)")
    d = j - p
    value = float(d[member].mean() - d[~member].mean())
    inner = member.astype(float)
    sums = iv.resampled_sums(np.column_stack([d * inner, inner, d * (1.0 - inner), 1.0 - inner]))
    with np.errstate(all="ignore"):
        draws = sums[:, 0] / sums[:, 1] - sums[:, 2] / sums[:, 3]
    return Estimate(value, int(d.size), iv.percentile(draws))


def ratio(numerator: npt.ArrayLike, denominator: npt.ArrayLike) -> Estimate:
    """sum(numerator) / sum(denominator), the units (pairs) resampled with both of their counts."""
    top, bottom = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    if bottom.sum() <= 0:
        return _none(int(top.size), "nothing to count")
    value = float(top.sum() / bottom.sum())
    if top.size < 2:
        return Estimate(value, int(top.size), iv.none("one pair: no interval"))
    sums = iv.resampled_sums(np.column_stack([top, bottom]))
    with np.errstate(all="ignore"):
        draws = sums[:, 0] / sums[:, 1]
    return Estimate(value, int(top.size), iv.percentile(draws))


@dataclass(frozen=True)
class OrderCounts:
    """Per pair judged: how often the first-shown text won, of how many decisive verdicts; judged in both
    orders, and with the same verdict in both (the counts ``systems.position_bias`` sums)."""

    first: FloatArray
    decisive: FloatArray
    consistent: FloatArray
    complete: FloatArray


def order_counts(original: npt.ArrayLike, swapped: npt.ArrayLike) -> OrderCounts:
    """``original`` / ``swapped``: the canonical verdict (0 first compared text, 1 second, 2 tie, NaN none) of
    each pair in each order; pairs judged in neither order are dropped."""
    o, s = np.asarray(original, dtype=float), np.asarray(swapped, dtype=float)
    judged = ~(np.isnan(o) & np.isnan(s))
    o, s = o[judged], s[judged]
    decisive = np.isin(o, (0, 1)).astype(float) + np.isin(s, (0, 1)).astype(float)
    first = (o == 0).astype(float) + (s == 1).astype(float)  # swapped: the second text is shown first
    complete = ~(np.isnan(o) | np.isnan(s))
    return OrderCounts(first, decisive, (complete & (o == s)).astype(float), complete.astype(float))

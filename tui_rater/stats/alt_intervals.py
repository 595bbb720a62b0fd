"""Intervals for the alternative annotator test's winning rate ω and advantage probability ρ (issue 33 item 1).

Calderon, Reichart & Dror (2025) give ω and ρ without an interval. Both are functions of per-item quantities:
for each item u and left-out human j who rated it, W^f_uj (the judge aligns with the remaining humans at least
as well as j) and W^h_uj (j does at least as well as the judge). The test's ρ^f_j, its paired t of
d = W^h - W^f against ε, Benjamini-Yekutieli across the humans and so ω are sums over items of these, so the
item bootstrap (``intervals.resamples``: the report's seeded draws, items resampled with every rating they
carry) is one matrix product per resample block: ``w @ W`` gives each human's resampled sums. A resample is
the alt-test of the data with each item repeated as drawn; a human left with fewer items than the test needs
is not tested in that resample, and a resample with fewer tested humans than the verdict needs has no ω or ρ
(it counts against the interval's ``LEAST_DEFINED`` share).

The per-item W's are computed here, not inside ``alternative_annotator``'s loop (which returns only each
human's means): with its public scoring functions and the paper's "at least as well" with the same tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import stats as sp

from tui_rater.stats import alt_columns as ac
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import intervals as iv

FloatArray = npt.NDArray[np.float64]
Ratings = Mapping[Hashable, float]


@dataclass(frozen=True)
class PerItem:
    """items x humans: whether the human rated the item (among the test's items), and W^f, W^h there (0 else)."""

    items: list[Hashable]
    humans: list[str]
    rated: FloatArray
    w_judge: FloatArray
    w_human: FloatArray


@dataclass(frozen=True)
class AltIntervals:
    winning_rate: iv.Interval  # ω
    advantage_probability: iv.Interval  # ρ
    per_human: dict[str, tuple[iv.Interval, iv.Interval]] = field(default_factory=dict)  # human -> ρ^f_j, ρ^h_j


def _at_least(a: float, b: float) -> bool:
    # the paper's >= (a tie counts for both), with alternative_annotator's relative tolerance
    return a >= b - 1e-12 * max(1.0, abs(a), abs(b))


def _present(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def per_item(
    humans: Mapping[str, Ratings],
    judge: Ratings,
    *,
    level: str = "interval",
    min_humans_per_item: int = at.MIN_HUMANS_PER_ITEM,
) -> PerItem:
    """The test's items (rated by the judge and by at least 2 humans) and each human's W^f, W^h on them, scored
    over the alt-test's items x humans matrix (``alt_columns``: the fixed-n test's own indicators; one numpy call
    per person, not per item and person -- 9 s of a 20k report before)."""
    people = {name: {i: float(v) for i, v in r.items() if _present(v)} for name, r in humans.items()}
    judged = {i: float(v) for i, v in judge.items() if _present(v)}
    return per_item_of(ac.from_dicts(people, judged, at.SCORING_FOR_LEVEL[level], min_humans_per_item))


def per_item_of(found: ac.Scored) -> PerItem:
    """The indicators scored once (``alt_columns.Scored``) as items x humans matrices, the items sorted."""
    items = _in_order(found.keys)
    row = {item: u for u, item in enumerate(items)}
    moved = np.fromiter(map(row.__getitem__, found.keys), dtype=np.intp, count=len(found.keys))
    rated, wf, wh = (np.zeros((len(items), len(found.humans))) for _ in range(3))
    for j, rows in enumerate(found.rows):
        rated[moved[rows], j] = 1.0
        wf[moved[rows], j] = found.w_judge[j]
        wh[moved[rows], j] = found.w_human[j]
    return PerItem(items, list(found.humans), rated, wf, wh)


def _in_order(items: list[Hashable]) -> list[Hashable]:
    """The items sorted (the report's item keys: the resamples' counts follow the same order as every other
    interval's); keys that do not compare are sorted by their text."""
    try:
        return sorted(items)  # type: ignore[type-var]
    except TypeError:
        return sorted(items, key=str)


def _by_rejections(p: FloatArray, tested: npt.NDArray[np.bool_], q: float) -> FloatArray:
    """Per row (resample): how many of its tested hypotheses Benjamini-Yekutieli rejects at FDR q."""
    m = tested.sum(axis=1)
    harmonic = np.array([np.sum(1.0 / np.arange(1, k + 1)) if k else 1.0 for k in range(p.shape[1] + 1)])[m]
    ordered = np.sort(np.where(tested, p, np.inf), axis=1)
    rank = np.arange(1, p.shape[1] + 1)[None, :]
    below = ordered <= rank * q / (np.maximum(m, 1) * harmonic)[:, None]
    # the step-up rule: the largest rank whose p is under its threshold; every smaller p is rejected with it
    return np.where(below.any(axis=1), p.shape[1] - np.argmax(below[:, ::-1], axis=1), 0).astype(float)


def resampled(
    found: PerItem,
    *,
    epsilon: float = at.EPSILON_EXPERT,
    alpha: float = 0.05,
    min_humans: int = at.MIN_HUMANS,
    min_items_per_human: int = at.MIN_ITEMS_PER_HUMAN,
) -> tuple[FloatArray, FloatArray]:
    """(ω, ρ) of each of the ``intervals.RESAMPLES`` resamples of the items (NaN: no verdict in that resample)."""
    omega, rho, _, _ = _draws(
        found, epsilon=epsilon, alpha=alpha, min_humans=min_humans, min_items_per_human=min_items_per_human
    )
    return omega, rho


def _draws(
    found: PerItem,
    *,
    epsilon: float = at.EPSILON_EXPERT,
    alpha: float = 0.05,
    min_humans: int = at.MIN_HUMANS,
    min_items_per_human: int = at.MIN_ITEMS_PER_HUMAN,
) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """(ω, ρ, each human's ρ^f_j, each human's ρ^h_j) of each resample, from one pass over the resamples."""
    d = (found.w_human - found.w_judge) * found.rated
    levels = [((found.rated > 0) & (d == v)).astype(float) for v in (-1.0, 0.0, 1.0)]
    # every column is 0 or 1, so each resampled sum is an integer, exact in any order, and so are the sums made
    # from them: a human's items n = the three levels' counts, Σd = #(1) - #(-1), Σd² = #(1) + #(-1). One
    # resampled sum of each column (``intervals.resampled_sums``: drawn by the items' distinct rows) gives every
    # figure of every resample at once (5 columns a human)
    columns = np.hstack([*levels, found.w_judge, found.w_human])
    every = iv.resampled_sums(columns)
    below, tied, above, judge_sum, human_sum = np.hsplit(every, 5)
    n = below + tied + above
    d_sum, d2_sum = above - below, above + below
    tested = n >= max(2, min_items_per_human)
    with np.errstate(all="ignore"):
        mean = d_sum / n
        variance = (d2_sum - n * mean**2) / (n - 1)
        t = (mean - epsilon) / np.sqrt(np.maximum(variance, 0.0) / n)
        p = sp.t.cdf(t, n - 1)
        rho_judge, rho_human = judge_sum / n, human_sum / n
    # d takes the values -1, 0, 1: a human whose resampled d are all one value has no variation (a level's
    # resampled count is positive where one of its items was drawn: w >= 0)
    distinct = sum(count > 0 for count in (below, tied, above))
    flat = distinct <= 1
    p = np.where(flat, np.where(mean < epsilon, 0.0, 1.0), p)  # mean == ε: undefined, never a rejection
    p = np.where(np.isfinite(p), p, 1.0)
    count = tested.sum(axis=1)
    verdict = count >= min_humans
    rejected = _by_rejections(p, tested, alpha)
    with np.errstate(all="ignore"):
        omega = np.where(verdict, rejected / count, np.nan)
        rho = np.where(verdict, np.sum(np.where(tested, rho_judge, 0.0), axis=1) / count, np.nan)
    return omega, rho, rho_judge, rho_human


def alt_test_intervals(
    humans: Mapping[str, Ratings],
    judge: Ratings,
    *,
    level: str = "interval",
    epsilon: float = at.EPSILON_EXPERT,
    alpha: float = 0.05,
    min_humans: int = at.MIN_HUMANS,
    min_items_per_human: int = at.MIN_ITEMS_PER_HUMAN,
) -> AltIntervals:
    """The item-bootstrap percentile intervals of ``alternative_annotator.alt_test``'s ω and ρ."""
    found = per_item(humans, judge, level=level)
    return intervals_of(
        found, epsilon=epsilon, alpha=alpha, min_humans=min_humans, min_items_per_human=min_items_per_human
    )


def intervals_of(
    found: PerItem,
    *,
    epsilon: float = at.EPSILON_EXPERT,
    alpha: float = 0.05,
    min_humans: int = at.MIN_HUMANS,
    min_items_per_human: int = at.MIN_ITEMS_PER_HUMAN,
) -> AltIntervals:
    """``alt_test_intervals`` from the per-item indicators (``per_item`` / ``per_item_of``)."""
    if len(found.items) < 2:
        reason = iv.none("fewer than 2 items rated by the judge and 2 humans")
        return AltIntervals(reason, reason)
    omega, rho, judge, human = _draws(
        found, epsilon=epsilon, alpha=alpha, min_humans=min_humans, min_items_per_human=min_items_per_human
    )
    return AltIntervals(_percentile(omega), _percentile(rho), _per_human(found, judge, human))


def per_human(found: PerItem) -> dict[str, tuple[iv.Interval, iv.Interval]]:
    """Each human's ρ^f_j and ρ^h_j (the shares of their items where the judge, or they, align at least as
    well) over the same resamples of the test's items; a resample without any of the human's items has none."""
    _, _, judge, human = _draws(found)
    return _per_human(found, judge, human)


def _per_human(found: PerItem, judge: FloatArray, human: FloatArray) -> dict[str, tuple[iv.Interval, iv.Interval]]:
    return {
        name: (iv.percentile(judge[:, j]), iv.percentile(human[:, j]))
        for j, name in enumerate(found.humans)
        if found.rated[:, j].sum() >= 2
    }


def _percentile(draws: FloatArray) -> iv.Interval:
    found = iv.percentile(draws)
    if found.ok:
        return found
    return iv.none(found.method.replace("too little variation", "too few humans with enough items to test"))

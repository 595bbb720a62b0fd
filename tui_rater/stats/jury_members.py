"""Does a jury do better than its members? A paired test on the alternative annotator test's per-item scores.

The alt-test (Calderon, Reichart & Dror 2025; ``stats/alternative_annotator.py``) scores a judge on item i against
left-out human j by the advantage indicator W^f_ij: 1 when the judge aligns with the remaining humans at least as well
as human j does (-RMSE for scores, accuracy for nominal answers; ties count for both). Its ranking measure ρ is the
mean of these indicators. A jury and one of its members are scored on the same items against the same humans, so
the comparison is paired by item: per item, s_i = mean over the humans j who rated it of W_ij, and d_i = s_i(jury) -
s_i(member); items are the independent units (two indicators of one item share the item's text and raters).

Why a t-test on d_i and not Wilcoxon's signed-rank test: the paper tests its own per-item indicator differences
(W^h - W^f) with a one-sided paired t-test, justified by at least 30 items (the authors' FAQ); d_i here is a
difference of such indicators, taking few values in [-1, 1] with many exact zeros (both judges beat, or lose to,
the left-out human alike). The signed-rank test drops the zeros and handles heavy ties poorly, and it tests a
median shift, while the t-test's mean of d_i is what the question asks: how much larger the jury's advantage
probability is. One-sided (H1: the jury's mean per-item advantage is larger), at least 30 items.

The best member is the one with the highest winning rate ω (ties: the higher ρ, then the first named). Choosing it
after looking at the data, then testing against it alone, would overstate the jury (the best member by ω is also
the one most likely to look best by chance). So the claim "better than its best member" is made only when the jury
beats *every* member: the intersection-union test, whose p-value is the largest of the members' p-values (valid at
level 0.05 without correction, Berger 1982); each member's p is also given Holm-adjusted, for the question "which
members does it beat".
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as sp

from tui_rater.stats import alternative_annotator as at
from tui_rater.stats.agreement import no_variation

Ratings = Mapping[Hashable, float]
SIGNIFICANCE = 0.05


def item_advantages(humans: Mapping[str, Ratings], judge: Ratings, level: str, items: Sequence[Hashable]) -> np.ndarray:
    """Per item of ``items``: the mean over the humans who rated it (with at least one other) of W^f_ij."""
    score = at.SCORINGS[at.SCORING_FOR_LEVEL[level]]
    out = np.full(len(items), np.nan)
    for position, item in enumerate(items):
        raters = [name for name, ratings in humans.items() if item in ratings]
        if len(raters) < at.MIN_HUMANS_PER_ITEM or item not in judge:
            continue
        wins = []
        for human in raters:
            others = [humans[name][item] for name in raters if name != human]
            judged, own = score(judge[item], others), score(humans[human][item], others)
            # the paper's >= with the same tolerance as the alt-test (``alternative_annotator._better_or_equal``)
            wins.append(judged >= own - 1e-12 * max(1.0, abs(judged), abs(own)))
        out[position] = float(np.mean(wins))
    return out


@dataclass(frozen=True)
class Paired:
    """The jury against one member: the mean per-item difference of advantage, its one-sided p."""

    member: str
    items: int
    difference: float | None  # mean over items of s_i(jury) - s_i(member)
    t: float | None
    p: float | None
    holm: float | None = None
    note: str = ""


def paired_one_sided(d: np.ndarray) -> tuple[float | None, float | None, str]:
    """(t, one-sided p of H1: mean(d) > 0, note) -- the paired t-test, written as the alt-test writes its own."""
    n = d.size
    if n < 2:
        return None, None, f"{n} items: no test"
    mean = float(d.mean())
    if no_variation(d):
        if mean > 0:
            return math.inf, 0.0, "every item gave the same difference, above 0"
        return (-math.inf if mean < 0 else None), (1.0 if mean < 0 else None), "no variation in the differences"
    t = mean / (float(d.std(ddof=1)) / math.sqrt(n))
    return t, float(sp.t.sf(t, n - 1)), ""


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (Holm 1979; R's p.adjust "holm"); None stays None. Written here: scipy
    has no Holm adjustment and statsmodels is no dependency of tui-rater."""
    present = [(i, p) for i, p in enumerate(pvalues) if p is not None]
    m = len(present)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for rank, (i, p) in enumerate(sorted(present, key=lambda ip: ip[1])):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def compare(
    humans: Mapping[str, Ratings],
    jury: Ratings,
    members: Mapping[str, Ratings],
    level: str,
    min_items: int = at.MIN_ITEMS_PER_HUMAN,
) -> list[Paired]:
    """The jury against each member, on the items the jury rated (where every member rated too)."""
    items = sorted(jury, key=str)
    own = item_advantages(humans, jury, level, items)
    rows = []
    for name, ratings in members.items():
        theirs = item_advantages(humans, ratings, level, items)
        d = (own - theirs)[~np.isnan(own) & ~np.isnan(theirs)]
        if d.size < max(2, min_items):
            rows.append(Paired(name, int(d.size), None, None, None, note=f"{d.size} items (< {min_items}): no test"))
            continue
        t, p, note = paired_one_sided(d)
        rows.append(Paired(name, int(d.size), float(d.mean()), t, p, note=note))
    adjusted = holm([row.p for row in rows])
    return [Paired(r.member, r.items, r.difference, r.t, r.p, h, r.note) for r, h in zip(rows, adjusted)]

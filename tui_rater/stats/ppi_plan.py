"""How many human-rated items an estimate of the mean human rating needs for an interval of a given half-width,
planned from a pilot (the people's ratings so far on some items, the judge's on all).

Every estimate of ``ppi_recal`` states its variance with n human-rated items as ``fixed + spread / n``: 0 + Var(human)
/ n for the humans-only mean; for PPI++ the judge's term [λ²Var(f) + 2λCov(f, g)] / N plus Var(human − λ·judge) / n
(``ppi.py``); the same for recalibrated PPI++ on the cross-fitted map's predictions; Σ_s w_s Var_s(g) / n for
stratified PPI++ with the items drawn uniformly. The half-width z·√(fixed + spread / n) is at most h when

    n ≥ spread / (h² / z² − fixed),

impossible when h² / z² ≤ fixed (the judge's own term is already wider than the target). For PPI++ this is the
sample size of Broska, Howes & van Loon (2024), "The Mixed Subjects Design", which ``ppi_py.ppi_power`` computes
from the PPI correlation ρ: n = n₀ N (1 − ρ²) / (N − ρ² n₀), n₀ the humans-only n (the test checks it against it).

The pilot's own uncertainty: ``spread`` is a variance estimated from the pilot's rated items, with ``spread_df``
degrees of freedom (n − 1 for the mean; n − 2 for PPI with its λ; Satterthwaite's for the strata). Its 95 % interval
under normal errors, spread·df / χ²_{df}(0.975) to spread·df / χ²_{df}(0.025), gives the range of n; plan with the
upper end to reach the half-width in most studies (``tests/stats/test_ppi_plan_coverage.py`` measures how many).
The judge's term and λ are held as measured (they come from every item the judge rated, mostly not the pilot's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as sp

from tui_rater.stats.ppi_recal import Estimate

NO_SPREAD = 1e-12  # a pilot variance at or below this (scale points squared) is round-off of a constant
PILOT_LEVEL = 0.95  # the interval of the pilot's variance that the range of n comes from

ASSUMPTIONS = (
    "the human-rated items are a uniform random sample of the items the judge rated (stratified: within each "
    "stratum, in proportion to its size); the variance is fixed + spread / n with the judge's term and λ as the "
    "pilot measured them; the interval is normal (z), as PPI's; the range of n is the 95% chi-square interval of "
    "the pilot's variance of the human-side term (exact for normal errors, rough for a few dozen Likert ratings)"
)


@dataclass(frozen=True)
class Need:
    """Human-rated items needed for the target half-width: at the pilot's variance, and over its 95 % interval."""

    n: int | None
    low: int | None = None  # at the lower end of the pilot variance's interval
    high: int | None = None  # at its upper end: the cautious plan
    note: str = ""
    beyond: int | None = None  # set to the items the judge rated when a figure (then None) would exceed them


def items_for(fixed: float, spread: float, half_width: float, confidence: float) -> int | None:
    """The least n with z·√(fixed + spread / n) ≤ half_width (None: no n reaches it)."""
    room = (half_width / float(sp.norm.ppf(0.5 + confidence / 2))) ** 2 - fixed
    if room <= 0:
        return None
    return max(1, math.ceil(spread / room - 1e-9))


def need(estimate: Estimate, half_width: float, confidence: float, items: int) -> Need:
    """The human-rated items ``estimate``'s method needs for ``half_width`` at ``confidence``, over ``items``."""
    fixed, spread, df = estimate.fixed, estimate.spread, estimate.spread_df
    if fixed is None or spread is None or df is None or not math.isfinite(spread):
        return Need(None, note=estimate.note or estimate.interval.note or "the pilot gives this estimate no variance")
    if not spread > NO_SPREAD:
        # every rated item's human-side term alike (a pilot whose people all gave one rating, overall or within
        # each stratum): its variance is 0 only in the pilot, and the chi-square interval of a zero variance is
        # [0, 0], so "1 item [1, 1]" would have been promised for any half-width (df = ∞ there crashed it)
        return Need(
            None,
            note=f"no variance to plan from: the people's ratings in the pilot's {estimate.interval.n} rated "
            "items do not vary (less the judge's part; within each stratum when stratified); rate more items",
        )
    if df < 1:
        # PPI++ on 2 rated items: the mean and λ take both degrees of freedom, so the variance was "estimated" from
        # none; the figure came out (e.g. "14 [n/a, n/a]", "8 fewer" than humans only) with nothing behind it
        return Need(
            None,
            note=f"the pilot's {estimate.interval.n} rated items leave this estimate's variance no degree of "
            "freedom: rate more items",
        )
    fixed = max(fixed, 0.0)  # as ``Estimate.variance_at``: a negative judge's term is the pilot's noise
    n = items_for(fixed, spread, half_width, confidence)
    if n is None:
        return Need(
            None,
            note=f"no number of ratings reaches ±{half_width:g}: the judge's own term alone is wider "
            "(more items for the judge, not more ratings, would narrow it)",
        )
    tail = (1 - PILOT_LEVEL) / 2
    low = items_for(fixed, spread * df / float(sp.chi2.ppf(1 - tail, df)), half_width, confidence)
    high = items_for(fixed, spread * df / float(sp.chi2.ppf(tail, df)), half_width, confidence)
    notes = []
    if high is None:
        notes.append("at the pilot's upper variance no number of ratings reaches it")
    if max(n, high or 0) > items:
        # each item's people's mean is one rating here, and PPI's variance holds for n ≤ N only
        notes.append(f"beyond the {items} items the judge rated: add items")
    over = any(k is not None and k > items for k in (n, low, high))
    n, low, high = (None if k is None or k > items else k for k in (n, low, high))
    return Need(n, low, high, "; ".join(notes), items if over else None)

"""Test-retest reliability of a solo rater: the same items rated twice, blind and spaced.

With one person there is no inter-rater agreement to compare a judge with; the person's agreement
with themselves is the ceiling a judge can be held to ("you agree with yourself at α 0.62, with
the judge at 0.55"). Reported: intra-rater Krippendorff's α at the attribute's level, Cohen's κ
(quadratic weights on ordered scales), % identical ratings, the mean shift retest - first with
its interval, and the drift of that difference over the session (its slope against the position
and the time of the first rating, and against the spacing). Chiang & Lee's teachers needed "about
five to ten stories to calibrate their ratings" (App. C.3.1), so agreement is also reported
without the items first rated during the first K ratings.

Undefined results come back as ``None`` with the reason in ``note``, never NaN or an exception.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sp

from tui_rater.stats import agreement as ag

CALIBRATION_ITEMS = 10  # Chiang & Lee App. C.3.1: five to ten items to calibrate


@dataclass(frozen=True)
class RetestAgreement:
    pairs: int
    alpha: ag.Stat  # intra-rater Krippendorff's α (first vs retest as two "raters")
    kappa: ag.Stat  # Cohen's κ, quadratic weights on ordinal/interval scales, none on nominal
    kappa_weights: str
    exact: ag.Stat  # % of items rated identically both times


@dataclass(frozen=True)
class Drift:
    """The linear trend of (retest - first) against ``against``; slope per unit of it."""

    against: str
    slope: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    p: float | None = None
    n: int = 0
    note: str = ""


@dataclass(frozen=True)
class RetestReliability:
    level: str
    pairs: int
    overall: RetestAgreement
    calibrated: RetestAgreement  # without pairs whose first rating came among the first K
    calibration_items: int
    shift: ag.Stat  # mean(retest - first), its 95% interval in extra
    drift: list[Drift] = field(default_factory=list)
    note: str = ""


def _agreement(first: np.ndarray, retest: np.ndarray, level: str, labels: list[float] | None) -> RetestAgreement:
    n = int(first.size)
    alpha = ag.alpha(np.vstack([first, retest]), level, labels) if n else ag.Stat(None, 0, "no pairs")
    weights = "none" if level == "nominal" else "quadratic"
    if labels:
        kappa = ag.weighted_kappa(first, retest, labels, weights)
    else:
        kappa = ag.Stat(None, n, "κ needs the scale's discrete labels (not defined on a continuous scale)")
    return RetestAgreement(n, alpha, kappa, weights, ag.exact_agreement(first, retest, labels or None))


def agreement(
    first: ArrayLike, second: ArrayLike, *, level: str = "interval", labels: list[float] | None = None
) -> RetestAgreement:
    """α / κ / % identical between two aligned series, with the conventions above. Also for a person
    against a judge, so that "you agree with yourself at α 0.62, with the judge at 0.55" compares like
    with like (items where either is missing are left out)."""
    x, y = np.asarray(first, dtype=float), np.asarray(second, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    return _agreement(x[keep], y[keep], level, labels)


def drift(difference: ArrayLike, x: ArrayLike, against: str, confidence: float = 0.95) -> Drift:
    """Least-squares slope of ``difference`` on ``x`` with its t interval (n - 2 degrees of freedom)."""
    d, xs = np.asarray(difference, dtype=float), np.asarray(x, dtype=float)
    keep = ~(np.isnan(d) | np.isnan(xs))
    d, xs = d[keep], xs[keep]
    if d.size < 3:
        return Drift(against, None, n=int(d.size), note="needs at least 3 retested items")
    if np.all(xs == xs[0]):
        return Drift(against, None, n=int(d.size), note=f"every item has the same {against}")
    fit = sp.linregress(xs, d)
    half = float(sp.t.ppf(0.5 + confidence / 2, d.size - 2)) * float(fit.stderr)
    p = float(fit.pvalue) if math.isfinite(fit.pvalue) else None
    slope = float(fit.slope)
    return Drift(against, slope, slope - half, slope + half, p, int(d.size))


NO_SHIFT_ON_CHOICES = "a choice's codes are categories: no mean shift, no drift (agreement only)"


def retest_reliability(
    first: ArrayLike,
    retest: ArrayLike,
    first_position: ArrayLike,
    *,
    level: str = "interval",
    labels: list[float] | None = None,
    retest_position: ArrayLike | None = None,
    first_time: ArrayLike | None = None,
    calibration_items: int = CALIBRATION_ITEMS,
) -> RetestReliability:
    """``first`` and ``retest``: the two ratings of each retested item (aligned); ``first_position``:
    the 0-based place of the first rating in everything this rater rated (the calibration cut and
    the drift use it); ``retest_position`` and ``first_time`` (seconds) add the drift against the
    spacing and against time. ``labels``: the scale's points (for κ and the ordinal α)."""
    x, y = np.asarray(first, dtype=float), np.asarray(retest, dtype=float)
    position = np.asarray(first_position, dtype=float)
    if not (x.shape == y.shape == position.shape):
        raise ValueError("first, retest and first_position must be aligned item by item")
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y, position = x[keep], y[keep], position[keep]
    settled = position >= calibration_items
    difference = y - x
    drifts = [drift(difference, position, "position of the first rating")]
    if retest_position is not None:
        spacing = np.asarray(retest_position, dtype=float)[keep] - position
        drifts.append(drift(difference, spacing, "items between first rating and retest"))
    if first_time is not None:
        seconds = np.asarray(first_time, dtype=float)[keep]
        start = np.nanmin(seconds) if seconds.size else 0.0  # (no pairs: an empty drift, not an error)
        drifts.append(drift(difference, (seconds - start) / 3600.0, "hours since the first rating"))
    note = "" if x.size else "no item was rated twice"
    if level == "nominal":  # category codes have no mean: agreement statistics only, no shift, no drift
        shift = ag.Stat(None, int(x.size), NO_SHIFT_ON_CHOICES)
        drifts = []
    else:
        shift = ag.bias(y, x)
    return RetestReliability(
        level,
        int(x.size),
        _agreement(x, y, level, labels),
        _agreement(x[settled], y[settled], level, labels),
        calibration_items,
        shift,
        drifts,
        note,
    )

"""Bias-corrected system scores from a judge on every item and humans on a random subset:
prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan & Zrnic 2023, Science 382).

The judge rated all N items, humans a random subset L of n of them. The estimate of the mean
human rating is

    θ̂ = λ · mean_N(judge) + mean_L(human - λ · judge)

λ = 1 is PPI: the judge's mean, corrected by its average error (the "rectifier") measured where
humans rated. The power-tuned λ̂ of PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv 2311.01453)
minimises the variance; λ = 0 is the classical human-only mean.

Here the N judge-rated items *include* the n human-rated ones (the paper's unlabelled set is
disjoint from the labelled one). Conditional on which items were rated (a random subset), with
items drawn independently, the variance is then exactly

    Var θ̂ = [λ² Var(f) + 2λ Cov(f, g)] / N  +  Var(g) / n,        g = human - λ · judge

(the rated items appear in both means, hence the covariance term), and the variance-minimising λ
is Cov(human, f) / Var(f) -- the regression estimator of two-phase sampling. With n = N the
estimate is the human mean whatever λ. The interval is θ̂ ± z · se (a normal approximation, as
in the paper). The first bracket does not shrink with more human ratings of the same items; the
second does -- which gives the number of ratings that would halve the interval.

Undefined results come back as ``None`` with the reason in ``note``, never NaN or an exception.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as sp

SMALL_SAMPLE = 30  # below this many human ratings the normal interval may under-cover


@dataclass(frozen=True)
class Interval:
    """A mean (or difference) with its standard error and confidence interval."""

    estimate: float | None
    std_error: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    note: str = ""


@dataclass(frozen=True)
class Halving:
    """How many more human ratings (spread like the current ones) would halve the interval."""

    extra_ratings: int | None
    note: str = ""


@dataclass(frozen=True)
class PpiMean:
    estimate: Interval  # the prediction-powered estimate of the mean human rating
    classical: Interval  # the human-only mean on the rated subset, for comparison
    items: int  # N: items the judge rated
    rated: int  # n: of those, items with a human rating
    judge_mean: float | None
    rectifier: float | None  # mean (human - λ · judge) on the rated items
    lam: float | None  # 1 for PPI, λ̂ for PPI++
    method: str  # "ppi" or "ppi++"
    judge_term: float | None  # the variance part that more human ratings do not reduce
    human_term: float | None  # the variance part that shrinks as 1/n
    halving: Halving = field(default_factory=lambda: Halving(None))
    note: str = ""


@dataclass(frozen=True)
class PpiDifference:
    system_a: str
    system_b: str
    estimate: Interval  # mean(a) - mean(b)
    classical: Interval
    paired: bool
    lam_a: float | None
    lam_b: float | None
    halving: Halving = field(default_factory=lambda: Halving(None))
    note: str = ""


@dataclass(frozen=True)
class SystemScores:
    means: dict[str, PpiMean]
    differences: list[PpiDifference]


# --- one system ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Arm:
    f: np.ndarray  # judge on every item
    y: np.ndarray  # human, NaN where not rated
    rated: np.ndarray  # mask of L
    lam: float

    @property
    def n_items(self) -> int:
        return int(self.f.size)

    @property
    def n_rated(self) -> int:
        return int(self.rated.sum())

    @property
    def g(self) -> np.ndarray:
        return self.y - self.lam * self.f  # NaN off L

    @property
    def estimate(self) -> float:
        return float(self.lam * self.f.mean() + self.g[self.rated].mean())

    def fixed(self) -> float:
        """λ² Var(f) + 2λ Cov(f, g): divided by N, the part of the variance human ratings cannot reduce."""
        return self.lam**2 * _var(self.f) + 2 * self.lam * _cov(self.f, self.g, self.rated)

    def scalable(self) -> float:
        return _var(self.g[self.rated]) / self.n_rated


def _var(x: np.ndarray) -> float:
    return float(np.var(x, ddof=1)) if x.size > 1 else 0.0


def _cov(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> float:
    if mask.sum() < 2:
        return 0.0
    return float(np.cov(x[mask], y[mask], ddof=1)[0, 1])


def _arm(judge: ArrayLike, human: ArrayLike, power_tuned: bool) -> tuple[_Arm | None, str]:
    judge, human = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    if judge.shape != human.shape:
        raise ValueError("judge and human ratings must be aligned item by item")
    notes = []
    missing = np.isnan(judge)
    if missing.any():
        # the judge is meant to rate every item; items it failed on leave both means
        notes.append(f"{int(missing.sum())} items without a judge rating left out (biased if failures are not random)")
    f, y = judge[~missing], human[~missing]
    rated = ~np.isnan(y)
    if f.size < 2:
        return None, "needs at least 2 items rated by the judge"
    if rated.sum() < 2:
        return None, f"needs at least 2 human-rated items (has {int(rated.sum())})"
    lam = 1.0
    if power_tuned:
        var_f = _var(f)
        # PPI++: λ̂ = Cov(human, judge) / Var(judge) minimises the variance (see the module docstring)
        lam = _cov(y, f, rated) / var_f if var_f > 0 else 1.0
        if var_f == 0:
            notes.append("the judge gives every item the same rating: λ = 1")
    return _Arm(f, y, rated, lam), "; ".join(notes)


def normal_interval(estimate: float, variance: float, n: int, confidence: float, note: str = "") -> Interval:
    se = math.sqrt(max(variance, 0.0))
    half = float(sp.norm.ppf(0.5 + confidence / 2)) * se
    if n < SMALL_SAMPLE:
        note = "; ".join(x for x in (note, f"only {n} human ratings: the normal interval may under-cover") if x)
    return Interval(estimate, se, estimate - half, estimate + half, n, note)


def _halving(fixed_over_n: float, scalable: float, rated: int, capacity: int) -> Halving:
    """Scale the human ratings by c so that fixed/N + scalable/c = variance / 4."""
    variance = fixed_over_n + scalable
    room = variance / 4 - fixed_over_n
    if scalable <= 0:
        return Halving(None, "the human term is not positive: more ratings do not narrow the interval")
    if room <= 0:
        return Halving(None, "impossible on these items: the judge's own term is over a quarter of the variance")
    factor = scalable / room
    if factor * rated > capacity + 1e-9:
        needed = math.ceil(factor * rated)
        return Halving(None, f"needs about {needed} human ratings, more than the {capacity} these items allow")
    return Halving(math.ceil(rated * factor - rated - 1e-9))


def ppi_mean(judge: ArrayLike, human: ArrayLike, *, power_tuned: bool = False, confidence: float = 0.95) -> PpiMean:
    """The mean human rating of one system: ``judge`` on every item, ``human`` aligned with it
    (NaN where no human rated; the mean of several humans where several did). The rated items
    must be a *random* subset of the items."""
    method = "ppi++" if power_tuned else "ppi"
    arm, note = _arm(judge, human, power_tuned)
    if arm is None:
        judge_arr, human_arr = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
        n = int((~np.isnan(human_arr)).sum())
        return PpiMean(
            Interval(None, n=n, note=note),
            _classical(human_arr, confidence),
            int((~np.isnan(judge_arr)).sum()),
            n,
            None,
            None,
            None,
            method,
            None,
            None,
            note=note,
        )
    fixed_over_n, scalable = arm.fixed() / arm.n_items, arm.scalable()
    estimate = normal_interval(arm.estimate, fixed_over_n + scalable, arm.n_rated, confidence, note)
    return PpiMean(
        estimate,
        _classical(arm.y[arm.rated], confidence),
        arm.n_items,
        arm.n_rated,
        float(arm.f.mean()),
        float(arm.g[arm.rated].mean()),
        arm.lam,
        method,
        fixed_over_n,
        scalable,
        _halving(fixed_over_n, scalable, arm.n_rated, arm.n_items),
        note,
    )


def _classical(human: np.ndarray, confidence: float) -> Interval:
    y = human[~np.isnan(human)]
    if y.size < 2:
        return Interval(None, n=int(y.size), note="needs at least 2 human ratings")
    return normal_interval(float(y.mean()), _var(y) / y.size, int(y.size), confidence)


# --- two systems -------------------------------------------------------------------------------------


def _cross(a: _Arm, b: _Arm) -> tuple[float, float, str]:
    """Cov(θ̂_a, θ̂_b) for systems rated on the same units, split into (fixed / N, scalable)."""
    both = a.rated & b.rated
    n_ab = int(both.sum())
    fixed = (
        a.lam * b.lam * _cov(a.f, b.f, np.ones_like(a.rated))
        + a.lam * _cov(a.f, b.g, b.rated)
        + b.lam * _cov(a.g, b.f, a.rated)
    ) / a.n_items
    note = ""
    if n_ab == 1:
        note = "one unit rated by humans for both systems: its covariance cannot be estimated and is left out"
    scalable = n_ab / (a.n_rated * b.n_rated) * _cov(a.g, b.g, both) if n_ab >= 2 else 0.0
    return fixed, scalable, note


def ppi_difference(
    judge_a: ArrayLike,
    human_a: ArrayLike,
    judge_b: ArrayLike,
    human_b: ArrayLike,
    *,
    paired: bool,
    names: tuple[str, str] = ("a", "b"),
    power_tuned: bool = False,
    confidence: float = 0.95,
) -> PpiDifference:
    """mean(a) - mean(b). ``paired``: the arrays are aligned by unit (e.g. the prompt both systems
    wrote for), so the two estimates are correlated through the shared units; otherwise the two
    systems' items are independent samples."""
    fa, ya = np.asarray(judge_a, dtype=float), np.asarray(human_a, dtype=float)
    fb, yb = np.asarray(judge_b, dtype=float), np.asarray(human_b, dtype=float)
    notes = []
    if paired:
        if fa.shape != fb.shape:
            raise ValueError("paired systems must be aligned unit by unit")
        keep = ~(np.isnan(fa) | np.isnan(fb))
        if not keep.all():
            notes.append(f"{int((~keep).sum())} units without both judge ratings left out")
        fa, ya, fb, yb = fa[keep], ya[keep], fb[keep], yb[keep]
    a, note_a = _arm(fa, ya, power_tuned)
    b, note_b = _arm(fb, yb, power_tuned)
    notes += [n for n in (note_a, note_b) if n]
    classical = _classical_difference(ya, yb, paired, confidence)
    if a is None or b is None:
        return PpiDifference(
            *names, Interval(None, note="; ".join(notes)), classical, paired, None, None, note="; ".join(notes)
        )
    fixed = a.fixed() / a.n_items + b.fixed() / b.n_items
    scalable = a.scalable() + b.scalable()
    if paired:
        cross_fixed, cross_scalable, note = _cross(a, b)
        fixed, scalable = fixed - 2 * cross_fixed, scalable - 2 * cross_scalable
        notes += [note] if note else []
    note = "; ".join(notes)
    rated, capacity = a.n_rated + b.n_rated, min(a.n_items / a.n_rated, b.n_items / b.n_rated)
    estimate = normal_interval(a.estimate - b.estimate, fixed + scalable, min(a.n_rated, b.n_rated), confidence, note)
    halving = _halving(fixed, scalable, rated, math.floor(capacity * rated))
    return PpiDifference(*names, estimate, classical, paired, a.lam, b.lam, halving, note)


def _classical_difference(human_a: np.ndarray, human_b: np.ndarray, paired: bool, confidence: float) -> Interval:
    ra, rb = ~np.isnan(human_a), ~np.isnan(human_b)
    if ra.sum() < 2 or rb.sum() < 2:
        return Interval(None, note="needs at least 2 human ratings of each system")
    ya, yb = human_a[ra], human_b[rb]
    variance = _var(ya) / ya.size + _var(yb) / yb.size
    if paired:
        both = ra & rb
        if both.sum() >= 2:  # units rated for both systems make the two means covary
            cov = np.cov(human_a[both], human_b[both], ddof=1)[0, 1]
            variance -= 2 * both.sum() / (ya.size * yb.size) * cov
    return normal_interval(float(ya.mean() - yb.mean()), variance, int(min(ya.size, yb.size)), confidence)


# --- from the study's ratings -------------------------------------------------------------------------


def system_scores(
    judge: Mapping[Hashable, float],
    human: Mapping[Hashable, float],
    system: Mapping[Hashable, str],
    unit: Mapping[Hashable, Hashable] | None = None,
    *,
    power_tuned: bool = False,
    confidence: float = 0.95,
) -> SystemScores:
    """Each system's mean and every pairwise difference from item-keyed ratings.

    ``judge``: item -> the judge's rating (every item); ``human``: item -> the mean human rating
    (the rated items only); ``system``: item -> the system that wrote it; ``unit``: item -> what
    pairs the systems (e.g. the prompt); with it, differences are paired over the units both
    systems have, otherwise unpaired.
    """
    systems = sorted(set(system.values()))
    by_system = {s: [i for i in judge if system.get(i) == s] for s in systems}

    def arrays(items: list[Hashable]) -> tuple[np.ndarray, np.ndarray]:
        return (
            np.array([judge[i] for i in items], dtype=float),
            np.array([human.get(i, math.nan) for i in items], dtype=float),
        )

    means = {
        s: ppi_mean(*arrays(items), power_tuned=power_tuned, confidence=confidence) for s, items in by_system.items()
    }
    differences = []
    for sa, sb in combinations(systems, 2):
        if unit is None:
            diff = ppi_difference(
                *arrays(by_system[sa]),
                *arrays(by_system[sb]),
                paired=False,
                names=(sa, sb),
                power_tuned=power_tuned,
                confidence=confidence,
            )
        else:
            units_a = {unit[i]: i for i in by_system[sa] if i in unit}
            units_b = {unit[i]: i for i in by_system[sb] if i in unit}
            shared = [u for u in units_a if u in units_b]
            diff = ppi_difference(
                *arrays([units_a[u] for u in shared]),
                *arrays([units_b[u] for u in shared]),
                paired=True,
                names=(sa, sb),
                power_tuned=power_tuned,
                confidence=confidence,
            )
        differences.append(diff)
    return SystemScores(means, differences)

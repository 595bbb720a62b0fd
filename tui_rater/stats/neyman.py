"""Neyman allocation of new human ratings across strata, from a pilot (Neyman 1934; Cochran 1977, §5.5 and §5.8).

Stratified PPI++ (``ppi_recal.stratified_ppi``) has the variance

    Σ_h W_h² [judge's term_h / N_h + S_h² / n_h]

W_h = N_h / N the stratum's share of the items the judge rated, S_h the standard deviation within stratum h of the
PPI++ rectifier y − λ·f (the people's mean rating minus λ times the judge's), n_h the stratum's human-rated items.
For a fixed total n it is least at n_h ∝ N_h S_h (Neyman). A pilot has already put n⁰_h ratings in each stratum,
and no stratum can take more than its N_h items: the totals are n_h = clip(c · N_h S_h, n⁰_h, N_h), with c such that
Σ n_h = Σ n⁰_h + M for the M new ratings (the Lagrange condition with the bounds that bind: a stratum whose Neyman
share is below its pilot keeps the pilot and gets none; one whose share is above its size is rated whole, Cochran
§5.8). The new ratings m_h = n_h − n⁰_h are rounded to whole items by largest remainder within the bounds.

S_h is measured on the pilot, which is what makes the allocation a plan rather than a fact: a pilot stratum of few
ratings gives a rough S_h (``sd_df`` says how rough). The estimate stays valid whatever the allocation, as long as
each stratum's rated items are a uniform random sample of it (``docs/VERDICT.md``); a poor S_h only costs width.

Written here because no library of the field (scipy, statsmodels) allocates a stratified sample; the problem is a
one-dimensional search for c.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class StratumFigures:
    """One stratum of a pilot, as the stratified estimate measured it."""

    name: str
    items: int  # N_h: the items the judge rated in the stratum
    rated: int  # n⁰_h: of those, rated by people (the pilot)
    sd: float  # S_h: SD of y − λ·f on the pilot's rated items of the stratum (ddof 1)


@dataclass(frozen=True)
class StratumAllocation:
    name: str
    items: int  # N_h
    rated: int  # n⁰_h
    sd: float  # S_h
    new: int  # m_h: new ratings allocated to the stratum

    @property
    def total(self) -> int:
        return self.rated + self.new


def allocate(items: Sequence[int], sd: Sequence[float], rated: Sequence[int], new: int) -> np.ndarray:
    """The new ratings per stratum (whole numbers summing to ``new``): bounded Neyman allocation of the totals."""
    size, spread, pilot = (np.asarray(x, dtype=float) for x in (items, sd, rated))
    if not (size.shape == spread.shape == pilot.shape):
        raise ValueError("items, sd and rated must be aligned stratum by stratum")
    if np.any(pilot > size) or np.any(pilot < 0) or np.any(~np.isfinite(spread)) or np.any(spread < 0):
        raise ValueError("each stratum needs 0 ≤ rated ≤ items and a finite sd ≥ 0")
    room = size - pilot
    if not 0 <= new <= room.sum():
        raise ValueError(f"{new} new ratings do not fit in the {int(room.sum())} unrated items")
    if new == 0:
        return np.zeros(size.size, dtype=int)
    total = pilot.sum() + new
    weight = size * spread
    open_weight = weight[room > 0]
    if not np.any(open_weight > 0):  # the rectifier does not vary where there is room: in proportion to size
        weight = size.copy()
    totals = _water_fill(weight, pilot, size, total)
    continuous = totals - pilot
    whole: np.ndarray = np.minimum(np.floor(continuous + 1e-9), room).astype(int)
    left = new - int(whole.sum())
    fraction = np.where(whole < room, continuous - whole, -np.inf)
    for index in np.argsort(-fraction, kind="stable"):  # largest remainder, within each stratum's room
        if left == 0:
            break
        if whole[index] < room[index]:
            whole[index] += 1
            left -= 1
    if left:  # the remainders could not take them all (ties at the bounds): any stratum with room
        for index in np.nonzero(whole < room)[0]:
            take = min(left, int(room[index] - whole[index]))
            whole[index] += take
            left -= take
    return whole


def _water_fill(weight: np.ndarray, low: np.ndarray, high: np.ndarray, total: float) -> np.ndarray:
    """clip(c · weight, low, high) summing to ``total`` (Σ low ≤ total ≤ Σ high): bisection on c, which the sum
    grows with; strata of weight 0 take what the others cannot (their share of the room left)."""
    positive = weight > 0
    top = float(np.max(high[positive] / weight[positive])) if positive.any() else 0.0
    lo, hi = 0.0, top
    for _ in range(200):
        mid = (lo + hi) / 2
        if np.clip(mid * weight, low, high).sum() < total:
            lo = mid
        else:
            hi = mid
    found = np.clip(hi * weight, low, high)
    short = total - found.sum()
    if short > 1e-9:  # every stratum of positive weight is full
        room = np.where(positive, 0.0, high - found)
        found = found + short * room / room.sum()
    return found


def neyman(strata: Sequence[StratumFigures], new: int) -> list[StratumAllocation]:
    """``new`` ratings allocated across the pilot's strata."""
    new_per = allocate([s.items for s in strata], [s.sd for s in strata], [s.rated for s in strata], new)
    return [StratumAllocation(s.name, s.items, s.rated, s.sd, int(m)) for s, m in zip(strata, new_per)]


def human_variance(strata: Sequence[StratumFigures], totals: Sequence[float]) -> float:
    """Σ_h W_h² S_h² / n_h: the people's part of the stratified variance with ``totals`` rated a stratum (the
    judge's part, with the covariance of the judge's mean and the rectifier's, does not depend on them)."""
    big_n = sum(s.items for s in strata)
    out = 0.0
    for s, n in zip(strata, totals):
        if n <= 0:
            return math.inf
        out += (s.items / big_n) ** 2 * s.sd**2 / n
    return out


def proportional(strata: Sequence[StratumFigures], new: int) -> list[float]:
    """The totals a uniform draw of ``new`` more items gives each stratum on average: n⁰_h + m·(N_h − n⁰_h)/Σ(N − n⁰)
    (a uniform draw from the unrated items), for the comparison ``sample-size`` shows."""
    room = np.array([s.items - s.rated for s in strata], dtype=float)
    share = room / room.sum() if room.sum() > 0 else np.zeros(room.size)
    return [s.rated + float(new * w) for s, w in zip(strata, share)]


@dataclass(frozen=True)
class StratifiedDesign:
    """How the human-rated items were drawn (``assign --allocate``, ``store/allocations.py``): every frame item's
    stratum as stored with the draw, the pilot rated before it, and the drawn items in the order people see them.

    A question's stratified sample is its pilot items that people rated and, per stratum, the drawn items up to the
    first one nobody has rated (a prefix of the stratum's uniform draw is itself a uniform draw; an item rated past
    a gap is not part of it). Each sampled item of stratum h was included with probability π = n_h / N_h; the
    weights 1/π of a stratum add up to N_h, and ``inclusion`` checks that they do."""

    by: str
    judge: str
    stratum_of: Mapping[int, str]
    pilot: frozenset[int]
    drawn: tuple[int, ...]

    def sample(self, keys: np.ndarray, rated: np.ndarray) -> np.ndarray:
        """Which of ``keys`` (``rated``: whether people rated each) are in the stratified sample."""
        has = {int(k) for k, r in zip(keys, rated) if r}
        chosen = {k for k in self.pilot if k in has}
        stopped: set[str] = set()
        for key in self.drawn:
            stratum = self.stratum_of[key]
            if stratum in stopped:
                continue
            if key in has:
                chosen.add(key)
            else:
                stopped.add(stratum)
        return np.array([int(k) in chosen for k in keys], dtype=bool)

    def inclusion(self, keys: np.ndarray, rated: np.ndarray) -> tuple[dict[int, float], str | None]:
        """(item key -> π for each sampled item, a sentence when the design cannot be weighted: a frame item no
        longer in the study, or a stratum nobody rated)."""
        present = {int(k) for k in keys}
        missing = [k for k in self.stratum_of if k not in present]
        if missing:
            return {}, f"{len(missing)} items of the stored draw's frame are no longer in the study"
        sampled = self.sample(keys, rated)
        sizes = Counter(self.stratum_of.values())
        taken = Counter(self.stratum_of[int(k)] for k, s in zip(keys, sampled) if s)
        empty = sorted(h for h in sizes if taken[h] == 0)
        if empty:
            return {}, f"no rated item in stratum {empty[0]!r} of the stored draw"
        pi = {
            int(k): taken[self.stratum_of[int(k)]] / sizes[self.stratum_of[int(k)]] for k, s in zip(keys, sampled) if s
        }
        # Horvitz–Thompson's check: the weights 1/π of the sample add up to the frame's size
        if not math.isclose(sum(1 / p for p in pi.values()), len(self.stratum_of), rel_tol=1e-9):
            raise RuntimeError("stratified weights do not add up to the frame: a bug, not the data")
        return pi, None

"""How the estimates and the verdict settle as human ratings arrive: recompute them on the first n
rated items for each n of a list, and return the curve (for the report's convergence plots)."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from tui_rater.stats import alt_columns as ac
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import ppi

T = TypeVar("T")


@dataclass(frozen=True)
class PpiPoint:
    rated: int  # n: the first n items humans rated
    estimate: ppi.Interval  # prediction-powered
    classical: ppi.Interval  # human-only


@dataclass(frozen=True)
class AltTestPoint:
    rated: int
    winning_rate: float | None
    advantage_probability: float | None
    passed: bool | None
    note: str = ""


def default_sizes(total: int, points: int = 20, smallest: int = 10) -> list[int]:
    """About ``points`` sizes from ``smallest`` up to ``total`` (always included)."""
    if total <= 0:
        return []
    if total <= smallest:
        return [total]
    sizes = np.unique(np.linspace(smallest, total, num=min(points, total - smallest + 1)).round().astype(int))
    return [int(s) for s in sizes]


def curve(
    order: Sequence[Hashable], sizes: Sequence[int], compute: Callable[[set[Hashable]], T]
) -> list[tuple[int, T]]:
    """``compute(first n items of order)`` for each n in ``sizes`` (capped at len(order))."""
    out = []
    for n in sorted({min(max(int(s), 0), len(order)) for s in sizes}):
        out.append((n, compute(set(order[:n]))))
    return out


def _sizes(order: Sequence[Hashable], sizes: Sequence[int]) -> list[int]:
    return sorted({min(max(int(s), 0), len(order)) for s in sizes})


def ppi_convergence(
    judge: Mapping[Hashable, float],
    human: Mapping[Hashable, float],
    order: Sequence[Hashable],
    sizes: Sequence[int] | None = None,
    *,
    power_tuned: bool = False,
    confidence: float = 0.95,
) -> list[PpiPoint]:
    """The system mean as human ratings arrive: ``order`` lists the human-rated items in the order
    they were rated; the judge's ratings of every item are used at every point."""
    items = list(judge)
    judge_arr = np.array([judge[i] for i in items], dtype=float)
    # each item's place in ``order`` (inf: never in it) and its human rating, once: a prefix is then a mask
    # (the curve built a list over every item for each of its ~20 points)
    place = {item: at for at, item in reversed(list(enumerate(order)))}
    rank = np.array([place.get(i, math.inf) if i in human else math.inf for i in items], dtype=float)
    human_arr = np.array([human.get(i, math.nan) for i in items], dtype=float)
    return ppi_prefixes(judge_arr, human_arr, rank, len(order), sizes, power_tuned=power_tuned, confidence=confidence)


def ppi_prefixes(
    judge: npt.NDArray[np.float64],
    human: npt.NDArray[np.float64],
    rank: npt.NDArray[np.float64],
    length: int,
    sizes: Sequence[int] | None = None,
    *,
    power_tuned: bool = False,
    confidence: float = 0.95,
) -> list[PpiPoint]:
    """``ppi_convergence`` over arrays: the judge's and the humans' value of every item (NaN: none) and each
    item's place in the order the humans rated them (inf: not there), ``length`` items in that order."""
    points = []
    for n in sorted({min(max(int(s), 0), length) for s in sizes or default_sizes(length)}):
        shown = np.where(rank < n, human, math.nan)
        result = ppi.ppi_mean(judge, shown, power_tuned=power_tuned, confidence=confidence)
        points.append(PpiPoint(n, result.estimate, result.classical))
    return points


def alt_test_convergence(
    humans: Mapping[str, Mapping[Hashable, float]],
    judge: Mapping[Hashable, float],
    order: Sequence[Hashable],
    sizes: Sequence[int] | None = None,
    **options: Any,
) -> list[AltTestPoint]:
    """The alt-test verdict on the first n items of ``order`` (the items in the order humans rated
    them); ``options`` go to ``alt_test`` (level, epsilon, alpha, ...). Each item is scored once for the whole
    curve (``alt_test_on_subsets``), not once per point."""
    counts = _sizes(order, sizes or default_sizes(len(order)))
    results = at.alt_test_on_subsets(humans, judge, [set(order[:n]) for n in counts], **options)
    return [
        AltTestPoint(n, r.winning_rate, r.advantage_probability, r.passed, r.note)
        for n, r in zip(counts, results, strict=True)
    ]


def alt_test_prefixes(
    found: ac.Scored, rank: npt.NDArray[np.float64], length: int, sizes: Sequence[int], **options: Any
) -> list[AltTestPoint]:
    """``alt_test_convergence`` from the indicators scored once (``alt_columns.Scored``): ``rank``, each of its
    rows' place in the order the items were rated (inf: not there), ``length`` the order's length; the first n
    items are the rows of rank < n. ``options`` go to ``alternative_annotator.alt_test_scored``."""
    points = []
    for n in sorted({min(max(int(s), 0), length) for s in sizes}):
        r = at.alt_test_scored(found, within=rank < n, **options)
        points.append(AltTestPoint(n, r.winning_rate, r.advantage_probability, r.passed, r.note))
    return points

"""The people's own ceiling beside each judge figure (issue 33 item 2): the same figure for a held-out person
against the rest, so "τ = 0.23" reads against "people: 0.19–0.31".

Leave one person out (as the alternative annotator test does, Calderon et al. 2025): each person's rating of an
item is compared with the mean of the *other* persons' ratings of it, on the items the person and at least one
other rated, by the figure the judge is given (the judge is compared with the mean of all persons: one more
rater against the group). The spread over persons (lowest, median, highest) is how well a member of the group
represents it; a judge inside it is as good as a person by that figure.

Items are also split by how much the persons agree on them: the standard deviation of their ratings (items
with at least 2), ranked (ties by item order) and cut into equal thirds -- high agreement (the smallest
spread), middle, low. A judge that matches people only where they agree anyway shows it here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tui_rater.stats import agreement as ag
from tui_rater.stats import intervals as iv

Figure = Callable[[npt.ArrayLike, npt.ArrayLike], ag.Stat]
_POINT: dict[str, Figure] = {"kendall_tau": ag.kendall_tau, "spearman": ag.spearman, "pearson": ag.pearson}
_INTERVAL = {"kendall_tau": iv.kendall_tau, "spearman": iv.spearman, "pearson": iv.pearson}


def _with_interval(figure: str) -> Figure:
    def compute(x: npt.ArrayLike, y: npt.ArrayLike) -> ag.Stat:
        return iv.with_interval(_POINT[figure](x, y), lambda: _INTERVAL[figure](x, y))

    return compute


def _point_only(figure: str) -> Figure:
    def compute(x: npt.ArrayLike, y: npt.ArrayLike) -> ag.Stat:
        return iv.with_interval(_POINT[figure](x, y), iv.none(THIRDS_NO_INTERVAL))

    return compute


# each figure with its item-bootstrap interval (stats/intervals.py), as Table 2 gives the judge's
FIGURES: dict[str, Figure] = {name: _with_interval(name) for name in _POINT}
# on a third of the items: the point figure (the thirds are read against each other; a bootstrap of each
# person on each third was a second of the demo report's 2.5)
THIRDS_NO_INTERVAL = "no interval on a third of the items: the thirds are compared with each other"
POINT_FIGURES: dict[str, Figure] = {name: _point_only(name) for name in _POINT}
THIRDS = ("high", "middle", "low")  # agreement: the smallest spread of the persons' ratings first


@dataclass(frozen=True)
class Ceiling:
    """One figure for each held-out person against the rest, and its spread over persons."""

    figure: str
    persons: dict[str, ag.Stat] = field(default_factory=dict)
    low: float | None = None
    median: float | None = None
    high: float | None = None
    note: str = ""

    @property
    def counted(self) -> int:
        return sum(s.value is not None for s in self.persons.values())


def rest_mean(ratings: npt.NDArray[np.float64], person: int) -> npt.NDArray[np.float64]:
    """The mean of the other persons' ratings of each item (NaN where no other person rated it)."""
    others = np.delete(ratings, person, axis=0)
    counts = np.sum(~np.isnan(others), axis=0)
    total = np.nansum(others, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        found: npt.NDArray[np.float64] = np.where(counts > 0, total / counts, np.nan)
    return found


def leave_one_person_out(persons: Mapping[str, npt.ArrayLike], figure: str, *, intervals: bool = True) -> Ceiling:
    """``persons``: name -> rating of each item (aligned, NaN where not rated); ``intervals``: each person's
    figure with its item-bootstrap interval."""
    names = list(persons)
    if len(names) < 2:
        return Ceiling(figure, note="needs at least 2 persons (one held out, one to compare with)")
    ratings = np.vstack([np.asarray(persons[n], dtype=float) for n in names])
    compute = (FIGURES if intervals else POINT_FIGURES)[figure]
    stats = {name: compute(ratings[k], rest_mean(ratings, k)) for k, name in enumerate(names)}
    values = np.array([s.value for s in stats.values() if s.value is not None], dtype=float)
    if not values.size:
        return Ceiling(figure, stats, note="no person has a figure (too few shared items, or no variation)")
    return Ceiling(figure, stats, float(values.min()), float(np.median(values)), float(values.max()))


def agreement_thirds(persons: Mapping[str, npt.ArrayLike]) -> npt.NDArray[np.str_]:
    """Each item's third by the persons' agreement on it ("high", "middle", "low"; "" for items fewer than 2
    persons rated)."""
    ratings = np.vstack([np.asarray(v, dtype=float) for v in persons.values()]) if persons else np.zeros((0, 0))
    out = np.full(ratings.shape[1] if ratings.ndim == 2 else 0, "", dtype=object)
    if not ratings.size:
        return out.astype(str)
    rated = np.sum(~np.isnan(ratings), axis=0) >= 2
    spread = np.full(ratings.shape[1], np.nan)
    spread[rated] = np.nanstd(ratings[:, rated], axis=0)
    ranked = np.nonzero(rated)[0][np.argsort(spread[rated], kind="stable")]
    for name, part in zip(THIRDS, np.array_split(ranked, 3)):
        out[part] = name
    return out.astype(str)

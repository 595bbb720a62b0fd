"""The alternative annotator test's per-item indicators over columns (issue 35 item 2).

W^f and W^h (Calderon, Reichart & Dror 2025; ``alternative_annotator``) of an item and a left-out person depend on
that item's ratings alone. They are scored here once per judge and question, from the items x people matrix
(NaN: not rated) and the judge's column, and everything else reads them: the fixed-n test and its rank
(``alternative_annotator.alt_test_scored``), the test on a prefix of the items (the convergence curve: a mask over
the rows, never a new scoring), the item bootstrap (``alt_intervals.per_item_of``) and the anytime-valid test
(``sequential.anytime_curve_of``: the same indicators in the order the ratings came). The report builds the
matrix from its own columns (``sections/alt_data.py``); the dict-of-dicts API builds it here (``from_dicts``).

The scores are those of ``alternative_annotator.accuracy`` / ``neg_rmse`` to the last bit where it matters: the
sums are of squared differences of ratings (exact for ratings on a scale's points), each row's in the people's
column order, and the comparison keeps ``_better_or_equal``'s tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from itertools import chain, repeat

import numpy as np
import numpy.typing as npt

Floats = npt.NDArray[np.float64]
Rows = npt.NDArray[np.intp]


@dataclass(frozen=True)
class Scored:
    """One judge against the people on one question: the test's items (rated by the judge and by at least two
    people), in the order of the rows given, and per person (``humans``, in column order) the rows of the items
    they rated (ascending) with W^f and W^h there."""

    keys: list[Hashable]  # the test's items, one per row
    positions: Rows  # each row's position in the matrix it was scored from (the report: in ``data.keys(ALL)``)
    humans: list[str]
    rows: list[Rows]
    w_judge: list[Floats]
    w_human: list[Floats]

    def within(self, mask: npt.NDArray[np.bool_]) -> list[tuple[Floats, Floats]]:
        """Each person's (W^f, W^h) on the rows where ``mask`` (one bool per row) holds, in row order."""
        return [(wf[mask[rows]], wh[mask[rows]]) for rows, wf, wh in zip(self.rows, self.w_judge, self.w_human)]


def scored(
    keys: Sequence[Hashable] | npt.NDArray[np.int64],
    names: Sequence[str],
    matrix: Floats,
    judge: Floats,
    scoring: str,
    min_humans_per_item: int = 2,
) -> Scored:
    """``matrix``: items x people (NaN: not rated), ``judge``: the judge's value of each item (NaN: none);
    ``scoring``: "accuracy" or "neg_rmse"."""
    present = ~np.isnan(matrix)
    used = np.flatnonzero(~np.isnan(judge) & (present.sum(axis=1) >= max(2, min_humans_per_item)))
    m, judged, shown = matrix[used], judge[used], present[used]
    rows, w_judge, w_human = [], [], []
    for column in range(len(names)):
        mine = np.flatnonzero(shown[:, column])
        others = np.delete(m[mine], column, axis=1)
        human_scores = _scores(scoring, m[mine, column], others)
        judge_scores = _scores(scoring, judged[mine], others)
        rows.append(mine)
        w_judge.append(_at_least(judge_scores, human_scores).astype(float))
        w_human.append(_at_least(human_scores, judge_scores).astype(float))
    found_keys = np.asarray(keys)[used].tolist() if isinstance(keys, np.ndarray) else [keys[i] for i in used.tolist()]
    return Scored(found_keys, used, list(names), rows, w_judge, w_human)


def from_dicts(
    humans: Mapping[str, Mapping[Hashable, float | None]],
    judge: Mapping[Hashable, float | None],
    scoring: str,
    min_humans_per_item: int = 2,
) -> Scored:
    """The same from person -> item -> rating and item -> the judge's value (None or NaN: no rating); the rows are
    the items sorted (as the report's keys are: each person's W's in the order of their items), or in the order
    they first appear among the people's ratings where the keys do not compare."""
    order = list(dict.fromkeys(chain.from_iterable(humans.values())))
    with suppress(TypeError):  # keys of several types: the order they came in
        order = sorted(order)  # type: ignore[type-var]  # Hashable keys: sorted where they compare (ints, strs)
    row = {item: at for at, item in enumerate(order)}
    matrix = np.full((len(order), len(humans)), np.nan)
    # each person's items placed by ``map`` over the dicts (C loops, not a comprehension per rating)
    for column, ratings in enumerate(humans.values()):
        at = np.fromiter(map(row.__getitem__, ratings), dtype=np.intp, count=len(ratings))
        matrix[at, column] = np.array([_value(v) for v in ratings.values()], dtype=float)
    judged = np.array([_value(judge.get(item)) for item in order], dtype=float)
    return scored(order, list(humans), matrix, judged, scoring, min_humans_per_item)


def _value(value: float | None) -> float:
    # a missing rating (None, NaN: a judge failure) is no rating, never a comparison with NaN
    return math.nan if value is None else float(value)


def _scores(scoring: str, ratings: Floats, others: Floats) -> Floats:
    """``accuracy`` / ``neg_rmse`` of each row's rating against the row's others (NaN: no rating)."""
    present = ~np.isnan(others)
    count = present.sum(axis=1)
    if scoring == "accuracy":
        agreeing: Floats = (others == ratings[:, None]).sum(axis=1) / count
        return agreeing
    squared = np.where(present, others - ratings[:, None], 0.0) ** 2
    scores: Floats = -np.sqrt(squared.sum(axis=1) / count)
    return scores


def _at_least(a: Floats, b: Floats) -> npt.NDArray[np.bool_]:
    """``alternative_annotator._better_or_equal`` over arrays: the paper's >= with a relative tolerance."""
    found: npt.NDArray[np.bool_] = a >= b - 1e-12 * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return found


def ranks(keys: Sequence[Hashable], order: Sequence[Hashable]) -> Floats:
    """Each key's position in ``order`` (its first), inf where it is not there: the first n items of ``order`` are
    then the rows where ``ranks < n``."""
    place = {item: at for at, item in reversed(list(enumerate(order)))}
    return np.fromiter(map(place.get, keys, repeat(math.inf)), dtype=float, count=len(keys))

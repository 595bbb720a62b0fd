"""The live pane's first look from columns (issue 35 items 1 and 2): each question's evaluators as annotators x items
matrices, made from the stored ratings read as arrays of numbers (``store/pane_columns.py``), for the running sums'
build (``live_sums.LiveSums.build``).

These are the matrices the report's ``ReportData._full_matrix`` makes from its frame (``store/rating_columns.py``:
``ratings_in_force``) -- the same ratings in force, the same annotators in the same order (a person by name; a
judge's sample of each presentation as "presentation/sample", sorted as ``np.unique`` sorts them), the same cells --
but chosen over integer codes in numpy: no Python object per rating and no polars frame (the frame's sort and
filters were 4 s of the first look at 100k items).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from tui_rater.stats.records import HUMANS
from tui_rater.store import pane_columns
from tui_rater.store.study import Study

Matrix = tuple[np.ndarray, np.ndarray]  # (annotators x items, NaN where unrated; each annotator's presentation)


def _groups(found: pane_columns.StoredRatings) -> np.ndarray:
    """One integer per (item, question, rater, presentation, sample): the group whose newest rating is in force."""
    columns = [found.item_key, found.attribute + 1, found.rater_id, found.presentation, found.sample]
    lowest = [int(c.min()) for c in columns]
    shifted = [c - low for c, low in zip(columns, lowest)]
    sizes = [int(c.max()) + 1 for c in shifted]
    if float(np.prod(np.array(sizes, dtype=np.float64))) < 2.0**62:
        return np.ravel_multi_index(shifted, sizes)
    # (too many combinations for one integer: numbered by sorting them)
    order = np.lexsort(shifted[::-1])
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = np.any([c[order][1:] != c[order][:-1] for c in shifted], axis=0)
    group = np.empty(len(order), dtype=np.int64)
    group[order] = np.cumsum(starts) - 1
    return group


def _in_force(found: pane_columns.StoredRatings) -> np.ndarray:
    """The positions of the ratings in force: the newest (the last, by id) of each group."""
    if not len(found.rating_id):
        return np.array([], dtype=np.int64)
    group = _groups(found)
    order = np.argsort(group, kind="stable")  # by group, then by id (the rows are by id)
    ordered = group[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = ordered[1:] != ordered[:-1]
    return np.sort(order[last])


def read_matrices(
    study: Study, task: str, attributes: list[str], keys: np.ndarray, only: bool = False
) -> tuple[list[str], list[dict[str, Matrix]]]:
    """(the evaluators: the humans where any person rated, then each judge by label -- ``ReportData.evaluators``;
    per question of ``attributes``, evaluator -> its matrix over ``keys``, the task's sorted item keys): from the
    ratings in force with a value of the task's people and judges, gold items left out, a person's only under
    sample 0 (``rating_columns.ratings_in_force``'s rows). ``only``: ``keys`` are a few of the task's items (an
    update), and only their ratings are read."""
    found = pane_columns.stored_ratings(study, attributes, keys.tolist() if only else None)
    rows = _in_force(found)
    raters = pane_columns.raters(study)
    top = max([found.rater_id.max(initial=0), *(r[0] for r in raters)]) + 1
    kind = np.zeros(top, dtype=np.int8)  # 0: neither, 1: a person, 2: a judge
    for rater_id, _, rater_kind in raters:
        kind[rater_id] = {"human": 1, "llm": 2}.get(rater_kind, 0)
    label = {rater_id: rater_label for rater_id, rater_label, _ in raters}
    of = kind[found.rater_id[rows]]
    kept = (of > 0) & ((found.sample[rows] == 0) | (of != 1)) & (found.attribute[rows] >= 0)
    kept &= ~np.isnan(found.value[rows])
    item = found.item_key[rows]
    position = np.searchsorted(keys, item)
    inside = position < len(keys)
    inside[inside] = keys[position[inside]] == item[inside]  # the task's items only
    kept &= inside & ~np.isin(item, pane_columns.gold_item_keys(study))
    rows, position, of = rows[kept], position[kept], of[kept]
    rater_ids = found.rater_id[rows]
    judge_ids = {label[r]: r for r in np.unique(rater_ids[of == 2]).tolist()}
    judges = sorted(judge_ids)
    evaluators = ([HUMANS] if np.any(of == 1) else []) + judges
    matrices: list[dict[str, Matrix]] = []
    for index in range(len(attributes)):
        mine = found.attribute[rows] == index
        question: dict[str, Matrix] = {}
        people = mine & (of == 1)
        if people.any():
            who = rater_ids[people]

            def people_names(ids: list[int]) -> list[str]:
                return [label[r] for r in ids]

            question[HUMANS] = _matrix(who, people_names, position[people], len(keys), found, rows[people])
        for judge in judges:
            theirs = mine & (rater_ids == judge_ids[judge])
            if not theirs.any():
                continue
            # a judge's annotators are its samples of each presentation of the item (Chiang & Lee §3.2)
            sample = found.sample[rows[theirs]]
            low, high = int(sample.min()), int(sample.max())
            who = found.presentation[rows[theirs]] * (high - low + 1) + (sample - low)

            def names(pairs: list[int], low: int = low, high: int = high) -> list[str]:
                return [f"{found.presentations[p // (high - low + 1)]}/{p % (high - low + 1) + low}" for p in pairs]

            question[judge] = _matrix(who, names, position[theirs], len(keys), found, rows[theirs], presentations=True)
        matrices.append(question)
    return evaluators, matrices


def _matrix(
    who: np.ndarray,
    names: Callable[[list[int]], list[str]],
    position: np.ndarray,
    width: int,
    found: pane_columns.StoredRatings,
    rows: np.ndarray,
    presentations: bool = False,
) -> Matrix:
    """An evaluator's matrix: its annotators (``who``: a code per rating; ``names``: their names) by name, x items."""
    distinct, index = np.unique(who, return_inverse=True)
    named = names(distinct.tolist())
    rank = np.empty(len(named), dtype=np.int64)
    rank[np.argsort(np.array(named, dtype=object), kind="stable")] = np.arange(len(named))
    m = np.full((len(named), width), np.nan)
    m[rank[index], position] = found.value[rows]  # one rating in force per cell
    ordered = sorted(named)
    shown = np.array([name.split("/")[0] if presentations else "" for name in ordered], dtype=object)
    return m, shown

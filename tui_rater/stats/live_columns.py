"""The live pane's first look from columns (issue 35 item 2): each question's evaluators as annotators x items
matrices, made from the ratings in force read as columns (``store/rating_columns.py``), for the running sums'
build (``live_sums.LiveSums.build``).

These are the matrices the report's ``ReportData._full_matrix`` makes -- the same annotators in the same order
(a person by name; a judge's sample of each presentation as "presentation/sample", sorted as ``np.unique`` sorts
them), the same cells, the later rating of a cell written last -- but with one pass over each question's rows
and the annotators' names looked up among the few distinct ones, not sorted row by row (``np.unique`` over
1.6 M Python strings was a third of the first look at 100k items).
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tui_rater.stats.records import HUMANS

Matrix = tuple[np.ndarray, np.ndarray]  # (annotators x items, NaN where unrated; each annotator's presentation)


def evaluators(frame: pl.DataFrame) -> list[str]:
    """The humans (as one evaluator) where any person rated, then each judge by label: ``ReportData.evaluators``."""
    humans = frame.filter(pl.col("kind") == "human").height > 0
    judges = sorted(frame.filter(pl.col("kind") == "llm")["rater"].unique().to_list())
    return ([HUMANS] if humans else []) + judges


def _matrix(rows: pl.DataFrame, who: pl.Series, keys: np.ndarray, presentations: bool) -> Matrix:
    names = sorted(who.unique().to_list())
    index = who.replace_strict(names, list(range(len(names))), return_dtype=pl.Int64).to_numpy()
    position = np.searchsorted(keys, rows["item_key"].to_numpy())
    m = np.full((len(names), len(keys)), np.nan)
    m[index, position] = rows["value"].to_numpy()  # in the rows' order: a cell's later rating is written last
    shown = np.array([name.split("/")[0] if presentations else "" for name in names], dtype=object)
    return m, shown


def question_matrices(rows: pl.DataFrame, keys: np.ndarray) -> dict[str, Matrix]:
    """Evaluator -> its matrix over ``keys`` (sorted item keys: every item ``rows`` rates is among them), from one
    question's ratings in force with a value (the report frame's columns, in its order)."""
    found = {}
    people = rows.filter(pl.col("kind") == "human")
    if people.height:
        found[HUMANS] = _matrix(people, people["rater"], keys, presentations=False)
    judged = rows.filter(pl.col("kind") == "llm")
    for judge in sorted(judged["rater"].unique().to_list()):
        mine = judged.filter(pl.col("rater") == judge)
        # a judge's annotators are its samples of each presentation of the item (Chiang & Lee §3.2)
        who = mine["presentation"] + "/" + mine["sample"].cast(pl.Utf8)
        found[judge] = _matrix(mine, who, keys, presentations=True)
    return found

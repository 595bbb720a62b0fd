"""The live pane's first look as arrays of numbers (issue 35 item 1: the first numbers within 2 s at 100k items).

The running sums' build needs, of each stored rating not undone and not a retest, its item, question, rater,
presentation, sample and value. Read as rows, 1.6M ratings are 11M Python objects: fetching them and making
columns of them was most of the first look (5.8 s of 9 at 100k items, load ≈ 1). Here SQLite writes each column as
one text of numbers (``group_concat``, inside one statement, without the interpreter's lock) and numpy parses it:
the same scan, a few objects in all.

Exact to the bit: a value is sent as the integer 1024 × value where that is one (a rating, a half, a quarter:
multiplying and dividing a float by a power of two is exact, and an integer that is a float converts back to it
exactly); every other value (0.1, a probability) is read as itself by a second query, and only when there is one (a
study of ratings on a scale and their means over 2 or 4 samples has none). SQLite's own text of a float is not
exact (``%!.15g``). A question is sent as its index among the task's questions (-1: another question), a
presentation as its text (in hexadecimal where one holds the separator), a NULL value as a mark no float can be.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from tui_rater.store.study import Study
from tui_rater.store.team import has_team_tables

NO_VALUE = 2**60 + 1  # the mark of a NULL value (a reply that did not parse): odd above 2^53, so no float's integer
_SCALE = 1024  # a value is sent as this multiple of it, where that is a whole number
_SEPARATOR = "\x00"
_RANGE = 2_000_000  # ids read by one statement: its texts ≈ 10 bytes a number, a column
_ITEMS = 5_000  # items read by one statement (an update's: the few rated since the last look)

_RATINGS = "FROM ratings WHERE retracted = 0 AND retest_of IS NULL"
_SCALED = f"value * {_SCALE}"
_NOT_WHOLE = f"{_SCALED} != CAST({_SCALED} AS INTEGER)"  # (too large for an integer: CAST gives 2^63 - 1, not it)


@dataclass
class StoredRatings:
    """The stored ratings not undone and not retests (any task's), by id: one array per column."""

    rating_id: np.ndarray
    item_key: np.ndarray
    rater_id: np.ndarray
    sample: np.ndarray
    attribute: np.ndarray  # the index of the question among those asked for; -1: another question
    presentation: np.ndarray  # the index of the presentation in ``presentations``
    presentations: list[str]
    value: np.ndarray  # float64; NaN: no value (NULL)


# one statement's read: (id, item, rater, sample, question; the distinct presentations, each rating's index among
# them; the values)
_Part = tuple[list[np.ndarray], list[str], np.ndarray, np.ndarray]


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _numbers(text: str | None, n: int) -> np.ndarray:
    found = np.array([], dtype=np.int64) if not text else np.fromstring(text, dtype=np.int64, sep=",")
    if found.size != n:  # (never: each column has one number per rating)
        raise RuntimeError(f"read {found.size} numbers of {n} ratings")
    return found


def stored_ratings(study: Study, attributes: list[str], item_keys: Iterable[int] | None = None) -> StoredRatings:
    """Every stored rating not undone and not a retest, ``attributes`` numbered in that order; read ``_RANGE`` ids at a
    time, so that the texts SQLite writes stay a few tens of MB whatever the study's size. ``item_keys``: those of
    these items only (the running sums' update after a few ratings: each item read by its index)."""
    question = "CASE attribute " + " ".join(f"WHEN {_literal(a)} THEN {i}" for i, a in enumerate(attributes))
    question += " ELSE -1 END"
    conn = study._db.conn
    if item_keys is not None:
        keys = sorted({int(key) for key in item_keys})  # (integers: written into the statement as such)
        chunks = [keys[start : start + _ITEMS] for start in range(0, len(keys), _ITEMS)]
        wheres = [f"{_RATINGS} AND item_key IN ({','.join(map(str, chunk))})" for chunk in chunks]
    else:
        low, high = conn.execute("SELECT min(id), max(id) FROM ratings").fetchone()
        starts = [] if low is None else range(low, high + 1, _RANGE)
        wheres = [f"{_RATINGS} AND id >= {int(start)} AND id < {int(start + _RANGE)}" for start in starts]
    parts = [part for part in (_read(conn, question, within) for within in wheres) if len(part[0][0])]
    presentations = sorted({text for part in parts for text in part[1]})
    code = {text: i for i, text in enumerate(presentations)}
    columns = [
        np.concatenate([part[0][c] for part in parts]) if parts else np.array([], dtype=np.int64) for c in range(5)
    ]
    shown = [np.array([code[text] for text in part[1]], dtype=np.int64)[part[2]] for part in parts]
    value = np.concatenate([part[3] for part in parts]) if parts else np.array([], dtype=np.float64)
    found = StoredRatings(
        columns[0],
        columns[1],
        columns[2],
        columns[3],
        columns[4],
        np.concatenate(shown) if parts else np.array([], dtype=np.int64),
        presentations,
        value,
    )
    if found.rating_id.size and np.any(np.diff(found.rating_id) <= 0):  # (SQLite scans by id: never, in practice)
        by_id = np.argsort(found.rating_id, kind="stable")
        for name in ("rating_id", "item_key", "rater_id", "sample", "attribute", "presentation", "value"):
            setattr(found, name, getattr(found, name)[by_id])
    return found


def _read(conn: sqlite3.Connection, question: str, within: str) -> _Part:
    """The ratings ``within`` (FROM ... WHERE ...): (id, item, rater, sample, question; the distinct presentations,
    each rating's index among them; the values)."""
    n, ids, keys, raters, samples, questions, values, not_whole, shown = conn.execute(
        f"""SELECT count(*), group_concat(id), group_concat(item_key), group_concat(rater_id), group_concat(sample),
                   group_concat({question}), group_concat(ifnull(CAST({_SCALED} AS INTEGER), {NO_VALUE})),
                   total({_NOT_WHOLE}), group_concat(presentation, char(0)) {within}"""
    ).fetchone()
    rating_id = _numbers(ids, n)
    value = _numbers(values, n)
    missing = value == NO_VALUE
    value = value.astype(np.float64) / _SCALE
    if not_whole:
        exact = conn.execute(f"SELECT id, value {within} AND {_NOT_WHOLE}").fetchall()
        exact_ids = np.array([rating_id for rating_id, _ in exact], dtype=np.int64)
        order = np.argsort(rating_id)
        at = order[np.searchsorted(rating_id, exact_ids, sorter=order)]
        value[at] = np.array([float(v) for _, v in exact], dtype=np.float64)
        missing[at] = False
    value[missing] = np.nan
    texts = shown.split(_SEPARATOR) if n else []
    if len(texts) != n:  # a presentation with the separator in it: each in hexadecimal, which has none
        (shown,) = conn.execute(f"SELECT group_concat(hex(presentation)) {within}").fetchone()
        texts = [bytes.fromhex(h).decode() for h in shown.split(",")]
    distinct = sorted(set(texts))
    code = {text: i for i, text in enumerate(distinct)}
    presentation = np.fromiter(map(code.__getitem__, texts), dtype=np.int64, count=len(texts))
    numbers = [rating_id, _numbers(keys, n), _numbers(raters, n), _numbers(samples, n), _numbers(questions, n)]
    return numbers, distinct, presentation, value


def task_item_keys(study: Study, task: str) -> np.ndarray:
    """The task's item keys, sorted."""
    (text,) = study._db.conn.execute(
        "SELECT group_concat(key) FROM (SELECT key FROM items WHERE task = ? ORDER BY key)", [task]
    ).fetchone()
    return np.array([], dtype=np.int64) if not text else np.fromstring(text, dtype=np.int64, sep=",")


def raters(study: Study) -> list[tuple[int, str, str]]:
    """(id, label, kind) of every rater."""
    return [(int(i), label, kind) for i, label, kind in study._db.conn.execute("SELECT id, label, kind FROM raters")]


def gold_item_keys(study: Study) -> np.ndarray:
    """The keys of the gold items (left out of every figure)."""
    if not has_team_tables(study):
        return np.array([], dtype=np.int64)
    keys = [key for (key,) in study._db.conn.execute("SELECT DISTINCT item_key FROM gold")]
    return np.array(sorted(keys), dtype=np.int64)

"""The reads behind the live agreement pane's running sums (issue 35 item 1): what changed since the pane last
looked, and the ratings in force of the items it changed on -- so an update reads the new ratings, never the study.

Every statement filters as ``readings.task_rating_batches`` does (the people's and the judges' ratings, gold items
left out, a person's rating only under sample 0, retests apart), so the sums agree with the report's frame."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tui_rater.store import ratings
from tui_rater.store.readings import NOT_GOLD
from tui_rater.store.study import Study
from tui_rater.store.team import has_team_tables

_IN_SCOPE = (
    "r.retest_of IS NULL AND ra.kind IN ('human', 'llm') AND (r.sample = 0 OR ra.kind != 'human') AND i.task = ?"
)


def newest_rating_id(study: Study) -> int:
    """The highest rating id stored (0: none): a later look reads only the ratings above it."""
    (found,) = study._db.conn.execute("SELECT max(id) FROM ratings").fetchone()
    return int(found or 0)


def newest_change(study: Study) -> int:
    """The newest rating change recorded (a rating rewritten in place or voided, ``store/ratings.py``; 0: none)."""
    return ratings.newest_change(study._db.conn)


def changes_since(study: Study, task: str, after: int) -> list[tuple[int, int, int, str]]:
    """(change id, rating id, item key, kind) of the task's rating changes after ``after``: their items are read
    again (a voided rating's id, gone, may also be reused by the next rating stored)."""
    return ratings.changes_since(study._db.conn, task, after)


def items_rated_since(study: Study, task: str, after_id: int) -> list[int]:
    """The keys of the task's items with a rating stored after ``after_id`` (a new rating or a changed mind: the
    newest row of a key is the one in force), sorted. It reads only those rows, by the ratings' primary key
    (``CROSS JOIN`` keeps SQLite from starting at the task's items and reading every rating of theirs)."""
    not_gold = NOT_GOLD if has_team_tables(study) else ""
    rows = study._db.conn.execute(
        f"""SELECT r.item_key FROM ratings r CROSS JOIN items i ON i.key = r.item_key
            CROSS JOIN raters ra ON ra.id = r.rater_id WHERE r.id > ? AND r.retracted = 0 AND {_IN_SCOPE}{not_gold}""",
        [after_id, task],
    )
    return sorted({int(key) for (key,) in rows})


def retracted_ratings(study: Study, task: str) -> list[tuple[int, int]]:
    """(rating id, item key) of every retracted rating of the task (an undo): an undo changes no id, so the pane
    tells a new one by its id (the undos of a study are few: one per key pressed)."""
    rows = study._db.conn.execute(
        "SELECT r.id, r.item_key FROM ratings r CROSS JOIN items i ON i.key = r.item_key WHERE r.retracted = 1 "
        "AND i.task = ?",
        [task],
    )
    return [(int(rating_id), int(key)) for rating_id, key in rows]


def item_ratings_in_force(study: Study, task: str, item_keys: Iterable[int]) -> list[tuple[Any, ...]]:
    """(item key, system, attribute, rater label, rater kind, presentation, sample, value, rating id) of the
    ratings in force with a value of these items -- the report frame's columns (``task_rating_batches``), for a few
    items: each is read by its index."""
    keys = sorted(set(item_keys))
    not_gold = NOT_GOLD if has_team_tables(study) else ""
    found: list[tuple[Any, ...]] = []
    for start in range(0, len(keys), 500):  # SQLite's bound parameters: a few hundred at a time
        chunk = keys[start : start + 500]
        marks = ",".join("?" * len(chunk))
        found += study._db.conn.execute(
            f"""SELECT r.item_key, coalesce(i.system, '-'), r.attribute, ra.label, ra.kind, r.presentation, r.sample,
                       r.value, r.id
                FROM (SELECT max(id) AS id FROM ratings WHERE item_key IN ({marks}) AND retracted = 0
                             AND retest_of IS NULL
                      GROUP BY item_key, attribute, rater_id, presentation, sample) latest
                CROSS JOIN ratings r ON r.id = latest.id
                CROSS JOIN items i ON i.key = r.item_key CROSS JOIN raters ra ON ra.id = r.rater_id
                WHERE r.value IS NOT NULL AND {_IN_SCOPE}{not_gold}""",
            [*chunk, task],
        ).fetchall()
    return found


def raters_and_jobs(study: Study) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """(a marker of the raters: changes when one is added, forgotten or renamed; a marker of the judge queue)."""
    raters = study._db.conn.execute("SELECT count(*), max(id), group_concat(label, char(10)) FROM raters").fetchone()
    jobs = study._db.conn.execute("SELECT count(*), max(updated_at) FROM jobs").fetchone()
    return tuple(raters), tuple(jobs)

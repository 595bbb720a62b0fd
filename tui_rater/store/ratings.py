"""The one statement that adds ratings: a person's (``Study.add_rating``) and a judge's (``store.jobs.complete``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tui_rater.store.db import utc_now


@dataclass(frozen=True)
class NewRating:
    item_key: int
    attribute: str
    rater_id: int
    value: float | None
    created_at: str
    sample: int = 0
    presentation: str = ""
    raw: str | None = None
    parse_status: str = "ok"
    seconds: float | None = None
    revises: int | None = None
    details: dict[str, Any] | None = None
    retest_of: int | None = None
    job_id: int | None = None  # the judge job that produced it


_INSERT = (
    "INSERT INTO ratings (item_key, attribute, rater_id, presentation, sample, value, raw, parse_status, seconds, "
    "created_at, revises, details, retest_of, job_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def _row(r: NewRating, dumped: dict[int, str]) -> tuple[Any, ...]:
    details = None
    if r.details:  # an import hands every row the same dict: written out once (json.dumps was 9 % of its time)
        details = dumped.get(id(r.details))
        if details is None:
            details = dumped[id(r.details)] = json.dumps(r.details)
    return (r.item_key, r.attribute, r.rater_id, r.presentation, r.sample, r.value, r.raw, r.parse_status,
            r.seconds, r.created_at, r.revises, details, r.retest_of, r.job_id)  # fmt: skip


def insert_imported(
    conn: sqlite3.Connection, rows: Sequence[tuple[int, str, int, int, float]], created_at: str, details: dict[str, Any]
) -> None:
    """Ratings read from a file, (item key, question, rater id, sample, value) each, with one time and one source:
    the rows ``insert_ratings`` writes for them, made without a ``NewRating`` each (a frozen dataclass of 14 fields
    was ~2 µs of every one of an import's 1.6M rows at 100k items)."""
    dumped = json.dumps(details)
    conn.executemany(
        _INSERT,
        [(k, a, r, "", s, v, None, "imported", None, created_at, None, dumped, None, None) for k, a, r, s, v in rows],
    )


def insert_ratings(conn: sqlite3.Connection, ratings: Sequence[NewRating]) -> int | None:
    """Add the ratings inside the caller's write transaction; the id of the last one (None when there are none)."""
    dumped: dict[int, str] = {}  # id(details) -> its JSON, for this call (the ratings keep their dicts alive)
    if len(ratings) == 1:
        return conn.execute(_INSERT, _row(ratings[0], dumped)).lastrowid
    conn.executemany(_INSERT, [_row(r, dumped) for r in ratings])
    return None


# --- ratings changed in place (schema 15) ---------------------------------------------------------------------------
# ``reparse`` rewrites a judge's value and a voided batch job's ratings are deleted: no new id, no undo. Each such
# rating gets a row in ``rating_changes`` (in the same transaction), so whatever tells a change by ids -- the live
# pane's running sums, the full computation's change marker -- sees it.


def record_changes(conn: sqlite3.Connection, rating_ids: Sequence[int], kind: str) -> None:
    """Record these ratings (still in the table: their item is read from it) as changed, ``kind`` 'reparsed' or
    'voided'; call it before a voided rating's row is deleted."""
    now = utc_now()
    for start in range(0, len(rating_ids), 500):  # SQLite's bound parameters: a few hundred at a time
        chunk = list(rating_ids[start : start + 500])
        marks = ",".join("?" * len(chunk))
        conn.execute(
            "INSERT INTO rating_changes (rating_id, item_key, kind, changed_at) "
            f"SELECT id, item_key, ?, ? FROM ratings WHERE id IN ({marks}) ORDER BY id",
            [kind, now, *chunk],
        )


def has_change_records(conn: sqlite3.Connection) -> bool:
    """False for a read-only file of a schema before 15 (it is read, never migrated: nothing is rewritten in it)."""
    found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'rating_changes'").fetchone()
    return found is not None


def newest_change(conn: sqlite3.Connection) -> int:
    """The id of the newest change recorded (0: none, or a file before schema 15)."""
    if not has_change_records(conn):
        return 0
    (found,) = conn.execute("SELECT max(id) FROM rating_changes").fetchone()
    return int(found or 0)


def changes_since(conn: sqlite3.Connection, task: str, after: int) -> list[tuple[int, int, int, str]]:
    """(change id, rating id, item key, kind) of the task's changes recorded after ``after``, oldest first."""
    if not has_change_records(conn):
        return []
    rows = conn.execute(
        "SELECT c.id, c.rating_id, c.item_key, c.kind FROM rating_changes c CROSS JOIN items i ON i.key = c.item_key "
        "WHERE c.id > ? AND i.task = ? ORDER BY c.id",
        [after, task],
    )
    return [(int(a), int(b), int(c), str(d)) for a, b, c, d in rows]

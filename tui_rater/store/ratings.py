"""The one statement that adds ratings: a person's (``Study.add_rating``) and a judge's (``store.jobs.complete``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


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


def _row(r: NewRating) -> tuple[Any, ...]:
    details = json.dumps(r.details) if r.details else None
    return (r.item_key, r.attribute, r.rater_id, r.presentation, r.sample, r.value, r.raw, r.parse_status,
            r.seconds, r.created_at, r.revises, details, r.retest_of, r.job_id)  # fmt: skip


def insert_ratings(conn: sqlite3.Connection, ratings: Sequence[NewRating]) -> int | None:
    """Add the ratings inside the caller's write transaction; the id of the last one (None when there are none)."""
    if len(ratings) == 1:
        return conn.execute(_INSERT, _row(ratings[0])).lastrowid
    conn.executemany(_INSERT, [_row(r) for r in ratings])
    return None

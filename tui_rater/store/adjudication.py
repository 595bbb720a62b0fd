"""Adjudication in the file: who rated what, the notes people left on an item, and the decided values.

An adjudicator's decision is a rating of its own rater kind ('adjudicator', ``Study.adjudicator``): the
raters' ratings stay as they were, and the report's statistics never count it as a person's rating
(``stats/sections/data.py`` loads humans and judges only). The latest decision per (item, question) is the
one in force, as for any rating; ``report --reference adjudicated`` reads them through ``adjudicated_values``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TypeVar

from tui_rater.domain.values import ItemNote, Rater, Voice
from tui_rater.store.session import commit_in_place
from tui_rater.store.study import RATINGS_IN_FORCE, Study, ratings_in_force

T = TypeVar("T")

ADJUDICATED = "adjudicated"  # the parse status of a decision (a person typed it, as 'human')


def voices(study: Study, task: str, kinds: tuple[str, ...] = ("human", "llm")) -> list[Voice]:
    """Every rating in force of the task's items by raters of these kinds, in item order."""
    marks = ",".join("?" * len(kinds))
    rows = study._db.conn.execute(
        f"""SELECT r.item_key, r.attribute, ra.label, ra.kind, r.presentation, r.sample, r.value, r.raw
            FROM {RATINGS_IN_FORCE} WHERE i.task = ? AND ra.kind IN ({marks})
            ORDER BY i.position, r.attribute, ra.kind, ra.label, r.presentation, r.sample""",
        [task, *kinds],
    ).fetchall()
    return [Voice(*row) for row in rows]


def item_voices(study: Study, item_key: int) -> list[Voice]:
    """Every rating in force of one item, every rater kind (what the adjudicator sees)."""
    rows = study._db.conn.execute(
        f"""SELECT r.item_key, r.attribute, ra.label, ra.kind, r.presentation, r.sample, r.value, r.raw
            FROM {ratings_in_force(True)} ORDER BY r.attribute, ra.kind, ra.label, r.presentation, r.sample""",
        [item_key],
    ).fetchall()
    return [Voice(*row) for row in rows]


def item_notes(study: Study, item_key: int) -> list[ItemNote]:
    """The notes in force on one item, oldest first: flags not taken back, the latest edit of each comment."""
    rows = study._db.conn.execute(
        """SELECT ra.label, n.kind, n.attribute, n.text, n.created_at FROM notes n JOIN raters ra ON ra.id = n.rater_id
           WHERE n.item_key = ? AND n.retracted_at IS NULL ORDER BY n.id""",
        [item_key],
    ).fetchall()
    return [
        ItemNote(label, kind, attribute, note_text(kind, text), created)
        for label, kind, attribute, text, created in rows
    ]


def review_parts(text: str | None) -> tuple[str, str]:
    """A reveal review's (verdict, comment), stored as JSON (``AnnotationSession.review``)."""
    try:
        review = json.loads(text or "")
    except ValueError:
        return "", text or ""
    if not isinstance(review, dict):
        return "", text or ""
    return str(review.get("verdict", "")), str(review.get("comment", ""))


def note_text(kind: str, text: str | None) -> str:
    """A note's words: a review's verdict and comment, a comment as typed, else ''."""
    if kind == "review":
        verdict, comment = review_parts(text)
        return f"{verdict}: {comment}" if comment else verdict
    if kind in ("flag", "skip"):
        return ""  # (a flag or skip of a retest showing holds RETEST_NOTE: a mark, not words)
    return text or ""


def adjudicated_values(study: Study, task: str) -> dict[str, dict[int, float]]:
    """attribute -> item key -> the decided value in force (the latest decision, whoever took it)."""
    # the latest by id of each (item, question) is the latest of each adjudicator's in force (RATINGS_IN_FORCE),
    # read without grouping every rating of the study (0.3 s at 120k ratings)
    rows = study._db.conn.execute(
        """SELECT r.attribute, r.item_key, r.value FROM ratings r JOIN items i ON i.key = r.item_key
           JOIN raters ra ON ra.id = r.rater_id
           WHERE i.task = ? AND ra.kind = 'adjudicator' AND r.retracted = 0 AND r.retest_of IS NULL
             AND r.value IS NOT NULL ORDER BY r.id""",
        [task],
    ).fetchall()
    decided: dict[str, dict[int, float]] = {}
    for attribute, item_key, value in rows:
        decided.setdefault(attribute, {})[item_key] = float(value)
    return decided


class Adjudication:
    """One adjudicator's decisions on one task: read once, then changed through ``decide`` (committed each)."""

    def __init__(self, study: Study, task: str, adjudicator: str) -> None:
        self.study, self.task = study, task
        self.rater: Rater = study.adjudicator(adjudicator)
        self.decided = adjudicated_values(study, task)

    def decide(self, item_key: int, attribute: str, value: float) -> int:
        rating_id = self.study.add_rating(item_key, attribute, self.rater.id, value, parse_status=ADJUDICATED)
        self.decided.setdefault(attribute, {})[item_key] = value
        return rating_id

    def save(self, change: Callable[[], T], lock_wait: float) -> T:
        """One change as one transaction (the app's store thread: ``ui/writer.py``)."""
        return commit_in_place(self.study, change, lock_wait)

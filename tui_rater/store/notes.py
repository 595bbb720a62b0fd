"""Notes as data: every skip, flag, comment, reveal review and adjudication, with who and when (``export``).

Nothing is left out for being old: a flag taken back keeps its row with ``retracted_at``; an edited comment
keeps the text it had, marked replaced, and its edit names it (``supersedes``); a decision changed later is
a row of its own. ``in_force`` says which rows stand now.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from tui_rater.store.adjudication import note_text, review_parts
from tui_rater.store.retest import RETEST_NOTE
from tui_rater.store.study import Study

NOTES_SCHEMA = {
    "kind": pl.Utf8,  # skip | flag | comment | review | adjudication
    "task": pl.Utf8,
    "item": pl.Utf8,
    "system": pl.Utf8,
    "attribute": pl.Utf8,  # a review's or an adjudication's question ('' for the whole item)
    "rater": pl.Utf8,
    "rater_kind": pl.Utf8,  # human | llm | adjudicator
    "text": pl.Utf8,  # a comment's words; a review's comment
    "verdict": pl.Utf8,  # a review's agree / disagree
    "value": pl.Float64,  # an adjudication's decided value
    "retest": pl.Boolean,  # a skip or flag of the item's second, blind showing (annotate --retest)
    "in_force": pl.Boolean,  # False: a flag taken back, a comment replaced or removed, a decision changed since
    "created_at": pl.Utf8,
    "retracted_at": pl.Utf8,
    "note_id": pl.Int64,
    "supersedes": pl.Int64,  # the note an edited comment replaces
    "rating_id": pl.Int64,  # the rating a review is about; an adjudication's own rating
}


def notes_rows(study: Study, task: str | None = None) -> list[dict[str, Any]]:
    """Notes and adjudications, in the order they were made."""
    where, params = ("WHERE i.task = ?", [task]) if task else ("", [])
    conn = study._db.conn
    rows: list[dict[str, Any]] = []
    for (
        note_id,
        kind,
        task_name,
        item,
        system,
        attribute,
        rater,
        rater_kind,
        text,
        created,
        retracted,
        supersedes,
        rating_id,
    ) in conn.execute(
        f"""SELECT n.id, n.kind, i.task, i.id, i.system, n.attribute, ra.name, ra.kind, n.text, n.created_at,
                   n.retracted_at, n.supersedes, n.rating_id
            FROM notes n JOIN items i ON i.key = n.item_key JOIN raters ra ON ra.id = n.rater_id {where}
            ORDER BY n.created_at, n.id""",
        params,
    ):
        verdict, comment = review_parts(text) if kind == "review" else (None, note_text(kind, text))
        rows.append(
            {
                "kind": kind,
                "task": task_name,
                "item": item,
                "system": system,
                "attribute": attribute or "",
                "rater": rater,
                "rater_kind": rater_kind,
                "text": comment,
                "verdict": verdict,
                "value": None,
                "retest": kind in ("skip", "flag") and text == RETEST_NOTE,
                "in_force": retracted is None,
                "created_at": created,
                "retracted_at": retracted,
                "note_id": note_id,
                "supersedes": supersedes,
                "rating_id": rating_id,
            }
        )
    # the decision in force is the latest of each question, whoever took it (``adjudicated_values``, the report's)
    in_force = {
        rating_id
        for (rating_id,) in conn.execute(
            """SELECT max(r.id) FROM ratings r JOIN raters ra ON ra.id = r.rater_id
               WHERE ra.kind = 'adjudicator' AND r.retracted = 0 AND r.retest_of IS NULL AND r.value IS NOT NULL
               GROUP BY r.item_key, r.attribute"""
        )
    }
    for rating_id, task_name, item, system, attribute, rater, value, created in conn.execute(
        f"""SELECT r.id, i.task, i.id, i.system, r.attribute, ra.name, r.value, r.created_at
            FROM ratings r JOIN items i ON i.key = r.item_key JOIN raters ra ON ra.id = r.rater_id
            WHERE ra.kind = 'adjudicator' AND r.retracted = 0 {where.replace("WHERE", "AND")} ORDER BY r.id""",
        params,
    ):
        rows.append(
            {
                "kind": "adjudication",
                "task": task_name,
                "item": item,
                "system": system,
                "attribute": attribute,
                "rater": rater,
                "rater_kind": "adjudicator",
                "text": "",
                "verdict": None,
                "value": value,
                "retest": False,
                "in_force": rating_id in in_force,
                "created_at": created,
                "retracted_at": None,
                "note_id": None,
                "supersedes": None,
                "rating_id": rating_id,
            }
        )
    rows.sort(key=lambda row: str(row["created_at"]))  # (stable: notes before decisions of the same instant)
    return rows


def notes_frame(study: Study, task: str | None = None) -> pl.DataFrame:
    return pl.DataFrame(notes_rows(study, task), schema=NOTES_SCHEMA)

"""Rendering the notes section (``sections/notes.py``): the flagged items and the comments, literally."""

from __future__ import annotations

from typing import Any

from tui_rater.stats.records import Record

TITLES = {
    "notes": "Notes — flagged items and comments in force (every note and its history: `export --what notes`)",
}


def _notes(records: list[Record], by: Any, who: Any) -> tuple[str, list[str], list[list[str]]] | None:
    rows = [
        [r.evaluator_b or "", r.system, r.evaluator, r.statistic, "" if r.attribute == "*" else r.attribute, r.note]
        for r in records
        if r.table == "notes"
    ]
    return (TITLES["notes"], ["item", "system", "who", "note", "question", "text"], rows) if rows else None


BUILDERS = [_notes]

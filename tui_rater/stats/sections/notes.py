"""The notes people left: the flagged items and the comments in force (notes are data: they go into the report).

One record per flag (``statistic`` "flag") and per comment ("comment", its words in ``note``); ``evaluator``
is who left it, ``evaluator_b`` the item's id, ``value`` the item's key, ``attribute`` the question a note is
on ("*": the whole item). A flag taken back and a comment replaced by its edit are not in force: left out
here, kept in ``export --what notes`` with their history.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui_rater.domain.tasks import Attribute
from tui_rater.stats.sections.base import Found, Layout, Runs, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.store.progress_reads import report_notes


def notes(data: ReportData, attributes: Sequence[Attribute]) -> None:
    rows = report_notes(data.study, data.task.name)
    for kind, item_key, item_id, system, rater, attribute, text in rows:
        data.add(
            "notes",
            attribute or "*",
            system,
            rater,
            kind,
            value=float(item_key),
            n=1,
            evaluator_b=item_id,
            note=(text or "") if kind == "comment" else "",  # (a comment has text: the query asks for it)
        )


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = [
        [r.evaluator_b or "", r.system, r.evaluator, r.statistic, "" if r.attribute == "*" else r.attribute, r.note]
        for r in found.of("notes")
    ]
    return (TABLE.title, ["item", "system", "who", "note", "question", "text"], rows) if rows else None


TABLE = Layout(
    "notes",
    "Notes — flagged items and comments in force (every note and its history: `export --what notes`)",
    ("notes",),
    _lay_out,
)
# the flagged items and comments, whatever the questions: after the judges' marks are set
SECTION = Section("notes", notes, ("notes",), (TABLE,), Runs.ALWAYS)

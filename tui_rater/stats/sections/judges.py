"""Who the judges in a report are: each label (``J1 tiny text``) with its rater id and configuration.

Reports name a judge by its short label (``store/labels.py``); this legend ties each label to the
judge's id and full rater name, which ``tui-rater judges`` lists with the whole provenance. A judge
whose replies came from more than one model id, fingerprint, file or server is flagged here.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui_rater.domain.tasks import Attribute
from tui_rater.stats.records import ALL
from tui_rater.stats.sections.base import Found, Layout, Runs, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.store.judges import legend


def judges(data: ReportData, attributes: Sequence[Attribute]) -> None:
    shown = set(data.judges) | set(data.readings["rater"].to_list())
    readings = dict(data.readings.group_by("rater").len().iter_rows())
    for rater_id, label, name, sources in legend(data.study):
        if label not in shown:
            continue
        note = name
        if sources > 1:
            note += f"; replies from {sources} different sources (model id, fingerprint, file or server)"
        data.add("judges", "*", ALL, label, "rater_id", value=rater_id, n=readings.get(label, 0), note=note)


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = [[r.evaluator, "n/a" if r.value is None else f"{r.value:.0f}", str(r.n), r.note] for r in found.of("judges")]
    return (TABLE.title, ["judge", "id", "readings", "rater"], rows) if rows else None


TABLE = Layout(
    "judges",
    "Judges — the labels above: rater id and name; `tui-rater judges` lists each one's full provenance",
    ("judges",),
    _lay_out,
)
SECTION = Section("judges", judges, ("judges",), (TABLE,), Runs.JUDGED)

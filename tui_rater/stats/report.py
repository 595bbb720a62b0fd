"""The papers' tables from a study's own data, as flat records (how they print: each section's layout).

The report asks each question's protocol which sections apply (``report_sections``) and runs them
(``sections/``, one object each): scores get Chiang & Lee's Tables 1, 2, 3, 6 and 12 and Chen et al.'s
meta-evaluation; nominal answers (a choice, a pairwise A / B / tie) get verdict shares, κ and
α nominal, position bias, Bradley-Terry and the pairwise meta-evaluation; SPA questions get SPA.
Whether a judge may replace the humans (``verdict``: the alternative annotator test), bias-corrected
system means (``ppi``) and how both converge (``convergence``) come with every protocol they fit
(docs/VERDICT.md). Every judge's readings (typed failures, scale mass, agreement-ready) come with every
task. What the user sets (SPA's τ, the alt-test's ε, the humans' reference) is one ``ReportSettings``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui_rater.domain import protocols
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.stats import interval_notes
from tui_rater.stats.agreement import Stat
from tui_rater.stats.jury import with_juries
from tui_rater.stats.records import ALL, HUMANS, SCHEMA, Record, as_dicts
from tui_rater.stats.sections import SECTIONS, check_protocols
from tui_rater.stats.sections.base import Runs, Section
from tui_rater.stats.sections.data import ReportData, load, load_all, reference_system
from tui_rater.stats.sections.readings import mark_not_ready
from tui_rater.stats.sections.settings import ReportSettings, SpaSettings, VerdictSettings
from tui_rater.store.study import Study

if TYPE_CHECKING:
    import polars as pl

__all__ = [
    "ALL",
    "HUMANS",
    "SCHEMA",
    "Record",
    "Report",
    "ReportSettings",
    "SpaSettings",
    "VerdictSettings",
    "as_dicts",
    "build_report",
    "load",
    "reference_system",
]


class Report(ReportData):
    """One task's report: its data, and the sections its questions' protocols name."""

    _writing: frozenset[str] | None = None  # the tables the section being computed may write

    def __init__(
        self,
        study: Study,
        task: Task,
        settings: ReportSettings | None = None,
        *,
        frame: pl.DataFrame | None = None,
        readings: pl.DataFrame | None = None,
    ) -> None:
        if frame is None or readings is None:
            # a jury's values are computed here from its members' ratings as read now (``stats/jury.py``)
            excluded = (settings or ReportSettings()).excluded_annotators
            loaded_frame, loaded_readings = load_all(study, task.name, excluded)
            frame, readings = with_juries(
                study, task, loaded_frame if frame is None else frame, loaded_readings if readings is None else readings
            )
        super().__init__(study, task, settings, frame=frame, readings=readings)

    def sections(self) -> list[tuple[Section, list[Attribute]]]:
        """(section, the questions whose protocol names it), in the order sections are computed."""
        named = {a.name: protocols.of(a) for a in self.task.attributes}
        check_protocols(named.values())  # a protocol registered after the sections were imported
        return [
            (section, [a for a in self.task.attributes if section.name in named[a.name].report_sections])
            for section in SECTIONS.values()
            if any(section.name in named[a.name].report_sections for a in self.task.attributes)
        ]

    def build(self) -> list[Record]:
        self.records = []
        named = self.sections()  # an unknown section raises with or without ratings
        if not self.frame.is_empty():
            for section, attributes in named:
                self._compute(section, attributes)
        if not self.readings.is_empty():
            for section in SECTIONS.values():
                if section.runs is Runs.JUDGED:
                    self._compute(section, list(self.task.attributes))
        mark_not_ready(self)
        for section in SECTIONS.values():
            if section.runs is Runs.ALWAYS:  # after the marks: the notes people left hold no agreement
                self._compute(section, list(self.task.attributes))
        self.records = interval_notes.explain(self.records)  # each figure's interval, or why it has none
        return self.records

    def _compute(self, section: Section, attributes: list[Attribute]) -> list[Record]:
        """Run one section; the records it added."""
        before = len(self.records)
        self._writing = frozenset(section.tables)
        try:
            section.compute(self, attributes)
        finally:
            self._writing = None
        return self.records[before:]

    def add(
        self,
        table: str,
        attribute: str,
        system: str,
        evaluator: str,
        statistic: str,
        stat: Stat | None = None,
        *,
        value: float | None = None,
        n: int = 0,
        evaluator_b: str | None = None,
        p: float | None = None,
        note: str = "",
    ) -> None:
        allowed = self._writing if self._writing is not None else _written()
        if table not in allowed:  # a misspelt table would never be printed
            raise ValueError(f"a report section writes table {table!r}, which it does not declare ({sorted(allowed)})")
        super().add(
            table,
            attribute,
            system,
            evaluator,
            statistic,
            stat,
            value=value,
            n=n,
            evaluator_b=evaluator_b,
            p=p,
            note=note,
        )


def _written() -> frozenset[str]:
    return frozenset(table for section in SECTIONS.values() for table in section.tables)


def build_report(study: Study, task_name: str, settings: ReportSettings | None = None) -> list[Record]:
    return Report(study, study.task(task_name), settings).build()

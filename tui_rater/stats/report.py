"""The papers' tables from a study's own data, as flat records (rendering is in ``render.py``).

The report asks each question's protocol which sections apply (``report_sections``) and runs them
(``sections/``): scores get Chiang & Lee's Tables 1, 2, 3, 6 and 12 and Chen et al.'s
meta-evaluation; nominal answers (a choice, a pairwise A / B / tie) get verdict shares, κ and
α nominal, position bias, Bradley-Terry and the pairwise meta-evaluation; SPA questions get SPA.
Whether a judge may replace the humans (``verdict``: the alternative annotator test), bias-corrected
system means (``ppi``) and how both converge (``convergence``) come with every protocol they fit
(docs/VERDICT.md); ``VerdictSettings`` carries the user's ε. Every judge's readings (typed failures,
scale mass, agreement-ready) come with every task.
"""

from __future__ import annotations

import polars as pl

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.stats.records import ALL, HUMANS, SCHEMA, Record, as_dicts
from tui_rater.stats.sections import ALWAYS, ORDER, SECTIONS
from tui_rater.stats.sections.data import ReportData, load, reference_system
from tui_rater.stats.sections.notes import notes
from tui_rater.stats.sections.readings import mark_not_ready
from tui_rater.stats.sections.settings import VerdictSettings
from tui_rater.store.study import Study

__all__ = [
    "ALL",
    "HUMANS",
    "SCHEMA",
    "Record",
    "Report",
    "VerdictSettings",
    "as_dicts",
    "build_report",
    "load",
    "reference_system",
]


class Report(ReportData):
    """One task's report: its data, and the sections its questions' protocols name."""

    def __init__(
        self,
        study: Study,
        task: Task,
        frame: pl.DataFrame | None = None,
        spa_tau: float | None = 1.1,
        readings: pl.DataFrame | None = None,
        verdict: VerdictSettings | None = None,
        reference: str = HUMANS,
    ) -> None:
        super().__init__(study, task, frame, spa_tau, readings, verdict, reference)

    def sections(self) -> list[tuple[str, list[Attribute]]]:
        """(section name, the questions whose protocol names it), in report order."""
        named = {a.name: protocols.of(a).report_sections for a in self.task.attributes}
        for attribute in self.task.attributes:
            unknown = set(named[attribute.name]) - set(SECTIONS)
            if not unknown:
                continue
            protocol = protocols.of(attribute).name
            if protocol not in protocols.BUILT_IN:  # an installed package's protocol (discovery): its author's slip
                raise UserError(
                    f"the protocol {protocol!r} (of {attribute.name!r}) names report sections that do not exist: "
                    f"{', '.join(sorted(unknown))} (there are: {', '.join(ORDER)})"
                )
            # one of ours naming a section nobody computes is a bug, not user input
            raise ValueError(f"the protocol of {attribute.name!r} names unknown report sections: {sorted(unknown)}")
        return [
            (section, [a for a in self.task.attributes if section in named[a.name]])
            for section in ORDER
            if any(section in named[a.name] for a in self.task.attributes)
        ]

    def build(self) -> list[Record]:
        self.records = []
        if not self.frame.is_empty():
            for section, attributes in self.sections():
                SECTIONS[section](self, attributes)
        if not self.readings.is_empty():
            for always in ALWAYS.values():
                always(self, list(self.task.attributes))
        mark_not_ready(self)
        notes(self)  # the flagged items and comments, whatever the questions (issue 21)
        return self.records


def build_report(
    study: Study, task_name: str, spa_tau: float | None = 1.1, verdict: VerdictSettings | None = None
) -> list[Record]:
    return Report(study, study.task(task_name), spa_tau=spa_tau, verdict=verdict).build()

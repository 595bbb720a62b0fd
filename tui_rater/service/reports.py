"""The papers' tables from a study's ratings, for the CLI (and the app's export)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

from tui_rater.domain.errors import UserError
from tui_rater.stats.report import Record, Report, VerdictSettings
from tui_rater.store.study import Study

T = TypeVar("T")


def build_reports(
    study: Study, task_names: list[str] | None, spa_tau: float | None, verdict: VerdictSettings | None = None
) -> dict[str, list[Record]]:
    """Records per task: the given tasks (even without ratings), else every task that has ratings."""
    reports = {report.task.name: report.records for report in _built(study, task_names, spa_tau, verdict)}
    return _found(study, reports, task_names)


def built_reports(
    study: Study, task_names: list[str] | None, spa_tau: float | None, verdict: VerdictSettings | None = None
) -> dict[str, Report]:
    """Each task's built report: its records and the data they came from (the HTML report draws from both)."""
    reports = {report.task.name: report for report in _built(study, task_names, spa_tau, verdict)}
    return _found(study, reports, task_names)


def _built(
    study: Study, task_names: list[str] | None, spa_tau: float | None, verdict: VerdictSettings | None
) -> Iterator[Report]:
    tasks = [study.task(name) for name in task_names or study.item_task_names()]  # an unknown task: one sentence
    for task in tasks:
        report = Report(study, task, spa_tau=spa_tau, verdict=verdict)
        report.build()
        if report.records or task_names:
            yield report


def _found(study: Study, reports: dict[str, T], task_names: list[str] | None) -> dict[str, T]:
    if not reports:
        raise UserError(f"{study.path} holds no ratings yet")
    return reports

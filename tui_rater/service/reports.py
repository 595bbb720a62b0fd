"""The papers' tables from a study's ratings, for the CLI (and the app's export)."""

from __future__ import annotations

from tui_rater.domain.errors import UserError
from tui_rater.stats.report import Record, build_report
from tui_rater.store.study import Study


def build_reports(study: Study, task_names: list[str] | None, spa_tau: float | None) -> dict[str, list[Record]]:
    """Records per task: the given tasks (even without ratings), else every task that has ratings."""
    names = task_names or study.item_task_names()
    for name in names:
        study.task(name)  # an unknown task is one sentence, before any work
    reports = {name: build_report(study, name, spa_tau=spa_tau) for name in names}
    reports = {name: records for name, records in reports.items() if records or task_names}
    if not reports:
        raise UserError(f"{study.path} holds no ratings yet")
    return reports

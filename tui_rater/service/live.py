"""The app's live agreement pane, computed off the UI thread: only when the study file changed."""

from __future__ import annotations

from tui_rater.domain.values import ChangeMarker
from tui_rater.service.judging import queue_counts, queue_failures
from tui_rater.stats.agreement import Stat
from tui_rater.stats.live import AttributePane, JudgeRow, PaneData, pane_data
from tui_rater.store.study import Study

# what the pane's figures are made of, named for the app's type hints (it never imports the statistics)
__all__ = ["AttributePane", "JudgeRow", "PaneData", "Stat", "agreement_pane"]


def agreement_pane(
    study: Study, task_name: str, previous: ChangeMarker | None = None
) -> tuple[PaneData | None, ChangeMarker]:
    """(the pane's data, the file's change marker); no data when the marker equals ``previous``."""
    marker = study.change_marker()
    if marker == previous:
        return None, marker
    return pane_data(study, task_name, queue_counts(study), queue_failures(study, limit=3)), marker

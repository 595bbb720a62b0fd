"""The app's test-retest line ("you agree with yourself at α 0.62, with the judge at 0.55"), computed
off the UI thread and only when the study file changed; the summary itself is ``stats/self_agreement.py``."""

from __future__ import annotations

from tui_rater.domain.values import ChangeMarker
from tui_rater.stats.self_agreement import RetestSummary, retest_summary
from tui_rater.store.study import Study

__all__ = ["RetestSummary", "retest_pane", "retest_summary"]


def retest_pane(
    study: Study, task_name: str, annotator: str, previous: ChangeMarker | None = None
) -> tuple[RetestSummary | None, ChangeMarker]:
    """(the summary, the file's change marker); no summary when the marker equals ``previous`` (nothing new)."""
    marker = study.change_marker()
    if marker == previous:
        return None, marker
    return retest_summary(study, task_name, annotator), marker

"""The app's live agreement pane, computed off the UI thread: only when the study file changed.

Two computations (issue 35 item 1): ``LivePane.look`` keeps the figures that are sums over items (agreement
counts, the bias, confusion, distributions) and updates them from the ratings stored since its last look, in time
proportional to those; ``agreement_pane`` is the full computation of every figure (α, τ, κ, the alt-test, the
confidence sequences), slow on a large study, run beside it at its own pace. ``merge`` shows the two together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tui_rater.domain.tasks import Task
from tui_rater.domain.values import ChangeMarker
from tui_rater.service.judging import queue_counts, queue_failures
from tui_rater.stats.live_sums import LiveSums, PaneSums, merge
from tui_rater.stats.pane_types import AttributePane, JudgeRow, PaneData, shown
from tui_rater.stats.stat import Stat
from tui_rater.store import pane_reads
from tui_rater.store.study import Study

# what the pane's figures are made of, named for the app's type hints (it never imports the statistics)

__all__ = [
    "AttributePane",
    "JudgeRow",
    "LivePane",
    "PaneData",
    "PaneSums",
    "Stat",
    "SumsLook",
    "agreement_pane",
    "full_pane",
    "merge",
]


def agreement_pane(
    study: Study, task_name: str, previous: ChangeMarker | None = None
) -> tuple[PaneData | None, ChangeMarker]:
    """(the pane's data, the file's change marker); no data when the marker equals ``previous``."""
    # the full computation's statistics (scipy, polars, the report's sections): imported where it runs, the pane's
    # worker process, never by the app's running sums (issue 35 item 1: their first numbers within 2 s)
    from tui_rater.stats.live import pane_data

    marker = study.change_marker()
    if marker == previous:
        return None, marker
    return pane_data(study, task_name, queue_counts(study), queue_failures(study, limit=3)), marker


def full_pane(
    study: Study, task_name: str, previous: ChangeMarker | None = None
) -> tuple[PaneData | None, ChangeMarker, tuple[int, int, int]]:
    """``agreement_pane``, and what it read (the newest rating id, the undone ratings, the newest rating change): the
    pane shows its figures as current only while the running sums have read the same (``PaneSums.seen``). The judges'
    readings and anytime verdicts are what the pane shows of them (``pane_types.shown``)."""
    seen = (
        pane_reads.newest_rating_id(study),
        len(pane_reads.retracted_ratings(study, task_name)),
        pane_reads.newest_change(study),
    )
    data, marker = agreement_pane(study, task_name, previous)
    # (the worker's answer to the app: copies of the readings and verdicts whose classes import no statistics)
    return (None if data is None else shown(data)), marker, seen


@dataclass
class SumsLook:
    """What one look found: the sums now, the judge queue, and whether it was a full build (else an update)."""

    sums: PaneSums
    task: Task
    queue: dict[str, int]
    failures: list[dict[str, Any]]
    built: bool


class LivePane:
    """The running sums of one task's pane; one thread uses it (the pane's fast computation)."""

    def __init__(self, task_name: str) -> None:
        self.task_name = task_name
        self.sums: LiveSums | None = None
        self._raters: object = None
        self._jobs: object = None

    def look(self, study: Study, always: bool = False) -> SumsLook | None:
        """The sums after reading what changed since the last look; None when nothing did (``always``: the sums
        then too). A new rater (a jury made or forgotten, a rater renamed) is a full build: it changes whose
        figures the sums are."""
        raters, jobs = pane_reads.raters_and_jobs(study)
        built = self.sums is None or raters != self._raters
        if built:
            self.sums = LiveSums(study.task(self.task_name))
            self.sums.build(study)
            changed = True
        else:
            assert self.sums is not None
            changed = self.sums.update(study)
        if not changed and jobs == self._jobs and not always:
            return None
        self._raters, self._jobs = raters, jobs
        assert self.sums is not None
        return SumsLook(
            self.sums.snapshot(), self.sums.task, queue_counts(study), queue_failures(study, limit=3), built
        )

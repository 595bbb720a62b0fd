"""The agreement pane's test-retest lines as plain text and style names, computed where the summary is: in the
pane's worker process (``service/pane_worker.py``).

The summary's classes (``stats/self_agreement.py``, ``stats/retest.py``) import scipy: computed in a thread of the
app, the summary imported the statistics stack into it and held the interpreter's lock while the keys waited (it ran
each time a full computation's result had let go of the pane's one-at-a-time lock: the slow keys clustered there,
issue 35 item 1); unpickled in the app, it would import them still. The app gets these lines, which ``ui/retest.py``
draws as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui_rater.domain.display import safe_text
from tui_rater.domain.values import ChangeMarker
from tui_rater.store.study import Study

if TYPE_CHECKING:  # (scipy: the worker's)
    from tui_rater.stats.agreement import Stat
    from tui_rater.stats.self_agreement import RetestSummary

Segment = tuple[str, str]  # (text, style: "" for none)


@dataclass
class RetestLines:
    """Per question of the summary (in its order), the two lines' segments; a question with nothing rated twice yet
    has none."""

    attributes: list[str]
    lines: dict[str, list[Segment]] = field(default_factory=dict)


def _f(stat: Stat, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if stat.value is None else f"{stat.value:.{digits}f}{suffix}"


def retest_segments(summary: RetestSummary, attribute: str) -> list[Segment] | None:
    """Two lines for one question, or None when the annotator has rated nothing twice yet."""
    found = summary.attribute(attribute)
    if found is None or found.reliability.pairs == 0:
        return None
    reliability = found.reliability
    overall, calibrated = reliability.overall, reliability.calibrated
    line = f"you agree with yourself at α {_f(overall.alpha)} ({reliability.pairs} rated twice)"
    for judge in found.judges:
        line += f", with {safe_text(judge.judge)} at α {_f(judge.agreement.alpha)} ({judge.agreement.pairs} items)"
    shift = reliability.shift
    shown = (
        ""
        if reliability.level == "nominal"
        # a choice's codes have no mean
        else (f" · shift {'n/a' if shift.value is None else f'{shift.value:+.2f}'}")
    )
    return [
        (f"test–retest ({safe_text(summary.annotator)}, {attribute}): ", "bold"),
        (line, ""),
        ("\n", ""),
        (
            f"  yourself: κ {_f(overall.kappa)} · identical {_f(overall.exact, 0, '%')}{shown} · without your first "
            f"{reliability.calibration_items} items: α {_f(calibrated.alpha)} ({calibrated.pairs})"
            f" · α {reliability.level}\n",
            "dim",
        ),
    ]


def retest_lines(summary: RetestSummary) -> RetestLines:
    """Every question's lines (what the pane may show of the summary, whichever question is in focus)."""
    names = [found.attribute for found in summary.attributes]
    lines = {name: segments for name in names if (segments := retest_segments(summary, name)) is not None}
    return RetestLines(names, lines)


def retest_pane_lines(
    study: Study, task_name: str, annotator: str, previous: ChangeMarker | None = None
) -> tuple[RetestLines | None, ChangeMarker]:
    """``retest_pane``'s answer as lines (run in the pane's worker process)."""
    from tui_rater.service.retest import retest_pane

    summary, marker = retest_pane(study, task_name, annotator, previous)
    return (None if summary is None else retest_lines(summary)), marker

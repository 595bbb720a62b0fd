"""The agreement pane's test-retest lines: "you agree with yourself at α 0.62, with the judge at 0.55"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from tui_rater.domain.display import safe_text

if TYPE_CHECKING:  # scipy (through stats.agreement) is never imported on the UI thread for a type
    from tui_rater.service.live import Stat
    from tui_rater.service.retest import RetestSummary


def _f(stat: Stat, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if stat.value is None else f"{stat.value:.{digits}f}{suffix}"


def retest_text(summary: RetestSummary, attribute: str) -> Text | None:
    """Two lines for one question, or None when the annotator has rated nothing twice yet."""
    found = summary.attribute(attribute)
    if found is None or found.reliability.pairs == 0:
        return None
    reliability = found.reliability
    overall, calibrated = reliability.overall, reliability.calibrated
    text = Text()
    text.append(f"test–retest ({safe_text(summary.annotator)}, {attribute}): ", style="bold")
    text.append(f"you agree with yourself at α {_f(overall.alpha)} ({reliability.pairs} rated twice)")
    for judge in found.judges:
        text.append(f", with {safe_text(judge.judge)} at α {_f(judge.agreement.alpha)} ({judge.agreement.pairs} items)")
    text.append("\n")
    shift = reliability.shift
    shown = (
        ""
        if reliability.level == "nominal"
        # a choice's codes have no mean
        else (f" · shift {'n/a' if shift.value is None else f'{shift.value:+.2f}'}")
    )
    text.append(
        f"  yourself: κ {_f(overall.kappa)} · identical {_f(overall.exact, 0, '%')}{shown} · without your first "
        f"{reliability.calibration_items} items: α {_f(calibrated.alpha)} ({calibrated.pairs})"
        f" · α {reliability.level}\n",
        style="dim",
    )
    return text

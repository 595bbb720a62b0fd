"""The agreement pane's test-retest lines: "you agree with yourself at α 0.62, with the judge at 0.55"."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

if TYPE_CHECKING:  # (computed in the pane's worker process: service/retest_lines.py)
    from tui_rater.service.retest_lines import RetestLines


def retest_text(lines: RetestLines, attribute: str) -> Text | None:
    """Two lines for one question, or None when the annotator has rated nothing twice yet."""
    segments = lines.lines.get(attribute)
    if segments is None:
        return None
    text = Text()
    for part, style in segments:
        text.append(part, style=style or None)
    return text

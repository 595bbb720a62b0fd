"""What the app's background threads tell the UI thread (messages up; the app updates its widgets)."""

from __future__ import annotations

from textual.message import Message

from tui_rater.domain.values import OtherRating
from tui_rater.ui.writer import Committed, Stalled


class SaveReport(Message):
    """From the store thread: a change was committed (``Committed``) or is waiting (``Stalled``)."""

    def __init__(self, report: Committed | Stalled):
        super().__init__()
        self.report = report


class JudgeProgress(Message):
    """From the judges' watcher thread: their one-line summary. A newer one replaces a waiting one."""

    def __init__(self, summary: str, compact: str = ""):
        super().__init__()
        self.summary = summary
        self.compact = compact or summary  # the judges by number alone (J1), where the labels do not fit

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JudgeProgress)


class TeamProgress(Message):
    """From the team watcher thread: the share of a team plan's work done. A newer one replaces a waiting one."""

    def __init__(self, share: float):
        super().__init__()
        self.share = share

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TeamProgress)


class RevealReady(Message):
    """From the reveal's reader thread: the other raters' ratings of a showing (or why they could not be read)."""

    def __init__(self, index: int, others: dict[str, list[OtherRating]], error: str | None = None):
        super().__init__()
        self.index, self.others, self.error = index, others, error

"""The status line: task · annotator · item i/N, a progress bar, what is rated (and saving), marks, the judges."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui_rater.domain.display import safe_text
from tui_rater.ui.state import RatingState


class StatusLine(Static):
    def show(
        self, state: RatingState, index: int, *, width: int, team_share: float | None, judges: tuple[str, str]
    ) -> None:
        """``width``: the screen's (0 before the first layout); ``judges``: their summary, and the compact one
        (judges by number) for when the labels do not fit."""
        session, view = state.session, state.view
        total = len(session.items)
        done = len(state.completed)  # in the file; items typed but not saved are counted apart
        saving = state.saving()
        key = session.key(index)  # a retest showing has marks of its own: it is not marked as seen
        unsaved_notes = view.unsaved_notes(key)
        marks = []
        for note, word in (("flag", "flagged"), ("skip", "skipped")):
            if note == "flag":  # taken back with f again: flagged as the last unsaved flag / unflag says
                if view.is_flagged(key):
                    pending = "flag" in unsaved_notes or "unflag" in unsaved_notes
                    marks.append(word + (view.mark() if pending else ""))
            elif key in view.skipped:
                marks.append(word)
            elif note in unsaved_notes:
                marks.append(word + view.mark())
        head = Text()
        task_name, annotator = safe_text(session.task.name, inline=True), safe_text(session.annotator, inline=True)
        head.append(f"{task_name} · {annotator} · item {index + 1}/{total} ", style="bold")
        tail = Text(f" {done}/{total} rated")
        if team_share is not None:  # (dynamic mode: the items others got first are not yours to count)
            tail = Text(f" your {done}/{state.yours()} · team {team_share:.0%}")
        if saving:
            tail.append(f" (+{saving} saving{view.mark()})", style="bold")
        if marks:
            tail.append(" · " + ", ".join(marks), style="bold")
        summary_text, compact = judges
        if summary_text:  # judge labels, server errors; the labels give way to the judges' numbers first
            summary = Text(" · " + safe_text(summary_text, inline=True))
            if width and head.cell_len + tail.cell_len + summary.cell_len > width - 2:
                summary = Text(" · " + safe_text(compact or summary_text, inline=True))
            tail.append_text(summary)
        # the bar gives way next: a stopped judge must stay readable at 80 columns
        room = width - 2 - head.cell_len - tail.cell_len if width else 16
        bar = max(0, min(16, room))
        filled = int(bar * done / total) if total else 0
        head.append("█" * filled + "░" * (bar - filled))
        self.update(head + tail)

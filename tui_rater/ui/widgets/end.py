"""The line at the end of the task: what is done, and what comes next."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from tui_rater.domain.display import safe_text
from tui_rater.ui.state import RatingState


class EndLine(Static):
    def show(self, state: RatingState, index: int, rated: int) -> None:
        """Reaching the end of the task says so on screen, with what comes next (a newcomer at the last item
        saw the same item stay put, and nothing else). ``rated``: items rated, saved or being saved."""
        total, last = len(state.session.items), len(state.session.items) - 1
        line = None
        if total and rated >= total:
            line = (
                f"Done: all {total} items of {safe_text(state.task.name, inline=True)} are rated. Next: a shows the "
                "agreement; q quits and prints the report and judge commands."
            )
        elif index == last and state.item_complete(last):
            first = next((i for i in range(total) if not state.item_complete(i)), None)
            where = f"; the first is item {first + 1} (g goes to it)" if first is not None else ""
            line = f"That was the last item: {total - rated} of {total} are not rated yet{where}. q: quit"
        self.display = line is not None
        if line is not None:
            self.update(Text(line, style="bold"))

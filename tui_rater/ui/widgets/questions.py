"""The questions pane: the focused question and its neighbours, with the values shown and their keys."""

from __future__ import annotations

from textual.widgets import Static

from tui_rater.domain.tasks import Task
from tui_rater.ui.render import questions_text


class QuestionsPane(Static):
    def show(
        self, task: Task, shown: dict[str, tuple[float | None, str]], focus: int, typed: str, *, width: int
    ) -> None:
        """``shown``: each question's value on screen and its unsaved mark; ``width``: the screen's."""
        values = {a: value for a, (value, _mark) in shown.items()}
        marks = {a: mark for a, (_value, mark) in shown.items() if mark}
        # as many questions as the pane holds whole, so "… N questions below" stays in view (SPA's nine
        # questions wrap to two lines each at 80 columns: six overflowed the pane and hid the count)
        height = self.styles.max_height.value if self.styles.max_height is not None else 12
        for window in range(6, 0, -1):
            text = questions_text(task, values, focus, typed, window=window, marks=marks, width=width)
            if len(text.wrap(self.app.console, width)) <= height:
                break
        self.update(text)

"""The questions pane: the focused question and its neighbours, with the values shown and their keys."""

from __future__ import annotations

from textual.widgets import Static

from tui_rater.domain.tasks import Task
from tui_rater.ui.render import questions_text


class QuestionsPane(Static):
    """The focused question's pane. Focused (the screen's only focusable widget), it takes the question's choice
    letters for itself: Textual then leaves the screen's and the app's bindings of those keys out of the footer
    and the key dispatch (``check_consume_key``), and the key reaches the screen as an answer."""

    can_focus = True
    letters: tuple[str, ...] = ()  # the focused question's choice letters (set by the screen)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character is not None and character in self.letters

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

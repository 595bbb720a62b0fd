"""A yes/no question."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from tui_rater.domain.display import safe_text


class ConfirmScreen(ModalScreen[bool]):
    """A yes/no question before something that cannot be taken back in one key (cancelling the judges' queue)."""

    BINDINGS = [
        Binding("y", "answer(True)", "yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "no", id="confirm.no"),
    ]

    def __init__(self, question: str):
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(Text(safe_text(self.question), style="bold"))
            yield Static(Text("y = yes · n or Esc = no", style="dim"))
        yield Footer()

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

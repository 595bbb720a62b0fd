"""A one-line input: a comment, an item to go to, a revised rating."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Static

from tui_rater.domain.display import safe_text


class InputScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "cancel", id="input.cancel")]

    def __init__(self, prompt: str, placeholder: str = "", value: str = ""):
        """``value``: the text to edit (a comment reopened)."""
        super().__init__()
        self.prompt = prompt
        self.placeholder = placeholder
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical(id="input-box"):
            yield Static(Text(safe_text(self.prompt, inline=True), style="bold"))  # prompts quote attribute names
            # a text to edit: the cursor at its end, nothing selected (a first key must not replace it all)
            yield Input(value=self.value, placeholder=self.placeholder, id="input-line", select_on_focus=False)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)

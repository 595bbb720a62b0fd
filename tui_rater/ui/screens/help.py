"""The help screen: every key of the rating screen, as the keymap has them."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from tui_rater.domain.display import safe_text


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "close", id="help.close")]

    def __init__(self, rows: list[tuple[str, str]]):
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        text = Text()
        # the keys' column as wide as its widest entry (up to 18): the descriptions stay on one line at 80x24
        keys_shown = [safe_text(keys, inline=True) for keys, _ in self.rows]  # keys may come from the config file
        width = min(18, max(map(len, keys_shown), default=0))
        for keys, (_, description) in zip(keys_shown, self.rows):
            text.append(f"{keys:>{width}}  ", style="bold")
            text.append(safe_text(description) + "\n")
        text.append(
            "\nThe mouse works but is never needed. Remap keys in the config file's [keys] table.\n", style="dim"
        )
        with VerticalScroll(id="help") as box:
            box.border_title = "Keys"  # in the border: every row in view at 80x24
            yield Static(text)
        yield Footer()

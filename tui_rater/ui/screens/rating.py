"""The rating screen: the app's default screen, holding the widgets the app composes (``RaterApp.compose``)."""

from __future__ import annotations

from collections.abc import Callable

from textual.screen import Screen


class RatingScreen(Screen[None]):
    """The main screen. It takes the focused question's choice letters (pairwise a / b / t) for itself, so
    Textual leaves the app's bindings of those keys out of the footer and the key dispatch: on an A / B / tie
    screen the footer names ^a for the agreement pane, not `a`, which answers A there."""

    def __init__(self, answer_letters: Callable[[], tuple[str, ...]], *, id: str | None = None):
        """``answer_letters``: the letters the focused question is answered with, as the footer was last drawn."""
        super().__init__(id=id)
        self.answer_letters = answer_letters

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return character is not None and character in self.answer_letters()

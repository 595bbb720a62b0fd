"""The item pane: the text to rate, stacked, or in columns where the protocol lays it out so and there is room."""

from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from tui_rater.domain import protocols
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.domain.values import Item
from tui_rater.ui.render import item_text, pairwise_columns, spa_columns


class ItemPane(VerticalScroll):
    """Holds one ``Static`` (``#item-text``). ``shown_layout``: "stacked" or "columns", as last drawn."""

    shown_layout = "stacked"
    _stacked: Text | None = None  # the stacked item text on screen (None: columns, or nothing yet)

    def show(
        self, task: Task, item: Item, attribute: Attribute, *, width: int, blind: bool, prompt_always: bool
    ) -> None:
        text_widget = self.query_one("#item-text", Static)
        layout = protocols.of(attribute).layout(attribute)
        if layout == "pair" and width >= 100:
            # Chen et al.'s pairwise comparison: the two texts side by side when there is room
            text_widget.update(pairwise_columns(task, item, attribute))
            self.shown_layout, self._stacked = "columns", None
            return
        if layout == "writers":
            columns = spa_columns(task, item, width)
            if columns is not None:  # SPA: each writer's continuations in a column of its own
                text_widget.update(columns)
                self.shown_layout, self._stacked = "columns", None
                return
        self.shown_layout = "stacked"
        text = item_text(task, item, attribute, show_system=not blind, prompt_always=prompt_always)
        if text == self._stacked:  # the next question shows the same fields: no new layout (it costs)
            return
        self._stacked = text
        text_widget.update(text)

    def page(self, direction: int) -> None:
        # one page per key, each from where the last one left the text: Textual's scroll_page_down reads
        # the offset at the key and moves after the next refresh, so a burst of PageDowns (key repeat
        # over SSH arrives in bunches) moved one page in all. Queued behind a new item's scroll_home.
        def page() -> None:
            step = direction * self.scrollable_content_region.height
            self.scroll_to(y=self.scroll_y + step, animate=False, immediate=True)

        self.call_after_refresh(page)

    def edge(self, end: int) -> None:
        # a 100,000-character story is some 130 pages: Home / End go to its top / end at once (queued like a
        # page, behind a new item's scroll_home, so End in the burst that moved on reaches the new story's end)
        self.call_after_refresh(
            lambda: self.scroll_to(y=self.max_scroll_y if end else 0, animate=False, immediate=True)
        )

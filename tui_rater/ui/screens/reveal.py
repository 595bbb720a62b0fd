"""Reveal mode (Chiang & Lee App. C.3.2): after an item, the other raters' ratings and the teachers' review."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.geometry import Region
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from tui_rater.domain import protocols
from tui_rater.domain.display import safe_text
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.domain.values import OtherRating
from tui_rater.ui.render import format_value
from tui_rater.ui.screens.input import InputScreen


class RevealScreen(ModalScreen[None]):
    """After an item is committed: the other raters' scores and LLM explanations.

    The annotator records agree / disagree (+ comment) per attribute (Chiang & Lee App. C.3.2).
    A changed mind is a new rating linked to the first, which stays as it was. Reviews and
    revisions are saved like any rating (the app's save queue); until committed they show as
    unsaved (``you: 3…``, ``[disagree…]``).
    """

    BINDINGS = [
        # priority: the scrolling list has the focus and would take ↑/↓ to scroll, leaving ▶ (and so every
        # review and revision) on the first question; it scrolls to keep ▶ in view instead
        Binding("up", "move(-1)", "question", key_display="↑↓", priority=True, id="reveal.up"),
        Binding("down", "move(1)", "next question", show=False, priority=True, id="reveal.down"),
        Binding("y", "verdict('agree')", "agree", id="reveal.agree"),
        Binding("x", "verdict('disagree')", "disagree", id="reveal.disagree"),
        Binding("c", "comment", "comment", id="reveal.comment"),
        Binding("r", "revise", "revise", id="reveal.revise"),
        Binding("enter,right,n,escape", "done", "next item", id="reveal.done"),
    ]

    def __init__(
        self,
        task: Task,
        index: int,
        others: dict[str, list[OtherRating]],
        shown: Callable[[int, str], tuple[float | None, str]],
        save_rating: Callable[..., None],
        save_review: Callable[..., None],
        review_mark: Callable[[int, str], str],
    ):
        super().__init__()
        self.rating_task, self.index, self.others = task, index, others
        self.shown, self.save_rating, self.save_review = shown, save_rating, save_review
        self.review_mark = review_mark
        self.focus_row = 0
        self.verdicts: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="reveal"):
            yield Static(id="reveal-text")
        yield Footer()

    def on_mount(self) -> None:
        self.refresh_text()

    def refresh_text(self) -> None:
        if not self.is_attached:
            return
        text = Text("Other raters' ratings of this item\n", style="bold")
        text.append("↑↓ move ▶ · y agree · x disagree · c comment · r revise · ⏎ next\n\n", style="dim")
        blocks = [self._block(position, attribute) for position, attribute in enumerate(self.rating_task.attributes)]
        widget = self.query_one("#reveal-text", Static)
        width = widget.content_region.width or max(20, self.size.width - 4)
        # where the marked question's block lies once wrapped: the list scrolls to keep it in view
        top = len(text.wrap(self.app.console, width)) - 1  # (the header ends in a blank line, not a new one)
        for block in blocks[: self.focus_row]:
            top += len(block.wrap(self.app.console, width)) - 1
        height = len(blocks[self.focus_row].wrap(self.app.console, width)) - 1 if blocks else 0
        for block in blocks:
            text.append_text(block)
        widget.update(text)
        pane = self.query_one("#reveal", VerticalScroll)
        if self.focus_row == 0:  # the first question: the header too
            top, height = 0, top + height
        region = Region(0, top, width, max(1, height))
        pane.call_after_refresh(lambda: pane.scroll_to_region(region, animate=False, immediate=True))

    def _block(self, position: int, attribute: Attribute) -> Text:
        """One question's lines: ▶ on the marked one, your rating and review, the others' ratings."""
        block = Text()
        focused = position == self.focus_row
        mine, mark = self.shown(self.index, attribute.name)
        name = safe_text(attribute.name, inline=True)
        block.append(("▶ " if focused else "  ") + name, style="bold reverse" if focused else "bold")
        block.append(f"  you: {format_value(attribute, mine)}{mark}")
        verdict = self.verdicts.get(attribute.name)
        if verdict:
            block.append(f"  [{verdict}{self.review_mark(self.index, attribute.name)}]", style="bold")
        block.append("\n")
        ratings = self.others.get(attribute.name, [])
        if not ratings:
            block.append("    no other ratings yet\n", style="dim")
        for other in ratings:
            who = safe_text(other.rater, inline=True) + (f" (sample {other.sample})" if other.kind == "llm" else "")
            block.append(f"    {who}: {format_value(attribute, other.value)}\n")
            if other.explanation:
                block.append(f"      {safe_text(other.explanation.strip())[:400]}\n", style="italic")
        return block

    def _attribute(self) -> Attribute:
        return self.rating_task.attributes[self.focus_row]

    def action_move(self, delta: int) -> None:
        self.focus_row = (self.focus_row + delta) % len(self.rating_task.attributes)
        self.refresh_text()

    def action_verdict(self, verdict: str) -> None:
        name = self._attribute().name
        self.verdicts[name] = verdict
        self.save_review(self.index, name, verdict)
        self.refresh_text()

    def action_comment(self) -> None:
        name = self._attribute().name

        def save(comment: str | None) -> None:
            if comment:
                self.save_review(self.index, name, self.verdicts.get(name, "comment"), comment)

        self.app.push_screen(InputScreen(f"Comment on {name}:"), save)

    def action_revise(self) -> None:
        attribute = self._attribute()

        def save(answer: str | None) -> None:
            if not answer:
                return
            value = protocols.of(attribute).value_from_text(attribute, answer)
            if value is None:
                self.app.notify(f"{answer!r} is not a rating on this scale", severity="error")  # literal: see RaterApp
                return
            self.save_rating(self.index, attribute.name, value, revision=True)
            self.refresh_text()

        self.app.push_screen(InputScreen(f"Your revised {attribute.name} rating:"), save)

    def action_done(self) -> None:
        self.dismiss(None)

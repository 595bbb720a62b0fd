"""The annotation app: rate with the keyboard, at 80x24 over SSH, while judges work behind.

``make_app`` builds it for the CLI and the tests alike. Store calls run on one background
thread (``StoreWriter``); widgets are updated on the UI thread only.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Footer, Static

from tui_rater.domain import protocols
from tui_rater.store.session import AnnotationSession
from tui_rater.ui.render import item_text, pairwise_columns, questions_text, spa_columns
from tui_rater.ui.screens import HelpScreen, InputScreen, RevealScreen
from tui_rater.ui.writer import StoreWriter


@dataclass(frozen=True)
class AppOptions:
    blind: bool = True  # hide who wrote the item
    reveal: bool = False  # after each item, show the other raters (App. C.3.2)
    prompt_always: bool = False  # show the prompt for every question, not only relevance
    keymap: dict | None = None


DIGITS = "0123456789"


class RaterApp(App[None]):
    CSS_PATH = "app.tcss"
    TITLE = "tui-rater"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("1", "digit('1')", "rate", key_display="0-9", id="rate"),
        *[Binding(d, f"digit('{d}')", "rate", show=False) for d in DIGITS if d != "1"],
        Binding("enter", "enter", "enter", show=False, id="enter"),
        Binding("backspace", "backspace", "delete digit", show=False, id="backspace"),
        Binding("down,tab", "attribute(1)", "ques", key_display="↑↓", priority=True, id="next_attribute"),
        Binding("up,shift+tab", "attribute(-1)", "previous question", show=False, priority=True, id="prev_attribute"),
        Binding("right,n", "item(1)", "item", key_display="←→", id="next_item"),
        Binding("left,p", "item(-1)", "previous item", show=False, id="prev_item"),
        Binding("u,ctrl+z", "undo", "undo", id="undo"),
        Binding("s", "skip", "skip", id="skip"),
        Binding("f", "flag", "flag", id="flag"),
        Binding("c", "comment", "note", id="comment"),
        Binding("g", "goto", "go", id="goto"),
        Binding("pageup", "scroll(-1)", "scroll", show=False, id="scroll_up"),
        Binding("pagedown", "scroll(1)", "scroll", show=False, id="scroll_down"),
        Binding("a,ctrl+a", "agreement", "stat", id="agreement"),
        Binding("question_mark", "help", "help", id="help"),
        Binding("q", "quit", "quit", id="quit"),
    ]

    def __init__(self, session: AnnotationSession, options: AppOptions | None = None, judges=None):
        super().__init__()
        self.session = session
        self.options = options or AppOptions()
        self.judges = judges  # running BackgroundJudges, or None
        self.index = session.resume_index()
        self.focus_attr = session.first_unrated_attribute(self.index)
        self.typed = ""
        self.pending: dict[tuple[int, str], float] = {}  # ratings typed, not yet written
        self.shown_at = time.monotonic()
        self.writer: StoreWriter | None = None
        self.last_error: str | None = None
        # items fully rated, kept up to date on each rating (no recount over every item per key)
        self.completed = {i for i in range(len(session.items)) if session.complete(i)}

    # --- layout --------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with VerticalScroll(id="item", can_focus=False):
            yield Static(id="item-text")
        yield Static(id="questions")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.writer = StoreWriter(self.call_from_thread, self._store_failed)
        if self.options.keymap:
            self.set_keymap(self.options.keymap)
        if self.judges is not None:
            self.set_interval(1.0, self.refresh_status)
        self.refresh_all()
        ready_file = os.environ.get("TUI_RATER_READY_FILE")
        if ready_file:  # for scripts timing start-up: when the first item is on screen
            self.call_after_refresh(lambda: Path(ready_file).write_text(f"{time.time()}\n"))

    def on_unmount(self) -> None:
        if self.writer is not None:
            self.writer.close()
        if self.judges is not None:
            self.judges.stop()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        # while a modal screen (help, input, reveal) is up, its keys win over the rating keys
        return not (
            action not in ("quit",) and self.screen is not self.screen_stack[0] and action in self._rating_actions
        )

    _rating_actions = frozenset(
        {
            "digit",
            "enter",
            "backspace",
            "attribute",
            "item",
            "undo",
            "skip",
            "flag",
            "comment",
            "goto",
            "scroll",
            "help",
            "agreement",
        }
    )

    # --- state helpers -------------------------------------------------------------------

    @property
    def task_(self):
        return self.session.task

    def value(self, index: int, attribute: str) -> float | None:
        key = (self.session.items[index].key, attribute)
        if key in self.pending:
            return self.pending[key]
        return self.session.value(index, attribute)

    def item_complete(self, index: int) -> bool:
        return all(self.value(index, a) is not None for a in self.task_.attribute_names)

    def refresh_all(self) -> None:
        self.refresh_item()
        self.refresh_questions()
        self.refresh_status()

    def refresh_item(self, width: int | None = None) -> None:
        item = self.session.items[self.index]
        attribute = self.task_.attributes[self.focus_attr]
        width = self.size.width if width is None else width
        layout = protocols.of(attribute).layout(attribute)
        if layout == "pair" and width >= 100:
            # Chen et al.'s pairwise comparison: the two texts side by side when there is room
            self.query_one("#item-text", Static).update(pairwise_columns(self.task_, item, attribute))
            self.item_layout = "columns"
            return
        if layout == "writers":
            columns = spa_columns(self.task_, item, width)
            if columns is not None:  # SPA: each writer's continuations in a column of its own
                self.query_one("#item-text", Static).update(columns)
                self.item_layout = "columns"
                return
        self.item_layout = "stacked"
        text = item_text(
            self.task_, item, attribute, show_system=not self.options.blind, prompt_always=self.options.prompt_always
        )
        self.query_one("#item-text", Static).update(text)

    def on_resize(self, event) -> None:
        attribute = self.task_.attributes[self.focus_attr]
        if protocols.of(attribute).layout(attribute) != "stacked":
            self.refresh_item(event.size.width)

    def refresh_questions(self) -> None:
        values = {a: self.value(self.index, a) for a in self.task_.attribute_names}
        self.query_one("#questions", Static).update(questions_text(self.task_, values, self.focus_attr, self.typed))

    def refresh_status(self) -> None:
        session = self.session
        total = len(session.items)
        done = len(self.completed)
        width = 16
        filled = int(width * done / total) if total else 0
        item = session.items[self.index]
        marks = []
        if item.key in session.flagged:
            marks.append("flagged")
        if item.key in session.skipped:
            marks.append("skipped")
        text = Text()
        text.append(f"{session.task.name} · {session.annotator} · item {self.index + 1}/{total} ", style="bold")
        text.append("█" * filled + "░" * (width - filled))
        text.append(f" {done}/{total} rated")
        if marks:
            text.append(" · " + ", ".join(marks), style="bold")
        if self.judges is not None:
            text.append(" · " + self.judges.summary())
        if self.last_error:
            text.append(f" · {self.last_error}", style="bold reverse")
        self.query_one("#status", Static).update(text)

    def _store_failed(self, exc: BaseException) -> None:
        self.last_error = f"not saved: {exc}"
        self.notify(f"Could not save: {exc}", severity="error", timeout=10)
        self.refresh_status()

    def submit(self, call, done=None) -> None:
        self.writer.submit(call, done)

    # --- moving --------------------------------------------------------------------------

    def show_item(self, index: int, attribute: int | None = None) -> None:
        self.index = max(0, min(index, len(self.session.items) - 1))
        self.focus_attr = self.session.first_unrated_attribute(self.index) if attribute is None else attribute
        self.typed = ""
        self.shown_at = time.monotonic()
        self.query_one("#item", VerticalScroll).scroll_home(animate=False)
        self.refresh_all()

    def action_attribute(self, delta: int) -> None:
        self.typed = ""
        before = self.task_.attributes[self.focus_attr].shows
        self.focus_attr = (self.focus_attr + delta) % len(self.task_.attributes)
        if before or self.task_.attributes[self.focus_attr].shows:
            self.refresh_item()  # the prompt appears only with the question that shows it
            if self.task_.attributes[self.focus_attr].shows:
                self.query_one("#item", VerticalScroll).scroll_end(animate=False)
        self.refresh_questions()

    def action_item(self, delta: int) -> None:
        self.show_item(self.index + delta)

    def action_scroll(self, direction: int) -> None:
        pane = self.query_one("#item", VerticalScroll)
        (pane.scroll_page_down if direction > 0 else pane.scroll_page_up)(animate=False)

    # --- rating --------------------------------------------------------------------------

    def action_digit(self, digit: str) -> None:
        attribute = self.task_.attributes[self.focus_attr]
        human = protocols.of(attribute).human_input(attribute)
        if human.kind == "number":
            if len(self.typed) < len(str(int(attribute.scale.high))):
                self.typed += digit
            self.refresh_questions()
        elif digit in human.keys:
            self.commit(human.values[human.keys.index(digit)])
        else:
            self.bell()

    def action_enter(self) -> None:
        if not self.typed:
            return
        value = float(self.typed)
        self.typed = ""
        if not self.task_.attributes[self.focus_attr].scale.contains(value):
            self.notify(f"{value:g} is off the scale", severity="warning")
            self.refresh_questions()
            return
        self.commit(value)

    def action_backspace(self) -> None:
        self.typed = self.typed[:-1]
        self.refresh_questions()

    def on_key(self, event) -> None:
        # pairwise choices are answered with a / b / t, ahead of the app's own bindings
        if self.screen is not self.screen_stack[0]:
            return
        attribute = self.task_.attributes[self.focus_attr]
        human = protocols.of(attribute).human_input(attribute)
        character = event.character
        if human.kind == "key" and character and not character.isdigit() and character in human.keys:
            event.stop()
            event.prevent_default()
            self.commit(human.values[human.keys.index(character)])

    def commit(self, value: float) -> None:
        index, attribute = self.index, self.task_.attributes[self.focus_attr].name
        key = (self.session.items[index].key, attribute)
        now = time.monotonic()
        seconds, self.shown_at = now - self.shown_at, now
        self.pending[key] = value

        def written(_rating_id) -> None:
            self.pending.pop(key, None)
            self.last_error = None
            self.refresh_status()

        self.submit(lambda: self.session.rate(index, attribute, value, seconds=round(seconds, 3)), written)
        if self.item_complete(index):
            self.completed.add(index)
            if self.options.reveal:
                self.refresh_questions()
                self.open_reveal(index)
            else:
                self.show_item(index + 1 if index + 1 < len(self.session.items) else index)
        else:
            self.focus_attr = self.session.first_unrated_attribute(index)
            # the first unrated may still be pending: skip those typed but not yet written
            names = self.task_.attribute_names
            for offset in range(len(names)):
                position = (self.focus_attr + offset) % len(names)
                if self.value(index, names[position]) is None:
                    self.focus_attr = position
                    break
            self.refresh_item()
            self.refresh_questions()
            self.refresh_status()

    def open_reveal(self, index: int) -> None:
        def with_others(others) -> None:
            def after(_=None) -> None:
                self.show_item(index + 1 if index + 1 < len(self.session.items) else index)

            self.push_screen(RevealScreen(self.session, index, others, self.submit), after)

        self.submit(lambda: self.session.others(index), with_others)

    def action_undo(self) -> None:
        def undone(last) -> None:
            if last is None:
                self.notify("Nothing to undo in this session")
                return
            if not self.session.complete(last.item_index):
                self.completed.discard(last.item_index)
            self.show_item(last.item_index, self.task_.attribute_names.index(last.attribute))

        self.submit(self.session.undo, undone)

    # --- notes ---------------------------------------------------------------------------

    def action_skip(self) -> None:
        index = self.index
        self.submit(lambda: self.session.note(index, "skip"), lambda _: self.refresh_status())
        self.show_item(index + 1)

    def action_flag(self) -> None:
        index = self.index
        self.submit(lambda: self.session.note(index, "flag"), lambda _: self.refresh_status())
        self.notify("Flagged")

    def action_comment(self) -> None:
        index = self.index

        def save(text: str | None) -> None:
            if text:
                self.submit(lambda: self.session.note(index, "comment", text), lambda _: self.notify("Comment saved"))

        self.push_screen(InputScreen("Comment on this item:"), save)

    def action_goto(self) -> None:
        def go(query: str | None) -> None:
            if not query:
                return
            found = self.session.find(query)
            if found is None:
                self.notify(f"No item {query!r}", severity="warning")
            else:
                self.show_item(found)

        self.push_screen(InputScreen("Go to item (number or id):", f"1-{len(self.session.items)}"), go)

    def action_agreement(self) -> None:
        from tui_rater.ui.agreement import AgreementScreen

        index_of = {item.key: i for i, item in enumerate(self.session.items)}

        def jump(index: int | None) -> None:
            if index is not None:
                self.show_item(index)

        self.push_screen(AgreementScreen(self.session.study, self.task_.name, index_of.get), jump)

    def action_help(self) -> None:
        rows = []
        for binding_id, description in (
            ("rate", "rate the focused question (1-5; 0-100 scales: digits then Enter; a/b/c choices)"),
            ("next_attribute", "next question"),
            ("prev_attribute", "previous question"),
            ("next_item", "next item"),
            ("prev_item", "previous item"),
            ("undo", "undo the last rating"),
            ("skip", "skip this item"),
            ("flag", "flag this item"),
            ("comment", "comment on this item"),
            ("goto", "go to an item"),
            ("agreement", "live agreement: humans vs each LLM judge"),
            ("scroll_down", "scroll the text"),
            ("scroll_up", "scroll the text back"),
            ("help", "this help"),
            ("quit", "quit (everything is already saved)"),
        ):
            rows.append((self._keys_for(binding_id), description))
        self.push_screen(HelpScreen(rows))

    def _keys_for(self, binding_id: str) -> str:
        if self.options.keymap and binding_id in self.options.keymap:
            return self.options.keymap[binding_id]
        for binding in self.BINDINGS:
            if isinstance(binding, Binding) and binding.id == binding_id:
                return binding.key_display or binding.key
        return "?"


def make_app(session: AnnotationSession, options: AppOptions | None = None, judges=None) -> RaterApp:
    """The one factory for the CLI and the tests."""
    return RaterApp(session, options, judges)

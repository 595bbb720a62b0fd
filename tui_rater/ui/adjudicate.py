"""The adjudication screen: the items whose raters disagree, most disagreeing first; decide each with the keys
of `annotate`.

The list comes from the CLI (``service/adjudication.py``). An item's ratings and notes are read off the event
loop, on a connection of their own; each decision is committed by the store thread (``ui/writer.py``), shown as
unsaved (``[4…]``) until then, and quitting waits for it, as in the annotation app (``ui/quitting.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import threading
from dataclasses import replace

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.driver import Driver
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from tui_rater.domain import protocols
from tui_rater.domain.display import safe_text
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.domain.values import ItemNote, ShowingKey, Voice
from tui_rater.service.adjudication import Disagreement, Split
from tui_rater.service.app_reads import item_detail
from tui_rater.service.session import Adjudication
from tui_rater.ui.quitting import QuitWhenSaved
from tui_rater.ui.render import format_value, item_text, scale_hint
from tui_rater.ui.saving import SaveView
from tui_rater.ui.terminal import hangup_safe
from tui_rater.ui.writer import Change, Committed, StoreWriter


class Saved(Message):
    def __init__(self, report: object):
        super().__init__()
        self.report = report


class DetailReady(Message):
    """From a reader thread: one item's ratings and notes (or why they could not be read)."""

    def __init__(self, item_key: int, voices: list[Voice], notes: list[ItemNote], error: str | None = None):
        super().__init__()
        self.item_key, self.voices, self.notes, self.error = item_key, voices, notes, error


class QueueScreen(Screen[None]):
    """The list: one line per item, most disagreeing first; Enter opens it."""

    BINDINGS = [Binding("q", "app.quit", "quit")]

    def compose(self) -> ComposeResult:
        yield Static(id="adj-status")
        yield OptionList(id="adj-queue")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.refresh_list()
        self.query_one(OptionList).focus()

    def refresh_list(self) -> None:
        app = self.app
        assert isinstance(app, AdjudicateApp)
        queue = self.query_one(OptionList)
        highlighted = queue.highlighted
        queue.clear_options()
        queue.add_options([Option(app.queue_line(i), id=str(i)) for i in range(len(app.queue))])
        queue.highlighted = highlighted if highlighted is not None else 0
        self.query_one("#adj-status", Static).update(app.status_line(None))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        app = self.app
        assert isinstance(app, AdjudicateApp)
        app.open_item(int(event.option_id or 0))


class ItemScreen(Screen[int]):
    """One item: its text, every rating and note, and the questions in dispute with the decided values."""

    BINDINGS = [
        Binding("down,tab", "question(1)", "question", key_display="↑↓", priority=True),
        Binding("up,shift+tab", "question(-1)", "previous question", show=False, priority=True),
        Binding("right,n", "item(1)", "item", key_display="←→"),
        Binding("left,p", "item(-1)", "previous item", show=False),
        Binding("enter", "enter", "enter", show=False),
        Binding("backspace", "backspace", "delete digit", show=False),
        Binding("pageup", "scroll(-1)", "scroll", show=False),
        Binding("pagedown", "scroll(1)", "scroll", show=False),
        Binding("escape,l", "list", "list"),
        Binding("q", "app.quit", "quit"),
    ]

    def __init__(self, index: int):
        super().__init__()
        self.index = index
        self.focus_row = 0
        self.typed = ""
        self.detail: DetailReady | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="adj-status")
        with VerticalScroll(id="adj-item", can_focus=False):
            yield Static(id="adj-item-text")
        yield Static(id="adj-saving")
        yield Static(id="adj-questions")
        yield Footer(compact=True)

    @property
    def adjudicating(self) -> AdjudicateApp:
        app = self.app
        assert isinstance(app, AdjudicateApp)
        return app

    @property
    def found(self) -> Disagreement:
        return self.adjudicating.queue[self.index]

    def on_mount(self) -> None:
        self.show(self.index)

    def show(self, index: int) -> None:
        app = self.adjudicating
        self.index, self.typed, self.detail = index, "", None
        self.focus_row = app.first_undecided(index) or 0  # (0 when every question is decided)
        self.query_one("#adj-item", VerticalScroll).scroll_home(animate=False)
        self.refresh_all()
        app.read_detail(self.found.item.key)

    def refresh_all(self) -> None:
        self.refresh_item()
        self.refresh_questions()

    def refresh_item(self) -> None:
        app, found = self.adjudicating, self.found
        self.query_one("#adj-status", Static).update(app.status_line(self.index))
        task = app.rating_task
        split = found.splits[self.focus_row]
        # the ratings and notes first, then the item (its task's instructions left out: the adjudicator knows them)
        text = Text()
        detail = self.detail
        if detail is None:
            text.append("reading the ratings and notes…\n", style="dim")
        elif detail.error:
            text.append(f"could not read the ratings and notes: {safe_text(detail.error, inline=True)}\n")
        else:
            text.append_text(ratings_text(task, detail.voices))
            text.append_text(notes_text(detail.notes))
        text.append(f"\nItem {safe_text(found.item.id, inline=True)}\n", style="bold underline")
        shown = replace(task, instructions="")
        attribute = task.attribute(split.attribute)
        text.append_text(item_text(shown, found.item, attribute, show_system=True, prompt_always=True))
        self.query_one("#adj-item-text", Static).update(text)

    def on_detail_ready(self, message: DetailReady) -> None:
        if message.item_key == self.found.item.key:
            self.detail = message
            self.refresh_item()

    def refresh_questions(self) -> None:
        app, found = self.adjudicating, self.found
        task = app.rating_task
        width = max(20, (self.size.width or 80) - 2)
        text = Text()
        for row, split in enumerate(found.splits):
            attribute = task.attribute(split.attribute)
            value, unsaved = app.view.shown((found.item.key, split.attribute))
            focused = row == self.focus_row
            answer = f"[{format_value(attribute, value)}{app.view.mark() if unsaved else ''}]"
            if focused and self.typed:
                answer = f"[{self.typed}_]"
            text.append(("▶ " if focused else "  ") + answer + " ", style="bold reverse" if focused else "")
            text.append(safe_text(split.attribute, inline=True), style="bold")
            said = " · ".join(f"{safe_text(who, inline=True)} {format_value(attribute, v)}" for who, v in split.values)
            text.append(f"  {said}\n")
            if focused:
                text.append(f"     decide: {scale_hint(attribute, width - 13)}\n", style="dim")
        self.query_one("#adj-questions", Static).update(text)
        line = app.view.line(app.quitting, app.confirming)
        saving = self.query_one("#adj-saving", Static)
        saving.display = line is not None
        if line is not None:
            saving.update(line)

    # --- keys ---------------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        app = self.adjudicating
        if app.quitting and app._quitting_key(event.key):
            event.stop()
            event.prevent_default()
            return
        character = event.character
        if not character or event.key in ("enter", "backspace", "tab", "escape"):
            return
        attribute = app.rating_task.attribute(self.found.splits[self.focus_row].attribute)
        human = protocols.of(attribute).human_input(attribute)
        if human.kind == "key" and character in human.keys:
            event.stop()
            event.prevent_default()
            self.decide(human.values[human.keys.index(character)])
        elif human.kind == "number" and (character.isdigit() or character in "-."):
            event.stop()
            event.prevent_default()
            if self._takes(attribute, character):
                self.typed += character
            self.refresh_questions()

    def _takes(self, attribute: Attribute, character: str) -> bool:
        """Whether the typed value may go on with ``character``: a sign first where the scale goes below 0, one
        decimal point on a scale that is not whole points (the hint says "type -50-50")."""
        scale, typed = attribute.scale, self.typed
        if character == "-":
            return not typed and scale.low < 0
        if character == ".":
            return "." not in typed and scale.kind != "likert"
        digits = typed.lstrip("-").partition(".")
        if digits[1]:
            return len(digits[2]) < 3
        return len(digits[0]) < len(str(int(max(abs(scale.low), abs(scale.high)))))

    def action_enter(self) -> None:
        if not self.typed:
            return
        try:
            value = float(self.typed)
        except ValueError:  # "-" or "." alone
            value = math.nan
        self.typed = ""
        attribute = self.adjudicating.rating_task.attribute(self.found.splits[self.focus_row].attribute)
        if not attribute.scale.contains(value):
            said = f"{value:g} is off the scale" if math.isfinite(value) else "type a number, then Enter"
            self.app.notify(said, severity="warning")
            self.refresh_questions()
            return
        self.decide(value)

    def action_backspace(self) -> None:
        self.typed = self.typed[:-1]
        self.refresh_questions()

    def decide(self, value: float) -> None:
        app, found = self.adjudicating, self.found
        app.save_decision(found.item.key, found.splits[self.focus_row].attribute, value)
        following = app.first_undecided(self.index, after=self.focus_row)
        if following is not None:
            self.focus_row = following
            self.typed = ""
            self.refresh_all()
        elif self.index + 1 < len(app.queue):
            self.show(self.index + 1)
        else:
            self.refresh_all()
            app.notify("That was the last item of the list: Esc shows it, q quits")

    def action_question(self, delta: int) -> None:
        self.typed = ""
        self.focus_row = (self.focus_row + delta) % len(self.found.splits)
        self.refresh_all()

    def action_item(self, delta: int) -> None:
        target = self.index + delta
        if 0 <= target < len(self.adjudicating.queue):
            self.show(target)

    def action_scroll(self, direction: int) -> None:
        pane = self.query_one("#adj-item", VerticalScroll)
        pane.scroll_to(y=pane.scroll_y + direction * pane.scrollable_content_region.height, animate=False)

    def action_list(self) -> None:
        self.dismiss(self.index)


def ratings_text(task: Task, voices: list[Voice]) -> Text:
    """Every rating in force of the item, per question: each person's, each judge's readings, any decision."""
    text = Text("Ratings\n", style="bold underline")
    if not voices:
        text.append("  none\n", style="dim")
    by_attribute: dict[str, list[Voice]] = {}
    for voice in voices:
        by_attribute.setdefault(voice.attribute, []).append(voice)
    for name in [a for a in task.attribute_names if a in by_attribute]:
        attribute = task.attribute(name)
        said: dict[str, list[str]] = {}
        for voice in by_attribute[name]:
            who = safe_text(voice.rater, inline=True) + (f" {voice.presentation}" if voice.presentation else "")
            said.setdefault(who, []).append(format_value(attribute, voice.value))
        text.append(f"  {safe_text(name, inline=True)}: ", style="bold")
        text.append(" · ".join(f"{who} {' '.join(values)}" for who, values in said.items()) + "\n")
    return text


def notes_text(notes: list[ItemNote]) -> Text:
    """Every flag, skip, comment and review in force on the item, literally."""
    text = Text("\nNotes\n", style="bold underline")
    if not notes:
        text.append("  none\n", style="dim")
    for note in notes:
        where = f" on {safe_text(note.attribute, inline=True)}" if note.attribute else ""
        text.append(f"  {safe_text(note.rater, inline=True)} {note.kind}{where}")
        text.append(f": {safe_text(note.text, inline=True)}\n" if note.text else "\n")
    return text


class AdjudicateApp(QuitWhenSaved):
    CSS_PATH = "adjudicate.tcss"
    TITLE = "tui-rater adjudicate"
    ENABLE_COMMAND_PALETTE = False

    def __init__(
        self, task: Task, adjudication: Adjudication, queue: list[Disagreement], margin: float, with_judges: bool
    ):
        super().__init__()
        self.rating_task, self.adjudication, self.queue = task, adjudication, queue
        self.margin, self.with_judges = margin, with_judges
        self.judges = None  # (ui/run.py stops an app's judges: this one has none)
        self.writer: StoreWriter | None = None
        self.closing = threading.Event()
        saved: dict[tuple[ShowingKey, str], float] = {
            (key, attribute): value for attribute, items in adjudication.decided.items() for key, value in items.items()
        }
        self.view = SaveView(saved, set(), set())

    def get_driver_class(self) -> type[Driver]:
        return hangup_safe(super().get_driver_class(), lambda: self.stop_signal is not None or self.closing.is_set())

    def get_default_screen(self) -> Screen[None]:
        return QueueScreen(id="_default")

    def on_mount(self) -> None:
        self.event_loop = asyncio.get_running_loop()
        self.writer = StoreWriter(self.adjudication.save, self._from_store_thread)
        if self.stop_signal is not None:
            self._exit_for_signal()

    def on_unmount(self) -> None:
        self.closing.set()
        self.event_loop = None
        if self.writer is not None:
            self.writer.close()

    # --- what is shown ---------------------------------------------------------------------------

    def decided(self, index: int, attribute: str) -> bool:
        return self.view.shown((self.queue[index].item.key, attribute))[0] is not None

    def first_undecided(self, index: int, after: int | None = None) -> int | None:
        """The first question in dispute not decided yet (after ``after``); with ``after`` None, 0 when all are."""
        splits = self.queue[index].splits
        start = 0 if after is None else after + 1
        for row in range(start, len(splits)):
            if not self.decided(index, splits[row].attribute):
                return row
        return 0 if after is None else None

    def queue_line(self, index: int) -> Text:
        found = self.queue[index]
        decided = sum(self.decided(index, split.attribute) for split in found.splits)
        line = Text(f"{index + 1:>3}. ")
        line.append(safe_text(found.item.id, inline=True)[:24], style="bold")
        line.append("  " + ", ".join(self.answers(split) for split in found.splits))
        line.append(f"  {decided}/{len(found.splits)} decided" if decided else "", style="bold")
        return line

    def answers(self, split: Split) -> str:
        """A question in dispute and the answers given, each once: ``grammaticality 1/3/5``, ``preference A/C``."""
        attribute = self.rating_task.attribute(split.attribute)
        given = sorted({value for _, value in split.values})
        return f"{safe_text(split.attribute, inline=True)} " + "/".join(format_value(attribute, v) for v in given)

    def status_line(self, index: int | None) -> Text:
        total = len(self.queue)
        done = sum(all(self.decided(i, s.attribute) for s in self.queue[i].splits) for i in range(total))
        head = Text(f"{safe_text(self.rating_task.name, inline=True)} · ", style="bold")
        head.append(safe_text(self.adjudication.rater.name, inline=True))
        if index is None:
            judges = " +judges" if self.with_judges else ""
            head.append(f" · {done}/{total} decided · margin {self.margin:g}{judges}", style="bold")
            head.append(" · ↑↓ Enter: open an item")
        else:
            head.append(f" · item {index + 1}/{total} · {done}/{total} decided", style="bold")
        return head

    # --- reading and saving (never SQLite on the event loop) ---------------------------------------

    @work(thread=True, group="detail", exclusive=True, exit_on_error=False)
    def read_detail(self, item_key: int) -> None:
        try:
            study = self.adjudication.study.reopen()
            try:
                self.post_message(DetailReady(item_key, *item_detail(study, item_key)))
            finally:
                study.close()
        except Exception as exc:  # the adjudicator decides on; the pane says why it is empty
            self.post_message(DetailReady(item_key, [], [], str(exc) or type(exc).__name__))

    def on_detail_ready(self, message: DetailReady) -> None:
        if isinstance(self.screen, ItemScreen):
            self.screen.on_detail_ready(message)

    def save_decision(self, item_key: int, attribute: str, value: float) -> None:
        assert self.writer is not None
        adjudication = self.adjudication
        change = Change("rating", lambda: adjudication.decide(item_key, attribute, value), item_key, attribute, value)
        self.view.add(change)
        self.writer.submit(change)

    def _from_store_thread(self, report: object) -> None:
        with contextlib.suppress(RuntimeError):  # the app has already stopped: ui/run.py reports the rest
            self.post_message(Saved(report))

    def on_saved(self, message: Saved) -> None:
        report = message.report
        if isinstance(report, Committed):
            self.view.apply(report)
            if self.quitting and not self.view.unsaved:
                self.exit()
                return
        else:
            self.view.stalled = report  # type: ignore[assignment]
        self.refresh_saving()

    def refresh_saving(self) -> None:
        screen = self.screen
        if isinstance(screen, ItemScreen):
            screen.refresh_questions()
            screen.query_one("#adj-status", Static).update(self.status_line(screen.index))
        elif isinstance(screen, QueueScreen):
            screen.refresh_list()
            line = self.view.line(self.quitting, self.confirming)
            if line is not None:
                screen.query_one("#adj-status", Static).update(line)

    def open_item(self, index: int) -> None:
        def back(_index: int | None) -> None:
            if isinstance(self.screen, QueueScreen):
                self.screen.refresh_list()
                if _index is not None:
                    self.screen.query_one(OptionList).highlighted = _index

        self.push_screen(ItemScreen(index), back)

    def request_quit(self) -> None:
        # the saving line is on the item screen: quitting from there stays there (the base pops to the list)
        if not self.view.unsaved:
            self.exit()
            return
        if self.quitting:
            self.confirming = True
        self.quitting = True
        self.refresh_saving()

    def on_key(self, event: events.Key) -> None:
        if self.quitting and not isinstance(self.screen, ItemScreen) and self._quitting_key(event.key):
            event.stop()
            event.prevent_default()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        super().notify(
            safe_text(message, inline=True),
            title=safe_text(title, inline=True),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

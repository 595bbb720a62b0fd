"""The annotation app: rate with the keyboard, at 80x24 over SSH, while judges work behind.

``make_app`` builds it for the CLI and the tests alike. Every change (rating, undo, note) is
committed by one background thread (``StoreWriter``), in order; the screen calls a change saved
only once that thread reports the commit (``SaveView``), and shows it as unsaved until then.
Widgets are updated on the UI thread only, which never waits on SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.driver import Driver
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui_rater.domain import protocols
from tui_rater.domain.display import safe_text
from tui_rater.keys import HELP
from tui_rater.store.session import AnnotationSession, OtherRating
from tui_rater.ui.quitting import QuitWhenSaved
from tui_rater.ui.render import item_text, pairwise_columns, questions_text, spa_columns
from tui_rater.ui.saving import SaveView
from tui_rater.ui.screens import HelpScreen, InputScreen, RevealScreen
from tui_rater.ui.terminal import hangup_safe
from tui_rater.ui.writer import Change, Committed, StoreWriter


@dataclass(frozen=True)
class AppOptions:
    blind: bool = True  # hide who wrote the item
    reveal: bool = False  # after each item, show the other raters (App. C.3.2)
    prompt_always: bool = False  # show the prompt for every question, not only relevance
    keymap: dict | None = None
    # judges to start in the background once the first item is on screen (their jobs are
    # enqueued off the UI thread)
    judge_specs: tuple = ()


DIGITS = "0123456789"


class SaveReport(Message):
    """From the store thread: a change was committed (``Committed``) or is waiting (``Stalled``)."""

    def __init__(self, report: object):
        super().__init__()
        self.report = report


class JudgeProgress(Message):
    """From the judges' watcher thread: their one-line summary. A newer one replaces a waiting one."""

    def __init__(self, summary: str, compact: str = ""):
        super().__init__()
        self.summary = summary
        self.compact = compact or summary  # the judges by number alone (J1), where the labels do not fit

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, JudgeProgress)


class TeamProgress(Message):
    """From the team watcher thread: the share of a team plan's work done. A newer one replaces a waiting one."""

    def __init__(self, share: float):
        super().__init__()
        self.share = share

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, TeamProgress)


class RevealReady(Message):
    def __init__(self, index: int, others: dict[str, list[OtherRating]], error: str | None = None):
        super().__init__()
        self.index, self.others, self.error = index, others, error


class RatingScreen(Screen):
    """The main screen. It takes the focused question's choice letters (pairwise a / b / t) for itself, so
    Textual leaves the app's bindings of those keys out of the footer and the key dispatch: on an A / B / tie
    screen the footer names ^a for the agreement pane, not `a`, which answers A there."""

    def check_consume_key(self, key: str, character: str | None) -> bool:
        app = self.app
        return isinstance(app, RaterApp) and character is not None and character in app.answer_letters


class RaterApp(QuitWhenSaved):
    CSS_PATH = "app.tcss"
    TITLE = "tui-rater"
    ENABLE_COMMAND_PALETTE = False

    BINDINGS = [
        Binding("1", "digit('1')", "rate", id="rate"),  # shown as the focused question's keys
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
        Binding("c", "comment", "comment", id="comment"),
        # not in the footer (the help lists it): with `c comment` and a 0-100 scale's keys, `q quit` stays in view
        Binding("g", "goto", "go", show=False, id="goto"),
        Binding("pageup", "scroll(-1)", "scroll", show=False, id="scroll_up"),
        Binding("pagedown", "scroll(1)", "scroll", show=False, id="scroll_down"),
        Binding("home", "scroll_edge(0)", "top", show=False, id="scroll_home"),
        Binding("end", "scroll_edge(1)", "end", show=False, id="scroll_end"),
        Binding("a,ctrl+a", "agreement", "stat", id="agreement"),
        Binding("question_mark", "help", "help", id="help"),
        Binding("q", "quit", "quit", id="quit"),
    ]

    def __init__(self, session: AnnotationSession, options: AppOptions | None = None, judges=None):
        super().__init__()
        self.session = session
        self.options = options or AppOptions()
        self.judges = judges  # running BackgroundJudges, or None
        self.judge_summary = judges.summary() if judges is not None else ""
        self.judge_compact = judges.summary(compact=True) if judges is not None else ""
        self.closing = threading.Event()
        self.index = session.resume_index()
        self.focus_attr = session.first_unrated_attribute(self.index)
        self.answer_letters = self.choice_letters()  # what the footer was last drawn for
        self.rate_keys = self.answer_keys()  # the footer's "1-5 rate": the focused question's keys
        self.typed = ""
        self.shown_at = time.monotonic()
        self._item_shown: object = None  # the stacked item text on screen (None: columns, or nothing yet)
        self.writer: StoreWriter | None = None
        # what is in the file (changed only by reported commits) and what is not yet
        self.view = SaveView(session.saved_values(), set(session.skipped), set(session.flagged))
        # this session's ratings, newest last, as undo will take them back: (index, attribute, value before)
        self.undoable: list[tuple[int, str, float | None]] = []
        # showing key -> index (an item's key finds its first showing; a retest has a key of its own)
        self.index_of = {session.key(i): i for i in range(len(session.items))}
        # items fully rated in the file, kept up to date on each commit (no recount over every item per key)
        self.completed = {i for i in range(len(session.items)) if self.saved_complete(i)}
        # item key -> this annotator's comment on it, as typed (``c`` shows it to edit)
        self.comments = {item_key: text for item_key, (_id, text) in session.comments.items()}
        # a team plan: the team's share done (from the watcher thread); dynamic items whose lease is being
        # asked for, and those K others got first (never shown again)
        self.team_share: float | None = None
        self.claiming: set[int] = set()
        self.deferred: list[float] = []  # answers typed while a lease was being asked for
        self.taken: set[int] = set(session.taken)

    def get_driver_class(self) -> type[Driver]:
        # a dropped SSH connection (SIGHUP, then SIGCONT) must not keep the process from exiting
        return hangup_safe(super().get_driver_class(), self.is_closing)

    def is_closing(self) -> bool:
        return self.stop_signal is not None or self.closing.is_set()

    # --- layout --------------------------------------------------------------------------

    def get_default_screen(self) -> Screen:
        return RatingScreen(id="_default")

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        with VerticalScroll(id="item", can_focus=False):
            yield Static(id="item-text")
        yield Static(id="saving")
        yield Static(id="end")  # the task's end: what is done, what next
        yield Static(id="questions")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.event_loop = asyncio.get_running_loop()
        self.writer = StoreWriter(self.session.save, self._from_store_thread)
        if self.stop_signal is not None:  # it came before the loop ran
            self._exit_for_signal()
        if self.options.keymap:
            self.set_keymap(self.keymap_here())
        self.refresh_all()
        # after the first screen: import the statistics stack and start the judges off the UI thread,
        # so the first `a` and a large study's judge jobs never freeze a keypress
        self.call_after_refresh(self._in_background)
        if self.session.team_plan is not None:
            self.call_after_refresh(self._watch_team)
        self._claim(self.index)
        ready_file = os.environ.get("TUI_RATER_READY_FILE")
        if ready_file:  # for scripts timing start-up: when the first item is on screen
            self.call_after_refresh(lambda: Path(ready_file).write_text(f"{time.time()}\n"))

    @work(thread=True, group="background", exit_on_error=False)
    def _in_background(self) -> None:
        import tui_rater.service.live  # noqa: F401 - polars, numpy, scipy: warmed for the agreement pane

        if self.options.judge_specs and self.judges is None:
            from tui_rater.service.judging import BackgroundJudges

            study = self.session.study.reopen()
            try:
                self.judges = BackgroundJudges(study, self.task_.name, list(self.options.judge_specs))
            finally:
                study.close()
        while self.judges is not None:  # until the screen closes (a stopped judge is shown as stopped)
            self.post_message(JudgeProgress(self.judges.summary(), self.judges.summary(compact=True)))
            if self.closing.wait(1.0):
                break

    @work(thread=True, group="team", exit_on_error=False)
    def _watch_team(self) -> None:
        from tui_rater.store.team import team_share

        plan = self.session.team_plan
        assert plan is not None
        study = self.session.study.reopen()
        try:
            while True:  # the others' ratings come from their own processes: read again every few seconds
                self.post_message(TeamProgress(team_share(study, plan)))
                if self.closing.wait(2.0):
                    break
        finally:
            study.close()

    def on_team_progress(self, message: TeamProgress) -> None:
        self.team_share = message.share
        self.refresh_status()

    def _claim(self, index: int) -> None:
        """Dynamic mode: ask for the lease on the item now shown; rating waits for the answer (milliseconds),
        and an item K others got first is left for the next one."""
        session = self.session
        key = session.items[index].key
        if not session.dynamic or key in session.gold or key in self.claiming:
            return
        self.claiming.add(key)

        def done(granted: bool) -> None:
            self.claiming.discard(key)
            typed, self.deferred = self.deferred, []
            if granted:
                for value in typed:  # the keys typed while the lease was asked for
                    self.answer(value)
                return
            self.taken.add(key)
            self.notify(f"item {index + 1} already has {session.per_item} people on it: on to the next one")
            if self.index == index:
                self.show_item(index + 1 if index + 1 < len(session.items) else index)

        self.save(Change("lease", lambda: session.claim(index), session.key(index), done=done))

    def on_judge_progress(self, message: JudgeProgress) -> None:
        self.judge_summary, self.judge_compact = message.summary, message.compact
        self.refresh_status()

    def on_unmount(self) -> None:
        self.closing.set()
        self.event_loop = None
        if self.writer is not None:
            self.writer.close()  # it commits what is queued, then ends; ui/run.py waits for that
        if self.judges is not None:
            self.judges.interrupt()  # the workers stop (a local model between two decode steps); see ui/run.py

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        if action in self._rating_actions and self.quitting:
            return False  # quitting: nothing new to save
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
            "scroll_edge",
            "help",
            "agreement",
        }
    )

    # --- state helpers -------------------------------------------------------------------

    @property
    def task_(self):
        return self.session.task

    def value(self, index: int, attribute: str) -> float | None:
        """The value on screen: the last one typed, saved or not."""
        return self.view.shown((self.session.key(index), attribute))[0]

    def shown(self, index: int, attribute: str) -> tuple[float | None, str]:
        """The value on screen and its mark: "" when it is in the file, else "…" (or "!" while saves fail)."""
        value, unsaved = self.view.shown((self.session.key(index), attribute))
        return value, self.view.mark() if unsaved else ""

    def item_complete(self, index: int) -> bool:
        return all(self.value(index, a) is not None for a in self.task_.attribute_names)

    def saved_complete(self, index: int) -> bool:
        key = self.session.key(index)
        return all((key, a) in self.view.saved for a in self.task_.attribute_names)

    def showable(self, index: int) -> bool:
        """A retest showing only once its item is rated (on screen): nobody is asked to repeat what they
        have not rated. (Dictionary look-ups only: this runs on every move.)"""
        if self.session.items[index].key in self.taken:
            return False
        if not self.session.is_retest[index]:
            return True
        key = self.session.items[index].key
        return all(self.view.shown((key, a))[0] is not None for a in self.task_.attribute_names)

    def first_unrated(self, index: int) -> int:
        for position, name in enumerate(self.task_.attribute_names):
            if self.value(index, name) is None:
                return position
        return 0

    def refresh_all(self) -> None:
        self.refresh_item()
        self.refresh_questions()
        self.refresh_status()
        self.refresh_saving()

    def refresh_item(self, width: int | None = None) -> None:
        item = self.session.items[self.index]
        attribute = self.task_.attributes[self.focus_attr]
        width = self.size.width if width is None else width
        layout = protocols.of(attribute).layout(attribute)
        if layout == "pair" and width >= 100:
            # Chen et al.'s pairwise comparison: the two texts side by side when there is room
            self.query_one("#item-text", Static).update(pairwise_columns(self.task_, item, attribute))
            self.item_layout, self._item_shown = "columns", None
            return
        if layout == "writers":
            columns = spa_columns(self.task_, item, width)
            if columns is not None:  # SPA: each writer's continuations in a column of its own
                self.query_one("#item-text", Static).update(columns)
                self.item_layout, self._item_shown = "columns", None
                return
        self.item_layout = "stacked"
        text = item_text(
            self.task_, item, attribute, show_system=not self.options.blind, prompt_always=self.options.prompt_always
        )
        if text == self._item_shown:  # the next question shows the same fields: no new layout (it costs)
            return
        self._item_shown = text
        self.query_one("#item-text", Static).update(text)

    def on_resize(self, event) -> None:
        attribute = self.task_.attributes[self.focus_attr]
        if protocols.of(attribute).layout(attribute) != "stacked":
            self.refresh_item(event.size.width)
        # the answer keys' line is cut to the width, and the questions that fit depend on it: the event's width, as
        # the app's size is updated only after this handler (it cut the line to the size before the resize)
        self.refresh_questions(event.size.width)

    def choice_letters(self) -> tuple[str, ...]:
        """The focused question's answer keys that are letters (pairwise a / b / t): they answer it, ahead of
        the app's bindings of the same keys (``on_key``, ``RatingScreen``)."""
        attribute = self.task_.attributes[self.focus_attr]
        human = protocols.of(attribute).human_input(attribute)
        return tuple(key for key in human.keys if not key.isdigit()) if human.kind == "key" else ()

    def answer_keys(self) -> str:
        """The focused question's answer keys in a few characters, as the footer and messages name them: "1-5",
        "0-100" (typed, then Enter), "a/b/t"."""
        attribute = self.task_.attributes[self.focus_attr]
        human = protocols.of(attribute).human_input(attribute)
        if human.kind == "number":
            return f"{attribute.scale.low:g}-{attribute.scale.high:g}"
        keys = human.keys
        numbers = [int(k) for k in keys if k.isdigit()]
        consecutive = len(numbers) == len(keys) > 2 and numbers == list(range(numbers[0], numbers[0] + len(keys)))
        return f"{keys[0]}-{keys[-1]}" if consecutive else "/".join(keys)

    def keymap_here(self) -> dict[str, str]:
        """The config file's [keys] less the focused question's choice letters. ``RatingScreen`` keeps those from
        the default bindings, but Textual applies the keymap after that filter: a remapped key (``next_attribute =
        "down,tab,t"``, a priority binding) took `t` from the tie, and a remapped `b` showed in the footer."""
        keymap = {}
        for binding_id, keys in (self.options.keymap or {}).items():
            kept = [key for key in keys.split(",") if key.strip() not in self.answer_letters]
            if kept:  # an action whose every key answers here keeps its default keys (the filter applies to those)
                keymap[binding_id] = keys if len(kept) == len(keys.split(",")) else ",".join(kept)
        return keymap

    def refresh_questions(self, screen_width: int | None = None) -> None:
        if self.choice_letters() != self.answer_letters:  # a task mixing pairwise and other questions
            self.answer_letters = self.choice_letters()
            self.rate_keys = self.answer_keys()
            if self.options.keymap:
                self.set_keymap(self.keymap_here())  # (refreshes the bindings)
            else:
                self.refresh_bindings()  # the footer: `a` or ^a for the agreement pane
        elif self.answer_keys() != self.rate_keys:  # questions on different scales: the footer names this one's
            self.rate_keys = self.answer_keys()
            self.refresh_bindings()
        shown = {a: self.shown(self.index, a) for a in self.task_.attribute_names}
        values = {a: value for a, (value, _mark) in shown.items()}
        marks = {a: mark for a, (_value, mark) in shown.items() if mark}
        widget = self.query_one("#questions", Static)
        # as many questions as the pane holds whole, so "… N questions below" stays in view (SPA's nine
        # questions wrap to two lines each at 80 columns: six overflowed the pane and hid the count)
        height = widget.styles.max_height.value if widget.styles.max_height is not None else 12
        width = max(20, (screen_width or self.size.width or 80) - 2)
        for window in range(6, 0, -1):
            text = questions_text(
                self.task_, values, self.focus_attr, self.typed, window=window, marks=marks, width=width
            )
            if len(text.wrap(self.console, width)) <= height:
                break
        widget.update(text)

    def refresh_status(self) -> None:
        session = self.session
        total = len(session.items)
        done = len(self.completed)  # in the file; items typed but not saved are counted apart
        saving = sum(
            1
            for key in self.view.unsaved_keys()
            if self.index_of.get(key) is not None
            and self.index_of[key] not in self.completed
            and self.item_complete(self.index_of[key])
        )
        key = session.key(self.index)  # a retest showing has marks of its own: it is not marked as seen
        unsaved_notes = self.view.unsaved_notes(key)
        marks = []
        for note, word in (("flag", "flagged"), ("skip", "skipped")):
            if note == "flag":  # taken back with f again: flagged as the last unsaved flag / unflag says
                if self.view.is_flagged(key):
                    pending = "flag" in unsaved_notes or "unflag" in unsaved_notes
                    marks.append(word + (self.view.mark() if pending else ""))
            elif key in self.view.skipped:
                marks.append(word)
            elif note in unsaved_notes:
                marks.append(word + self.view.mark())
        head = Text()
        task_name, annotator = safe_text(session.task.name, inline=True), safe_text(session.annotator, inline=True)
        head.append(f"{task_name} · {annotator} · item {self.index + 1}/{total} ", style="bold")
        tail = Text(f" {done}/{total} rated")
        if self.team_share is not None:  # (dynamic mode: the items others got first are not yours to count)
            yours = total - sum(1 for i in range(total) if session.items[i].key in self.taken) if self.taken else total
            tail = Text(f" your {done}/{yours} · team {self.team_share:.0%}")
        if saving:
            tail.append(f" (+{saving} saving{self.view.mark()})", style="bold")
        if marks:
            tail.append(" · " + ", ".join(marks), style="bold")
        if self.judge_summary:  # judge labels, server errors; the labels give way to the judges' numbers first
            summary = Text(" · " + safe_text(self.judge_summary, inline=True))
            if self.size.width and head.cell_len + tail.cell_len + summary.cell_len > self.size.width - 2:
                summary = Text(" · " + safe_text(self.judge_compact or self.judge_summary, inline=True))
            tail.append_text(summary)
        # the bar gives way next: a stopped judge must stay readable at 80 columns
        room = self.size.width - 2 - head.cell_len - tail.cell_len if self.size.width else 16
        width = max(0, min(16, room))
        filled = int(width * done / total) if total else 0
        head.append("█" * filled + "░" * (width - filled))
        self.query_one("#status", Static).update(head + tail)
        self.refresh_end(done + saving)

    def refresh_end(self, rated: int) -> None:
        """Reaching the end of the task says so on screen, with what comes next (a newcomer at the last item
        saw the same item stay put, and nothing else)."""
        total, last = len(self.session.items), len(self.session.items) - 1
        widget = self.query_one("#end", Static)
        line = None
        if total and rated >= total:
            line = (
                f"Done: all {total} items of {safe_text(self.task_.name, inline=True)} are rated. Next: a shows the "
                "agreement; q quits and prints the report and judge commands."
            )
        elif self.index == last and self.item_complete(last):
            first = next((i for i in range(total) if not self.item_complete(i)), None)
            where = f"; the first is item {first + 1} (g goes to it)" if first is not None else ""
            line = f"That was the last item: {total - rated} of {total} are not rated yet{where}. q: quit"
        widget.display = line is not None
        if line is not None:
            widget.update(Text(line, style="bold"))

    def refresh_saving(self) -> None:
        line = self.view.line(self.quitting, self.confirming)
        widget = self.query_one("#saving", Static)
        widget.display = line is not None
        if line is not None:
            widget.update(line)

    # --- saving ----------------------------------------------------------------------------

    def save(self, change: Change) -> None:
        """Queue a change for the store thread; the screen shows it as unsaved until it is committed."""
        assert self.writer is not None
        self.view.add(change)
        self.writer.submit(change)

    def save_rating(
        self, index: int, attribute: str, value: float, *, seconds: float | None = None, revision: bool = False
    ) -> None:
        """A rating; ``revision``: a changed mind in reveal mode, linked to the rating it revises."""
        session, item_key = self.session, self.session.key(index)

        def run() -> int:
            # on the store thread, after every earlier change: the rating in force is committed by now
            revises = session.rating_id(index, attribute) if revision else None
            return session.rate(index, attribute, value, seconds=seconds, revises=revises)

        self.undoable.append((index, attribute, self.value(index, attribute)))
        self.save(Change("rating", run, item_key, attribute, value))

    def save_note(self, index: int, note: str, run, done=None) -> None:
        self.save(Change("note", run, self.session.key(index), note=note, done=done))

    def _from_store_thread(self, report: object) -> None:
        with contextlib.suppress(RuntimeError):  # the app has already stopped: ui/run.py reports the rest
            self.post_message(SaveReport(report))

    def on_save_report(self, message: SaveReport) -> None:
        report = message.report
        if isinstance(report, Committed):
            self.view.apply(report)
            key = report.change.item_key
            index = self.index_of.get(key) if key is not None else None
            if index is not None:
                (self.completed.add if self.saved_complete(index) else self.completed.discard)(index)
            if report.change.done is not None:
                report.change.done(report.result)
            if self.quitting and not self.view.unsaved:
                self.exit()
                return
        else:
            self.view.stalled = report  # type: ignore[assignment]
        self.refresh_questions()
        self.refresh_status()
        self.refresh_saving()
        if isinstance(self.screen, RevealScreen):
            self.screen.refresh_text()

    # --- moving --------------------------------------------------------------------------

    def show_item(self, index: int, attribute: int | None = None, direction: int = 1) -> None:
        self.index = self._nearest_showable(max(0, min(index, len(self.session.items) - 1)), direction)
        self.focus_attr = self.first_unrated(self.index) if attribute is None else attribute
        self.typed = ""
        self.shown_at = time.monotonic()
        self.query_one("#item", VerticalScroll).scroll_home(animate=False)
        self.refresh_all()
        self._claim(self.index)

    def _nearest_showable(self, index: int, direction: int) -> int:
        """``index``, or the nearest showable showing from it in ``direction`` (else the other way)."""
        step = 1 if direction >= 0 else -1
        for way in (step, -step):
            i = index
            while 0 <= i < len(self.session.items):
                if self.showable(i):
                    return i
                i += way
        return index

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
        self.show_item(self.index + delta, direction=delta)

    def action_scroll(self, direction: int) -> None:
        # one page per key, each from where the last one left the text: Textual's scroll_page_down reads
        # the offset at the key and moves after the next refresh, so a burst of PageDowns (key repeat
        # over SSH arrives in bunches) moved one page in all. Queued behind show_item's scroll_home.
        pane = self.query_one("#item", VerticalScroll)

        def page() -> None:
            step = direction * pane.scrollable_content_region.height
            pane.scroll_to(y=pane.scroll_y + step, animate=False, immediate=True)

        pane.call_after_refresh(page)

    def action_scroll_edge(self, end: int) -> None:
        # a 100,000-character story is some 130 pages: Home / End go to its top / end at once (queued like a
        # page, behind show_item's scroll_home, so End in the burst that moved on reaches the new story's end)
        pane = self.query_one("#item", VerticalScroll)
        pane.call_after_refresh(
            lambda: pane.scroll_to(y=pane.max_scroll_y if end else 0, animate=False, immediate=True)
        )

    # --- rating --------------------------------------------------------------------------

    def action_digit(self, digit: str) -> None:
        attribute = self.task_.attributes[self.focus_attr]
        human = protocols.of(attribute).human_input(attribute)
        if human.kind == "number":
            if len(self.typed) < len(str(int(attribute.scale.high))):
                self.typed += digit
            self.refresh_questions()
        elif digit in human.keys:
            self.answer(human.values[human.keys.index(digit)])
        else:  # a digit that answers nothing here: say so (a silent key reads as a broken one)
            self.bell()
            self.notify(f"{digit} is not on this scale ({self.answer_keys().replace('-', '–')})", timeout=3)

    def action_enter(self) -> None:
        if not self.typed:
            return
        value = float(self.typed)
        self.typed = ""
        if not self.task_.attributes[self.focus_attr].scale.contains(value):
            self.notify(f"{value:g} is off the scale", severity="warning")
            self.refresh_questions()
            return
        self.answer(value)

    def action_backspace(self) -> None:
        self.typed = self.typed[:-1]
        self.refresh_questions()

    def on_key(self, event) -> None:
        if self.quitting and self._quitting_key(event.key):
            event.stop()
            event.prevent_default()
            return
        # pairwise choices are answered with a / b / t, ahead of the app's own bindings
        if self.screen is not self.screen_stack[0]:
            return
        attribute = self.task_.attributes[self.focus_attr]
        human = protocols.of(attribute).human_input(attribute)
        character = event.character
        if character and character in self.choice_letters():
            event.stop()
            event.prevent_default()
            self.answer(human.values[human.keys.index(character)])

    def answer(self, value: float) -> None:
        """The focused question answered: save it, then on to the next question or item at once
        (the screen shows the rating as unsaved until its commit is reported).

        A correction of a complete item moves to the next question, and only its last question moves on
        (README: "after the last question the next item appears"): an annotator fixing two questions is not
        thrown onto the next item after the first, nor shown the reveal again after each."""
        index, position = self.index, self.focus_attr
        key = self.session.items[index].key
        if key in self.claiming:  # dynamic mode: answered once the lease is ours (milliseconds), in order
            self.deferred.append(value)
            return
        if key in self.taken:
            self.notify(f"item {index + 1} already has {self.session.per_item} people on it")
            return
        attribute = self.task_.attributes[position].name
        correcting = self.item_complete(index)
        now = time.monotonic()
        seconds, self.shown_at = now - self.shown_at, now
        self.save_rating(index, attribute, value, seconds=round(seconds, 3))
        if correcting and position < len(self.task_.attributes) - 1:
            self.action_attribute(1)
            self.refresh_status()
        elif self.item_complete(index):
            if self.options.reveal:
                self.refresh_questions()
                self.refresh_status()
                self.open_reveal(index)
            else:
                self.show_item(index + 1 if index + 1 < len(self.session.items) else index)
        else:
            self.focus_attr = self.first_unrated(index)
            self.refresh_item()
            self.refresh_questions()
            self.refresh_status()

    @work(thread=True, group="reveal", exit_on_error=False)
    def open_reveal(self, index: int) -> None:
        # read on a connection of its own: the reveal need not wait behind saves held up by a lock
        try:
            study = self.session.study.reopen()
            try:
                self.post_message(RevealReady(index, self.session.others(index, study)))
            finally:
                study.close()
        except Exception as exc:  # the person rates on; the reveal says why it is empty
            self.post_message(RevealReady(index, {}, str(exc)))

    def on_reveal_ready(self, message: RevealReady) -> None:
        index = message.index
        if message.error:
            self.notify(f"Could not read the other ratings: {message.error}", severity="error")

        def after(_=None) -> None:
            self.show_item(index + 1 if index + 1 < len(self.session.items) else index)

        screen = RevealScreen(
            self.task_, index, message.others, self.shown, self.save_rating, self.save_review, self.review_mark
        )
        self.push_screen(screen, after)

    def save_review(self, index: int, attribute: str, verdict: str, comment: str = "") -> None:
        session, item_key = self.session, self.session.key(index)
        run = lambda: session.review(index, attribute, verdict, comment)
        self.save(Change("note", run, item_key, attribute, note="review"))

    def review_mark(self, index: int, attribute: str) -> str:
        key = self.session.key(index)
        unsaved = any(c.note == "review" and c.item_key == key and c.attribute == attribute for c in self.view.unsaved)
        return self.view.mark() if unsaved else ""

    def action_undo(self) -> None:
        if not self.undoable:
            self.notify("Nothing to undo in this session")
            return
        index, attribute, before = self.undoable.pop()
        session = self.session

        def run():
            last = session.undo()  # the same rating: both stacks grow and shrink in the same order
            if last is None:
                return None
            key = (session.key(last.item_index), last.attribute)
            return key, session.value(last.item_index, last.attribute)

        self.save(Change("undo", run, self.session.key(index), attribute, before))
        self.show_item(index, self.task_.attribute_names.index(attribute))

    # --- notes ---------------------------------------------------------------------------

    def action_skip(self) -> None:
        index, session = self.index, self.session
        self.save_note(index, "skip", lambda: session.note(index, "skip"))
        self.show_item(index + 1)

    def action_flag(self) -> None:
        """Flag the item; on a flagged item, take the flag back (kept in the file, marked taken back)."""
        index, session = self.index, self.session
        if self.view.is_flagged(session.key(index)):
            done = lambda _: self.notify("Flag taken back (f flags it again)")
            self.save_note(index, "unflag", lambda: session.unflag(index), done)
        else:
            self.save_note(index, "flag", lambda: session.note(index, "flag"), lambda _: self.notify("Flagged"))
        self.refresh_status()

    def action_comment(self) -> None:
        """A comment on the item; on an item with one, it is shown to edit (the edit replaces it, kept in the file;
        an empty line removes it)."""
        index, session = self.index, self.session
        item_key = session.items[index].key
        current = self.comments.get(item_key, "")

        def save(text: str | None) -> None:
            if text is None or text == current:
                return  # Esc, or nothing changed
            self.comments[item_key] = text
            said = "Comment removed" if not text else "Comment changed" if current else "Comment saved"
            self.save_note(index, "comment", lambda: session.comment(index, text), lambda _: self.notify(said))

        if current:
            prompt = "Your comment on this item (edit it; an empty line removes it, Esc keeps it):"
            self.push_screen(InputScreen(prompt, value=current), save)
        else:
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

        def jump(index: int | None) -> None:
            if index is not None:
                self.show_item(index)

        session = self.session  # an item's key finds its first showing
        self.push_screen(AgreementScreen(session.study, self.task_.name, self.index_of.get, session.annotator), jump)

    def action_help(self) -> None:
        rows = [(self._keys_for(binding_id), description) for binding_id, description in HELP]
        self.push_screen(HelpScreen(rows))

    # --- what reaches the terminal ------------------------------------------------------------

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity="information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notification (the app's and its screens') is literal: messages quote item ids,
        typed text and error messages, so no markup is read and no escape reaches the terminal."""
        super().notify(
            safe_text(message, inline=True),
            title=safe_text(title, inline=True),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

    def get_key_display(self, binding: Binding) -> str:
        if binding.id == "rate" and "rate" not in (self.options.keymap or {}):
            return self.rate_keys  # the focused question's keys, not every digit: "1-5 rate" on a 1-5 scale
        # keys may come from the config file's [keys] table (data): shown literally in the footer
        return safe_text(super().get_key_display(binding), inline=True)

    def _keys_for(self, binding_id: str) -> str:
        """Every key of an action, as the help screen names them ("↓ tab"): the footer's short forms ("↑↓" for
        the next question) would name keys that do something else, and leave out tab, n, p."""
        binding = next((b for b in self.BINDINGS if isinstance(b, Binding) and b.id == binding_id), None)
        keys = (self.options.keymap or {}).get(binding_id)
        if keys is None:
            if binding is None:
                return "?"
            if binding_id == "rate":  # one binding per digit: the focused question's keys name the family
                return self.rate_keys
            keys = binding.key
        return " ".join(self.get_key_display(Binding(key.strip(), "")) for key in keys.split(",") if key.strip())


def make_app(session: AnnotationSession, options: AppOptions | None = None, judges=None) -> RaterApp:
    """The one factory for the CLI and the tests."""
    return RaterApp(session, options, judges)

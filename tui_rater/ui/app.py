"""The annotation app: rate with the keyboard, at 80x24 over SSH, while judges work behind.

``make_app`` builds it for the CLI and the tests alike. Every change (rating, undo, note) is
committed by one background thread (``StoreWriter``), in order; the screen calls a change saved
only once that thread reports the commit (``RatingState``, ``SaveView``), and shows it as unsaved
until then. Widgets (``ui/widgets/``) are updated on the UI thread only, which never waits on SQLite;
the app keeps where the person is (item, question, digits typed) and hands the widgets what to draw.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui_rater.domain import protocols
from tui_rater.domain.display import safe_text
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.keys import HELP
from tui_rater.store.session import AnnotationSession
from tui_rater.ui.answers import answer_keys, choice_letters, keymap_without
from tui_rater.ui.messages import JudgeProgress, RevealReady, SaveReport, TeamProgress
from tui_rater.ui.quitting import QuitWhenSaved
from tui_rater.ui.saving import SaveView
from tui_rater.ui.screens import HelpScreen, InputScreen, RatingScreen, RevealScreen
from tui_rater.ui.state import RatingState
from tui_rater.ui.terminal import hangup_safe
from tui_rater.ui.widgets import EndLine, ItemPane, QuestionsPane, SavingLine, StatusLine
from tui_rater.ui.writer import Change, Committed, Stalled, StoreWriter

if TYPE_CHECKING:  # the judges (and their model libraries) are imported off the UI thread, once the screen is up
    from tui_rater.service.judging import BackgroundJudges

# (kept importable from here, where they were defined before the widgets and messages had modules of their own)
__all__ = ["AppOptions", "JudgeProgress", "RaterApp", "RevealReady", "SaveReport", "TeamProgress", "make_app"]


@dataclass(frozen=True)
class AppOptions:
    blind: bool = True  # hide who wrote the item
    reveal: bool = False  # after each item, show the other raters (App. C.3.2)
    prompt_always: bool = False  # show the prompt for every question, not only relevance
    keymap: dict[str, str] | None = None
    # judges to start in the background once the first item is on screen (their jobs are
    # enqueued off the UI thread)
    judge_specs: tuple[Any, ...] = ()


DIGITS = "0123456789"


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

    def __init__(
        self, session: AnnotationSession, options: AppOptions | None = None, judges: BackgroundJudges | None = None
    ):
        super().__init__()
        self.session = session
        self.options = options or AppOptions()
        self.judges = judges  # running BackgroundJudges, or None
        self.judge_summary = judges.summary() if judges is not None else ""
        self.judge_compact = judges.summary(compact=True) if judges is not None else ""
        self.closing = threading.Event()
        # the ratings, notes, comments and undo on screen, kept once (the widgets and screens read them there)
        self.state = RatingState(session)
        self.view: SaveView = self.state.view
        # where the person is: the showing, the focused question, the digits typed for it
        self.index = session.resume_index()
        self.focus_attr = session.first_unrated_attribute(self.index)
        self.typed = ""
        self.shown_at = time.monotonic()
        self.answer_letters = choice_letters(self.attribute)  # what the footer was last drawn for
        self.rate_keys = answer_keys(self.attribute)  # the footer's "1-5 rate": the focused question's keys
        self.writer: StoreWriter | None = None
        self.team_share: float | None = None  # a team plan: the team's share done (from the watcher thread)

    def get_driver_class(self) -> type[Driver]:
        # a dropped SSH connection (SIGHUP, then SIGCONT) must not keep the process from exiting
        return hangup_safe(super().get_driver_class(), self.is_closing)

    def is_closing(self) -> bool:
        return self.stop_signal is not None or self.closing.is_set()

    @property
    def task_(self) -> Task:
        return self.session.task

    @property
    def attribute(self) -> Attribute:
        """The focused question."""
        return self.task_.attributes[self.focus_attr]

    @property
    def item_layout(self) -> str:
        """How the item is laid out on screen: "stacked" or "columns"."""
        return self.query_one("#item", ItemPane).shown_layout

    def value(self, index: int, attribute: str) -> float | None:
        return self.state.value(index, attribute)

    def shown(self, index: int, attribute: str) -> tuple[float | None, str]:
        return self.state.shown(index, attribute)

    # --- layout and lifetime --------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return RatingScreen(lambda: self.answer_letters, id="_default")

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with ItemPane(id="item", can_focus=False):
            yield Static(id="item-text")
        yield SavingLine(id="saving")
        yield EndLine(id="end")  # the task's end: what is done, what next
        yield QuestionsPane(id="questions")
        yield Footer(compact=True)

    def on_mount(self) -> None:
        self.event_loop = asyncio.get_running_loop()
        self.writer = StoreWriter(self.session.save, self._from_store_thread)
        if self.stop_signal is not None:  # it came before the loop ran
            self._exit_for_signal()
        if self.options.keymap:
            self.set_keymap(keymap_without(self.options.keymap, self.answer_letters))
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

    def on_unmount(self) -> None:
        self.closing.set()
        self.event_loop = None
        if self.writer is not None:
            self.writer.close()  # it commits what is queued, then ends; ui/run.py waits for that
        if self.judges is not None:
            self.judges.interrupt()  # the workers stop (a local model between two decode steps); see ui/run.py

    # --- background threads -------------------------------------------------------------------

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

    def on_judge_progress(self, message: JudgeProgress) -> None:
        self.judge_summary, self.judge_compact = message.summary, message.compact
        self.refresh_status()

    def _claim(self, index: int) -> None:
        """Dynamic mode: ask for the lease on the item now shown; rating waits for the answer (milliseconds),
        and an item K others got first is left for the next one."""
        session, state = self.session, self.state
        key = session.items[index].key
        if not session.dynamic or key in session.gold or key in state.claiming:
            return
        state.claiming.add(key)

        def done(granted: bool) -> None:
            state.claiming.discard(key)
            typed, state.deferred = state.deferred, []
            if granted:
                for value in typed:  # the keys typed while the lease was asked for
                    self.answer(value)
                return
            state.taken.add(key)
            self.notify(f"item {index + 1} already has {session.per_item} people on it: on to the next one")
            if self.index == index:
                self.show_item(index + 1 if index + 1 < len(session.items) else index)

        self.save(Change("lease", lambda: session.claim(index), session.key(index), done=done))

    # --- which keys work now ------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
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

    # --- drawing -------------------------------------------------------------------------------

    def refresh_all(self) -> None:
        self.refresh_item()
        self.refresh_questions()
        self.refresh_status()
        self.refresh_saving()

    def refresh_item(self, width: int | None = None) -> None:
        self.query_one("#item", ItemPane).show(
            self.task_,
            self.session.items[self.index],
            self.attribute,
            width=self.size.width if width is None else width,
            blind=self.options.blind,
            prompt_always=self.options.prompt_always,
        )

    def on_resize(self, event: events.Resize) -> None:
        if protocols.of(self.attribute).layout(self.attribute) != "stacked":
            self.refresh_item(event.size.width)
        # the answer keys' line is cut to the width, and the questions that fit depend on it: the event's width, as
        # the app's size is updated only after this handler (it cut the line to the size before the resize)
        self.refresh_questions(event.size.width)

    def refresh_questions(self, screen_width: int | None = None) -> None:
        letters, keys = choice_letters(self.attribute), answer_keys(self.attribute)
        if letters != self.answer_letters:  # a task mixing pairwise and other questions
            self.answer_letters, self.rate_keys = letters, keys
            if self.options.keymap:
                self.set_keymap(keymap_without(self.options.keymap, letters))  # (refreshes the bindings)
            else:
                self.refresh_bindings()  # the footer: `a` or ^a for the agreement pane
        elif keys != self.rate_keys:  # questions on different scales: the footer names this one's
            self.rate_keys = keys
            self.refresh_bindings()
        shown = {a: self.state.shown(self.index, a) for a in self.task_.attribute_names}
        width = max(20, (screen_width or self.size.width or 80) - 2)
        self.query_one("#questions", QuestionsPane).show(self.task_, shown, self.focus_attr, self.typed, width=width)

    def refresh_status(self) -> None:
        judges = (self.judge_summary, self.judge_compact)
        status = self.query_one("#status", StatusLine)
        status.show(self.state, self.index, width=self.size.width, team_share=self.team_share, judges=judges)
        self.query_one("#end", EndLine).show(self.state, self.index, len(self.state.completed) + self.state.saving())

    def refresh_saving(self) -> None:
        self.query_one("#saving", SavingLine).show(self.view.line(self.quitting, self.confirming))

    # --- saving ----------------------------------------------------------------------------------

    def save(self, change: Change) -> None:
        """Queue a change for the store thread; the screen shows it as unsaved until it is committed."""
        assert self.writer is not None
        self.state.submit(change)
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

        change = Change("rating", run, item_key, attribute, value)
        assert self.writer is not None
        self.state.submit_rating(index, change)
        self.writer.submit(change)

    def save_note(
        self, index: int, note: str, run: Callable[[], object], done: Callable[[Any], None] | None = None
    ) -> None:
        self.save(Change("note", run, self.session.key(index), note=note, done=done))

    def save_review(self, index: int, attribute: str, verdict: str, comment: str = "") -> None:
        session, item_key = self.session, self.session.key(index)
        run = lambda: session.review(index, attribute, verdict, comment)
        self.save(Change("note", run, item_key, attribute, note="review"))

    def _from_store_thread(self, report: object) -> None:
        if not isinstance(report, Committed | Stalled):
            return
        with contextlib.suppress(RuntimeError):  # the app has already stopped: ui/run.py reports the rest
            self.post_message(SaveReport(report))

    def on_save_report(self, message: SaveReport) -> None:
        report = message.report
        if isinstance(report, Committed):
            self.state.committed(report)
            if report.change.done is not None:
                report.change.done(report.result)
            if self.quitting and not self.view.unsaved:
                self.exit()
                return
        else:
            self.view.stalled = report
        self.refresh_questions()
        self.refresh_status()
        self.refresh_saving()
        if isinstance(self.screen, RevealScreen):
            self.screen.refresh_text()

    # --- moving --------------------------------------------------------------------------------

    def show_item(self, index: int, attribute: int | None = None, direction: int = 1) -> None:
        self.index = self._nearest_showable(max(0, min(index, len(self.session.items) - 1)), direction)
        self.focus_attr = self.state.first_unrated(self.index) if attribute is None else attribute
        self.typed = ""
        self.shown_at = time.monotonic()
        self.query_one("#item", ItemPane).scroll_home(animate=False)
        self.refresh_all()
        self._claim(self.index)

    def _nearest_showable(self, index: int, direction: int) -> int:
        """``index``, or the nearest showable showing from it in ``direction`` (else the other way)."""
        step = 1 if direction >= 0 else -1
        for way in (step, -step):
            i = index
            while 0 <= i < len(self.session.items):
                if self.state.showable(i):
                    return i
                i += way
        return index

    def action_attribute(self, delta: int) -> None:
        self.typed = ""
        before = self.attribute.shows
        self.focus_attr = (self.focus_attr + delta) % len(self.task_.attributes)
        if before or self.attribute.shows:
            self.refresh_item()  # the prompt appears only with the question that shows it
            if self.attribute.shows:
                self.query_one("#item", ItemPane).scroll_end(animate=False)
        self.refresh_questions()

    def action_item(self, delta: int) -> None:
        self.show_item(self.index + delta, direction=delta)

    def action_scroll(self, direction: int) -> None:
        self.query_one("#item", ItemPane).page(direction)

    def action_scroll_edge(self, end: int) -> None:
        self.query_one("#item", ItemPane).edge(end)

    # --- rating --------------------------------------------------------------------------------

    def action_digit(self, digit: str) -> None:
        attribute = self.attribute
        human = protocols.of(attribute).human_input(attribute)
        if human.kind == "number":
            if len(self.typed) < len(str(int(attribute.scale.high))):
                self.typed += digit
            self.refresh_questions()
        elif digit in human.keys:
            self.answer(human.values[human.keys.index(digit)])
        else:  # a digit that answers nothing here: say so (a silent key reads as a broken one)
            self.bell()
            self.notify(f"{digit} is not on this scale ({answer_keys(attribute).replace('-', '–')})", timeout=3)

    def action_enter(self) -> None:
        if not self.typed:
            return
        value = float(self.typed)
        self.typed = ""
        if not self.attribute.scale.contains(value):
            self.notify(f"{value:g} is off the scale", severity="warning")
            self.refresh_questions()
            return
        self.answer(value)

    def action_backspace(self) -> None:
        self.typed = self.typed[:-1]
        self.refresh_questions()

    def on_key(self, event: events.Key) -> None:
        if self.quitting and self._quitting_key(event.key):
            event.stop()
            event.prevent_default()
            return
        # pairwise choices are answered with a / b / t, ahead of the app's own bindings
        if self.screen is not self.screen_stack[0]:
            return
        human = protocols.of(self.attribute).human_input(self.attribute)
        character = event.character
        if character and character in choice_letters(self.attribute):
            event.stop()
            event.prevent_default()
            self.answer(human.values[human.keys.index(character)])

    def answer(self, value: float) -> None:
        """The focused question answered: save it, then on to the next question or item at once
        (the screen shows the rating as unsaved until its commit is reported).

        A correction of a complete item moves to the next question, and only its last question moves on
        (README: "after the last question the next item appears"): an annotator fixing two questions is not
        thrown onto the next item after the first, nor shown the reveal again after each."""
        index, position, state = self.index, self.focus_attr, self.state
        key = self.session.items[index].key
        if key in state.claiming:  # dynamic mode: answered once the lease is ours (milliseconds), in order
            state.deferred.append(value)
            return
        if key in state.taken:
            self.notify(f"item {index + 1} already has {self.session.per_item} people on it")
            return
        attribute = self.task_.attributes[position].name
        correcting = state.item_complete(index)
        now = time.monotonic()
        seconds, self.shown_at = now - self.shown_at, now
        self.save_rating(index, attribute, value, seconds=round(seconds, 3))
        if correcting and position < len(self.task_.attributes) - 1:
            self.action_attribute(1)
            self.refresh_status()
        elif state.item_complete(index):
            if self.options.reveal:
                self.refresh_questions()
                self.refresh_status()
                self.open_reveal(index)
            else:
                self.show_item(index + 1 if index + 1 < len(self.session.items) else index)
        else:
            self.focus_attr = state.first_unrated(index)
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

        def after(_: None = None) -> None:
            self.show_item(index + 1 if index + 1 < len(self.session.items) else index)

        state = self.state
        screen = RevealScreen(
            self.task_, index, message.others, state.shown, self.save_rating, self.save_review, state.review_mark
        )
        self.push_screen(screen, after)

    def action_undo(self) -> None:
        if not self.state.undoable:
            self.notify("Nothing to undo in this session")
            return
        last = self.state.undoable.pop()
        session = self.session

        def run() -> object:
            undone = session.undo()  # the same rating: both stacks grow and shrink in the same order
            if undone is None:
                return None
            key = (session.key(undone.item_index), undone.attribute)
            return key, session.value(undone.item_index, undone.attribute)

        self.save(Change("undo", run, self.session.key(last.index), last.attribute, last.before))
        self.show_item(last.index, self.task_.attribute_names.index(last.attribute))

    # --- notes -----------------------------------------------------------------------------------

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
        index, session, comments = self.index, self.session, self.state.comments
        item_key = session.items[index].key
        current = comments.get(item_key, "")

        def save(text: str | None) -> None:
            if text is None or text == current:
                return  # Esc, or nothing changed
            comments[item_key] = text
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
        screen = AgreementScreen(session.study, self.task_.name, self.state.index_of.get, session.annotator)
        self.push_screen(screen, jump)

    def action_help(self) -> None:
        rows = [(self._keys_for(binding_id), description) for binding_id, description in HELP]
        self.push_screen(HelpScreen(rows))

    # --- what reaches the terminal ------------------------------------------------------------

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
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


def make_app(
    session: AnnotationSession, options: AppOptions | None = None, judges: BackgroundJudges | None = None
) -> RaterApp:
    """The one factory for the CLI and the tests."""
    return RaterApp(session, options, judges)

"""The annotation app: rate with the keyboard, at 80x24 over SSH, while judges work behind.

``make_app`` builds it for the CLI and the tests alike. Every change (rating, undo, note) is
committed by one background thread (``StoreWriter``), in order; the screen calls a change saved
only once that thread reports the commit (``RatingState``, ``SaveView``), and shows it as unsaved
until then. Widgets are updated on the UI thread only, which never waits on SQLite.

The app keeps quitting (``q``), the save queue, the background threads (judges, a team's progress: their
messages come up to the app, which hands what they say down to the screen) and what reaches the terminal; the
rating screen (``ui/screens/rating.py``) owns the rating keys and their actions, keeps where the person is and
the rating flow, and draws its widgets (``ui/widgets/``) from the one ``RatingState``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.driver import Driver
from textual.notifications import SeverityLevel
from textual.screen import Screen
from textual.widgets import Footer, Static

from tui_rater.domain.display import safe_text
from tui_rater.service.session import AnnotationSession
from tui_rater.ui.answers import keymap_without
from tui_rater.ui.messages import JudgeProgress, RevealReady, SaveReport, TeamProgress
from tui_rater.ui.options import AppOptions
from tui_rater.ui.quitting import QuitWhenSaved
from tui_rater.ui.saving import SaveView
from tui_rater.ui.screens import RatingScreen, RevealScreen
from tui_rater.ui.state import RatingState
from tui_rater.ui.terminal import hangup_safe
from tui_rater.ui.widgets import EndLine, ItemPane, QuestionsPane, SavingLine, StatusLine
from tui_rater.ui.writer import Change, Committed, Stalled, StoreWriter

if TYPE_CHECKING:  # the judges (and their model libraries) are imported off the UI thread, once the screen is up
    from tui_rater.service.judging import BackgroundJudges

# (importable from here, where they were defined before the options and messages had modules of their own)
__all__ = ["AppOptions", "JudgeProgress", "RaterApp", "RevealReady", "SaveReport", "TeamProgress", "make_app"]


class RaterApp(QuitWhenSaved):
    CSS_PATH = "app.tcss"
    TITLE = "tui-rater"
    ENABLE_COMMAND_PALETTE = False

    # the rating keys are the rating screen's (``RatingScreen.BINDINGS``); quitting is the app's, on every screen
    BINDINGS = [Binding("q", "quit", "quit", id="quit")]

    def __init__(
        self, session: AnnotationSession, options: AppOptions | None = None, judges: BackgroundJudges | None = None
    ):
        super().__init__()
        self.session = session
        self.options = options or AppOptions()
        self.judges = judges  # running BackgroundJudges, or None
        self.closing = threading.Event()
        # the ratings, notes, comments and undo on screen, kept once (the screens and widgets read them there)
        self.state = RatingState(session)
        self.view: SaveView = self.state.view
        self.rating = RatingScreen(self.state, self.options, self.save, id="_default")
        if judges is not None:
            self.rating.judges = (judges.summary(), judges.summary(compact=True))
        self.writer: StoreWriter | None = None

    def get_driver_class(self) -> type[Driver]:
        # a dropped SSH connection (SIGHUP, then SIGCONT) must not keep the process from exiting
        return hangup_safe(super().get_driver_class(), self.is_closing)

    def is_closing(self) -> bool:
        return self.stop_signal is not None or self.closing.is_set()

    def get_default_screen(self) -> Screen[Any]:
        return self.rating

    def compose(self) -> ComposeResult:
        # the rating screen's widgets, mounted into it (the default screen) before the first Resize
        yield StatusLine(id="status")
        with ItemPane(id="item", can_focus=False):
            yield Static(id="item-text")
        yield SavingLine(id="saving")
        yield EndLine(id="end")  # the task's end: what is done, what next
        yield QuestionsPane(id="questions")
        yield Footer(compact=True)

    # --- where the person is (the rating screen's) ------------------------------------------------

    @property
    def index(self) -> int:
        return self.rating.index

    @property
    def focus_attr(self) -> int:
        return self.rating.focus_attr

    @property
    def item_layout(self) -> str:
        """How the item is laid out on screen: "stacked" or "columns"."""
        return self.rating.query_one("#item", ItemPane).shown_layout

    def value(self, index: int, attribute: str) -> float | None:
        return self.state.value(index, attribute)

    def shown(self, index: int, attribute: str) -> tuple[float | None, str]:
        return self.state.shown(index, attribute)

    def show_item(self, index: int, attribute: int | None = None, direction: int = 1) -> None:
        self.rating.show_item(index, attribute, direction)

    @property
    def judge_summary(self) -> str:
        """The background judges' one-line summary, as the status line shows it."""
        return self.rating.judges[0]

    @property
    def team_share(self) -> float | None:
        return self.rating.team_share

    # --- lifetime --------------------------------------------------------------------------------

    def on_mount(self) -> None:
        self.event_loop = asyncio.get_running_loop()
        self.writer = StoreWriter(self.session.save, self._from_store_thread)
        if self.stop_signal is not None:  # it came before the loop ran
            self._exit_for_signal()
        if self.options.keymap:
            self.set_keymap(keymap_without(self.options.keymap, self.rating.answer_letters))
        self.rating.refresh_all()
        # after the first screen, off the UI thread: the judges (a large study's judge jobs never freeze a
        # keypress). The statistics stack (polars, scipy: ~95 MB, ~1 CPU-s) is imported only by the agreement
        # pane's own worker, when it is opened: most sessions never open it (a browser session is a process each)
        if self.options.judge_specs or self.judges is not None:
            self.call_after_refresh(self._in_background)
        if self.session.team_plan is not None:
            self.call_after_refresh(self._watch_team)
        self.rating.claim(self.rating.index)
        ready_file = os.environ.get("TUI_RATER_READY_FILE")
        if ready_file:  # for scripts timing start-up: when the first item is on screen
            self.call_after_refresh(lambda: Path(ready_file).write_text(f"{time.time()}\n"))

    def on_unmount(self) -> None:
        self.closing.set()
        self.event_loop = None
        self.session.close_texts()  # (the items' reads; the session's own connection saves what is left)
        if self.writer is not None:
            self.writer.close()  # it commits what is queued, then ends; ui/run.py waits for that
        if self.judges is not None:
            self.judges.interrupt()  # the workers stop (a local model between two decode steps); see ui/run.py

    def on_resize(self, event: events.Resize) -> None:
        self.rating.resized(event.size.width)

    # --- background threads -------------------------------------------------------------------

    @work(thread=True, group="background", exit_on_error=False)
    def _in_background(self) -> None:
        if self.options.judge_specs and self.judges is None:
            from tui_rater.service.judging import BackgroundJudges

            study = self.session.study.reopen()
            try:
                self.judges = BackgroundJudges(study, self.session.task.name, list(self.options.judge_specs))
            finally:
                study.close()
        while self.judges is not None:  # until the screen closes (a stopped judge is shown as stopped)
            self.post_message(JudgeProgress(self.judges.summary(), self.judges.summary(compact=True)))
            if self.closing.wait(1.0):
                break

    @work(thread=True, group="team", exit_on_error=False)
    def _watch_team(self) -> None:
        from tui_rater.service.app_reads import study_version, team_progress

        plan = self.session.team_plan
        assert plan is not None
        study = self.session.study.reopen()
        try:
            seen = None
            while True:  # the others' ratings come from their own processes: looked for every few seconds,
                # and the share read again only when some connection (this app's saves too) has committed
                # since: SQLite's data_version, a read of the WAL's header (an idle session costs nothing)
                version = study_version(study)
                if version != seen:
                    seen = version
                    share = team_progress(study, plan)  # gold like any other
                    self.post_message(TeamProgress(share))
                if self.closing.wait(2.0):
                    break
        finally:
            study.close()

    def on_team_progress(self, message: TeamProgress) -> None:
        self.rating.show_team_share(message.share)

    def on_judge_progress(self, message: JudgeProgress) -> None:
        self.rating.show_judges(message.summary, message.compact)

    # --- saving ----------------------------------------------------------------------------------

    def save(self, change: Change) -> None:
        """Queue a change for the store thread; the screen shows it as unsaved until it is committed."""
        assert self.writer is not None
        self.state.submit(change)
        self.writer.submit(change)

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
        self.rating.show_saved()
        # (a reveal not mounted yet draws the state as it is when it is: its widgets may not be there yet)
        if isinstance(self.screen, RevealScreen) and self.screen.is_mounted:
            self.screen.refresh_text()

    def refresh_saving(self) -> None:
        self.rating.show_quitting(self.quitting, self.confirming)

    def held_back(self) -> list[Change]:
        return self.state.held_back()

    # --- keys --------------------------------------------------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """While quitting: y confirms, Esc goes back (the rating screen leaves the keys to the app then)."""
        if self.quitting and self._quitting_key(event.key):
            event.stop()
            event.prevent_default()

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
            return self.rating.rate_keys  # the focused question's keys, not every digit: "1-5 rate" on a 1-5 scale
        # keys may come from the config file's [keys] table (data): shown literally in the footer
        return safe_text(super().get_key_display(binding), inline=True)


def make_app(
    session: AnnotationSession, options: AppOptions | None = None, judges: BackgroundJudges | None = None
) -> RaterApp:
    """The one factory for the CLI and the tests."""
    return RaterApp(session, options, judges)

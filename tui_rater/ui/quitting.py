"""Quitting only once every change is saved: ``q``, a second ``q`` (or Ctrl-C) that asks, and signals.

The base of ``RaterApp``. The UI thread never waits here: it marks the app as quitting and exits when
the store thread reports the last commit (``RaterApp.on_save_report``). Signals close the screen at
once; ``ui/run.py`` then waits, off screen, for the saves.
"""

from __future__ import annotations

import asyncio
import contextlib

from textual.app import App

from tui_rater.ui.saving import SaveView
from tui_rater.ui.writer import Change


class QuitWhenSaved(App[None]):
    view: SaveView
    quitting = False  # q pressed: exit once everything is saved
    confirming = False  # q pressed again: asking whether to quit without the unsaved changes
    abandoned = False  # the person confirmed: quit without them
    stop_signal: int | None = None  # SIGHUP / SIGTERM / SIGINT received (see ui/run.py)
    event_loop: asyncio.AbstractEventLoop | None = None  # set while the app runs

    def refresh_saving(self) -> None:
        raise NotImplementedError

    def held_back(self) -> list[Change]:
        """Changes typed that never reached the save queue (none here: see RaterApp)."""
        return []

    async def action_quit(self) -> None:
        self.request_quit()

    def request_quit(self) -> None:
        if not self.view.unsaved:
            self.exit()
            return
        stalled = self.view.stalled
        if self.quitting or (stalled is not None and stalled.final):  # (final: waiting would save nothing)
            self.confirming = True  # say how many would be lost before offering to lose them
        self.quitting = True
        while len(self.screen_stack) > 1:  # the saving line is on the main screen
            self.pop_screen()
        self.refresh_saving()

    def action_help_quit(self) -> None:
        if self.quitting:  # Ctrl-C while saving before quitting: as a second q
            self.request_quit()
            return
        # Textual's own hint is markup ("Press [b]ctrl+q[/b]"), shown literally by the app's notify, and names
        # ctrl+q, which this app does not use: name the key that quits here
        quits = [active.binding for active in self.active_bindings.values() if active.binding.action == "quit"]
        quits.sort(key=lambda binding: binding.id != "quit")  # the app's own quit key (`q`) before Textual's ^q
        shown = self.get_key_display(quits[0]) if quits else "q"
        self.notify(f"Press {shown} to quit (not Ctrl-C).", timeout=4)  # one line in the toast at 80 columns

    def _quitting_key(self, key: str) -> bool:
        """Keys while quitting: y confirms quitting without the unsaved changes, Esc goes back to rating,
        any other key leaves the question. True when the key was used."""
        if key in ("q", "ctrl+q", "ctrl+c"):
            return False  # the quit binding: asks (again)
        if self.confirming and key == "y":
            self.abandoned = True
            self.exit(return_code=1)
            return True
        if key == "escape":
            self.quitting = False
        self.confirming = False
        self.refresh_saving()
        return True

    def stop_for_signal(self, signum: int) -> None:
        """SIGHUP, SIGTERM, SIGINT (from ui/run.py's handler, on the main thread): close the screen now;
        run.py then commits every unsaved change before the process exits."""
        if self.stop_signal is None:
            self.stop_signal = signum
        loop = self.event_loop
        if loop is not None:  # wake the loop: a signal handler must not touch its queues itself
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._exit_for_signal)

    def _exit_for_signal(self) -> None:
        self.exit(return_code=128 + (self.stop_signal or 0))

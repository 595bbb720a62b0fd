"""Running the app in a terminal: signals, and the changes still unsaved when the screen closes.

Quit (``q``) waits on screen until every change is committed. SIGHUP (the SSH connection or
the terminal went away), SIGTERM and SIGINT close the screen at once; the process then stays
until the store thread has committed every unsaved change, however long another process keeps
the study file locked, and only then exits (128 + the signal's number). Only SIGKILL ends it
sooner, and loses only what the screen showed as unsaved. Ctrl-C (SIGINT) while this waits, or
``q`` then ``y`` in the app, quits without the unsaved changes after saying how many they are.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING, TextIO

from tui_rater.domain.display import safe_text
from tui_rater.ui.app import RaterApp
from tui_rater.ui.parent import orphaned, silence_outputs
from tui_rater.ui.writer import StoreWriter, describe

if TYPE_CHECKING:  # (the annotation app does not pay for importing the adjudication app)
    from tui_rater.ui.adjudicate import AdjudicateApp

STOP_SIGNALS = (signal.SIGHUP, signal.SIGTERM, signal.SIGINT)
REMIND_EVERY_S = 10.0


def run_app(app: RaterApp | AdjudicateApp, err: TextIO | None = None) -> int:
    """Run the app; return the exit status once every change is saved (or knowingly given up)."""
    err = err or sys.stderr
    received: list[int] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        if orphaned():  # the server that started this app was killed: nothing reads its output any more
            silence_outputs()
        received.append(signum)
        app.stop_for_signal(signum)

    # (signal handlers can only be set on the main thread: elsewhere, e.g. an embedding program, none are)
    main = threading.current_thread() is threading.main_thread()
    previous = {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS} if main else {}
    try:
        crash: BaseException | None = None
        try:
            app.run()
        except BaseException as exc:  # still save what is unsaved, then let it through
            crash = exc
        code = _finish(app, received, err)
        if isinstance(app, RaterApp) and app.judges is not None:
            _stop_judges(app, err)
        if crash is not None and not (received and isinstance(crash, OSError)):
            raise crash  # (an OSError after SIGHUP is the terminal gone: nothing to report to)
        if code != 0:  # changes given up (quit anyway, or Ctrl-C while saving)
            return code
        if received:
            return 128 + received[0]
        if app.abandoned:  # "quit without them", and there was nothing left to lose
            return 0
        return app.return_code or 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _stop_judges(app: RaterApp, err: TextIO) -> None:
    """The judges stop within half a second (a local one between two decode steps); the jobs they still hold,
    a request to a silent server's included, go back to the queue. Said, never a blank wait (quitting used to
    leave 10.6 s and 10.9 s of blank screen)."""
    judges = app.judges
    assert judges is not None
    study = app.session.study.reopen()
    try:
        held = judges.held(study)
        if judges.alive():
            _say(err, f"stopping the judges: giving back {held} job{'s' if held != 1 else ''} in progress…")
        judges.stop_now(study)
    finally:
        study.close()


def _say(err: TextIO, line: str) -> None:
    with contextlib.suppress(OSError, ValueError):  # after SIGHUP there is no terminal to write to
        err.write(f"tui-rater: {safe_text(line, inline=True)}\n")  # may quote an error message
        err.flush()


def _finish(app: RaterApp | AdjudicateApp, received: list[int], err: TextIO) -> int:
    writer = app.writer
    if writer is None:  # the app never started
        return 0
    if app.abandoned:
        lost = writer.stop() + app.held_back()
        if lost:
            _say(err, f"quit without saving {describe(lost)}, as asked: not in the file; {_saved(writer)}")
            return 1
        # the last save went through between the question and the `y` (this used to exit 1 without a word)
        _say(err, "nothing was lost: every change was saved before quitting")
        return 0
    code = _drain(writer, received, err) if writer.unsaved() else 0
    writer.close()
    held = app.held_back()  # typed while an item's lease was asked for: never in the queue, so never saved
    if held:
        _say(err, f"{describe(held)} typed while the item was being claimed not saved; {_saved(writer)}")
        return 1
    return code


def _saved(writer: StoreWriter) -> str:
    """What this session put in the file, counted from the commits (never assumed)."""
    done = [change for change in writer.committed if change.kind != "lease"]
    return f"in the file from this session: {describe(done)}" if done else "nothing of this session is in the file"


def _drain(writer: StoreWriter, received: list[int], err: TextIO) -> int:
    """Wait (off screen) until the store thread has committed every change. SIGHUP and SIGTERM are
    noted and waited through; SIGINT (Ctrl-C at the terminal) gives the changes up."""
    interrupted: list[int] = []
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, lambda signum, _frame: interrupted.append(signum))
    _say(err, f"saving {describe(writer.unsaved())} before exiting{_why(writer)}… (Ctrl-C: quit without them)")
    writer.close()
    said = time.monotonic()
    while not writer.drain(timeout=0.25):
        if not writer.is_alive():  # the study moved away (``StudyMoved``), or a bug: say what is left unsaved
            stalled = writer.stalled
            why = stalled.error if stalled is not None and stalled.final else "the saving thread stopped"
            _say(err, f"{why}: {describe(writer.unsaved())} not saved")
            return 1
        if interrupted:
            lost = writer.stop()
            if lost:
                _say(err, f"interrupted: {describe(lost)} not saved")
                return 1
            break
        if time.monotonic() - said > REMIND_EVERY_S:
            said = time.monotonic()
            _say(err, f"still saving {describe(writer.unsaved())}{_why(writer)}…")
    _say(err, "saved.")
    return 0


def _why(writer: StoreWriter) -> str:
    stalled = writer.stalled
    if stalled is None:
        return ""
    if stalled.locked:
        return " (waiting for the study file: locked by another process)"
    if stalled.final:
        return f" ({stalled.error})"
    return f" (saving failed: {stalled.error}; trying again)"

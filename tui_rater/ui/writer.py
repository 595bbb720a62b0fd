"""The save queue: one background thread that commits the app's changes, in order, never dropping one.

A *change* is anything the annotator asks to keep: a rating, an undo, a note (skip, flag,
comment, review). The UI thread hands it over and goes on at once; it never waits on SQLite.
The thread commits one change at a time, in the order typed (rate, then undo), each as its own
transaction (``AnnotationSession.save``). A change leaves the queue only once it is committed:

- while another process holds the study file's write lock, the thread keeps asking for it and
  reports how long it has waited (it never gives up, unlike ``db._begin_immediate``);
- when a save fails (disk full, I/O error), the change stays at the head of the queue, the
  failure is reported, and it is tried again with a growing pause, until it succeeds;
- when the study's path no longer names the file (renamed, removed, replaced: ``StudyMoved``), the
  thread reports it as final and ends: every change left stays unsaved, and the screen says so.

Reports go back through a callback (the app turns them into messages): ``Committed`` after each
commit, ``Stalled`` while the head change cannot be committed. Nothing here knows about Textual.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tui_rater.domain.errors import StudyLocked, StudyMoved
from tui_rater.domain.values import ShowingKey

LOCK_WAIT_S = 0.25  # one try for the write lock; then report "locked" and try again
RETRY_AFTER_FAILURE_S = (0.5, 1.0, 2.0, 5.0)  # pauses after a failed save (disk full ...), then 5 s each


@dataclass(eq=False)
class Change:
    """One thing to commit. ``run`` is called on the store thread inside one transaction;
    ``done`` on the UI thread with its result once committed."""

    kind: str  # "rating", "undo", "note" or "lease" (a team plan's dynamic mode: an item claimed)
    run: Callable[[], Any]
    item_key: ShowingKey | None = None  # the showing it belongs to (``AnnotationSession.key``)
    attribute: str | None = None
    value: float | None = None  # what the screen shows for (item, attribute) while it is unsaved
    note: str | None = None  # the note's kind (skip, flag, comment, review)
    done: Callable[[Any], None] | None = None
    submitted_at: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class Committed:
    change: Change
    result: Any


@dataclass(frozen=True)
class Stalled:
    """The head change is not committed yet: the file is locked (``error`` None) or the save failed."""

    change: Change
    since: float  # monotonic time of the first failed try
    attempts: int
    error: str | None = None
    final: bool = False  # the study's file is no longer under its name: nothing more is saved (``StudyMoved``)

    @property
    def locked(self) -> bool:
        return self.error is None


def describe(changes: list[Change]) -> str:
    """'3 ratings', '2 ratings and 1 note', '1 undo' (the words the status line and messages use)."""
    counts: dict[str, int] = {}
    for change in changes:
        counts[change.kind] = counts.get(change.kind, 0) + 1
    words = [f"{n} {kind}{'s' if n != 1 else ''}" for kind, n in counts.items()]
    if len(words) > 1:
        return ", ".join(words[:-1]) + " and " + words[-1]
    return words[0] if words else "nothing"


class StoreWriter:
    def __init__(self, save: Callable[[Callable[[], Any], float], Any], report: Callable[[object], None]):
        """``save(run, lock_wait)`` commits one change (``AnnotationSession.save``); ``report`` receives
        ``Committed`` and ``Stalled`` on the store thread and must not block."""
        self._save = save
        self._report = report
        self._queue: deque[Change] = deque()
        self._cond = threading.Condition()
        self._closing = False  # stop once the queue is empty
        self._stopping = False  # stop now: the person chose to quit without the unsaved changes
        self.stalled: Stalled | None = None  # why the head change is not committed yet (None: it is going)
        self.committed: list[Change] = []  # what this writer has put in the file, oldest first
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    # --- any thread --------------------------------------------------------------------------

    def submit(self, change: Change) -> None:
        with self._cond:
            if self._closing or self._stopping:
                raise RuntimeError("the save queue is closed")
            self._queue.append(change)
            self._cond.notify_all()

    def unsaved(self) -> list[Change]:
        """The changes not committed yet, oldest first."""
        with self._cond:
            return list(self._queue)

    def close(self) -> None:
        """Commit what is queued, then end the thread. Does not wait."""
        with self._cond:
            self._closing = True
            self._cond.notify_all()

    # --- blocking: never on the UI thread ---------------------------------------------------

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every submitted change is committed (after the UI has gone, and in tests)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._queue:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def stop(self, timeout: float = 2.0) -> list[Change]:
        """Give up the unsaved changes: end after the try in progress; return what stays unsaved."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        self._thread.join(timeout)
        with self._cond:
            return list(self._queue)

    # --- the store thread --------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not (self._closing or self._stopping):
                    self._cond.wait()
                if self._stopping or not self._queue:
                    return
                change = self._queue[0]
            result = self._commit(change)
            if result is _STOPPED:
                return
            with self._cond:
                self._queue.popleft()
                self.committed.append(change)
                self.stalled = None
                self._cond.notify_all()
            self._tell(Committed(change, result))

    def _commit(self, change: Change) -> Any:
        since, attempts = 0.0, 0
        while True:
            if self._stopping:
                return _STOPPED
            try:
                return self._save(change.run, LOCK_WAIT_S)
            except StudyLocked:
                error = None
            except StudyMoved as exc:  # trying again would commit into a journal nobody reads: stop here
                self.stalled = Stalled(change, since or time.monotonic(), attempts + 1, str(exc), final=True)
                self._tell(self.stalled)
                return _STOPPED
            except Exception as exc:  # disk full, I/O error, a bug: keep the change, say so, retry
                error = str(exc) or type(exc).__name__
            attempts += 1
            since = since or time.monotonic()
            self.stalled = Stalled(change, since, attempts, error)
            self._tell(self.stalled)
            if error is not None:
                pause = RETRY_AFTER_FAILURE_S[min(attempts, len(RETRY_AFTER_FAILURE_S)) - 1]
                with self._cond:
                    self._cond.wait_for(lambda: self._stopping, pause)

    def _tell(self, report: object) -> None:
        with contextlib.suppress(Exception):  # the screen may miss a report; the saving goes on regardless
            self._report(report)

    def is_alive(self) -> bool:
        return self._thread.is_alive()


_STOPPED = object()

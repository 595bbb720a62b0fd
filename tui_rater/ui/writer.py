"""One background thread that runs every store call of the app, in order.

The UI thread never waits on SQLite: it hands a call to this thread and gets the result back
on its own thread through ``App.call_from_thread``. One thread keeps the order of the
annotator's actions (rate, then undo) exactly as typed.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any


class StoreWriter:
    def __init__(self, deliver: Callable[[Callable[[], None]], None], on_error: Callable[[BaseException], None]):
        self._deliver = deliver  # runs a callable on the UI thread
        self._on_error = on_error
        self._calls: queue.Queue = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="store-writer", daemon=True)
        self._thread.start()

    def submit(self, call: Callable[[], Any], done: Callable[[Any], None] | None = None) -> None:
        with self._lock:
            self._pending += 1
            self._idle.clear()
        self._calls.put((call, done))

    def _run(self) -> None:
        while True:
            item = self._calls.get()
            if item is None:
                return
            call, done = item
            try:
                result = call()
            except BaseException as exc:
                self._safe_deliver(lambda exc=exc: self._on_error(exc))
            else:
                if done is not None:
                    self._safe_deliver(lambda result=result, done=done: done(result))
            finally:
                with self._lock:
                    self._pending -= 1
                    if self._pending == 0:
                        self._idle.set()

    def _safe_deliver(self, callback: Callable[[], None]) -> None:
        with contextlib.suppress(RuntimeError):  # the app has already stopped
            self._deliver(callback)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until every submitted call has run (tests, and a clean exit)."""
        return self._idle.wait(timeout)

    def close(self, timeout: float = 10.0) -> None:
        self.wait_idle(timeout)
        self._calls.put(None)
        self._thread.join(timeout)

"""Long computations for the screen (the agreement pane's statistics) in daemon threads, one at a time.

Textual's thread workers run in asyncio's default executor. Neither can stop a thread, and both wait for it:
``exclusive=True`` only marks the previous worker cancelled, so the pane's 2-second refresh started a new full
computation while the last still ran (six at once were found on a 100,000-item study, the app at 3.8 GB); and
the executor's threads are joined when the event loop closes and again at interpreter exit, so an app whose
terminal closed (SIGHUP) stayed alive until the computation ended (over 5 minutes at 100k), after its ratings
were saved. Written here rather than taken from a library: what is needed is Textual's message passing plus
these two rules, which no executor offers —

- **never two at once**: a request while one runs marks the result stale, and one more run follows it (not one
  per request);
- **never waited for**: the thread is a daemon, so the process ends as soon as the app has saved (ui/run.py);
  a computation still running then is abandoned, and one finishing after ``close()`` delivers nothing.

One thread per Background, started by the first request and woken by the next ones: a thread started per request
(every half second for the pane's running sums) made the screen wait in ``Thread.start`` until the kernel had run
the new thread, which on a busy machine is a scheduling delay in the middle of a key's redraw (issue 35 item 1:
keys < 50 ms p99 while the pane computes).

One lock per process orders the computations of every screen: a pane closed and opened again while its last
computation runs waits for that one instead of running beside it. A computation of another kind (the pane's running
sums, which take milliseconds) passes a lock of its own, so it never waits minutes behind a full one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

_ONE_AT_A_TIME = threading.Lock()  # every Background of the process: computations never overlap


class Background:
    """Runs ``work`` in a daemon thread on request; ``failed`` receives an exception it raised."""

    def __init__(
        self,
        name: str,
        work: Callable[[], None],
        failed: Callable[[BaseException], None],
        one_at_a_time: threading.Lock = _ONE_AT_A_TIME,
    ) -> None:
        self.name, self._work, self._failed = name, work, failed
        self._one_at_a_time = one_at_a_time
        self._lock = threading.Lock()
        self._running = False
        self._again = False
        self._closed = False
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self.runs = 0  # computations started (for the tests: requests beyond one per run are merged)

    @property
    def closed(self) -> bool:
        return self._closed

    def request(self) -> None:
        """Compute now, or (one running) once more after it; never blocks."""
        with self._lock:
            if self._closed:
                return
            if self._running:
                self._again = True
                return
            self._running = True
            if self._thread is not None:  # waiting for this: woken, not started
                self._wake.notify()
                return
            self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
        self._thread.start()

    def running(self) -> bool:
        with self._lock:
            return self._running

    def close(self) -> None:
        """No more runs; one in progress runs on (a thread cannot be stopped) and is never waited for."""
        with self._lock:
            self._closed = True
            self._again = False
            self._wake.notify()  # (a thread waiting for the next request ends)

    def _serve(self) -> None:
        while True:
            self._loop()
            with self._lock:
                while not self._running and not self._closed:
                    self._wake.wait()
                if self._closed:
                    self._running = False
                    return

    def _loop(self) -> None:
        while True:
            with self._one_at_a_time:
                if not self._closed:
                    self.runs += 1
                    try:
                        self._work()
                    except Exception as exc:  # shown by the screen; the next request tries again
                        if not self._closed:
                            self._failed(exc)
            with self._lock:  # (one lock for the test and the reset: a request in between is never lost)
                if self._closed or not self._again:
                    self._running = False
                    return
                self._again = False

"""The agreement pane's full computation in a process of its own (issue 35 item 1: "never blocks keys").

In a thread of the app, the computation (the alt-test's per-item Python, the sequences, the gaps: seconds at 10k
items) shared the interpreter's lock with the screen: each key's redraw waited for the lock, 5 ms at a time, and
the keys lagged (bench/pane_keys.py at 10k: bench/RESULTS.md §11, run 9).
A process has a lock of its own, and runs at a lower priority than the app (``nice`` +10), so that on a busy
machine the kernel gives the screen's short bursts the CPU first. The annotator's test-retest lines are computed here
too (``RetestRequest``), and both answers are made of classes that import no scipy or polars: the app never imports the
statistics stack for the pane (its running sums are numpy only: ``stats/live_sums.py``).

``PaneWorker`` starts ``python -m tui_rater.service.pane_worker`` on the first request and keeps it for the
pane's life (its imports, ~1 s, are paid once); requests and answers are pickles over its stdin and stdout. The
caller's thread waits for the answer (without the interpreter's lock). ``close()`` kills the process: a
computation abandoned when the pane closes or the app ends stops at once, and a worker whose app died without
closing it (SIGKILL) sees it within half a second and ends. Written here rather than with ``multiprocessing``: its
spawn start re-runs the app's ``__main__`` module in the child, and its pools wait for their workers at exit.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from tui_rater.domain.values import ChangeMarker

if TYPE_CHECKING:  # the app imports this module on its UI thread: the statistics stack only in the worker
    from tui_rater.service.retest_lines import RetestLines
    from tui_rater.stats.pane_types import PaneData
    from tui_rater.store.study import Study

PARENT_CHECK_S = 0.5
NICENESS = 10  # added to the app's


class PaneComputationFailed(Exception):
    """The computation raised in the worker (its words are ``TypeName: message``), or the worker ended."""


@dataclass(frozen=True)
class PaneRequest:
    """What the worker opens and computes: ``service/live.py:full_pane`` on this study file and task."""

    path: str
    task_files: list[str]
    readonly: bool
    task_name: str
    previous: ChangeMarker | None

    def compute(self, study: Study) -> tuple[PaneData | None, ChangeMarker, tuple[int, int, int]]:
        from tui_rater.service.live import full_pane

        return full_pane(study, self.task_name, self.previous)


@dataclass(frozen=True)
class RetestRequest:
    """The annotator's test-retest lines (``service/retest_lines.py:retest_pane_lines``) on this study file and task:
    in the worker too, for its statistics (scipy) never to run or be imported in the app."""

    path: str
    task_files: list[str]
    readonly: bool
    task_name: str
    annotator: str
    previous: ChangeMarker | None

    def compute(self, study: Study) -> tuple[RetestLines | None, ChangeMarker]:
        from tui_rater.service.retest_lines import retest_pane_lines

        return retest_pane_lines(study, self.task_name, self.annotator, self.previous)


class PaneWorker:
    """One worker process, started on the first request and ended by ``close``; one request at a time (the pane's
    computations and its test-retest lines, asked from two threads, take turns)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._talking = threading.Lock()  # one request and its answer on the pipes at a time (never taken by close)
        self._process: subprocess.Popen[bytes] | None = None
        self._closed = False

    @property
    def pid(self) -> int | None:
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def compute_full_pane(
        self, request: PaneRequest
    ) -> tuple[PaneData | None, ChangeMarker, tuple[int, int, int]] | None:
        """``full_pane``'s answer, computed in the worker; None when closed before or during the computation."""
        found: tuple[PaneData | None, ChangeMarker, tuple[int, int, int]] | None = self._ask(request)
        return found

    def compute_retest(self, request: RetestRequest) -> tuple[RetestLines | None, ChangeMarker] | None:
        """``retest_pane_lines``'s answer, computed in the worker; None when closed before or during it."""
        found: tuple[RetestLines | None, ChangeMarker] | None = self._ask(request)
        return found

    def _ask(self, request: PaneRequest | RetestRequest) -> Any:
        with self._talking:
            return self._ask_now(request)

    def _ask_now(self, request: PaneRequest | RetestRequest) -> Any:
        with self._lock:
            if self._closed:
                return None
            process = self._process
            if process is None or process.poll() is not None:
                process = self._process = _start()
        assert process.stdin is not None and process.stdout is not None
        try:
            pickle.dump(request, process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            process.stdin.flush()
            status, answer = pickle.load(process.stdout)
        except (OSError, EOFError, pickle.UnpicklingError) as exc:
            if self._closed:
                return None
            self._end(process)  # (the next request starts a new one: never a pipe left half read)
            raise PaneComputationFailed(f"the pane's worker process ended ({type(exc).__name__})") from exc
        if status != "ok":
            raise PaneComputationFailed(str(answer))
        return answer

    def close(self) -> None:
        """No more requests; the worker is killed (a computation in progress is abandoned, never waited for)."""
        with self._lock:
            self._closed = True
            process, self._process = self._process, None
        if process is not None:
            _kill(process)

    def _end(self, process: subprocess.Popen[bytes]) -> None:
        with self._lock:
            if self._process is process:
                self._process = None
        _kill(process)


def _kill(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()  # (killed: at once; reaps it)
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _start() -> subprocess.Popen[bytes]:
    # this tui_rater, not another on the path (a test's checkout, whatever the app's working folder)
    root = str(Path(__file__).resolve().parents[2])
    path = os.environ.get("PYTHONPATH", "")
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
    # stderr: nowhere -- the worker shares the app's terminal, and a line from it would be drawn over the screen
    return subprocess.Popen(
        [sys.executable, "-m", "tui_rater.service.pane_worker", str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


def _watch_parent(parent: int) -> None:
    """End this process once the app is gone (it died without closing the worker, e.g. SIGKILL)."""
    while True:
        time.sleep(PARENT_CHECK_S)
        if os.getppid() != parent:
            os._exit(0)


def serve(parent: int, requests: IO[bytes], answers: IO[bytes]) -> None:
    """The worker's loop: a request in, its answer out (``PaneRequest.compute``), until the app closes the pipe."""
    from tui_rater.store.study import Study

    # one connection for the worker's life (a study opened once; reopened only when the app asks for another file)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    study: Study | None = None
    opened: tuple[str, list[str], bool] | None = None
    while True:
        try:
            request: PaneRequest | RetestRequest = pickle.load(requests)
        except EOFError:
            return
        answer: tuple[str, Any]
        try:
            wanted = (request.path, request.task_files, request.readonly)
            if study is None or opened != wanted:
                study = Study.open(request.path, create=False, task_files=request.task_files, readonly=request.readonly)
                opened = wanted
            # (each request says what it computes: this module runs as __main__ here, and the requests' classes
            # are the ones of tui_rater.service.pane_worker, imported again by the unpickling)
            answer = ("ok", request.compute(study))
        except Exception as exc:  # said on the pane, as a computation in the app's thread was
            answer = ("failed", f"{type(exc).__name__}: {exc}")
        pickle.dump(answer, answers, protocol=pickle.HIGHEST_PROTOCOL)
        answers.flush()


def main() -> None:
    # below the app's priority: on a busy machine the screen's short bursts go first (a process can be niced
    # alone; in a thread of the app, a niced computation holding the interpreter's lock would have held the keys)
    with contextlib.suppress(OSError, AttributeError):  # (no os.nice on Windows)
        os.nice(NICENESS)
    # Ctrl-C in a terminal not in raw mode is the app's to handle (it then closes this process); SIGHUP, the
    # terminal gone, ends this one too
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the answers go out on a copy of stdout; stdout itself goes nowhere, so that nothing printed by the
    # statistics can corrupt them
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    serve(int(sys.argv[1]), sys.stdin.buffer, answers)


if __name__ == "__main__":
    main()

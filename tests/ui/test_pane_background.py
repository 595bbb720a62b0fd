"""The agreement pane's computation on a study where it takes seconds (issue 35 item 1): one at a time, never
waited for when the app ends.

Before, the pane's 2-second refresh started a new full computation while the last still ran (Textual's
``exclusive`` worker only marks the old one cancelled: a thread cannot be stopped): six were found at once on a
100,000-item study, the app at 3.8 GB. And a closed terminal (SIGHUP) left the app alive until the computation
ended (over 5 minutes at 100k): asyncio's executor threads are joined when the loop closes and at exit.
"""

from __future__ import annotations

import csv
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support import wait_until
from tests.ui.tmux import TmuxApp, annotate_command, needs_tmux, ratings_in_force, wait_for
from tui_rater.store.io import import_ratings
from tui_rater.store.study import Study
from tui_rater.ui.background import Background

ATTRIBUTES = ("grammaticality", "cohesiveness", "likability", "relevance")
# with six people the pane takes seconds here (the alt-test's cost grows with items x people): 5.4-6.0 s on this
# machine at 50,000 at low load -- at 8,000 it took 2.5 s in a CI run once the pane got faster, and at 20,000 2.2-2.8 s
# once the report's load and the pane's worker did (2026-11-29), under the 2.5 s and 3 s the tests need
ITEMS = 50000
RATERS = (*((name, "human") for name in ("ann", "bea", "cy", "dov", "eli", "fay")), ("j", "llm"))


def big_study(tmp_path: Path, items: int = ITEMS) -> Path:
    """``items`` stories rated by six people and one judge on every question (one import, as a lab would)."""
    db = tmp_path / "big.db"
    study = Study.open(db)
    try:
        stories = [
            {"id": f"s{i}", "system": f"sys{i % 4}", "prompt": f"Prompt {i}.", "story": f"Story {i}. Once upon."}
            for i in range(items)
        ]
        study.add_items(study.task("story"), stories)
        ratings = tmp_path / "ratings.csv"
        with ratings.open("w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["task", "item", "rater", "kind", "attribute", "value"])
            for i in range(items):
                for r, (rater, kind) in enumerate(RATERS):
                    for a, attribute in enumerate(ATTRIBUTES):
                        out.writerow(["story", f"s{i}", rater, kind, attribute, (i * 7 + r * 3 + a + i // 3) % 5 + 1])
        import_ratings(study, ratings)
    finally:
        study.close()
    return db


def pane_threads() -> int:
    """Threads computing the pane's statistics now, or waiting for its worker process to (service/pane_worker.py),
    read from their stacks (whatever runs them)."""
    inside = ("pane_data", "compute_full_pane")
    return sum(any(f.f_code.co_name in inside for f in _stack(frame)) for frame in sys._current_frames().values())


def _stack(frame):
    while frame is not None:
        yield frame
        frame = frame.f_back


def test_requests_while_a_computation_runs_make_one_more_run_never_a_second_thread():
    started, release = threading.Event(), threading.Event()
    inside, most, failures = [0], [0], []
    lock = threading.Lock()

    def work() -> None:
        with lock:
            inside[0] += 1
            most[0] = max(most[0], inside[0])
        started.set()
        release.wait(5)
        with lock:
            inside[0] -= 1

    runner = Background("test", work, failures.append)
    runner.request()
    assert started.wait(5)
    for _ in range(6):  # the pane's refresh ticks while the computation runs
        runner.request()
    release.set()
    assert wait_for(lambda: not runner.running(), 10)
    assert (runner.runs, most[0], failures) == (2, 1, [])  # the six merged into one run after it

    def boom() -> None:
        raise ValueError("no [b]markup[/b]")

    failing = Background("test", boom, failures.append)
    failing.request()
    assert wait_for(lambda: not failing.running(), 10)
    assert [str(e) for e in failures] == ["no [b]markup[/b]"]


def test_a_closed_runner_delivers_nothing_and_starts_nothing():
    release, delivered = threading.Event(), []
    runner = Background("test", lambda: (release.wait(5), delivered.append(1)), lambda exc: None)
    runner.request()
    assert wait_for(runner.running, 5)
    runner.request()  # one more run asked for
    runner.close()
    runner.request()
    release.set()
    assert wait_for(lambda: not runner.running(), 10)
    assert runner.runs == 1  # the run asked for before close() never started


async def test_the_pane_never_computes_twice_at_once(tmp_path):
    """The pane open for longer than three refreshes on a study where one computation takes seconds: at most one
    thread is ever inside the statistics (sampled every 20 ms), and the numbers arrive."""
    from tui_rater.store.session import AnnotationSession
    from tui_rater.ui.agreement import AgreementScreen
    from tui_rater.ui.app import make_app

    study = Study.open(big_study(tmp_path))
    app = make_app(AnnotationSession.open(study, "story", "dee"))
    most = 0
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        assert isinstance(app.screen, AgreementScreen)
        screen = app.screen
        began = time.monotonic()
        while screen.data is None or time.monotonic() - began < 7.0:  # past three 2-second ticks
            most = max(most, pane_threads())
            await pilot.pause(0.02)
            assert time.monotonic() - began < 300, "the pane's numbers never came"
        took = time.monotonic() - began
        assert "judge queue:" in str(screen.query_one("#agreement-head").render())
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not screen, "the pane closed")
    study.close()
    assert most == 1, f"{most} computations at once in {took:.1f} s"


@needs_tmux
@pytest.mark.terminal
# a big study and two computations of seconds each, on purpose: past pyproject's 300 s under 6 busy loops on 2 cores
@pytest.mark.timeout(900)
def test_a_closed_terminal_ends_the_app_while_the_pane_computes(tmp_path):
    """SIGHUP while the pane computes: the ratings typed are saved and the process is gone within 2 s — not
    after the computation, which takes longer than that here (measured first, in this test). On a machine so loaded
    that one computation takes over 4 s, the allowance is half a computation: the exit scales with the load, and
    waiting for the computation would still take twice that."""
    from tui_rater.service.live import agreement_pane

    db = big_study(tmp_path)
    study = Study.open(db)
    began = time.monotonic()
    agreement_pane(study, "story")
    computing = time.monotonic() - began
    study.close()
    assert computing > 2.5, f"the pane took {computing:.1f} s: too little to tell waiting from not"
    app = TmuxApp(annotate_command(db, "dee", "story"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/")
        app.keys("4325")
        assert wait_for(lambda: len(ratings_in_force(db, "dee")) == 4, 30)
        app.keys("a")
        app.wait_text("computing…")
        time.sleep(0.5)  # inside the statistics now
        app.hang_up()
        hung_up = time.monotonic()
        assert app.wait_exit(computing) is not None, "still running after one whole computation's time"
        gone = time.monotonic() - hung_up
    finally:
        app.close()
    assert len(ratings_in_force(db, "dee")) == 4
    assert gone < max(2.0, computing / 2), f"gone {gone:.1f} s after SIGHUP (one computation takes {computing:.1f} s)"

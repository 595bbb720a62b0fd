"""The real app in tmux: the agreement pane's full computation runs in a process of its own (issue 35 item 1: "never
blocks keys"), so the pane answers keys while it is known to be running -- its worker stopped (SIGSTOP) before
answering -- and closing the pane ends that process.

Before, the computation ran in a thread of the app and shared the interpreter's lock with the screen: the keys'
median while it ran was 1.3-2.2x the idle median at 10k items (bench/pane_keys.py, bench/RESULTS.md §11 run 9).
Nothing here is timed: a stopped worker either holds the screen (the keys never answered) or it does not."""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path

import pytest

from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux, wait_for
from tui_rater.store.study import Study

HEADER = re.compile(r"◀ (\w+) ▶")
STALE = "an earlier look's, computing…"


def small_study(tmp_path: Path) -> Path:
    """12 stories, two people and a judge on every question."""
    db = tmp_path / "small.db"
    study = Study.open(db)
    try:
        task = study.task("story")
        study.add_items(
            task, [{"id": f"s{i}", "system": f"sys{i % 2}", "prompt": "P.", "story": f"S {i}."} for i in range(12)]
        )
        raters = [study.human("ann"), study.human("bob"), study.judge("j", {"model": "j"})]
        for i, item in enumerate(study.items("story")):
            for r, rater in enumerate(raters):
                for a, attribute in enumerate(q.name for q in task.attributes):
                    study.add_rating(item.key, attribute, rater.id, float((i + r + a) % 5 + 1))
    finally:
        study.close()
    return db


def _workers(pid: int) -> list[int]:
    """The app's children running the pane's worker (whichever of its threads started them)."""
    found: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # the app has ended
        return found
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                command = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if b"tui_rater.service.pane_worker" in command:
                found.append(int(child))
    return found


def _alive(pid: int) -> bool:
    try:
        return not re.search(r"^State:\s+[ZX]", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return False


@needs_tmux
@pytest.mark.terminal
def test_the_pane_answers_keys_while_its_computation_is_stopped_and_closing_it_ends_the_computation(tmp_path):
    db = small_study(tmp_path)
    app = TmuxApp(annotate_command(db, "dee", "story"), tmp_path, size=(100, 40), env="env TERM=xterm")
    worker = None
    try:
        app.wait_text("item 1/")
        app.keys("a")
        # the worker is stopped as soon as it exists: before it has imported the statistics, so before any answer
        found = wait_for(lambda: bool(_workers(app.pid)), 60, every=0.005)
        assert found, f"no worker process for the pane:\n{app.screen()}"
        worker = _workers(app.pid)[0]
        os.kill(worker, signal.SIGSTOP)
        # the running sums (a thread of the app) give the first numbers; the full computation's are outstanding
        screen = app.wait_screen(lambda s: HEADER.search(s) is not None and STALE in flat(s))
        names = [HEADER.findall(screen)[-1]]
        for _ in range(3):  # → shows the next question: each answered while the computation waits
            app.key("Right")
            screen = app.wait_screen(lambda s: bool(HEADER.findall(s)) and HEADER.findall(s)[-1] != names[-1])
            names.append(HEADER.findall(screen)[-1])
            assert STALE in flat(screen)  # still without the full computation's figures
        assert len(set(names)) == 4, names
        os.kill(worker, signal.SIGCONT)
        app.wait_screen(lambda s: STALE not in flat(s) and "may the judge replace the humans?" in flat(s))
        os.kill(worker, signal.SIGSTOP)  # stopped again; the next computation, after a new rating, waits for it
        writer = Study.open(db)
        try:
            item = writer.items("story")[0]
            writer.add_rating(item.key, "grammaticality", writer.judge("j", {"model": "j"}).id, 5.0)
        finally:
            writer.close()
        app.wait_text(STALE)
        app.keys("a")  # the pane closes: its computation is abandoned, its process ended
        app.wait_text("item 1/")
        assert wait_for(lambda: not _alive(worker), 30), "the pane's worker outlived the pane"
        assert not _workers(app.pid)
        app.key("Right")  # the rating screen answers as before
        app.wait_text("item 2/")
    finally:
        if worker is not None and _alive(worker):
            os.kill(worker, signal.SIGKILL)
        app.close()

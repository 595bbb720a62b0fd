"""A session loads only what it shows (issue 36 item 9): `serve` runs one app process per browser page, so what
one session holds and does while idle is paid once per annotator.

- The statistics and model libraries (numpy, polars, scipy, matplotlib, openai, llama.cpp) stay out of a session
  that does not open the agreement pane: the real `annotate` in tmux, its imports read from `python -X importtime`.
- The items' texts are read when shown (and a few ahead): a session on 20,000 stories holds the texts of a few
  dozen, whichever item it jumps to.
- An idle session with a team plan reads the team's share again only when something was committed.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from pathlib import Path

import pytest

from tests.support import run_cli_process
from tests.ui.tmux import TmuxApp, needs_tmux, ratings_in_force, wait_for
from tui_rater.domain.values import Item
from tui_rater.store.item_texts import CAPACITY
from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study
from tui_rater.ui import app as app_module
from tui_rater.ui.app import RaterApp, make_app
from tui_rater.ui.messages import TeamProgress

HEAVY = ("numpy", "polars", "scipy", "matplotlib", "openai", "llama_cpp", "pandas", "sklearn")


def stories(count: int) -> list[dict[str, str]]:
    return [
        {
            "id": f"s{i}",
            "system": "human" if i % 2 else "gpt2",
            "prompt": f"Prompt number {i}.",
            "story": f"Story {i}. " + "The keeper lit the lamp and wrote the ships' names in a book. " * 20,
        }
        for i in range(count)
    ]


def study_of(path: Path, count: int) -> Path:
    study = Study.open(path)
    study.add_items(study.task("story"), stories(count))
    study.close()
    return path


@needs_tmux
@pytest.mark.terminal
def test_an_annotation_session_imports_no_statistics_or_model_library(tmp_path):
    """Before, the app imported polars, numpy and scipy in a worker after its first screen (for the agreement
    pane: ~95 MB and ~1 CPU-s in every session), and numpy at its start (the protocols, and sqlite-utils' optional
    numpy support). The pane now imports them itself, when opened (tests/ui/test_agreement_labels.py opens it)."""
    db = study_of(tmp_path / "s.db", 12)
    modules = tmp_path / "modules.txt"
    # the real command (`python -m tui_rater.cli annotate ...`), which writes the modules it holds as it exits
    run = (
        "import atexit, runpy, sys\n"
        f"atexit.register(lambda: open({str(modules)!r}, 'w').write('\\n'.join(sys.modules)))\n"
        f"sys.argv = ['tui-rater', 'annotate', '--db', {str(db)!r}, '--task', 'story', '--annotator', 'alice']\n"
        "runpy.run_module('tui_rater.cli', run_name='__main__')\n"
    )
    app = TmuxApp([sys.executable, "-c", run], tmp_path, size=(100, 30), env="env TERM=xterm")
    try:
        app.wait_text("item 1/12", "Story 0.")
        app.keys("4325")  # one item rated, the next shown: the session's ordinary work
        app.wait_text("item 2/12", "Story 1.")
        app.keys("np")
        app.key("Right")
        app.wait_text("item 3/12", "Story 2.")
        assert wait_for(lambda: len(ratings_in_force(db, "alice")) == 4, 30)
        time.sleep(3)  # (the old warm-up import ran here, after the first screen: ~1 s alone)
        app.keys("q")
        assert app.wait_status(30) == 0
        imported = set(modules.read_text().split())
        assert "tui_rater.ui.app" in imported  # the app's own modules
        assert sorted(imported & set(HEAVY)) == []
        assert not any(name.startswith(("tui_rater.stats", "tui_rater.service.live")) for name in imported)
    finally:
        app.close()


async def test_a_session_on_20000_items_holds_only_the_texts_around_the_item_shown(tmp_path):
    """Before, a session read every item of the task, texts and all, at its start: 20,000 ``Item``s (~40 MB of
    text in each browser session). Now it holds each item's key, id and place, and the texts of the items around
    the one on screen: read ahead in a worker as the person moves, and one row by its key after a jump."""
    study = Study.open(study_of(tmp_path / "big.db", 20_000))
    session = AnnotationSession.open(study, "story", "alice")
    assert len(session.items) == 20_000
    app = make_app(session)
    async with app.run_test(size=(100, 30)) as pilot:
        assert "Story 0." in str(app.query_one("#item-text").render())
        for key in "4325nnp":
            await pilot.press(key)
        await pilot.pause()
        assert app.index == 2 and "Story 2." in str(app.query_one("#item-text").render())
        await pilot.press("g", *"9000", "enter")  # a jump far ahead: that item is read then
        await pilot.pause()
        assert app.index == 8999 and "Story 8999." in str(app.query_one("#item-text").render())
        for _ in range(3):
            await pilot.press("n")
        await pilot.pause()
        assert "Story 9002." in str(app.query_one("#item-text").render())
        await app.workers.wait_for_complete()
        gc.collect()
        held = [o for o in gc.get_objects() if type(o) is Item]
        assert len(held) <= CAPACITY  # (before: 20,000)
        assert session.texts is not None and session.texts.read <= 3 * CAPACITY
    assert ratings_in_force(tmp_path / "big.db", "alice") == {
        ("s0", "grammaticality"): 4.0,
        ("s0", "cohesiveness"): 3.0,
        ("s0", "likability"): 2.0,
        ("s0", "relevance"): 5.0,
    }
    study.close()


class ShareWatched(RaterApp):
    """The app, with the team shares its watcher thread reports kept in a list."""

    CSS_PATH = str(Path(app_module.__file__).with_name("app.tcss"))  # (relative paths are the subclass module's)
    shares: list[float]

    def on_team_progress(self, message: TeamProgress) -> None:
        self.shares.append(message.share)
        super().on_team_progress(message)


async def test_an_idle_team_session_reads_the_team_share_only_after_a_commit(tmp_path):
    """The header's "team X %" is read by a thread every 2 s; before, it read the share (every rating, and in the
    dynamic mode every item's texts) each time, so an idle browser session used 1-4 % of a core on a 5,000-item
    study. Now it looks at SQLite's data_version (a commit by any connection changes it) and reads the share only
    then: still within ~2 s of another annotator's rating."""
    db = study_of(tmp_path / "team.db", 40)
    planned = run_cli_process("assign", "--db", db, "--task", "story", "--annotators", "alice,bob", "--dynamic")
    assert planned.returncode == 0, planned.stderr
    study = Study.open(db)
    app = ShareWatched(AnnotationSession.open(study, "story", "alice"))
    app.shares = []
    async with app.run_test(size=(100, 30)) as pilot:
        deadline = time.monotonic() + 30
        while not app.shares and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert app.shares == [0.0]
        await asyncio.sleep(3)  # alice's lease on her first item is committed: read once more, then nothing
        settled = len(app.shares)
        await asyncio.sleep(5)  # idle: before, 2-3 more reads here
        assert len(app.shares) == settled
        bob_study = Study.open(db)
        bob = AnnotationSession.open(bob_study, "story", "bob")
        for attribute in bob.task.attribute_names:  # bob rates an item in his own process's connection
            bob.save(lambda attribute=attribute: bob.rate(0, attribute, 3.0), lock_wait=5)
        bob_study.close()
        deadline = time.monotonic() + 30
        while len(app.shares) == settled and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        await pilot.pause()
        assert app.shares[-1] == pytest.approx(1 / 40)  # 1 of 40 items × K = 1
    study.close()

"""The real app in tmux: the agreement pane shows a rating stored while it is open within a second or two, while
its full computation -- which takes seconds on this study, measured first -- is still running (issue 35 item 1).

Before, every new rating started the full computation again, and the pane's numbers changed only when it ended."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.ui.test_pane_background import big_study
from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux, wait_for
from tui_rater.service.live import agreement_pane
from tui_rater.store.study import Study


def _ratings_shown(screen: str) -> int | None:
    found = re.search(r"story · (\d+) ratings", flat(screen))
    return int(found.group(1)) if found else None


@needs_tmux
@pytest.mark.terminal
def test_the_open_pane_shows_a_new_rating_before_its_full_computation_could_have_ended(tmp_path: Path) -> None:
    db = big_study(tmp_path)
    study = Study.open(db)
    began = time.monotonic()
    agreement_pane(study, "story")
    computing = time.monotonic() - began
    items = study.items("story")
    judge = study.judge("j2", {"model": "j2"})
    study.close()
    assert computing > 3.0, f"the full computation took {computing:.1f} s: too little to tell updating from it"
    app = TmuxApp(annotate_command(db, "dee", "story"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/")
        app.keys("a")
        assert wait_for(lambda: _ratings_shown(app.screen()) is not None, 120), app.screen()
        before = _ratings_shown(app.screen())
        time.sleep(1.0)  # the pane's full computation is running now (started when it opened)
        writer = Study.open(db)
        try:
            writer.add_rating(items[5].key, "grammaticality", judge.id, 4.0)
        finally:
            writer.close()
        stored = time.monotonic()
        # (at most a minute: the test's own time limit is 5; before, this waited out one full computation)
        shown = wait_for(lambda: _ratings_shown(app.screen()) == (before or 0) + 1, min(computing, 60.0))
        took = time.monotonic() - stored
    finally:
        app.close()
    assert shown, f"the new rating not shown within {computing:.1f} s (one full computation)"
    assert took < computing * 0.6, f"shown after {took:.1f} s; one full computation takes {computing:.1f} s"

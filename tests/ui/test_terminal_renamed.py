"""A study renamed while a person rates (`mv a.db b.db`), and a colleague then opening it under the new name: the
real app in tmux at 80x24, two annotators. SQLite keeps a write-ahead log per *name*, so a session that kept
writing after the rename committed into `a.db-wal`, which nobody reads again (issue 36: b.db held none of alpha's
10 ratings while both screens showed them saved)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from tests.support import run_cli_process
from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux

pytestmark = [pytest.mark.terminal, needs_tmux]

TASK = "title-fluency"
RATED = re.compile(r"(\d+)/(\d+) rated")


def titles(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "items.csv"
    path.write_text("id,title\n" + "".join(f"t{i},Title number {i}\n" for i in range(count)))
    db = tmp_path / "a.db"
    proc = run_cli_process("import", path, "--task", TASK, "--db", db)
    assert proc.returncode == 0, proc.stderr
    return db


def saved_count(screen: str) -> int:
    """The "N/M rated" count: the items the screen calls saved (one question each)."""
    found = RATED.search(flat(screen))
    return int(found[1]) if found else 0


def ratings_of(db: Path, annotator: str) -> list[str]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT i.id FROM ratings r JOIN items i ON i.key = r.item_key JOIN raters ra ON ra.id = r.rater_id "
            "WHERE ra.name = ? AND r.retracted = 0",
            [annotator],
        ).fetchall()
    return [item for (item,) in rows]


def test_a_study_renamed_mid_session_loses_nothing_shown_as_saved(tmp_path):
    a_db = titles(tmp_path, 30)
    b_db = tmp_path / "b.db"
    alpha = TmuxApp(annotate_command(a_db, "alpha", TASK), tmp_path, env="env TERM=xterm")
    beta: TmuxApp | None = None
    shown = 0  # the most items alpha's screen ever called saved
    try:
        alpha.wait_text("item 1/30", "q quit")
        for n in range(1, 11):  # 10 ratings, each seen saved before the next
            alpha.keys("4")
            shown = max(shown, saved_count(alpha.wait_screen(lambda s, n=n: saved_count(s) >= n)))
        a_db.rename(b_db)  # mv a.db b.db, while alpha's session holds the file open
        for _ in range(5):  # alpha rates on under the old name
            alpha.keys("3")
            screen = alpha.screen()
            shown = max(shown, saved_count(screen))
        screen = alpha.wait_text("moved")
        shown = max(shown, saved_count(screen))
        assert "nothing more is saved" in flat(screen), screen
        beta = TmuxApp(annotate_command(b_db, "beta", TASK), tmp_path, env="env TERM=xterm")
        beta.wait_text("item 1/30", "q quit")
        for n in range(1, 6):
            beta.keys("2")
            beta.wait_screen(lambda s, n=n: saved_count(s) >= n)
        beta.keys("q")
        assert beta.wait_status() == 0
        assert saved_count(alpha.screen()) == shown  # nothing typed after the rename turned saved
        alpha.keys("q")  # nothing will be saved by waiting: quitting asks at once
        alpha.wait_text("Quit now and lose 5 ratings")
        alpha.keys("y")
        status = alpha.wait_status()
        printed = alpha.printed()
    finally:
        alpha.close()
        if beta is not None:
            beta.close()
    assert status == 1 and "quit without saving 5 ratings" in printed, printed
    # every rating alpha's screen called saved is in the study under its new name; beta's too
    assert len(ratings_of(b_db, "alpha")) == shown == 10
    assert len(ratings_of(b_db, "beta")) == 5

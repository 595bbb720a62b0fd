"""The app in a real terminal: tmux runs the command, send-keys rates, capture-pane and the DB show it."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from tests.ui.tmux import TmuxApp, annotate_command, needs_tmux, wait_for

pytestmark = [pytest.mark.terminal, needs_tmux]

TITLES = (
    "id,title\nt1,Stocks fall after weak retail sales report\nt2,Oil prices climb\nt3,Rebels seize town\n"
    "t4,Chip shortage slows car production\n"
)


def count(db) -> int:
    conn = sqlite3.connect(db, timeout=10)
    try:
        return conn.execute("SELECT count(*) FROM ratings WHERE retracted = 0").fetchone()[0]
    finally:
        conn.close()


def titles_study(tmp_path):
    items = tmp_path / "titles.csv"
    items.write_text(TITLES)
    db = tmp_path / "t.db"
    subprocess.run(
        [sys.executable, "-m", "tui_rater.cli", "import", str(items), "--task", "title-fluency", "--db", str(db)],
        check=True,
        capture_output=True,
    )
    return db


def test_the_terminal_is_as_wide_as_the_test_asks(tmp_path):
    """pytest imports readline, which puts COLUMNS=80 LINES=24 into the process's C environment (not os.environ):
    inherited, they made every app in a 100- or 120-column test window draw itself 80 columns wide."""
    probe = "import shutil, time; print('size', *shutil.get_terminal_size()); time.sleep(30)"
    app = TmuxApp([sys.executable, "-c", probe], tmp_path, size=(120, 30))
    try:
        app.wait_text("size 120 30")
    finally:
        app.close()


def test_rate_three_items_in_tmux(tmp_path):
    db = titles_study(tmp_path)
    app = TmuxApp(annotate_command(db, "tmux-user", "title-fluency"), tmp_path, size=(100, 30))
    try:
        app.wait_text("item 1/4")
        for n, key in enumerate("345", start=1):
            app.keys(key)
            app.wait_text(f"{n}/4 rated")  # saved, and shown as saved, before the next key
        assert count(db) == 3
        screen = app.wait_text("item 4/4", "3/4 rated")
        assert "Chip shortage slows car production" in screen
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT i.id, r.value FROM ratings r JOIN items i ON i.key = r.item_key ORDER BY r.id"
    ).fetchall()
    assert rows == [("t1", 3.0), ("t2", 4.0), ("t3", 5.0)]


def test_sixteen_colours_and_no_colour(tmp_path):
    """On a 16-colour terminal with NO_COLOR the focused question is still marked, not only coloured."""
    db = titles_study(tmp_path)
    app = TmuxApp(annotate_command(db, "mono", "title-fluency"), tmp_path, env="env TERM=xterm NO_COLOR=1")
    try:
        # the footer is drawn after the status line: wait for the whole first screen
        screen = app.wait_text("q quit")
        assert "item 1/4" in screen and "▶ [·] fluency" in screen
        app.keys("2")
        assert wait_for(lambda: count(db) == 1)
    finally:
        app.close()

"""The app in a real terminal: tmux runs the command, send-keys rates, capture-pane and the DB show it."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

TITLES = (
    "id,title\nt1,Stocks fall after weak retail sales report\nt2,Oil prices climb\nt3,Rebels seize town\n"
    "t4,Chip shortage slows car production\n"
)


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, timeout=10).stdout


def count(db) -> int:
    conn = sqlite3.connect(db, timeout=10)
    try:
        return conn.execute("SELECT count(*) FROM ratings WHERE retracted = 0").fetchone()[0]
    finally:
        conn.close()


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


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


def test_rate_three_items_in_tmux(tmp_path):
    db = titles_study(tmp_path)
    session = f"tui-rater-test-{time.monotonic_ns()}"
    command = f"{sys.executable} -m tui_rater.cli annotate --db {db} --annotator tmux-user --task title-fluency"
    tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", command)
    try:
        assert wait_for(lambda: "item 1/4" in tmux("capture-pane", "-p", "-t", session)), tmux(
            "capture-pane", "-p", "-t", session
        )
        for key in ("3", "4", "5"):
            tmux("send-keys", "-t", session, key)
            time.sleep(0.3)
        assert wait_for(lambda: count(db) == 3)
        screen = tmux("capture-pane", "-p", "-t", session)
        assert "item 4/4" in screen and "3/4 rated" in screen
        assert "Chip shortage slows car production" in screen
        tmux("send-keys", "-t", session, "q")
        assert wait_for(lambda: session not in tmux("list-sessions"))
    finally:
        tmux("kill-session", "-t", session)
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT i.id, r.value FROM ratings r JOIN items i ON i.key = r.item_key ORDER BY r.id"
    ).fetchall()
    assert rows == [("t1", 3.0), ("t2", 4.0), ("t3", 5.0)]


def test_sixteen_colours_and_no_colour(tmp_path):
    """On a 16-colour terminal with NO_COLOR the focused question is still marked, not only coloured."""
    db = titles_study(tmp_path)
    session = f"tui-rater-colour-{time.monotonic_ns()}"
    command = (
        f"env TERM=xterm NO_COLOR=1 {sys.executable} -m tui_rater.cli annotate --db {db} "
        f"--annotator mono --task title-fluency"
    )
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "24", command)
    try:
        # the footer is drawn after the status line: wait for the whole first screen
        assert wait_for(lambda: "q quit" in tmux("capture-pane", "-p", "-t", session))
        screen = tmux("capture-pane", "-p", "-t", session)
        assert "item 1/4" in screen and "▶ [·] fluency" in screen
        tmux("send-keys", "-t", session, "2")
        assert wait_for(lambda: count(db) == 1)
    finally:
        tmux("kill-session", "-t", session)

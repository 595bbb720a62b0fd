"""`annotate --retest 0.5` end to end in a real terminal: rate, quit, restart, the retests come back as planned."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux

pytestmark = [pytest.mark.terminal, needs_tmux]

WORDS = ("Apple", "Bridge", "Copper", "Dolphin", "Ember", "Falcon", "Glacier", "Harbor")


def plan(db) -> list[tuple[str, str, bool]]:
    conn = sqlite3.connect(db, timeout=10)
    try:
        rows = conn.execute(
            "SELECT i.id, i.fields, s.retest FROM plan_showings s JOIN plans p ON p.id = s.plan_id "
            "JOIN items i ON i.key = s.item_key WHERE p.kind = 'retest' ORDER BY s.position"
        ).fetchall()
    finally:
        conn.close()
    return [(item_id, json.loads(fields)["title"], bool(retest)) for item_id, fields, retest in rows]


def rate_showings(app: TmuxApp, showings, start: int, stop: int, total: int) -> None:
    """Rate the plan's showings ``start``..``stop``-1 as they come, checking each is the planned one."""
    for position in range(start, stop):
        _id, title, retest = showings[position]
        screen = flat(app.wait_text(f"item {position + 1}/{total}", title))
        if retest:  # blind: the first rating is not on screen, nor the item marked
            assert "[·] fluency" in screen and "flagged" not in screen
        app.keys("5" if retest else str(1 + WORDS.index(title.split()[0]) % 4))
    app.wait_text(f"{stop}/{total} rated" if stop < total else f"{total}/{total} rated")


def test_retest_in_tmux_rate_quit_restart(tmp_path):
    items = tmp_path / "titles.csv"
    items.write_text("id,title\n" + "".join(f"t{i},{word} rises again\n" for i, word in enumerate(WORDS)))
    db = tmp_path / "solo.db"
    subprocess.run(
        [sys.executable, "-m", "tui_rater.cli", "import", str(items), "--task", "title-fluency", "--db", str(db)],
        check=True,
        capture_output=True,
    )
    command = annotate_command(db, "solo", "title-fluency", "--retest", "0.5", "--retest-spacing", "2")
    app = TmuxApp(command, tmp_path, size=(100, 30))
    try:
        app.wait_text("item 1/")
        showings = plan(db)
        total = len(showings)
        retest_positions = [i for i, (_id, _t, retest) in enumerate(showings) if retest]
        assert len(retest_positions) >= 2 and sorted({s[0] for s in showings}) == [f"t{i}" for i in range(8)]
        stop = retest_positions[0] + 1  # quit after the first retest, before the others
        rate_showings(app, showings, 0, stop, total)
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()

    again = TmuxApp(command, tmp_path, size=(100, 30))
    try:
        rate_showings(again, showings, stop, total, total)  # the same plan, from where it stopped
        again.keys("q")
        assert again.wait_status() == 0
    finally:
        again.close()
    assert plan(db) == showings

    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT r.id, i.id, r.value, r.retest_of FROM ratings r JOIN items i ON i.key = r.item_key ORDER BY r.id"
        ).fetchall()
    finally:
        conn.close()
    first = {item_id: (rating_id, value) for rating_id, item_id, value, of in rows if of is None}
    retests = [(item_id, value, of) for _id, item_id, value, of in rows if of is not None]
    planned = [showings[i][0] for i in retest_positions]
    assert retests == [(item_id, 5.0, first[item_id][0]) for item_id in planned]  # linked to the first rating
    assert all(value != 5.0 for _id, value in first.values())  # the first ratings kept their own values

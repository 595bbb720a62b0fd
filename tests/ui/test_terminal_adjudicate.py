"""In a real terminal (tmux, 80x24, keys only): adjudicating a disagreement, editing a comment, taking a flag back."""

from __future__ import annotations

import json
import sqlite3
import sys

import pytest

from tests.support import run_cli_process, story_study
from tests.ui.tmux import LockHolder, TmuxApp, annotate_command, flat, needs_tmux

pytestmark = [pytest.mark.terminal, needs_tmux]


def _study(tmp_path):
    db = story_study(tmp_path / "study.db")
    ratings = tmp_path / "r.csv"
    ratings.write_text(
        "item,rater,attribute,value\n"
        "s0,alice,grammaticality,1\ns0,bob,grammaticality,5\n"  # range 4: first in the list
        "s1,alice,likability,2\ns1,bob,likability,3\n"
        "s1,alice,relevance,4\ns1,bob,relevance,4\n"
    )
    assert run_cli_process("import-ratings", ratings, "--db", db).returncode == 0
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO notes (item_key, rater_id, kind, text, created_at) SELECT i.key, ra.id, 'comment', "
        "'[b]not markup[/b] the ending is cut', '2026-11-25T00:00:00' FROM items i, raters ra "
        "WHERE i.id = 's0' AND ra.name = 'bob'"
    )
    conn.execute(
        "INSERT INTO notes (item_key, rater_id, kind, created_at) SELECT i.key, ra.id, 'flag', '2026-11-25T00:00:01' "
        "FROM items i, raters ra WHERE i.id = 's0' AND ra.name = 'alice'"
    )
    conn.commit()
    conn.close()
    return db


def _decisions(db):
    conn = sqlite3.connect(db, timeout=10)
    try:
        return conn.execute(
            "SELECT i.id, r.attribute, r.value, ra.name, ra.kind FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
            "JOIN items i ON i.key = r.item_key WHERE ra.kind = 'adjudicator' ORDER BY r.id"
        ).fetchall()
    finally:
        conn.close()


def test_adjudicate_a_disagreement_at_80x24_and_quit(tmp_path):
    db = _study(tmp_path)
    before = sqlite3.connect(db).execute("SELECT * FROM ratings ORDER BY id").fetchall()
    command = [sys.executable, "-m", "tui_rater.cli", "adjudicate", "--db", str(db), "--task", "story"]
    app = TmuxApp([*command, "--adjudicator", "lead"], tmp_path, size=(80, 24))
    try:
        screen = app.wait_text("lead (adjudicator)", "0/2 decided", "1. s0", "2. s1")
        assert flat(screen).index("1. s0") < flat(screen).index("2. s1")  # most disagreeing first
        app.key("Enter")
        # the item with every rating and note, literally; the question in dispute with its raters
        screen = app.wait_text("item 1/2", "grammaticality: alice 1 · bob 5", "[b]not markup[/b] the ending is cut")
        assert "alice flag" in flat(screen) and "bob comment" in flat(screen)
        assert "▶ [·] grammaticality alice 1 · bob 5" in flat(screen) and "decide: keys 1-5" in flat(screen)
        app.keys("3")
        # decided: on to the next item, whose two questions in dispute are... one (relevance agrees)
        screen = app.wait_text("item 2/2", "1/2 decided", "likability alice 2 · bob 3")
        assert "relevance alice" not in flat(screen)
        app.key("Left")
        app.wait_text("item 1/2", "▶ [3] grammaticality")
        app.key("Escape")
        app.wait_text("1/2 decided", "1. s0 grammaticality 1/5 1/1 decided")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    assert _decisions(db) == [("s0", "grammaticality", 3.0, "lead (adjudicator)", "adjudicator")]
    conn = sqlite3.connect(db)
    after = conn.execute(
        "SELECT * FROM ratings r WHERE r.rater_id IN (SELECT id FROM raters WHERE kind != 'adjudicator') ORDER BY id"
    ).fetchall()
    assert after == before  # the raters' ratings as they were
    # the queue now says it was decided
    listed = run_cli_process("adjudicate", "--db", db, "--task", "story", "--format", "json")
    decided = {e["item"]: [q["decided"] for q in e["questions"]] for e in json.loads(listed.stdout)}
    assert decided == {"s0": [3.0], "s1": [None]}


def test_a_comment_is_reopened_edited_and_a_flag_taken_back(tmp_path):
    db = story_study(tmp_path / "study.db")
    app = TmuxApp(annotate_command(db, "ann", "story"), tmp_path, size=(80, 24))
    try:
        app.wait_text("item 1/4")
        app.keys("f")
        app.wait_text("rated · flagged", "Flagged")
        app.keys("f")  # again: taken back, with a visible confirmation
        screen = app.wait_text("Flag taken back")
        assert "flagged" not in flat(screen).split("\n")[0]
        app.keys("c")
        app.wait_text("Comment on this item:")
        app.keys("the ending is cut")
        app.key("Enter")
        app.wait_text("Comment saved")
        app.keys("c")  # reopened: the comment is shown, to edit
        app.wait_text("edit it; an empty line removes it", "the ending is cut")
        app.keys(", and so is the start")
        app.key("Enter")
        app.wait_text("Comment changed")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    conn = sqlite3.connect(db)
    notes = conn.execute(
        "SELECT id, kind, text, retracted_at IS NOT NULL, supersedes FROM notes ORDER BY id"
    ).fetchall()
    flag, first, edit = notes
    assert flag[1:] == ("flag", None, 1, None)  # kept, marked taken back
    assert first[1:] == ("comment", "the ending is cut", 1, None)  # kept, marked replaced
    assert edit[1:] == ("comment", "the ending is cut, and so is the start", 0, first[0])
    # reopened later, the app knows the comment in force and that the item is not flagged
    app = TmuxApp(annotate_command(db, "ann", "story"), tmp_path, size=(80, 24))
    try:
        screen = app.wait_text("item 1/4")
        assert "flagged" not in flat(screen)
        app.keys("c")
        app.wait_text("the ending is cut, and so is the start")
        app.key("Escape")  # kept as it was
        app.wait_screen(lambda screen: "edit it" not in screen)  # (q at once after Esc would read as Alt+q)
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    assert conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 3


def test_a_pairwise_disagreement_is_decided_with_the_choice_letters(tmp_path):
    db = tmp_path / "pairs.db"
    items = tmp_path / "pairs.csv"
    items.write_text("id,prompt,story_a,story_b\np1,P,The first story.,The second story.\n")
    assert run_cli_process("import", items, "--task", "story-pairwise", "--db", db).returncode == 0
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,rater,attribute,value\np1,alice,preference,0\np1,bob,preference,1\n")
    assert run_cli_process("import-ratings", ratings, "--db", db).returncode == 0
    command = [sys.executable, "-m", "tui_rater.cli", "adjudicate", "--db", str(db), "--task", "story-pairwise"]
    app = TmuxApp([*command, "--adjudicator", "lead", "--margin", "3"], tmp_path, size=(80, 24))
    try:
        app.wait_text("1. p1")
        app.key("Enter")
        app.wait_text("preference alice A · bob B", "decide: a = Storyline-1")
        app.keys("t")  # the tie, as in annotate
        app.wait_text("▶ [C] preference", "1/1 decided")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    assert _decisions(db) == [("p1", "preference", 2.0, "lead (adjudicator)", "adjudicator")]


def test_a_decision_made_while_another_process_holds_the_file_is_saved_before_quitting(tmp_path):
    """The screen never waits on SQLite: the decision shows as unsaved, q waits for it, and it is in the file."""
    db = _study(tmp_path)
    command = [sys.executable, "-m", "tui_rater.cli", "adjudicate", "--db", str(db), "--task", "story"]
    app = TmuxApp([*command, "--adjudicator", "lead"], tmp_path, size=(80, 24))
    try:
        app.wait_text("1. s0")
        app.key("Enter")
        app.wait_text("item 1/2", "grammaticality: alice 1 · bob 5")
        with LockHolder(db) as lock:
            app.keys("4")
            app.wait_text("item 2/2")  # on at once, the decision not in the file yet
            app.key("Left")
            app.wait_text("▶ [4…] grammaticality")
            app.keys("q")
            app.wait_text("saving 1 rating before quitting", "waiting for the study file")
            assert app.running() and _decisions(db) == []
            lock.release()
            assert app.wait_status() == 0
    finally:
        app.close()
    assert _decisions(db) == [("s0", "grammaticality", 4.0, "lead (adjudicator)", "adjudicator")]

"""Saves that wait: another process holds the study file's write lock (a real second process, real
SQLite) while the app's undo, reveal revisions, reviews and quit go through the save queue.

The screen must show every change as unsaved until it is committed, and lose none of them."""

from __future__ import annotations

import json

from tests.support import ratings_of, settle, wait_until
from tests.ui.tmux import LockHolder, all_ratings
from tui_rater.ui.screens import RevealScreen


def shown_text(app, selector: str) -> str:
    return str(app.screen.query_one(selector).render())


async def wait_locked(app, pilot) -> None:
    await wait_until(pilot, lambda: app.view.stalled is not None and app.view.stalled.locked, "the save waits")


async def test_undo_waits_for_the_lock_and_shows_unsaved(app_for, study):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4")
        await settle(app, pilot)
        with LockHolder(study.path) as lock:
            await pilot.press("up", "2")  # grammaticality again: 2, not saved yet
            await wait_locked(app, pilot)
            assert app.shown(0, "grammaticality") == (2.0, "…")
            assert "[2…] grammaticality" in shown_text(app, "#questions")
            await pilot.press("u")  # take the 2 back: 4 again, still not saved
            await pilot.pause()
            assert app.shown(0, "grammaticality") == (4.0, "…") and app.focus_attr == 0
            line = " ".join(shown_text(app, "#saving").split())
            assert "waiting for the study file (locked by another process): 1 rating and 1 undo not saved yet" in line
            assert ratings_of(study, "alice") == [("s0", "grammaticality", 4)]
            lock.release()
        await settle(app, pilot)
        assert app.shown(0, "grammaticality") == (4.0, "") and not app.query_one("#saving").display
        await pilot.press("u")  # the 4 itself
        await settle(app, pilot)
        assert app.shown(0, "grammaticality") == (None, "")
        await pilot.press("u")
        await pilot.pause()
        assert app.shown(0, "grammaticality") == (None, "")  # nothing left to undo
    assert all_ratings(study.path, "alice") == [("s0", "grammaticality", 4.0, 1), ("s0", "grammaticality", 2.0, 1)]


async def test_reveal_revision_and_review_wait_for_the_lock(app_for, study):
    judge = study.judge("gpt-judge", {"model": "x"})
    study.add_rating(study.items("story")[0].key, "likability", judge.id, 2, raw="A 2.")
    app = app_for(reveal=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("4", "3", "5", "5")
        await wait_until(pilot, lambda: isinstance(app.screen, RevealScreen), "the reveal screen")
        await settle(app, pilot)
        with LockHolder(study.path) as lock:
            await pilot.press("down", "down", "x", "r", "3", "enter")
            await wait_locked(app, pilot)
            shown = shown_text(app, "#reveal-text")
            assert "likability  you: 3…  [disagree…]" in shown
            assert [v for _i, a, v in ratings_of(study, "alice") if a == "likability"] == [5]
            lock.release()
        await settle(app, pilot)
        assert "likability  you: 3  [disagree]" in shown_text(app, "#reveal-text")
        await pilot.press("enter")
        assert app.index == 1
    first, revision = study._db.conn.execute(
        "SELECT id, value, revises FROM ratings WHERE attribute = 'likability' AND rater_id != ? ORDER BY id",
        [judge.id],
    ).fetchall()
    assert (first[1], revision[1], revision[2]) == (5, 3, first[0])  # the revision is linked to the first
    reviews = [json.loads(t) for (t,) in study._db.conn.execute("SELECT text FROM notes WHERE kind = 'review'")]
    assert reviews == [{"verdict": "disagree", "comment": ""}]


async def test_quit_waits_for_every_save_and_asks_before_losing_any(app_for, study):
    app = app_for()
    async with app.run_test(size=(80, 24)) as pilot:
        with LockHolder(study.path) as lock:
            await pilot.press("4", "f", "q")
            await wait_locked(app, pilot)
            line = " ".join(shown_text(app, "#saving").split())
            assert line.startswith("saving 1 rating and 1 note before quitting…") and app.return_code is None
            assert "0/4 rated" in shown_text(app, "#status") and "flagged…" in shown_text(app, "#status")
            await pilot.press("ctrl+c")  # as a second q: says what would be lost, and asks
            assert "Quit now and lose 1 rating and 1 note not saved yet?" in shown_text(app, "#saving")
            await pilot.press("escape")  # back to rating
            assert not app.quitting and app.return_code is None
            await pilot.press("3", "q")
            lock.release()
            await wait_until(pilot, lambda: app.return_code is not None, "quit once everything is saved")
        assert app.return_code == 0 and not app.abandoned
    assert ratings_of(study, "alice") == [("s0", "grammaticality", 4), ("s0", "cohesiveness", 3)]
    assert study._db.conn.execute("SELECT kind FROM notes").fetchall() == [("flag",)]

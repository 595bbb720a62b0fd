"""The change marker an open agreement pane asks for every 2 s (twice): it changes with every write, from this
connection or another, and while nothing was written it is answered without reading the tables (the counts read
every rating and every job: 10-15 % of a core with the app idle at 1.6M ratings)."""

from __future__ import annotations

import subprocess
import sys

from tests.support import story_study
from tui_rater.store.db import write
from tui_rater.store.study import Study


def _statements(study: Study) -> list[str]:
    seen: list[str] = []
    study._db.conn.set_trace_callback(seen.append)
    return seen


def test_the_marker_follows_every_write_and_reads_no_table_while_nothing_changed(tmp_path):
    db = story_study(tmp_path / "s.db")
    pane, other = Study.open(db, create=False), Study.open(db, create=False)
    item = pane.items("story")[0]
    seen = _statements(pane)

    first = pane.change_marker()
    assert any("FROM ratings" in statement for statement in seen)
    seen.clear()
    assert pane.change_marker() == first
    assert seen == ["PRAGMA data_version"]  # nothing written: no table read

    # another connection's rating (the app's, the judge's)
    other.add_rating(item.key, "grammaticality", other.human("ann").id, 3.0)
    second = pane.change_marker()
    assert second != first
    assert pane.change_marker() == second

    # this connection's own write: SQLite's data_version does not change for it
    own = pane.add_rating(item.key, "cohesiveness", pane.human("bob").id, 4.0)
    third = pane.change_marker()
    assert third not in (first, second)

    # an undo changes no id and no count of rows: the marker still moves
    other.retract_rating(own)
    fourth = pane.change_marker()
    assert fourth != third

    # a rater made without a rating (a jury, say)
    other.judge("j2", {"model": "m"})
    assert pane.change_marker() != fourth

    # and the marker read afresh, on a new connection, is the kept one
    fresh = Study.open(db, create=False)
    assert fresh.change_marker() == pane.change_marker()
    for study in (pane, other, fresh):
        study.close()


def test_a_study_opened_read_only_reads_the_tables_each_time(tmp_path):
    """A read-only study may be read ``immutable`` (no -wal: a file this process cannot write), where SQLite does
    not track other writers and ``data_version`` would never move: its marker is read afresh every time."""
    db = story_study(tmp_path / "s.db")
    viewer = Study.open(db, create=False, readonly=True)
    seen = _statements(viewer)
    viewer.change_marker()
    seen.clear()
    viewer.change_marker()
    assert any("FROM ratings" in statement for statement in seen)
    viewer.close()


def test_a_marker_asked_inside_a_transaction_that_is_rolled_back_is_not_kept(tmp_path):
    """Asked inside a write transaction, the marker counts its rows not yet committed; rolled back, the file is as
    before while neither ``data_version`` (this connection's own transaction) nor ``total_changes`` (a rollback does
    not lower it) moves: a marker kept from inside would name rows that never were, and the pane would stay on the
    figures it computed with them (the uncached marker read the rolled-back state)."""
    db = story_study(tmp_path / "s.db")
    pane = Study.open(db, create=False)
    item = pane.items("story")[0]
    bob = pane.human("bob").id
    before = pane.change_marker()

    class Abandoned(Exception):
        pass

    inside = None
    try:
        with write(pane._db):
            pane.add_rating(item.key, "cohesiveness", bob, 4.0)
            inside = pane.change_marker()
            raise Abandoned
    except Abandoned:
        pass
    assert inside is not None and inside != before  # the uncommitted rating was counted
    assert pane.change_marker() == before  # the file holds no such rating: the marker says so
    fresh = Study.open(db, create=False)
    assert fresh.change_marker() == before
    for study in (pane, fresh):
        study.close()


def _in_another_process(db, script: str) -> None:
    """``script`` run by the sqlite3 module of another Python process on ``db`` (autocommit)."""
    code = f"import sqlite3; c = sqlite3.connect({str(db)!r}, isolation_level=None); c.executescript({script!r})"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_marker_follows_another_process_s_writes_across_checkpoints_and_vacuum(tmp_path):
    """The kept marker rests on SQLite seeing another process's commit (``data_version``): through a WAL reset by
    ``wal_checkpoint(TRUNCATE)`` and a ``VACUUM`` (which rewrite the file but change no row: the marker stays), an
    undo and a redo written and checkpointed away at once each move it, and a rating added while this connection
    held a read snapshot moves it once the snapshot ends."""
    db = story_study(tmp_path / "s.db")
    pane, other = Study.open(db, create=False), Study.open(db, create=False)
    item = pane.items("story")[0]
    rating = other.add_rating(item.key, "grammaticality", other.human("ann").id, 3.0)
    rated = pane.change_marker()

    _in_another_process(db, "PRAGMA wal_checkpoint(TRUNCATE);")
    assert pane.change_marker() == rated
    _in_another_process(db, f"UPDATE ratings SET retracted = 1 WHERE id = {rating}; PRAGMA wal_checkpoint(TRUNCATE);")
    undone = pane.change_marker()
    assert undone != rated
    _in_another_process(db, "VACUUM;")
    assert pane.change_marker() == undone
    _in_another_process(db, f"UPDATE ratings SET retracted = 0 WHERE id = {rating}; VACUUM;")
    redone = pane.change_marker()
    assert redone != undone

    snapshot = pane._db.conn.execute("SELECT id FROM items")  # a statement not stepped to its end holds a snapshot
    snapshot.fetchone()
    other.add_rating(item.key, "cohesiveness", other.human("ann").id, 2.0)
    assert pane.change_marker() == redone  # (inside the snapshot the rating is not there yet: nor for the tables)
    snapshot.fetchall()
    assert pane.change_marker() != redone
    fresh = Study.open(db, create=False)
    assert pane.change_marker() == fresh.change_marker()
    for study in (pane, other, fresh):
        study.close()

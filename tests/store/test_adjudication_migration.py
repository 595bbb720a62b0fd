"""Migration 6 on a file written at the schema before it: the raters table rebuilt for the adjudicator kind,
every row, id, label, index and foreign key as it was; notes can be taken back."""

from __future__ import annotations

import sqlite3

import pytest

from tui_rater.domain.errors import UserError
from tui_rater.store.db import open_readonly
from tui_rater.store.schema import MIGRATIONS, READABLE_FROM, SCHEMA_VERSION, _adjudication, run_script
from tui_rater.store.study import Study

NOW = "2026-11-01T00:00:00.000+00:00"
BEFORE = MIGRATIONS.index(_adjudication)  # the schema version just before it


def _file_before_adjudication(path):
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for migration in MIGRATIONS[:BEFORE]:
        migration(conn) if callable(migration) else run_script(conn, migration)
    conn.execute(f"PRAGMA user_version = {BEFORE}")
    conn.execute(
        "INSERT INTO items (key, id, task, system, fields, position, content_hash, created_at) "
        "VALUES (7, 's1', 'story', 'gpt2', '{\"prompt\": \"P\", \"story\": \"S\"}', 0, 'h', ?)",
        [NOW],
    )
    raters = [(3, "ann", "human", None, None, "ann"), (9, "judge#1", "llm", '{"backend": "x"}', "c9", "J1 x text")]
    conn.executemany(
        "INSERT INTO raters (id, name, kind, config, config_hash, created_at, label) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(i, n, k, c, h, NOW, label) for i, n, k, c, h, label in raters],
    )
    conn.execute(
        "INSERT INTO ratings (id, item_key, attribute, rater_id, value, parse_status, created_at) "
        "VALUES (11, 7, 'coherence', 3, 4, 'human', ?)",
        [NOW],
    )
    conn.execute(
        "INSERT INTO notes (id, item_key, rater_id, kind, text, created_at) VALUES (5, 7, 3, 'flag', NULL, ?)", [NOW]
    )
    conn.execute(
        "INSERT INTO plans (id, rater_id, task, kind, settings, created_at) VALUES (2, 3, 'story', 'retest', '{}', ?)",
        [NOW],
    )
    conn.execute("COMMIT")
    conn.close()


def _indexes(conn, table):
    return sorted(
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index' AND tbl_name=?", [table])
    )


def test_the_raters_table_is_rebuilt_with_every_row_id_label_and_index(tmp_path):
    path = tmp_path / "before.db"
    _file_before_adjudication(path)
    conn = sqlite3.connect(path)
    indexes_before = _indexes(conn, "raters")
    rows_before = conn.execute("SELECT * FROM raters ORDER BY id").fetchall()
    with pytest.raises(sqlite3.IntegrityError):  # the old CHECK refuses the new kind
        conn.execute("INSERT INTO raters (name, kind, created_at) VALUES ('x', 'adjudicator', ?)", [NOW])
    conn.close()

    study = Study.open(path)
    conn = study._db.conn
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT * FROM raters ORDER BY id").fetchall() == rows_before
    assert _indexes(conn, "raters") == indexes_before and "raters_label" in indexes_before
    assert conn.execute("PRAGMA foreign_key_check").fetchone() is None
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # the other tables still point at the raters (their foreign keys name the rebuilt table)
    for table in ("ratings", "notes", "plans", "jobs", "judge_sources"):
        targets = {row[2] for row in conn.execute(f"PRAGMA foreign_key_list('{table}')")}
        assert "raters" in targets and "raters_v6" not in targets
    # still unique: names, labels and configurations
    for column, value in (("name", "ann"), ("label", "J1 x text"), ("config_hash", "c9")):
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(
                f"INSERT INTO raters (name, kind, created_at, {column}) VALUES (?, 'human', ?, ?)"
                if column != "name"
                else "INSERT INTO raters (name, kind, created_at) VALUES (?, 'human', ?)",
                ["other", NOW, value] if column != "name" else [value, NOW],
            )
    # a rating's rater cannot vanish: foreign keys are enforced on the rebuilt table
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("DELETE FROM raters WHERE id = 3")
    # the new kind, and nothing else
    decider = study.adjudicator("lead")
    assert decider.kind == "adjudicator" and decider.id > 9
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO raters (name, kind, created_at) VALUES ('y', 'robot', ?)", [NOW])
    # notes: the flag is in force until taken back
    assert conn.execute("SELECT retracted_at, supersedes FROM notes WHERE id = 5").fetchone() == (None, None)
    study.close()
    again = Study.open(path)  # opening again is a no-op
    assert again._db.conn.execute("SELECT count(*) FROM raters").fetchone()[0] == 3
    again.close()


def test_a_file_before_it_that_cannot_be_written_asks_for_one_upgrade(tmp_path):
    """The reading queries (notes in force, the report's Notes) need ``notes.retracted_at``."""
    path = tmp_path / "before.db"
    _file_before_adjudication(path)
    with pytest.raises(UserError, match=f"has schema {BEFORE} and must be upgraded once"):
        open_readonly(path)
    assert READABLE_FROM == BEFORE + 1

"""A study file written by tui-rater 0.1 opens in this version with its data intact and re-labelled."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tui_rater.domain.errors import UserError
from tui_rater.store import spa
from tui_rater.store.db import open_readonly
from tui_rater.store.schema import APPLICATION_ID, MIGRATIONS, READABLE_FROM, SCHEMA_VERSION, run_script
from tui_rater.store.study import Study

NOW = "2026-11-01T00:00:00.000+00:00"


def _v1_file(path):
    """A schema-1 file as 0.1 wrote it: a pairwise judge whose swapped order hid in samples n..2n-1."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    run_script(conn, MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    fields = json.dumps({"prompt": "P", "story_a": "A.", "story_b": "B."})
    conn.execute(
        "INSERT INTO items (key, id, task, system, fields, position, content_hash, created_at) "
        "VALUES (1, 'p1', 'story-pairwise', 'x vs y', ?, 0, 'h', ?)",
        [fields, NOW],
    )
    config = {"mode": "text", "variant": "v4", "samples": 2, "temperature": 1.0}
    conn.execute(
        "INSERT INTO raters (id, name, kind, config, config_hash, created_at) VALUES (1, 'judge', 'llm', ?, 'c', ?)",
        [json.dumps(config), NOW],
    )
    conn.execute("INSERT INTO raters (id, name, kind, created_at) VALUES (2, 'ann', 'human', ?)", [NOW])
    for sample, order, value in ((0, "original", 0), (1, "original", 0), (2, "swapped", 1), (3, "swapped", 2)):
        conn.execute(
            "INSERT INTO jobs (id, item_key, attribute, rater_id, sample, status, created_at, updated_at) "
            "VALUES (?, 1, 'preference', 1, ?, 'done', ?, ?)",
            [sample + 1, sample, NOW, NOW],
        )
        conn.execute(
            "INSERT INTO ratings (item_key, attribute, rater_id, sample, value, raw, parse_status, created_at, job_id, "
            "details) VALUES (1, 'preference', 1, ?, ?, 'Answer: A', 'ok', ?, ?, ?)",
            [sample, value, NOW, sample + 1, json.dumps({"order": order})],
        )
    conn.execute(
        "INSERT INTO ratings (item_key, attribute, rater_id, sample, value, parse_status, created_at) "
        "VALUES (1, 'preference', 2, 0, 1, 'human', ?)",
        [NOW],
    )
    old_spa = spa.spa_task_definition("spa", ["A", "B"], 3, [("A", "B")], likert=True)
    for attribute in old_spa["attributes"]:  # 0.1 recognised SPA questions by their names alone
        attribute.pop("protocol"), attribute.pop("params")
    conn.execute("INSERT INTO tasks (name, definition, created_at) VALUES ('spa', ?, ?)", [json.dumps(old_spa), NOW])
    conn.execute("COMMIT")
    conn.close()


def test_a_0_1_file_is_migrated_with_presentations_and_protocols(tmp_path):
    path = tmp_path / "old.db"
    _v1_file(path)
    study = Study.open(path)
    conn = study._db.conn
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    jobs = conn.execute("SELECT id, presentation, sample FROM jobs ORDER BY id").fetchall()
    assert jobs == [(1, "original", 0), (2, "original", 1), (3, "swapped", 0), (4, "swapped", 1)]
    ratings = conn.execute(
        "SELECT rater_id, presentation, sample, value FROM ratings ORDER BY rater_id, presentation, sample"
    ).fetchall()
    assert ratings == [
        (1, "original", 0, 0.0),
        (1, "original", 1, 0.0),
        (1, "swapped", 0, 1.0),
        (1, "swapped", 1, 2.0),
        (2, "", 0, 1.0),  # a person's rating has no presentation
    ]
    assert conn.execute("PRAGMA foreign_key_check").fetchone() is None
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    task = study.task("spa")
    by_name = {a.name: (a.protocol, a.params) for a in task.attributes}
    assert by_name["p_A_over_B"] == ("spa-probability", {"x": "A", "y": "B"})
    assert by_name["likert_B"] == ("spa-likert", {"writer": "B"})
    study.close()
    # opening again is a no-op
    again = Study.open(path)
    assert again._db.conn.execute("SELECT count(*) FROM ratings").fetchone()[0] == 5
    again.close()


def _v4_file(path):
    """A schema-4 file: two judge runs, a person named like the label one of them will get, an imported
    judge, a rater a script stored under its own name."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for migration in MIGRATIONS[:4]:
        migration(conn) if callable(migration) else run_script(conn, migration)
    conn.execute("PRAGMA user_version = 4")
    local = {"backend": "llama.cpp", "model_file": "qwen2-0.5b-instruct-q4_k_m.gguf", "mode": "text"}
    remote = {"backend": "openai-compatible", "api_model": "gpt-4o-mini", "mode": "distribution"}
    raters = [
        (1, "qwen2-0.5b-instruct-q4_k_m.gguf@ab/text/plain/T1/p0.9/s0#1", "llm", local),
        (2, "ann", "human", None),
        (3, "J2 gpt-4o-mini distribution", "human", None),  # a person may be called anything
        (4, "api:gpt-4o-mini/distribution/plain/T1/p0.9/s0#2", "llm", remote),
        (5, "hanna-gpt", "llm", {"imported_from": "hanna-gpt"}),
        (6, "scripted", "llm", {"api_model": "x", "mode": "text"}),
        (7, "api:x/text/plain/T0/p1/s0#3", "llm", {**remote, "mode": "text", "judge_name": "strict [b]x[/b]"}),
    ]
    for rid, name, kind, config in raters:
        conn.execute(
            "INSERT INTO raters (id, name, kind, config, config_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [rid, name, kind, json.dumps(config) if config else None, f"h{rid}" if config else None, NOW],
        )
    conn.execute("COMMIT")
    conn.close()


def test_migration_5_labels_every_rater_uniquely_and_adds_judge_sources(tmp_path):
    path = tmp_path / "v4.db"
    _v4_file(path)
    study = Study.open(path)
    conn = study._db.conn
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    labels = dict(conn.execute("SELECT id, label FROM raters ORDER BY id").fetchall())
    assert labels == {
        1: "J1 qwen2-0.5b-instruct-q4_… text",
        2: "ann",
        3: "J2 gpt-4o-mini distribution",
        4: "J2 gpt-4o-mini distribution (2)",  # the person had the label first
        5: "hanna-gpt",
        6: "scripted",
        7: "J3 strict [b]x[/b]",
    }
    with pytest.raises(sqlite3.IntegrityError):  # unique, for ever
        conn.execute("UPDATE raters SET label = 'ann' WHERE id = 1")
    assert conn.execute("SELECT count(*) FROM judge_sources").fetchone()[0] == 0
    assert [r.label for r in study.raters("llm")] == [labels[i] for i in (1, 4, 5, 6, 7)]
    # new raters: the next judge run is J4; a person may not take a judge's label
    judge = study.judge("api:y/text#4", {"backend": "openai-compatible", "api_model": "y", "mode": "text"})
    assert judge.label == "J4 y text"
    with pytest.raises(UserError, match="already the label of a judge"):
        study.human("J1 qwen2-0.5b-instruct-q4_… text")
    assert study.human("ann").label == "ann"
    study.close()
    again = Study.open(path)  # opening again is a no-op
    assert dict(again._db.conn.execute("SELECT id, label FROM raters WHERE id <= 7").fetchall()) == labels
    again.close()


def test_a_schema_4_file_that_cannot_be_written_asks_for_one_upgrade(tmp_path):
    path = tmp_path / "v4.db"
    _v4_file(path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.close()
    with pytest.raises(UserError, match="has schema 4 and must be upgraded once"):
        open_readonly(path)  # the reading queries use schema 5's labels (READABLE_FROM)
    assert READABLE_FROM >= 5


def test_migration_11_keeps_every_job_and_admits_batched_jobs(tmp_path):
    """Migration 11 copies the jobs table to widen its status CHECK ('batched') and add batch_id: every column of
    every job survives, the CHECK still refuses other statuses, and a batched job's batch id is stored."""
    path = tmp_path / "v10.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    for migration in MIGRATIONS[:10]:
        if callable(migration):
            migration(conn)
        else:
            run_script(conn, migration)
    conn.execute("PRAGMA user_version = 10")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(
        "INSERT INTO items (key, id, task, system, fields, position, content_hash, created_at) "
        "VALUES (1, 's1', 'story', 'x', '{\"prompt\": \"P\", \"story\": \"S\"}', 0, 'h', ?)",
        [NOW],
    )
    conn.execute("INSERT INTO raters (id, name, kind, created_at) VALUES (1, 'judge', 'llm', ?)", [NOW])
    rows = [
        (n + 1, 1, attribute, 1, n % 2, "original" if n else "", status, n, owner, until, n / 2, "1", kind, error, NOW)
        for n, (attribute, status, owner, until, kind, error) in enumerate(
            [
                ("relevance", "queued", None, None, None, None),
                ("coherence", "leased", "host:1:abc", 12.5, None, None),
                ("empathy", "failed", None, None, "rate_limited", "429"),
                ("surprise", "done", None, None, None, None),
            ]
        )
    ]
    conn.executemany(
        "INSERT INTO jobs (id, item_key, attribute, rater_id, sample, presentation, status, attempts, lease_owner, "
        "lease_until, not_before, prefix_key, error_kind, last_error, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(*row, NOW) for row in rows],
    )
    conn.execute("COMMIT")
    conn.close()
    study = Study.open(path)
    conn = study._db.conn
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    kept = conn.execute(
        "SELECT id, item_key, attribute, rater_id, sample, presentation, status, attempts, lease_owner, lease_until, "
        "not_before, prefix_key, error_kind, last_error, created_at, updated_at, batch_id FROM jobs ORDER BY id"
    ).fetchall()
    assert kept == [(*row, NOW, None) for row in rows]
    conn.execute("UPDATE jobs SET status = 'batched', batch_id = 'batch_1' WHERE id = 1")
    assert conn.execute("SELECT status, batch_id FROM jobs WHERE id = 1").fetchone() == ("batched", "batch_1")
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE jobs SET status = 'sent' WHERE id = 1")
    study.close()

"""The SQLite schema and its forward migrations.

``PRAGMA user_version`` holds the schema version and ``PRAGMA application_id`` says the file
is a tui-rater study (since schema 3; ``db.recognise`` knows the files before it). Each
migration is applied once, in its own transaction, in order; a file from a newer tui-rater is
refused rather than guessed at. A migration is an SQL script, or a function of the connection
where data must be rewritten.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from typing import Any

from tui_rater.store.labels import assign_all

Migration = str | Callable[[sqlite3.Connection], None]

# PRAGMA application_id of every study file: "tuiR" (SQLite's header offset 68; see
# https://www.sqlite.org/fileformat.html#application_id). Fixed forever: changing it would
# make every existing study look like another application's file.
APPLICATION_ID = int.from_bytes(b"tuiR", "big")


def statements(script: str) -> list[str]:
    parts, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            parts.append(buf.strip())
            buf = ""
    if buf.strip():
        parts.append(buf.strip())
    return parts


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Run an SQL script inside the caller's transaction (``executescript`` would commit it first)."""
    for statement in statements(script):
        conn.execute(statement)


def _presentation(conn: sqlite3.Connection) -> None:
    """2: a judge's presentation of an item (a pair in its original or swapped order) gets a column.

    0.1 hid the order in the sample number (samples n..2n-1 of a pairwise judge were the swapped
    order) and in each rating's details; the old rule for "pairwise" was a task whose fields
    include story_a and story_b. Stored SPA task definitions get their protocols and parameters.
    """
    run_script(
        conn,
        """
        CREATE TABLE jobs_v2 (
            id INTEGER PRIMARY KEY,
            item_key INTEGER NOT NULL REFERENCES items (key),
            attribute TEXT NOT NULL,           -- an attribute, or '*' for a whole conversation
            rater_id INTEGER NOT NULL REFERENCES raters (id),
            sample INTEGER NOT NULL DEFAULT 0,
            presentation TEXT NOT NULL DEFAULT '',  -- '' as stored, or 'original' / 'swapped' (a pair)
            status TEXT NOT NULL DEFAULT 'queued'
                CHECK (status IN ('queued', 'leased', 'done', 'failed', 'cancelled')),
            attempts INTEGER NOT NULL DEFAULT 0,
            lease_owner TEXT,
            lease_until REAL,
            not_before REAL NOT NULL DEFAULT 0,
            prefix_key TEXT,
            error_kind TEXT,
            last_error TEXT,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            UNIQUE (item_key, attribute, rater_id, sample, presentation)
        );
        INSERT INTO jobs_v2 (id, item_key, attribute, rater_id, sample, status, attempts, lease_owner, lease_until,
                             not_before, prefix_key, error_kind, last_error, created_at, updated_at)
            SELECT id, item_key, attribute, rater_id, sample, status, attempts, lease_owner, lease_until, not_before,
                   prefix_key, error_kind, last_error, created_at, updated_at FROM jobs;
        DROP TABLE jobs;
        ALTER TABLE jobs_v2 RENAME TO jobs;
        CREATE INDEX jobs_ready ON jobs (status, rater_id, not_before);
        ALTER TABLE ratings ADD COLUMN presentation TEXT NOT NULL DEFAULT '';
        """,
    )
    pairwise_tasks = {"story-pairwise"}
    for name, definition in conn.execute("SELECT name, definition FROM tasks").fetchall():
        entry = json.loads(definition)
        if {"story_a", "story_b"} <= set(entry.get("fields", [])):
            pairwise_tasks.add(name)
        if _add_spa_protocols(entry):
            conn.execute(
                "UPDATE tasks SET definition = ? WHERE name = ?", [json.dumps(entry, ensure_ascii=False), name]
            )
    marks = ",".join("?" * len(pairwise_tasks))
    samples = "coalesce(json_extract(ra.config, '$.samples'), 1)"
    per_job = f"CASE WHEN json_extract(ra.config, '$.mode') = 'distribution' THEN 1 ELSE {samples} END"
    pairwise_jobs = f"""item_key IN (SELECT key FROM items WHERE task IN ({marks})) AND attribute != '*'"""
    per_job_of_rater = f"(SELECT {per_job} FROM raters ra WHERE ra.id = jobs.rater_id)"
    for status, shift in (("swapped", f"- {per_job_of_rater}"), ("original", "")):
        condition = ">=" if status == "swapped" else "<"
        conn.execute(
            f"""UPDATE jobs SET presentation = '{status}', sample = sample {shift}
                WHERE {pairwise_jobs} AND presentation = ''
                  AND sample {condition} {per_job_of_rater}
                  AND rater_id IN (SELECT id FROM raters WHERE kind = 'llm')""",
            sorted(pairwise_tasks),
        )
    conn.execute(
        f"""UPDATE ratings SET presentation = 'swapped',
                   sample = sample - (SELECT {samples} FROM raters ra WHERE ra.id = ratings.rater_id)
            WHERE json_extract(details, '$.order') = 'swapped'"""
    )
    conn.execute("UPDATE ratings SET presentation = 'original' WHERE json_extract(details, '$.order') = 'original'")


def _mark_as_study(conn: sqlite3.Connection) -> None:
    """3: ``PRAGMA application_id`` (in the same transaction as ``user_version``)."""
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _judge_labels(conn: sqlite3.Connection) -> None:
    """5: each rater's short label (``store/labels.py``) and where each judge's replies came from.

    A person and an imported judge are labelled by their names; judge configurations are numbered in
    the order they were created (``J1 tiny text``). ``judge_sources``: per judge, each model file it
    was loaded from or server it asked, with the model id and ``system_fingerprint`` the server
    reported -- one row while they stay the same, a new row when they change (a served model that changed
    under the same alias).
    """
    conn.execute("ALTER TABLE raters ADD COLUMN label TEXT")
    rows = conn.execute("SELECT id, name, kind, config FROM raters ORDER BY id").fetchall()
    found = [(rid, name, kind, _config(config)) for rid, name, kind, config in rows]
    conn.executemany("UPDATE raters SET label = ? WHERE id = ?", [(v, k) for k, v in assign_all(found).items()])
    run_script(
        conn,
        """
        CREATE UNIQUE INDEX raters_label ON raters (label);
        CREATE TABLE judge_sources (
            rater_id INTEGER NOT NULL REFERENCES raters (id),
            source TEXT NOT NULL,              -- the model file's path, or the server's URL without credentials
            served_model TEXT NOT NULL DEFAULT '',        -- the reply's "model" ('' when not reported)
            system_fingerprint TEXT NOT NULL DEFAULT '',  -- the reply's "system_fingerprint" ('' when none)
            jobs INTEGER NOT NULL DEFAULT 0,   -- jobs answered (at least in part) by this source
            first_seen TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            PRIMARY KEY (rater_id, source, served_model, system_fingerprint)
        );
        """,
    )


RATER_KINDS = ("human", "llm", "adjudicator")


def _adjudication(conn: sqlite3.Connection) -> None:
    """6: an adjudicator's decisions are ratings of their own kind; notes can be taken back or replaced.

    ``raters.kind`` gains 'adjudicator' (``tui-rater adjudicate``): the decided value of an item where the
    raters disagree, stored beside their ratings, which stay as they were, and never counted as a person's
    rating. SQLite cannot change a CHECK constraint in place: the table is rebuilt from its own stored
    definition (any column added by another migration kept), with every row, id, label and index as they
    were (``migrate`` runs this with foreign keys off and checks them before it commits).

    ``notes.retracted_at``: when a flag was taken back, or a comment replaced by its edit; ``notes.supersedes``:
    the comment an edit replaces. Nothing is deleted: the history of a note is in the file.
    """
    (definition,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'raters'").fetchone()
    old_check = re.search(r"CHECK\s*\(\s*kind\s+IN\s*\([^)]*\)\s*\)", definition)
    if old_check is None:
        raise RuntimeError("the raters table has no CHECK of its kinds to widen")
    kinds = ", ".join(f"'{kind}'" for kind in RATER_KINDS)
    widened = definition[: old_check.start()] + f"CHECK (kind IN ({kinds}))" + definition[old_check.end() :]
    widened = re.sub(r'^CREATE TABLE\s+"?raters"?', "CREATE TABLE raters_v6", widened)
    indexes = [
        sql
        for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'raters' AND sql IS NOT NULL"
        )
    ]
    columns = ", ".join(f'"{row[1]}"' for row in conn.execute("PRAGMA table_info('raters')"))
    conn.execute(widened)
    conn.execute(f"INSERT INTO raters_v6 ({columns}) SELECT {columns} FROM raters")
    conn.execute("DROP TABLE raters")
    conn.execute("ALTER TABLE raters_v6 RENAME TO raters")
    for sql in indexes:  # (the UNIQUE columns' own indexes come with the table)
        conn.execute(sql)
    run_script(
        conn,
        """
        ALTER TABLE notes ADD COLUMN retracted_at TEXT;        -- a flag taken back, a comment replaced by its edit
        ALTER TABLE notes ADD COLUMN supersedes INTEGER REFERENCES notes (id);  -- the comment this edit replaces
        """,
    )


def _config(text: str | None) -> dict[str, Any] | None:
    try:
        config = json.loads(text) if text else None
    except ValueError:
        return None  # unreadable: labelled by its name, like an imported judge
    return config if isinstance(config, dict) else None


_SPA_PROBABILITY = re.compile(r"^p_([A-Z])_over_([A-Z])$")
_SPA_LIKERT = re.compile(r"^likert_([A-Z])$")


def _add_spa_protocols(entry: dict[str, Any]) -> bool:
    """0.1's SPA definitions named their questions p_X_over_Y and likert_X: say so as protocols."""
    if "packet" not in entry.get("fields", []):
        return False
    changed = False
    for attribute in entry.get("attributes", []):
        if attribute.get("protocol"):
            continue
        if match := _SPA_PROBABILITY.match(attribute.get("name", "")):
            attribute["protocol"], attribute["params"] = "spa-probability", {"x": match[1], "y": match[2]}
            changed = True
        elif match := _SPA_LIKERT.match(attribute.get("name", "")):
            attribute["protocol"], attribute["params"] = "spa-likert", {"writer": match[1]}
            changed = True
    return changed


MIGRATIONS: list[Migration] = [
    # 1: items, raters, ratings, notes, the judge queue
    """
    CREATE TABLE tasks (
        name TEXT PRIMARY KEY,
        definition TEXT NOT NULL,          -- JSON of a custom task, so the file is self-contained
        created_at TEXT NOT NULL
    );
    CREATE TABLE items (
        key INTEGER PRIMARY KEY,
        id TEXT NOT NULL,                  -- the user's stable id (or a content hash)
        task TEXT NOT NULL,
        system TEXT,                       -- who wrote the text (a model, "human", an attack)
        fields TEXT NOT NULL,              -- JSON object: prompt, story, title, original, attacked ...
        position INTEGER NOT NULL,         -- import order
        content_hash TEXT NOT NULL,
        source TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (task, id)
    );
    CREATE INDEX items_task ON items (task, position);
    CREATE TABLE raters (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL UNIQUE,
        kind TEXT NOT NULL CHECK (kind IN ('human', 'llm')),
        config TEXT,                       -- JSON provenance of an LLM judge configuration
        config_hash TEXT UNIQUE,
        created_at TEXT NOT NULL
    );
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY,
        item_key INTEGER NOT NULL REFERENCES items (key),
        attribute TEXT NOT NULL,           -- an attribute, or '*' for a whole conversation
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        sample INTEGER NOT NULL DEFAULT 0,
        status TEXT NOT NULL DEFAULT 'queued'
            CHECK (status IN ('queued', 'leased', 'done', 'failed', 'cancelled')),
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until REAL,
        not_before REAL NOT NULL DEFAULT 0,
        prefix_key TEXT,                   -- jobs sharing a prompt prefix run back to back
        error_kind TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        UNIQUE (item_key, attribute, rater_id, sample)
    );
    CREATE INDEX jobs_ready ON jobs (status, rater_id, not_before);
    CREATE TABLE ratings (
        id INTEGER PRIMARY KEY,
        item_key INTEGER NOT NULL REFERENCES items (key),
        attribute TEXT NOT NULL,
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        sample INTEGER NOT NULL DEFAULT 0,
        value REAL,                        -- NULL when the reply did not parse
        raw TEXT,                          -- the judge's reply, always kept
        parse_status TEXT NOT NULL DEFAULT 'ok',
        seconds REAL,                      -- time the human spent on the item
        created_at TEXT NOT NULL,
        job_id INTEGER REFERENCES jobs (id),
        revises INTEGER REFERENCES ratings (id),     -- a revision after reveal, linked to the first
        retracted INTEGER NOT NULL DEFAULT 0,        -- undone by the rater
        details TEXT                       -- JSON: distribution, expected score, source ...
    );
    CREATE INDEX ratings_item ON ratings (item_key, attribute);
    -- a job's result is stored once (a conversation job stores one rating per attribute)
    CREATE UNIQUE INDEX ratings_job ON ratings (job_id, attribute, sample) WHERE job_id IS NOT NULL;
    CREATE INDEX ratings_rater ON ratings (rater_id, item_key);
    CREATE TABLE notes (
        id INTEGER PRIMARY KEY,
        item_key INTEGER NOT NULL REFERENCES items (key),
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        kind TEXT NOT NULL CHECK (kind IN ('flag', 'skip', 'comment', 'review')),
        attribute TEXT,
        rating_id INTEGER REFERENCES ratings (id),
        text TEXT,
        created_at TEXT NOT NULL
    );
    CREATE INDEX notes_item ON notes (item_key, rater_id);
    -- identical requests (model SHA-256, prompt, parameters, seed) are answered from here
    CREATE TABLE replies (
        request_hash TEXT PRIMARY KEY,
        reply TEXT NOT NULL,               -- JSON: text, or the distribution
        created_at TEXT NOT NULL
    );
    """,
    _presentation,
    # 3: the file says it is a study, so another application's SQLite file is never taken for one
    _mark_as_study,
    # 4: test-retest ratings linked to the rating they repeat; stored annotation plans (the order of an
    # annotator's showings, with retest showings and the active-sampling draws), so a restart continues
    # the same plan.
    """
    ALTER TABLE ratings ADD COLUMN retest_of INTEGER REFERENCES ratings (id);  -- a blind second rating
    CREATE INDEX ratings_retest ON ratings (retest_of) WHERE retest_of IS NOT NULL;
    CREATE TABLE plans (
        id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: a new plan is told apart from the one it replaced
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        task TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('retest', 'uncertain')),
        settings TEXT NOT NULL,            -- JSON: what the plan was made with (share, spacing, seed, judge ...)
        created_at TEXT NOT NULL,
        UNIQUE (rater_id, task, kind)
    );
    CREATE TABLE plan_showings (
        plan_id INTEGER NOT NULL REFERENCES plans (id),
        position INTEGER NOT NULL,         -- 0-based place in the annotator's order
        item_key INTEGER NOT NULL REFERENCES items (key),
        retest INTEGER NOT NULL DEFAULT 0, -- 1: the item's second, blind showing
        uncertainty REAL,                  -- active sampling: the judge's uncertainty when drawn (NULL: unknown)
        draw REAL,                         -- active sampling: the item's uniform draw U
        PRIMARY KEY (plan_id, position)
    );
    """,
    # 5: raters' short labels; where each judge's replies came from (model file, server, its fingerprint)
    _judge_labels,
    # 6: the adjudicator rater kind (a CHECK widened: the raters table rebuilt); notes taken back or replaced
    _adjudication,
    # 7: team studies (``store/team.py``, ``store/roles.py``): a task's plan of who rates what, fixed
    # assignments, the leases of the dynamic mode, gold items' known answers, the study's leads
    """
    CREATE TABLE team_plans (
        task TEXT PRIMARY KEY,
        mode TEXT NOT NULL CHECK (mode IN ('fixed', 'dynamic')),
        settings TEXT NOT NULL,            -- JSON: per_item, overlap, gold_rate, seed, lease_s, annotators
        created_at TEXT NOT NULL
    );
    CREATE TABLE assignments (
        task TEXT NOT NULL,
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        item_key INTEGER NOT NULL REFERENCES items (key),
        gold INTEGER NOT NULL DEFAULT 0,   -- 1: a gold item mixed into this annotator's stream
        slot REAL NOT NULL DEFAULT 0,      -- a gold item's place in the stream (share of the way through)
        PRIMARY KEY (task, rater_id, item_key)
    );
    CREATE INDEX assignments_item ON assignments (item_key);
    CREATE TABLE leases (
        item_key INTEGER NOT NULL REFERENCES items (key),
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        until REAL NOT NULL,               -- unix time the lease expires
        PRIMARY KEY (item_key, rater_id)
    );
    CREATE TABLE gold (
        item_key INTEGER NOT NULL REFERENCES items (key),
        attribute TEXT NOT NULL,
        value REAL NOT NULL,               -- the known answer
        PRIMARY KEY (item_key, attribute)
    );
    CREATE TABLE leads (
        name TEXT PRIMARY KEY,             -- who may run study-wide actions (a stated list, not authentication)
        created_at TEXT NOT NULL
    );
    """,
    # 8: `serve`: each annotator's personal browser link, kept only as the SHA-256 of its token (the token
    # itself is printed once, when it is made; a lost link is replaced with `serve --new-links`)
    """
    CREATE TABLE web_links (
        annotator TEXT PRIMARY KEY,        -- the rater name the link rates under
        token_sha256 TEXT NOT NULL UNIQUE, -- hex SHA-256 of the URL's token; never the token
        created_at TEXT NOT NULL
    );
    """,
    # 9: which judge's run cached each reply: `judges --forget` removes a judge's cached replies with it (replies
    # cached before this column existed name none, and stay)
    "ALTER TABLE replies ADD COLUMN rater_id INTEGER;",
    # 10: what an API judge's server said about the model behind its alias (so a report can name it)
    """
    CREATE TABLE judge_servers (
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        source TEXT NOT NULL,              -- the server's URL without credentials
        facts TEXT NOT NULL,               -- JSON: /props (model path, chat template, n_ctx), /v1/models entry
        first_seen TEXT NOT NULL,
        PRIMARY KEY (rater_id, source, facts)
    );
    """,
    # 11: a job may wait in an OpenAI batch (`judge --batch`): the status 'batched' and the batch's id, stored with
    # the jobs so that the process may exit and a later run collect the replies. SQLite cannot
    # widen a CHECK in place: the table is copied (as migration 2 did)
    """
    CREATE TABLE jobs_v11 (
        id INTEGER PRIMARY KEY,
        item_key INTEGER NOT NULL REFERENCES items (key),
        attribute TEXT NOT NULL,           -- an attribute, or '*' for a whole conversation
        rater_id INTEGER NOT NULL REFERENCES raters (id),
        sample INTEGER NOT NULL DEFAULT 0,
        presentation TEXT NOT NULL DEFAULT '',  -- '' as stored, or 'original' / 'swapped' (a pair)
        status TEXT NOT NULL DEFAULT 'queued'
            CHECK (status IN ('queued', 'leased', 'batched', 'done', 'failed', 'cancelled')),
        attempts INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until REAL,
        not_before REAL NOT NULL DEFAULT 0,
        prefix_key TEXT,
        error_kind TEXT,
        last_error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        batch_id TEXT,                     -- the server's batch holding the job's next request (status 'batched')
        UNIQUE (item_key, attribute, rater_id, sample, presentation)
    );
    INSERT INTO jobs_v11 (id, item_key, attribute, rater_id, sample, presentation, status, attempts, lease_owner,
                          lease_until, not_before, prefix_key, error_kind, last_error, created_at, updated_at)
        SELECT id, item_key, attribute, rater_id, sample, presentation, status, attempts, lease_owner, lease_until,
               not_before, prefix_key, error_kind, last_error, created_at, updated_at FROM jobs;
    DROP TABLE jobs;
    ALTER TABLE jobs_v11 RENAME TO jobs;
    CREATE INDEX jobs_ready ON jobs (status, rater_id, not_before);
    CREATE INDEX jobs_batch ON jobs (batch_id) WHERE batch_id IS NOT NULL;
    """,
    # 12: a judge's next ready item, in item order, without reading its whole queue (a lease
    # scanned all 1.2M jobs of a 100k-item study, 0.5 s each; ``store/jobs.py`` walks this index instead)
    """
    CREATE INDEX jobs_next ON jobs (rater_id, status, item_key);
    """,
    # 13: the undone ratings, found without reading every rating: the live pane tells an undo since its last look
    # by these ids (``store/pane_reads.py``); an undo changes no id, and a scan of 1.6M ratings cost it 0.2 s a look
    """
    CREATE INDEX ratings_retracted ON ratings (id) WHERE retracted = 1;
    """,
    # 14: a task's stratified draw (``assign --allocate``, ``store/allocations.py``): the Neyman allocation it was
    # made with, and every item of its frame with its stratum, whether people had rated it before the draw (the
    # pilot) and its place in the drawn order, so the report weights each stratum by its share of the frame
    """
    CREATE TABLE allocations (
        task TEXT PRIMARY KEY,
        settings TEXT NOT NULL,            -- JSON: strata by, judge, question, seed, λ, per stratum N_h, pilot, SD, new
        created_at TEXT NOT NULL
    );
    CREATE TABLE allocation_items (
        task TEXT NOT NULL REFERENCES allocations (task),
        item_key INTEGER NOT NULL REFERENCES items (key),
        stratum TEXT NOT NULL,
        pilot INTEGER NOT NULL CHECK (pilot IN (0, 1)),  -- 1: rated by people before the draw
        position INTEGER,                  -- 0-based place in the drawn order; NULL: not drawn
        PRIMARY KEY (task, item_key),
        CHECK (pilot = 0 OR position IS NULL)
    );
    """,
    # 15: ratings changed without a new row -- ``reparse`` rewriting a judge's value in place, a batch job's
    # contradicting results voided (their rows deleted): the live pane and the full computation's change marker
    # saw neither (no new id, no undo), and showed the old values until the app restarted. AUTOINCREMENT: an id
    # here is never reused, so "the changes after N" is exact (a voided rating's own id can be, ratings having none)
    """
    CREATE TABLE rating_changes (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        rating_id INTEGER NOT NULL,        -- no reference: a voided rating's row is gone
        item_key INTEGER NOT NULL REFERENCES items (key),
        kind TEXT NOT NULL CHECK (kind IN ('reparsed', 'voided')),
        changed_at TEXT NOT NULL
    );
    """,
]

SCHEMA_VERSION = len(MIGRATIONS)
# files written before the application id: recognised by their exact tables (``db.recognise``)
LEGACY_VERSIONS = (1, 2)
# the oldest schema whose tables this version can read without migrating (a read-only file): the
# reading queries use schema 4's retest column, schema 5's rater labels and schema 6's notes.retracted_at
READABLE_FROM = MIGRATIONS.index(_adjudication) + 1

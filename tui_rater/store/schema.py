"""The SQLite schema and its forward migrations.

``PRAGMA user_version`` holds the schema version. Each migration is applied once, in its own
transaction, in order; a file from a newer tui-rater is refused rather than guessed at.
"""

from __future__ import annotations

MIGRATIONS: list[str] = [
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
]

SCHEMA_VERSION = len(MIGRATIONS)

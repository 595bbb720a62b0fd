"""The judge queue's table: every statement on ``jobs`` (the policy -- who leases what, backoff, reclaiming a dead
worker's jobs -- is ``judge/queue.py``; it calls these).

The lease queries are written for a queue of a million jobs (a 100,000-item study): they walk the ``jobs_next`` index
(rater, status, item) in item order and stop at the first ready item, and read one item's jobs through the
UNIQUE (item_key, ...) index. A ``+`` before a column keeps SQLite from choosing another index by it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tui_rater.store.db import utc_now, write
from tui_rater.store.ratings import NewRating, insert_ratings, record_changes
from tui_rater.store.study import Study

LEASE_S = 120.0
# 'batched': the job's next request waits in a server's batch (``judge --batch``); no worker leases it meanwhile
STATUSES = ("queued", "leased", "batched", "done", "failed", "cancelled")
MAX_ATTEMPTS = 6

Shape = tuple[str, str, int]  # (attribute, presentation, sample) of one job of an item


@dataclass(frozen=True)
class Job:
    id: int
    item_key: int
    attribute: str
    rater_id: int
    sample: int
    attempts: int
    presentation: str = ""  # '' as stored, or a pair's 'original' / 'swapped' order


@dataclass(frozen=True)
class RatingResult:
    attribute: str
    sample: int
    value: float | None
    raw: str | None
    parse_status: str
    details: dict[str, Any] | None = None


# --- adding jobs ---------------------------------------------------------------------------------------------------


def _insert(conn: sqlite3.Connection, rater_id: int, shapes: Sequence[Shape], chunk: str, params: list[Any]) -> int:
    """INSERT OR IGNORE every (item of ``chunk``, shape) in one statement, in item then shape order (the jobs' ids
    follow it): no Python row per job (1.2M tuples took 12.8 s on every start of a 100k-item study)."""
    if not shapes:
        return 0
    now = utc_now()
    values = ", ".join("(?, ?, ?, ?)" for _ in shapes)
    before = conn.total_changes
    conn.execute(
        f"WITH shapes(n, attribute, presentation, sample) AS (VALUES {values}), chunk(key, n) AS ({chunk}) "
        "INSERT OR IGNORE INTO jobs (item_key, attribute, rater_id, sample, presentation, prefix_key, created_at, "
        "updated_at) SELECT c.key, s.attribute, ?, s.sample, s.presentation, CAST(c.key AS TEXT), ?, ? "
        "FROM chunk c, shapes s ORDER BY c.n, c.key, s.n",
        [*(v for n, (a, p, s) in enumerate(shapes) for v in (n, a, p, s)), *params, rater_id, now, now],
    )
    return conn.total_changes - before


def enqueue(study: Study, rater_id: int, item_keys: list[int], shapes: Sequence[Shape]) -> int:
    """Add the jobs of these items that do not exist yet; how many were added."""
    with write(study._db) as conn:
        return _insert(conn, rater_id, shapes, "SELECT value, key FROM json_each(?)", [json.dumps(item_keys)])


def enqueue_task(study: Study, rater_id: int, task: str, shapes: Sequence[Shape], start: int, count: int) -> int:
    """Add the missing jobs of the task's items ``start`` to ``start + count`` (in import order), in one short write
    transaction; how many were added."""
    chunk = "SELECT key, position FROM items WHERE task = ? ORDER BY position, key LIMIT ? OFFSET ?"
    with write(study._db) as conn:
        return _insert(conn, rater_id, shapes, chunk, [task, count, start])


def task_size(study: Study, task: str) -> int:
    return int(study._db.conn.execute("SELECT count(*) FROM items WHERE task = ?", [task]).fetchone()[0])


# --- leasing -------------------------------------------------------------------------------------------------------

# the next ready items: queued ones, and leased ones whose lease ran out (taken over), each in item order
NEXT_QUEUED = (
    "SELECT DISTINCT item_key FROM jobs WHERE rater_id = ? AND status = 'queued' AND +not_before <= ? "
    "ORDER BY item_key LIMIT ?"
)
NEXT_EXPIRED = (
    "SELECT DISTINCT item_key FROM jobs WHERE rater_id = ? AND status = 'leased' AND +lease_until < ? "
    "AND +not_before <= ? ORDER BY item_key LIMIT ?"
)
# one item's ready jobs, through the UNIQUE (item_key, attribute, rater_id, ...) index
ITEM_READY = (
    "SELECT id, item_key, attribute, rater_id, sample, attempts, presentation FROM jobs "
    "WHERE item_key = ? AND +rater_id = ? AND +not_before <= ? "
    "AND (+status = 'queued' OR (+status = 'leased' AND +lease_until < ?)) ORDER BY id LIMIT ?"
)


def lease(
    study: Study,
    rater_id: int,
    owner: str,
    max_jobs: int = 64,
    lease_s: float = LEASE_S,
    min_jobs: int = 1,
    now: float | None = None,
) -> list[Job]:
    """Lease the ready jobs of the next item (one item's jobs, in attribute and sample order).

    Items are added until at least ``min_jobs`` jobs are leased (API judges lease a few items at
    once, to spend fewer transactions; local judges one, to keep the KV-cache prefix).
    A job whose lease ran out is taken over.
    """
    now = time.time() if now is None else now
    want = max(1, min_jobs)
    with write(study._db) as conn:
        queued = conn.execute(NEXT_QUEUED, [rater_id, now, want]).fetchall()
        expired = conn.execute(NEXT_EXPIRED, [rater_id, now, now, want]).fetchall()
        keys = sorted({r[0] for r in queued + expired})[:want]
        rows: list[Any] = []
        for key in keys:
            rows += conn.execute(ITEM_READY, [key, rater_id, now, now, max_jobs - len(rows)]).fetchall()
            if len(rows) >= min_jobs or len(rows) >= max_jobs:
                break
        conn.executemany(
            "UPDATE jobs SET status = 'leased', lease_owner = ?, lease_until = ?, attempts = attempts + 1, "
            "updated_at = ? WHERE id = ?",
            [(owner, now + lease_s, utc_now(), r[0]) for r in rows],
        )
    return [Job(r[0], r[1], r[2], r[3], r[4], r[5] + 1, r[6]) for r in rows]


def renew(study: Study, jobs: list[Job], owner: str, lease_s: float = LEASE_S, now: float | None = None) -> None:
    """Extend the leases this owner still holds (a job taken over by another worker is not)."""
    until = (time.time() if now is None else now) + lease_s
    with write(study._db) as conn:
        conn.executemany(
            "UPDATE jobs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND status = 'leased'",
            [(until, job.id, owner) for job in jobs],
        )


def complete(
    study: Study, job: Job, owner: str, results: list[RatingResult], replies: dict[str, dict[str, Any]] | None = None
) -> bool:
    """Store a job's ratings (and the replies to cache) and mark it done, atomically.

    False if the lease was lost meanwhile: then nothing is stored.
    """
    now = utc_now()
    with write(study._db) as conn:
        claimed = conn.execute(
            "UPDATE jobs SET status = 'done', lease_owner = NULL, error_kind = NULL, last_error = NULL, "
            "updated_at = ? WHERE id = ? AND status = 'leased' AND lease_owner = ?",
            [now, job.id, owner],
        ).rowcount
        if claimed != 1:
            return False
        insert_ratings(
            conn,
            [
                NewRating(
                    job.item_key,
                    r.attribute,
                    job.rater_id,
                    r.value,
                    now,
                    sample=r.sample,
                    presentation=job.presentation,
                    raw=r.raw,
                    parse_status=r.parse_status,
                    details=r.details,
                    job_id=job.id,
                )
                for r in results
            ],
        )
        _keep(conn, job.rater_id, replies or {}, now)
    return True


def _keep(conn: sqlite3.Connection, rater_id: int, replies: dict[str, dict[str, Any]], now: str) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO replies (request_hash, reply, created_at, rater_id) VALUES (?, ?, ?, ?)",
        [(key, json.dumps(reply), now, rater_id) for key, reply in replies.items()],
    )


def keep_replies(study: Study, rater_id: int, replies: dict[str, dict[str, Any]]) -> None:
    """Store the replies a job got so far without finishing it (a batch answered the first turn of a conversation:
    the next batch asks the second, and the job's run reads the first from here)."""
    if replies:
        with write(study._db) as conn:
            _keep(conn, rater_id, replies, utc_now())


def cached_reply(study: Study, request_hash: str) -> dict[str, Any] | None:
    row = study._db.conn.execute("SELECT reply FROM replies WHERE request_hash = ?", [request_hash]).fetchone()
    return json.loads(row[0]) if row else None


def requeue(study: Study, job: Job, owner: str, status: str, not_before: float, kind: str, message: str) -> bool:
    """A held job goes back to the queue (``status`` 'queued', not before ``not_before``) or fails for good; False
    when the owner no longer holds it."""
    with write(study._db) as conn:
        return (
            conn.execute(
                "UPDATE jobs SET status = ?, lease_owner = NULL, lease_until = NULL, not_before = ?, error_kind = ?, "
                "last_error = ?, updated_at = ? WHERE id = ? AND lease_owner = ? AND status = 'leased'",
                [status, not_before, kind, message[:500], utc_now(), job.id, owner],
            ).rowcount
            == 1
        )


def release(study: Study, jobs: list[Job], owner: str) -> None:
    """Give back leased jobs untouched (a worker stopping cleanly); the attempt does not count."""
    with write(study._db) as conn:
        conn.executemany(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL, attempts = attempts - 1 "
            "WHERE id = ? AND lease_owner = ? AND status = 'leased'",
            [(job.id, owner) for job in jobs],
        )


def lease_owners(study: Study) -> list[str]:
    """Who holds leases now."""
    return [
        r[0]
        for r in study._db.conn.execute(
            "SELECT DISTINCT lease_owner FROM jobs WHERE status = 'leased' AND lease_owner IS NOT NULL"
        )
    ]


def requeue_owners(study: Study, owners: list[str]) -> int:
    """Queue again every job these owners hold, the attempt counted (a dead process's jobs)."""
    with write(study._db) as conn:
        return sum(
            conn.execute(
                "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL WHERE status = 'leased' "
                "AND lease_owner = ?",
                [owner],
            ).rowcount
            for owner in owners
        )


def leased_by(study: Study, owners: list[str]) -> int:
    """How many jobs these owners hold now."""
    marks = ", ".join("?" * len(owners))
    return int(
        study._db.conn.execute(
            f"SELECT count(*) FROM jobs WHERE status = 'leased' AND lease_owner IN ({marks})", owners
        ).fetchone()[0]
    )


def release_owners(study: Study, owners: list[str]) -> int:
    """Give back every job these owners hold (a run stopping while a worker still waits on its server); a worker
    answering later finds its lease gone and stores nothing (``complete``)."""
    marks = ", ".join("?" * len(owners))
    with write(study._db) as conn:
        return conn.execute(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL, attempts = attempts - 1 "
            f"WHERE status = 'leased' AND lease_owner IN ({marks})",
            owners,
        ).rowcount


# --- jobs waiting in a server's batch (``judge/batch.py``) ---------------------------------------------------------


def to_batch(study: Study, jobs: list[Job], owner: str, batch_id: str) -> int:
    """Hand leased jobs to a batch the server has accepted, in one transaction; how many (a job whose lease was
    taken over meanwhile stays with its new owner, and its line in the batch is ignored when it comes back)."""
    with write(study._db) as conn:
        return sum(
            conn.execute(
                "UPDATE jobs SET status = 'batched', batch_id = ?, lease_owner = NULL, lease_until = NULL, "
                "updated_at = ? WHERE id = ? AND status = 'leased' AND lease_owner = ?",
                [batch_id, utc_now(), job.id, owner],
            ).rowcount
            for job in jobs
        )


def batches(study: Study, rater_id: int) -> list[str]:
    """The batches holding this judge's jobs, or jobs cancelled while they waited in one (their batch is read once
    more, to drop their replies and say so), in the order of their first job."""
    return [
        r[0]
        for r in study._db.conn.execute(
            "SELECT batch_id FROM jobs WHERE rater_id = ? AND status IN ('batched', 'cancelled') "
            "AND batch_id IS NOT NULL GROUP BY batch_id ORDER BY min(id)",
            [rater_id],
        )
    ]


def cancelled_in_batch(study: Study, batch_id: str) -> set[int]:
    """The jobs cancelled (``queue --cancel``) while they waited in this batch: their replies are never stored."""
    return {
        r[0]
        for r in study._db.conn.execute("SELECT id FROM jobs WHERE status = 'cancelled' AND batch_id = ?", [batch_id])
    }


def forget_batch(study: Study, batch_id: str) -> int:
    """The cancelled jobs of a batch that was read (or cancelled on the server) lose its id: it is not asked again."""
    with write(study._db) as conn:
        return conn.execute(
            "UPDATE jobs SET batch_id = NULL, updated_at = ? WHERE status = 'cancelled' AND batch_id = ?",
            [utc_now(), batch_id],
        ).rowcount


def batched_jobs(study: Study, batch_id: str) -> list[int]:
    return [
        r[0]
        for r in study._db.conn.execute(
            "SELECT id FROM jobs WHERE status = 'batched' AND batch_id = ? ORDER BY id", [batch_id]
        )
    ]


def take_batched(study: Study, job_id: int, batch_id: str, owner: str, lease_s: float = LEASE_S) -> Job | None:
    """Lease one job back from its batch to read its reply (one at a time: a process killed while reading leaves
    the other jobs in the batch, for the next run to read from the server's output again)."""
    with write(study._db) as conn:
        taken = conn.execute(
            "UPDATE jobs SET status = 'leased', batch_id = NULL, lease_owner = ?, lease_until = ?, updated_at = ? "
            "WHERE id = ? AND status = 'batched' AND batch_id = ?",
            [owner, time.time() + lease_s, utc_now(), job_id, batch_id],
        ).rowcount
        if taken != 1:
            return None
        r = conn.execute(
            "SELECT id, item_key, attribute, rater_id, sample, attempts, presentation FROM jobs WHERE id = ?", [job_id]
        ).fetchone()
    return Job(r[0], r[1], r[2], r[3], r[4], r[5], r[6])


def void_result(study: Study, job_id: int, request_keys: list[str], kind: str, message: str) -> tuple[str, list[str]]:
    """A job read from a batch whose results then contradicted themselves fails after all: its ratings and the
    replies cached for its requests are deleted and it is marked failed, in one transaction. (The job's status
    before, the parse statuses of the ratings removed.)"""
    with write(study._db) as conn:
        row = conn.execute("SELECT status FROM jobs WHERE id = ?", [job_id]).fetchone()
        found = conn.execute("SELECT id, parse_status FROM ratings WHERE job_id = ?", [job_id]).fetchall()
        statuses = [status for _, status in found]
        record_changes(conn, [rating_id for rating_id, _ in found], "voided")  # an open pane drops them (schema 15)
        conn.execute("DELETE FROM ratings WHERE job_id = ?", [job_id])
        conn.executemany("DELETE FROM replies WHERE request_hash = ?", [(key,) for key in request_keys])
        conn.execute(
            "UPDATE jobs SET status = 'failed', batch_id = NULL, lease_owner = NULL, error_kind = ?, last_error = ?, "
            "updated_at = ? WHERE id = ?",
            [kind, message[:500], utc_now(), job_id],
        )
    return (row[0] if row else ""), statuses


def unbatch(study: Study, batch_id: str, kind: str, message: str, *, counts: bool = True) -> int:
    """The jobs a batch did not answer go back to the queue (failed once they have had MAX_ATTEMPTS; a cancelled
    batch's attempt does not count); how many."""
    attempts = "attempts" if counts else "max(0, attempts - 1)"
    with write(study._db) as conn:
        return conn.execute(
            f"UPDATE jobs SET status = CASE WHEN {attempts} >= ? THEN 'failed' ELSE 'queued' END, "
            f"attempts = {attempts}, batch_id = NULL, not_before = 0, error_kind = ?, last_error = ?, updated_at = ? "
            "WHERE status = 'batched' AND batch_id = ?",
            [MAX_ATTEMPTS, kind, message[:500], utc_now(), batch_id],
        ).rowcount


# --- the whole queue ------------------------------------------------------------------------------------------------


def _update_all(study: Study, sql: str, rater_id: int | None) -> int:
    """Run a queue-wide UPDATE (its first parameter the time), for one judge's jobs or everyone's."""
    params: list[Any] = [utc_now()]
    if rater_id is not None:
        sql += " AND rater_id = ?"
        params.append(rater_id)
    with write(study._db) as conn:
        return conn.execute(sql, params).rowcount


def cancel(study: Study, rater_id: int | None = None) -> int:
    """Cancel the jobs not done yet, those waiting in a server's batch too: a batched job keeps its batch id, so the
    run reading that batch drops its reply (``judge --batch`` stores replies only for jobs still 'batched')."""
    return _update_all(
        study,
        "UPDATE jobs SET status = 'cancelled', lease_owner = NULL, updated_at = ? "
        "WHERE status IN ('queued', 'leased', 'batched')",
        rater_id,
    )


def cancelled_batched(study: Study, rater_id: int | None = None) -> int:
    """Cancelled jobs whose server batch has not been read yet (it runs, and is paid for, all the same)."""
    sql = "SELECT count(*) FROM jobs WHERE status = 'cancelled' AND batch_id IS NOT NULL"
    if rater_id is None:
        return int(study._db.conn.execute(sql).fetchone()[0])
    return int(study._db.conn.execute(sql + " AND rater_id = ?", [rater_id]).fetchone()[0])


def retry(study: Study, rater_id: int | None = None) -> int:
    """Queue failed and cancelled jobs again, with a fresh attempt budget."""
    return _update_all(
        study,
        "UPDATE jobs SET status = 'queued', attempts = 0, not_before = 0, lease_owner = NULL, batch_id = NULL, "
        "updated_at = ? WHERE status IN ('failed', 'cancelled')",
        rater_id,
    )


def counts(study: Study, rater_id: int | None = None) -> dict[str, int]:
    sql = (
        "SELECT status, count(*) FROM jobs"
        + (" WHERE rater_id = ?" if rater_id is not None else "")
        + " GROUP BY status"
    )
    found = dict(study._db.conn.execute(sql, [rater_id] if rater_id is not None else []).fetchall())
    return {status: found.get(status, 0) for status in STATUSES}


def counts_by_rater(study: Study) -> dict[int, dict[str, int]]:
    """rater id -> jobs per status (the statuses it has)."""
    found: dict[int, dict[str, int]] = {}
    for rid, status, n in study._db.conn.execute(
        "SELECT rater_id, status, count(*) FROM jobs GROUP BY rater_id, status"
    ):
        found.setdefault(rid, {})[status] = n
    return found


def pending(study: Study, rater_id: int | None = None) -> int:
    """Jobs that may still produce a result (queued, or leased by a live or dead worker): a judge's, or the study's."""
    sql = "SELECT count(*) FROM jobs WHERE status IN ('queued', 'leased')"
    if rater_id is None:
        return int(study._db.conn.execute(sql).fetchone()[0])
    return int(study._db.conn.execute(sql + " AND rater_id = ?", [rater_id]).fetchone()[0])


def failures(study: Study, limit: int = 20) -> list[dict[str, Any]]:
    return [
        dict(r)
        for r in study._db.query(
            "SELECT j.id, i.id AS item, i.task, j.attribute, j.presentation, j.sample, ra.label AS rater, j.attempts, "
            "j.error_kind, "
            "j.last_error FROM jobs j JOIN items i ON i.key = j.item_key JOIN raters ra ON ra.id = j.rater_id "
            "WHERE j.status = 'failed' ORDER BY j.updated_at DESC LIMIT ?",
            [limit],
        )
    ]

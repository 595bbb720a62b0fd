"""The judge queue: one persistent table in the study file, shared by every worker of every process.

- A job is (item, attribute or '*' for a whole conversation, judge configuration, sample).
- Workers lease a batch of one item's jobs (so consecutive prompts share their prefix in the
  model's KV cache) for a limited time; a killed worker's jobs come back when the lease expires.
- A result is stored in the same transaction that marks the job done, and only if the worker
  still holds the lease: no job's result is stored twice. A lease that has run out stays its
  owner's until another worker takes the job over (``lease``); from then on the old owner's
  ``complete``, ``fail``, ``renew`` and ``release`` change nothing.
- Transient failures go back to the queue with exponential backoff that honours Retry-After.

The functions that read the clock take an optional ``now`` (seconds since the epoch, as
``time.time()``) so tests can drive the queue's time; callers leave it out.
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
from dataclasses import dataclass

from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study

LEASE_S = 120.0
# 'batched': the job's next request waits in a server's batch (``judge --batch``); no worker leases it meanwhile
STATUSES = ("queued", "leased", "batched", "done", "failed", "cancelled")
MAX_ATTEMPTS = 6
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 120.0


def new_owner() -> str:
    """A lease owner id: host and pid, so a dead worker's leases on this host are reclaimed at once."""
    import uuid

    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reclaim_dead(study: Study) -> int:
    """Queue again the jobs leased by processes on this host that no longer run (a crash, kill -9).

    Leases of other hosts, or of live processes, are left to expire on their own.
    """
    host = socket.gethostname()
    owners = [
        r[0]
        for r in study.db.conn.execute(
            "SELECT DISTINCT lease_owner FROM jobs WHERE status = 'leased' AND lease_owner IS NOT NULL"
        )
    ]
    dead = []
    for owner in owners:
        parts = owner.split(":")
        if len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not _alive(int(parts[1])):
            dead.append(owner)
    if not dead:
        return 0
    with write(study.db) as conn:
        return sum(
            conn.execute(
                "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL WHERE status = 'leased' "
                "AND lease_owner = ?",
                [owner],
            ).rowcount
            for owner in dead
        )


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
    details: dict | None = None


def enqueue(study: Study, rater_id: int, item_keys: list[int], shapes: list[tuple[str, str, int]]) -> int:
    """Add the jobs that do not exist yet, ``shapes`` = (attribute, presentation, sample) per item.

    Return how many were added.
    """
    now = utc_now()
    rows = [
        (key, attribute, rater_id, sample, presentation, str(key), now, now)
        for key in item_keys
        for attribute, presentation, sample in shapes
    ]
    with write(study.db) as conn:
        before = conn.total_changes
        conn.executemany(
            "INSERT OR IGNORE INTO jobs (item_key, attribute, rater_id, sample, presentation, prefix_key, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        return conn.total_changes - before


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
    ready = "rater_id = ? AND not_before <= ? AND (status = 'queued' OR (status = 'leased' AND lease_until < ?))"
    with write(study.db) as conn:
        keys = [
            r[0]
            for r in conn.execute(
                f"SELECT DISTINCT item_key FROM jobs WHERE {ready} ORDER BY item_key LIMIT ?",
                [rater_id, now, now, max(1, min_jobs)],
            ).fetchall()
        ]
        if not keys:
            return []
        rows = []
        for key in keys:
            rows += conn.execute(
                "SELECT id, item_key, attribute, rater_id, sample, attempts, presentation FROM jobs "
                f"WHERE {ready} AND item_key = ? ORDER BY id LIMIT ?",
                [rater_id, now, now, key, max_jobs - len(rows)],
            ).fetchall()
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
    with write(study.db) as conn:
        conn.executemany(
            "UPDATE jobs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND status = 'leased'",
            [(until, job.id, owner) for job in jobs],
        )


def complete(
    study: Study, job: Job, owner: str, results: list[RatingResult], replies: dict[str, dict] | None = None
) -> bool:
    """Store a job's ratings (and the replies to cache) and mark it done, atomically.

    False if the lease was lost meanwhile: then nothing is stored.
    """
    now = utc_now()
    with write(study.db) as conn:
        claimed = conn.execute(
            "UPDATE jobs SET status = 'done', lease_owner = NULL, error_kind = NULL, last_error = NULL, "
            "updated_at = ? WHERE id = ? AND status = 'leased' AND lease_owner = ?",
            [now, job.id, owner],
        ).rowcount
        if claimed != 1:
            return False
        conn.executemany(
            "INSERT INTO ratings (item_key, attribute, rater_id, presentation, sample, value, raw, parse_status, "
            "created_at, job_id, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    job.item_key,
                    r.attribute,
                    job.rater_id,
                    job.presentation,
                    r.sample,
                    r.value,
                    r.raw,
                    r.parse_status,
                    now,
                    job.id,
                    json.dumps(r.details) if r.details else None,
                )
                for r in results
            ],
        )
        _keep(conn, job.rater_id, replies or {}, now)
    return True


def _keep(conn, rater_id: int, replies: dict[str, dict], now: str) -> None:
    conn.executemany(
        "INSERT OR IGNORE INTO replies (request_hash, reply, created_at, rater_id) VALUES (?, ?, ?, ?)",
        [(key, json.dumps(reply), now, rater_id) for key, reply in replies.items()],
    )


def keep_replies(study: Study, rater_id: int, replies: dict[str, dict]) -> None:
    """Store the replies a job got so far without finishing it (a batch answered the first turn of a conversation:
    the next batch asks the second, and the job's run reads the first from here)."""
    if replies:
        with write(study.db) as conn:
            _keep(conn, rater_id, replies, utc_now())


def backoff_s(attempts: int, retry_after: float | None = None) -> float:
    """Seconds to wait before a job's next attempt, never more than BACKOFF_MAX_S.

    The jitter keeps workers from returning in step; it is applied before the cap, so the cap holds.
    """
    if retry_after is not None:  # the server said when: honour it, waiting a little longer at most
        return min(BACKOFF_MAX_S, retry_after * random.uniform(1.0, 1.1))
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2 ** (attempts - 1) * random.uniform(0.8, 1.2))


def fail(
    study: Study,
    job: Job,
    owner: str,
    kind: str,
    message: str,
    *,
    retryable: bool,
    retry_after: float | None = None,
    now: float | None = None,
) -> str:
    """Put a job back with backoff, or mark it failed for good; return its new status.

    'lost' when the owner no longer holds the lease (another worker took the job over, or it was
    cancelled): then nothing changes.
    """
    retry = retryable and job.attempts < MAX_ATTEMPTS
    delay = backoff_s(job.attempts, retry_after) if retry else 0.0
    status = "queued" if retry else "failed"
    now = time.time() if now is None else now
    with write(study.db) as conn:
        changed = conn.execute(
            "UPDATE jobs SET status = ?, lease_owner = NULL, lease_until = NULL, not_before = ?, error_kind = ?, "
            "last_error = ?, updated_at = ? WHERE id = ? AND lease_owner = ? AND status = 'leased'",
            [status, now + delay, kind, message[:500], utc_now(), job.id, owner],
        ).rowcount
    return status if changed == 1 else "lost"


def release(study: Study, jobs: list[Job], owner: str) -> None:
    """Give back leased jobs untouched (a worker stopping cleanly); the attempt does not count."""
    with write(study.db) as conn:
        conn.executemany(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL, attempts = attempts - 1 "
            "WHERE id = ? AND lease_owner = ? AND status = 'leased'",
            [(job.id, owner) for job in jobs],
        )


def leased_by(study: Study, owners: list[str]) -> int:
    """How many jobs these owners hold now."""
    marks = ", ".join("?" * len(owners))
    return study.db.conn.execute(
        f"SELECT count(*) FROM jobs WHERE status = 'leased' AND lease_owner IN ({marks})", owners
    ).fetchone()[0]


def release_owners(study: Study, owners: list[str]) -> int:
    """Give back every job these owners hold (a run stopping while a worker still waits on its server); a worker
    answering later finds its lease gone and stores nothing (``complete``)."""
    marks = ", ".join("?" * len(owners))
    with write(study.db) as conn:
        return conn.execute(
            "UPDATE jobs SET status = 'queued', lease_owner = NULL, lease_until = NULL, attempts = attempts - 1 "
            f"WHERE status = 'leased' AND lease_owner IN ({marks})",
            owners,
        ).rowcount


# --- jobs waiting in a server's batch (``judge/batch.py``) ------------------------------------------------------


def to_batch(study: Study, jobs: list[Job], owner: str, batch_id: str) -> int:
    """Hand leased jobs to a batch the server has accepted, in one transaction; how many (a job whose lease was
    taken over meanwhile stays with its new owner, and its line in the batch is ignored when it comes back)."""
    with write(study.db) as conn:
        return sum(
            conn.execute(
                "UPDATE jobs SET status = 'batched', batch_id = ?, lease_owner = NULL, lease_until = NULL, "
                "updated_at = ? WHERE id = ? AND status = 'leased' AND lease_owner = ?",
                [batch_id, utc_now(), job.id, owner],
            ).rowcount
            for job in jobs
        )


def batches(study: Study, rater_id: int) -> list[str]:
    """The batches holding this judge's jobs (in the order of their first job)."""
    return [
        r[0]
        for r in study.db.conn.execute(
            "SELECT batch_id FROM jobs WHERE rater_id = ? AND status = 'batched' GROUP BY batch_id ORDER BY min(id)",
            [rater_id],
        )
    ]


def batched_jobs(study: Study, batch_id: str) -> list[int]:
    return [
        r[0]
        for r in study.db.conn.execute(
            "SELECT id FROM jobs WHERE status = 'batched' AND batch_id = ? ORDER BY id", [batch_id]
        )
    ]


def take_batched(study: Study, job_id: int, batch_id: str, owner: str, lease_s: float = LEASE_S) -> Job | None:
    """Lease one job back from its batch to read its reply (one at a time: a process killed while reading leaves
    the other jobs in the batch, for the next run to read from the server's output again)."""
    with write(study.db) as conn:
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


def unbatch(study: Study, batch_id: str, kind: str, message: str, *, counts: bool = True) -> int:
    """The jobs a batch did not answer go back to the queue (failed once they have had MAX_ATTEMPTS; a cancelled
    batch's attempt does not count); how many."""
    attempts = "attempts" if counts else "max(0, attempts - 1)"
    with write(study.db) as conn:
        return conn.execute(
            f"UPDATE jobs SET status = CASE WHEN {attempts} >= ? THEN 'failed' ELSE 'queued' END, "
            f"attempts = {attempts}, batch_id = NULL, not_before = 0, error_kind = ?, last_error = ?, updated_at = ? "
            "WHERE status = 'batched' AND batch_id = ?",
            [MAX_ATTEMPTS, kind, message[:500], utc_now(), batch_id],
        ).rowcount


def cancel(study: Study, rater_id: int | None = None) -> int:
    with write(study.db) as conn:
        sql = (
            "UPDATE jobs SET status = 'cancelled', lease_owner = NULL, updated_at = ? "
            "WHERE status IN ('queued', 'leased')"
        )
        params: list = [utc_now()]
        if rater_id is not None:
            sql += " AND rater_id = ?"
            params.append(rater_id)
        return conn.execute(sql, params).rowcount


def retry(study: Study, rater_id: int | None = None) -> int:
    """Queue failed and cancelled jobs again, with a fresh attempt budget."""
    with write(study.db) as conn:
        sql = (
            "UPDATE jobs SET status = 'queued', attempts = 0, not_before = 0, lease_owner = NULL, updated_at = ? "
            "WHERE status IN ('failed', 'cancelled')"
        )
        params: list = [utc_now()]
        if rater_id is not None:
            sql += " AND rater_id = ?"
            params.append(rater_id)
        return conn.execute(sql, params).rowcount


def counts(study: Study, rater_id: int | None = None) -> dict[str, int]:
    sql = (
        "SELECT status, count(*) FROM jobs"
        + (" WHERE rater_id = ?" if rater_id is not None else "")
        + " GROUP BY status"
    )
    found = dict(study.db.conn.execute(sql, [rater_id] if rater_id is not None else []).fetchall())
    return {status: found.get(status, 0) for status in STATUSES}


def pending(study: Study, rater_id: int) -> int:
    """Jobs that may still produce a result (queued, or leased by a live or dead worker)."""
    return study.db.conn.execute(
        "SELECT count(*) FROM jobs WHERE rater_id = ? AND status IN ('queued', 'leased')", [rater_id]
    ).fetchone()[0]


def failures(study: Study, limit: int = 20) -> list[dict]:
    return [
        dict(r)
        for r in study.db.query(
            "SELECT j.id, i.id AS item, i.task, j.attribute, j.presentation, j.sample, ra.label AS rater, j.attempts, "
            "j.error_kind, "
            "j.last_error FROM jobs j JOIN items i ON i.key = j.item_key JOIN raters ra ON ra.id = j.rater_id "
            "WHERE j.status = 'failed' ORDER BY j.updated_at DESC LIMIT ?",
            [limit],
        )
    ]


def cached_reply(study: Study, request_hash: str) -> dict | None:
    row = study.db.conn.execute("SELECT reply FROM replies WHERE request_hash = ?", [request_hash]).fetchone()
    return json.loads(row[0]) if row else None

"""The judge queue: one persistent table in the study file, shared by every worker of every process.

- A job is (item, attribute or '*' for a whole conversation, judge configuration, sample).
- Workers lease a batch of one item's jobs (so consecutive prompts share their prefix in the
  model's KV cache) for a limited time; a killed worker's jobs come back when the lease expires.
- A result is stored in the same transaction that marks the job done, and only if the worker
  still holds the lease: no job's result is stored twice. A lease that has run out stays its
  owner's until another worker takes the job over (``lease``); from then on the old owner's
  ``complete``, ``fail``, ``renew`` and ``release`` change nothing.
- Transient failures go back to the queue with exponential backoff that honours Retry-After.

The statements are the store's (``store/jobs.py``); this module is the policy: who owns a lease, when a dead
worker's jobs come back, how long a failed job waits. The functions that read the clock take an optional ``now``
(seconds since the epoch, as ``time.time()``) so tests can drive the queue's time; callers leave it out.
"""

from __future__ import annotations

import os
import random
import socket
import time

from tui_rater.store.jobs import (
    LEASE_S,
    MAX_ATTEMPTS,
    STATUSES,
    Job,
    RatingResult,
    batched_jobs,
    batches,
    cached_reply,
    cancel,
    cancelled_batched,
    cancelled_in_batch,
    complete,
    counts,
    enqueue,
    enqueue_task,
    failures,
    forget_batch,
    keep_replies,
    lease,
    lease_owners,
    leased_by,
    pending,
    release,
    release_owners,
    renew,
    requeue,
    requeue_owners,
    retry,
    take_batched,
    task_size,
    to_batch,
    unbatch,
    void_result,
)
from tui_rater.store.study import Study

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_MAX_S",
    "LEASE_S",
    "MAX_ATTEMPTS",
    "STATUSES",
    "Job",
    "RatingResult",
    "backoff_s",
    "batched_jobs",
    "batches",
    "cached_reply",
    "cancel",
    "cancelled_batched",
    "cancelled_in_batch",
    "complete",
    "counts",
    "enqueue",
    "enqueue_task",
    "fail",
    "failures",
    "forget_batch",
    "keep_replies",
    "lease",
    "leased_by",
    "new_owner",
    "pending",
    "reclaim_dead",
    "release",
    "release_owners",
    "renew",
    "retry",
    "take_batched",
    "task_size",
    "to_batch",
    "unbatch",
    "void_result",
]

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
    dead = []
    for owner in lease_owners(study):
        parts = owner.split(":")
        if len(parts) == 3 and parts[0] == host and parts[1].isdigit() and not _alive(int(parts[1])):
            dead.append(owner)
    return requeue_owners(study, dead) if dead else 0


def backoff_s(attempts: int, retry_after: float | None = None) -> float:
    """Seconds to wait before a job's next attempt, never more than BACKOFF_MAX_S.

    The jitter keeps workers from returning in step; it is applied before the cap, so the cap holds.
    """
    if retry_after is not None:  # the server said when: honour it, waiting a little longer at most
        return min(BACKOFF_MAX_S, retry_after * random.uniform(1.0, 1.1))
    return min(BACKOFF_MAX_S, BACKOFF_BASE_S * 2.0 ** (attempts - 1) * random.uniform(0.8, 1.2))


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
    return status if requeue(study, job, owner, status, now + delay, kind, message) else "lost"

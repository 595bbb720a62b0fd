"""The judge queue as a state machine, against a real SQLite file.

Hypothesis drives random sequences of enqueue / lease / renew / complete / fail / release /
cancel / retry / reclaim_dead and a clock that only moves when a rule says so (the queue's
``now`` parameters); a plain-Python model says what each call must return and what every job
row must hold afterwards. After every rule the file is compared with the model, including the
rule the queue exists for: a job's result is stored exactly once, and only by its lease holder.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tui_rater.judge import queue
from tui_rater.judge.queue import Job, RatingResult
from tui_rater.store.study import Study

HOST = socket.gethostname()


def _dead_pid() -> int:
    """The pid of a process of this host that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


LIVE = [f"{HOST}:{os.getpid()}:live{k}" for k in (1, 2)]  # this process: alive
DEAD = f"{HOST}:{_dead_pid()}:dead"  # a crashed worker of this host
FOREIGN = f"elsewhere.invalid:{_dead_pid()}:far"  # another host (its pid means nothing here): leases only expire
OWNERS = [*LIVE, DEAD, FOREIGN]
ATTRIBUTES = ["grammaticality", "cohesiveness", "likability", "relevance"]
STATUSES = ("queued", "leased", "batched", "done", "failed", "cancelled")


@dataclass
class ModelJob:
    id: int
    item_key: int
    attribute: str
    rater_id: int
    sample: int
    presentation: str
    status: str = "queued"
    owner: str | None = None
    lease_until: float | None = None
    attempts: int = 0
    not_before: float = 0.0
    results: int = 0  # ratings stored for this job


@dataclass(frozen=True)
class Handle:
    """What a worker holds after a lease: its owner id and the Job it was given (possibly stale)."""

    owner: str
    job: Job


def _result(handle: Handle) -> list[RatingResult]:
    return [RatingResult(handle.job.attribute, handle.job.sample, 3.0, f"by {handle.owner}", "ok")]


def _holding(machine: QueueMachine) -> bool:
    return bool(getattr(machine, "handles", None))


class QueueMachine(RuleBasedStateMachine):
    @initialize(jobs=st.booleans())
    def open_study(self, jobs):
        self.dir = Path(tempfile.mkdtemp(prefix="queue-sm-"))
        self.study = Study.open(self.dir / "q.db", durable=False)
        self.study.add_items(
            self.study.task("story"),
            [{"id": f"s{i}", "system": None, "prompt": "P", "story": f"Story {i}."} for i in range(3)],
        )
        self.item_keys = [item.key for item in self.study.items("story")]
        self.raters = [self.study.judge(f"judge-{k}", {"k": k}).id for k in range(2)]
        self.jobs: dict[int, ModelJob] = {}
        self.handles: list[Handle] = []  # every lease ever handed out, the stale ones included
        self.now = 1_000_000.0
        if jobs:
            for rater in (0, 1):
                self.enqueue(rater, {0, 1, 2}, {"likability", "relevance"}, 1, False)

    def teardown(self):
        if hasattr(self, "study"):
            self.study.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    # --- the model's reading of the rules ---------------------------------------------------

    def _ready(self, job: ModelJob, rater_id: int) -> bool:
        lease_ran_out = job.status == "leased" and job.lease_until < self.now
        return job.rater_id == rater_id and job.not_before <= self.now and (job.status == "queued" or lease_ran_out)

    def _expected_lease(self, rater_id: int, max_jobs: int, min_jobs: int) -> list[ModelJob]:
        """One item's ready jobs in id order; further items only until min_jobs are reached."""
        ready = [j for j in self.jobs.values() if self._ready(j, rater_id)]
        keys = sorted({j.item_key for j in ready})[: max(1, min_jobs)]
        chosen: list[ModelJob] = []
        for key in keys:
            chosen += sorted((j for j in ready if j.item_key == key), key=lambda j: j.id)[: max_jobs - len(chosen)]
            if len(chosen) >= min_jobs or len(chosen) >= max_jobs:
                break
        return chosen

    def _holds(self, handle: Handle) -> bool:
        job = self.jobs[handle.job.id]
        return job.status == "leased" and job.owner == handle.owner

    # --- rules ------------------------------------------------------------------------------

    @rule(
        rater=st.integers(0, 1),
        items=st.sets(st.integers(0, 2), min_size=1),
        attributes=st.sets(st.sampled_from(ATTRIBUTES), min_size=1),
        samples=st.integers(1, 2),
        both_orders=st.booleans(),
    )
    def enqueue(self, rater, items, attributes, samples, both_orders):
        rater_id = self.raters[rater]
        keys = [self.item_keys[i] for i in sorted(items)]
        presentations = ["original", "swapped"] if both_orders else [""]
        shapes = [(a, p, s) for a in sorted(attributes) for p in presentations for s in range(samples)]
        wanted = {(k, a, rater_id, s, p) for k in keys for a, p, s in shapes}
        existing = {(j.item_key, j.attribute, j.rater_id, j.sample, j.presentation) for j in self.jobs.values()}
        added = queue.enqueue(self.study, rater_id, keys, shapes)
        assert added == len(wanted - existing)  # a job that exists is not added again, whatever its state
        for row in self.study._db.conn.execute(
            "SELECT id, item_key, attribute, rater_id, sample, presentation FROM jobs"
        ):
            if row[0] not in self.jobs:
                self.jobs[row[0]] = ModelJob(*row)

    @rule(seconds=st.sampled_from([0.0, 0.5, 1.0, 2.0, 5.0, 30.0, 200.0]))
    def tick(self, seconds):
        self.now += seconds

    @rule(
        owner=st.sampled_from(OWNERS),
        rater=st.integers(0, 1),
        max_jobs=st.integers(1, 6),
        min_jobs=st.integers(1, 5),
        lease_s=st.sampled_from([1.0, 5.0, 30.0]),
    )
    def lease(self, owner, rater, max_jobs, min_jobs, lease_s):
        rater_id = self.raters[rater]
        expected = self._expected_lease(rater_id, max_jobs, min_jobs)
        got = queue.lease(self.study, rater_id, owner, max_jobs, lease_s, min_jobs, now=self.now)
        assert [j.id for j in got] == [j.id for j in expected]
        for job, model in zip(got, expected):
            assert (job.item_key, job.attribute, job.rater_id, job.sample, job.presentation) == (
                model.item_key,
                model.attribute,
                model.rater_id,
                model.sample,
                model.presentation,
            )
            model.status, model.owner, model.lease_until = "leased", owner, self.now + lease_s
            model.attempts += 1
            assert job.attempts == model.attempts
        self.handles += [Handle(owner, job) for job in got]

    def _pick(self, data, most: int = 1) -> list[Handle]:
        return data.draw(st.lists(st.sampled_from(self.handles), min_size=1, max_size=most), label="handles")

    @precondition(_holding)
    @rule(data=st.data())
    def complete(self, data):
        (handle,) = self._pick(data)
        holds = self._holds(handle)
        stored = queue.complete(self.study, handle.job, handle.owner, _result(handle), {f"h{handle.job.id}": {}})
        assert stored == holds  # only the holder of the lease stores a result
        if holds:
            job = self.jobs[handle.job.id]
            job.status, job.owner, job.results = "done", None, job.results + 1

    @precondition(_holding)
    @rule(data=st.data(), retryable=st.booleans(), retry_after=st.none() | st.sampled_from([0.0, 1.0, 7.5, 1000.0]))
    def fail(self, data, retryable, retry_after):
        (handle,) = self._pick(data)
        holds = self._holds(handle)
        status = queue.fail(
            self.study,
            handle.job,
            handle.owner,
            "test",
            "boom",
            retryable=retryable,
            retry_after=retry_after,
            now=self.now,
        )
        if not holds:
            assert status == "lost"
            return
        retry = retryable and handle.job.attempts < queue.MAX_ATTEMPTS
        assert status == ("queued" if retry else "failed")
        job = self.jobs[handle.job.id]
        job.status, job.owner, job.lease_until = status, None, None
        not_before = self._row(job.id)["not_before"]
        delay = not_before - self.now
        if not retry:
            assert delay == 0
        elif retry_after is not None:  # Retry-After honoured, a little jitter on top, never past the cap
            assert min(retry_after, queue.BACKOFF_MAX_S) <= delay <= min(1.1 * retry_after, queue.BACKOFF_MAX_S)
        else:  # exponential backoff from the attempt count, +-20 %, capped
            base = queue.BACKOFF_BASE_S * 2 ** (handle.job.attempts - 1)
            assert min(0.8 * base, queue.BACKOFF_MAX_S) <= delay <= min(1.2 * base, queue.BACKOFF_MAX_S)
        job.not_before = not_before

    @precondition(_holding)
    @rule(data=st.data(), lease_s=st.sampled_from([1.0, 5.0, 30.0]))
    def renew(self, data, lease_s):
        chosen = self._pick(data, 4)
        owner = chosen[0].owner
        mine = [h for h in chosen if h.owner == owner]
        held = {h.job.id for h in mine if self._holds(h)}
        queue.renew(self.study, [h.job for h in mine], owner, lease_s, now=self.now)
        for job_id in held:  # a job taken over by another worker is not renewed
            self.jobs[job_id].lease_until = self.now + lease_s

    @precondition(_holding)
    @rule(data=st.data())
    def release(self, data):
        chosen = self._pick(data, 4)
        owner = chosen[0].owner
        mine = [h for h in chosen if h.owner == owner]
        held = {h.job.id for h in mine if self._holds(h)}
        queue.release(self.study, [h.job for h in mine], owner)
        for job_id in held:  # given back untouched: the attempt does not count
            job = self.jobs[job_id]
            job.status, job.owner, job.lease_until, job.attempts = "queued", None, None, job.attempts - 1

    @rule(rater=st.none() | st.integers(0, 1))
    def cancel(self, rater):
        rater_id = None if rater is None else self.raters[rater]
        hit = [
            j
            for j in self.jobs.values()
            if j.status in ("queued", "leased") and (rater_id is None or j.rater_id == rater_id)
        ]
        assert queue.cancel(self.study, rater_id) == len(hit)
        for job in hit:
            job.status, job.owner = "cancelled", None

    @rule(rater=st.none() | st.integers(0, 1))
    def retry(self, rater):
        rater_id = None if rater is None else self.raters[rater]
        hit = [
            j
            for j in self.jobs.values()
            if j.status in ("failed", "cancelled") and (rater_id is None or j.rater_id == rater_id)
        ]
        assert queue.retry(self.study, rater_id) == len(hit)
        for job in hit:
            job.status, job.owner, job.attempts, job.not_before = "queued", None, 0, 0.0

    @rule()
    def reclaim_dead(self):
        # only the crashed worker of this host: live owners and other hosts keep their leases
        hit = [j for j in self.jobs.values() if j.status == "leased" and j.owner == DEAD]
        assert queue.reclaim_dead(self.study) == len(hit)
        for job in hit:
            job.status, job.owner = "queued", None

    @precondition(lambda self: any(j.status == "leased" for j in getattr(self, "jobs", {}).values()))
    @rule()
    def lease_runs_out_and_is_taken_over(self):
        """Jump past every lease; a new worker then gets the jobs, and the old owners lose them."""
        self.now = max(j.lease_until for j in self.jobs.values() if j.status == "leased") + 1.0
        for rater in (0, 1):
            self.lease(LIVE[1], rater, 64, 1, 5.0)

    # --- invariants -------------------------------------------------------------------------

    def _row(self, job_id: int) -> dict:
        return next(iter(self.study._db.query("SELECT * FROM jobs WHERE id = ?", [job_id])))

    @invariant()
    def rows_match_the_model(self):
        if not hasattr(self, "jobs"):
            return
        rows = {r["id"]: dict(r) for r in self.study._db.query("SELECT * FROM jobs")}
        assert set(rows) == set(self.jobs)
        for job in self.jobs.values():
            row = rows[job.id]
            assert (row["status"], row["lease_owner"], row["attempts"]) == (job.status, job.owner, job.attempts)
            assert row["not_before"] == job.not_before
            if job.status == "leased":
                assert row["lease_until"] == job.lease_until

    @invariant()
    def results_exactly_once(self):
        if not hasattr(self, "jobs"):
            return
        stored = dict(
            self.study._db.conn.execute("SELECT job_id, count(*) FROM ratings WHERE job_id IS NOT NULL GROUP BY job_id")
        )
        for job in self.jobs.values():
            assert job.results == (1 if job.status == "done" else 0)
            assert stored.get(job.id, 0) == job.results
        for job_id, presentation in self.study._db.conn.execute("SELECT job_id, presentation FROM ratings"):
            assert presentation == self.jobs[job_id].presentation  # a pair's order travels with its result
        replies = {r[0] for r in self.study._db.conn.execute("SELECT request_hash FROM replies")}
        assert replies == {f"h{j.id}" for j in self.jobs.values() if j.status == "done"}

    @invariant()
    def counts_and_pending(self):
        if not hasattr(self, "jobs"):
            return
        for rater_id in self.raters:
            mine = [j for j in self.jobs.values() if j.rater_id == rater_id]
            assert queue.counts(self.study, rater_id) == {s: sum(j.status == s for j in mine) for s in STATUSES}
            assert queue.pending(self.study, rater_id) == sum(j.status in ("queued", "leased") for j in mine)


QueueMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("TUI_RATER_QUEUE_EXAMPLES", "150")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_queue_state_machine = QueueMachine.TestCase


def test_the_dead_owner_is_dead_and_the_live_one_alive():
    """The machine's premise: reclaim_dead can tell them apart on this host."""
    assert not queue._alive(int(DEAD.split(":")[1]))
    assert queue._alive(os.getpid())


@pytest.mark.parametrize("attempts", [1, 2, 5, 12, 40])
def test_backoff_doubles_and_the_cap_holds(attempts):
    delays = [queue.backoff_s(attempts) for _ in range(200)]
    base = queue.BACKOFF_BASE_S * 2 ** (attempts - 1)
    assert all(min(0.8 * base, queue.BACKOFF_MAX_S) <= d <= min(1.2 * base, queue.BACKOFF_MAX_S) for d in delays)
    assert max(queue.backoff_s(attempts, retry_after=10_000) for _ in range(50)) == queue.BACKOFF_MAX_S
    assert len(set(delays)) > 1 or base * 0.8 >= queue.BACKOFF_MAX_S  # jittered unless pinned at the cap


# --- two real processes on one study file ------------------------------------------------------

PROC = Path(__file__).with_name("queue_proc.py")
ROOT = Path(__file__).resolve().parents[2]


class Worker:
    """A second process holding leases (queue_proc.py), driven one command at a time."""

    def __init__(self, db: Path):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(
            [sys.executable, str(PROC), str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )
        self.owner = self._answer()["owner"]

    def _answer(self):
        line = self.proc.stdout.readline()
        assert line, f"the worker process ended (status {self.proc.poll()})"
        return json.loads(line)

    def __call__(self, op: str, **args):
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=30)


@pytest.fixture
def two_items(tmp_path):
    study = Study.open(tmp_path / "two.db")
    study.add_items(
        study.task("story"),
        [{"id": f"s{i}", "system": None, "prompt": "P", "story": f"Story {i}."} for i in range(2)],
    )
    rater = study.judge("j", {"m": 1})
    shapes = [(attribute, "", sample) for attribute in ("likability", "relevance") for sample in (0, 1)]
    queue.enqueue(study, rater.id, [i.key for i in study.items()], shapes)
    workers: list[Worker] = []

    def start() -> Worker:
        workers.append(Worker(study.path))
        return workers[-1]

    yield study, rater.id, start
    for worker in workers:
        if worker.proc.poll() is None:
            worker.kill()
    study.close()


def _raws(study: Study) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for job_id, raw in study._db.conn.execute("SELECT job_id, raw FROM ratings ORDER BY id"):
        found.setdefault(job_id, []).append(raw)
    return found


def test_a_second_process_never_gets_the_first_ones_jobs(two_items):
    study, rater, start = two_items
    first = start()
    held = first("lease", rater=rater, lease_s=120)
    assert len(held) == 4  # one item's jobs: 2 attributes x 2 samples
    mine = queue.lease(study, rater, "this-process", lease_s=120)
    assert len(mine) == 4 and not {j.id for j in mine} & set(held)
    assert queue.lease(study, rater, "this-process") == []  # nothing else is ready
    assert queue.reclaim_dead(study) == 0  # the first process lives: its leases stay
    taken = Job(held[0], 0, "likability", rater, 0, 1)
    assert not queue.complete(study, taken, "this-process", [RatingResult("likability", 0, 1.0, "thief", "ok")])
    assert first("complete") == [True] * 4
    for job in mine:
        assert queue.complete(study, job, "this-process", [RatingResult(job.attribute, job.sample, 2.0, "me", "ok")])
    raws = _raws(study)
    assert {job_id: r for job_id, r in raws.items() if job_id in held} == {j: [f"by {first.owner}"] for j in held}
    assert sorted(raws) == sorted([*held, *(j.id for j in mine)])  # every job once, nothing else
    assert queue.counts(study, rater)["done"] == 8


def test_a_killed_process_leases_come_back_at_once(two_items):
    study, rater, start = two_items
    doomed = start()
    held = doomed("lease", rater=rater, lease_s=3600)  # a lease that would outlive the test
    queue.lease(study, rater, "other-item", lease_s=3600)  # the other item is busy elsewhere
    assert queue.lease(study, rater, "this-process") == []
    doomed.kill()
    assert queue.reclaim_dead(study) == len(held) == 4  # no waiting for the hour to pass
    again = queue.lease(study, rater, "this-process")
    assert [j.id for j in again] == held and all(j.attempts == 2 for j in again)  # the killed attempt counts
    for job in again:
        assert queue.complete(study, job, "this-process", [RatingResult(job.attribute, job.sample, 5.0, "me", "ok")])
    assert {j: r for j, r in _raws(study).items()} == {j: ["me"] for j in held}
    assert queue.reclaim_dead(study) == 0  # reclaiming twice changes nothing


def test_an_expired_lease_of_a_live_process_is_taken_over(two_items):
    study, rater, start = two_items
    slow = start()
    held = slow("lease", rater=rater, lease_s=1.0)
    # the other process lives on, but its lease has run out: another worker takes the jobs
    later = time.time() + 2.0
    taken = queue.lease(study, rater, "this-process", lease_s=120, now=later)
    assert [j.id for j in taken] == held
    assert slow("complete") == [False] * 4  # the old owner stores nothing
    assert slow("fail") == ["lost"] * 4  # nor puts the jobs back
    slow("renew", lease_s=3600)  # nor gets the lease back
    owners = {r[0] for r in study._db.conn.execute("SELECT lease_owner FROM jobs WHERE id IN (?, ?, ?, ?)", held)}
    assert owners == {"this-process"}
    assert _raws(study) == {}
    for job in taken:
        assert queue.complete(study, job, "this-process", [RatingResult(job.attribute, job.sample, 3.0, "new", "ok")])
    assert _raws(study) == {j: ["new"] for j in held}


def test_a_run_out_lease_nobody_took_can_still_be_completed(two_items):
    """Nothing else could have stored a result, so the late one is kept (once): no work is thrown away."""
    study, rater, start = two_items
    slow = start()
    held = slow("lease", rater=rater, lease_s=0.2)
    time.sleep(0.3)
    assert slow("complete") == [True] * 4
    assert queue.lease(study, rater, "this-process", now=time.time() + 10)[0].id not in held
    assert _raws(study) == {j: [f"by {slow.owner}"] for j in held}

"""``judge --batch``: collect the judge's ended batches, then send what is left as a new batch (``judge/batch.py``).

One call never waits for a batch: it asks the server how each stored batch stands, reads those that ended,
submits the jobs still to do, and returns. Run again (now, in an hour, tomorrow) to go on; the batch ids live
with the jobs in the study file.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from tui_rater.domain.errors import UserError
from tui_rater.judge import queue
from tui_rater.judge.batch import MAX_REQUESTS, SUBMIT_LEASE_S, BatchJudge, BatchServer, BatchState, Round, read_lines
from tui_rater.judge.batch import refusal as batch_refusal
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.queue import Job
from tui_rater.judge.worker import Progress
from tui_rater.service.judging import JudgePlan
from tui_rater.store.study import Study

Request = tuple[Job, dict[str, Any]]  # a job and the body of its next request, as the live judge would POST it
Answers = dict[str, dict[str, Any] | JudgeError]  # a job's replies from a batch, by request key


@dataclass(frozen=True)
class Collected:
    """A batch that ended and was read: what became of its jobs."""

    state: BatchState
    done: int
    queued: int  # its line was a transient error, or it had none (the batch expired, failed or was cancelled)
    failed: int
    next_round: int  # jobs that need another request (a regeneration, a conversation's next turn)
    dropped: int = 0  # replies not stored: their jobs were cancelled (``queue --cancel``) while the batch ran
    conflicts: int = 0  # jobs failed: the results held two different answers to their request (counted in failed)


@dataclass
class BatchRun:
    running: list[BatchState] = field(default_factory=list)
    collected: list[Collected] = field(default_factory=list)
    submitted: str | None = None  # the new batch's id
    requests: int = 0
    answered_from_store: int = 0  # jobs done at once: every request was in the store's reply cache
    progress: Progress = field(default_factory=Progress)


def refuse(plan: JudgePlan) -> None:
    """One sentence (exit 2) when this judge cannot be batched."""
    why = batch_refusal(plan.spec)
    if why:
        raise UserError(why)


def judge_batch(study: Study, plan: JudgePlan) -> BatchRun:
    """Read the judge's ended batches, then submit its jobs still to do as one new batch."""
    refuse(plan)
    queue.reclaim_dead(study)  # a run killed while submitting: its jobs are queued again
    server = BatchServer(plan.spec)
    run = BatchRun()
    judge = BatchJudge(study, plan.rater.id, plan.spec, plan.config, run.progress)
    requests: list[Request] = []
    try:
        for batch_id in queue.batches(study, plan.rater.id):
            state = _state(server, batch_id)
            if state.running:
                run.running.append(state)
            else:
                run.collected.append(_collect(study, server, judge, state, requests))
        fresh, started = Round(), time.time()
        while len(requests) < MAX_REQUESTS:
            left = MAX_REQUESTS - len(requests)
            # jobs this run put back (a transient failure) wait for their backoff past ``started``: not leased again
            jobs = queue.lease(
                study, plan.rater.id, judge.owner, max_jobs=left, lease_s=SUBMIT_LEASE_S, min_jobs=left, now=started
            )
            if not jobs:
                break
            judge.run(jobs, {}, fresh)
            requests += fresh.requests
            fresh.requests = []
        run.answered_from_store = fresh.done
        if requests:
            run.requests = len(requests)
            run.submitted = _submit(study, server, judge, requests)
    except BaseException:
        queue.release_owners(study, [judge.owner])  # nothing is left leased by this run: it is queued again
        raise
    return run


def _state(server: BatchServer, batch_id: str) -> BatchState:
    try:
        return server.state(batch_id)
    except JudgeError as exc:
        raise UserError(exc.message) from None


def _collect(
    study: Study, server: BatchServer, judge: BatchJudge, state: BatchState, requests: list[Request]
) -> Collected:
    """Read an ended batch's output and error files into its jobs, a line at a time (a job is stored as its line
    arrives: a download failing midway leaves the jobs not read yet in the batch, for the next run); the jobs
    without a line go back to the queue. Only a job still 'batched' in this batch takes its reply: the reply of a
    job cancelled meanwhile (``queue --cancel``) is dropped and counted."""
    waiting, cancelled = set(queue.batched_jobs(study, state.id)), queue.cancelled_in_batch(study, state.id)
    round_, dropped = Round(), set()
    seen: dict[int, tuple[str, str]] = {}  # job -> (request key, its answer's fingerprint), as first read
    conflicts, taken = set[int](), set[int]()  # taken: read from this batch now (only those can be voided)
    try:
        for file_id in (state.output_file_id, state.error_file_id):
            if not file_id:
                continue
            for job_id, key, answer in read_lines(server.lines(file_id), server.secrets):
                if job_id in cancelled:
                    dropped.add(job_id)
                if job_id in seen:  # one line per job in a batch: a second one that says the same is ignored,
                    if seen[job_id] != (key, _fingerprint(answer)):  # one that says otherwise fails the job
                        conflicts.add(job_id)
                    continue
                seen[job_id] = (key, _fingerprint(answer))
                if job_id not in waiting:
                    continue
                waiting.discard(job_id)
                taken.add(job_id)
                job = queue.take_batched(study, job_id, state.id, judge.owner, SUBMIT_LEASE_S)
                if job is not None:
                    judge.run([job], {key: answer}, round_)
    except JudgeError as exc:
        why = (
            f"batch {state.id} ended ({state.status}) but its results cannot be read: {exc.message}; "
            f"{round_.done + round_.failed + round_.queued + len(round_.requests)} of its jobs were read, the others "
            "wait in it: run the same command again to read them"
        )
        raise UserError(why) from None
    conflicts &= taken - dropped
    for job_id in sorted(conflicts):
        _void(study, judge, round_, job_id, seen[job_id][0])
    why = f"the batch ended ({state.status}) without answering it" + (f": {state.errors}" if state.errors else "")
    missing = queue.unbatch(study, state.id, "batch_" + state.status[:40], why)
    queue.forget_batch(study, state.id)
    requests += round_.requests
    return Collected(
        state,
        round_.done,
        round_.queued + missing,
        round_.failed,
        len(round_.requests),
        len(dropped),
        len(conflicts),
    )


CONFLICT = "the batch's results hold different answers to this job's request (one custom_id twice): none is stored"


def _fingerprint(answer: dict[str, Any] | JudgeError) -> str:
    if isinstance(answer, JudgeError):
        return f"error {answer.kind}: {answer.message}"
    return json.dumps(answer, sort_keys=True, default=repr)


def _void(study: Study, judge: BatchJudge, round_: Round, job_id: int, key: str) -> None:
    """A job whose request was answered twice, differently: whichever was read first is not kept (nothing says
    which is the model's); the job fails (``conflict``: `queue --retry` asks again) and the counts say so."""
    before, statuses = queue.void_result(study, job_id, [key], "conflict", CONFLICT)
    if before == "done":
        round_.done -= 1
        judge.progress.add(done=-1)
    elif before == "queued":
        round_.queued -= 1
    if before != "failed":
        round_.failed += 1
        judge.progress.add(failed=1)
    round_.requests = [(job, body) for job, body in round_.requests if job.id != job_id]
    with judge.progress.lock:  # the run's readings: the voided job's are not among them any more
        for status in statuses:
            counted = judge.progress.readings
            for name in [n for n in counted if n == status or n.startswith(status + " ")][:1]:
                counted[name] -= 1
                if not counted[name]:
                    del counted[name]


def _submit(study: Study, server: BatchServer, judge: BatchJudge, requests: list[Request]) -> str:
    from tui_rater.judge.batch import jsonl

    try:
        batch_id = server.submit(jsonl(requests))
    except JudgeError as exc:
        raise UserError(f"the batch could not be submitted: {exc.message}") from None
    # a process killed before this line leaves the jobs leased by a dead process: the next run queues them
    # again (and the batch the server accepted is paid for but not read)
    queue.to_batch(study, [job for job, _ in requests], judge.owner, batch_id)
    return batch_id


def cancel_batches(study: Study, plan: JudgePlan) -> tuple[list[str], list[str], int]:
    """Cancel the judge's batches on the server; their jobs are queued again (the attempt does not count). (the
    batches cancelled, those that had already ended -- completed, failed, expired: a server refuses to cancel
    them, so they are only let go of, unread -- and how many jobs came back)."""
    refuse(plan)
    server = BatchServer(plan.spec)
    ids = queue.batches(study, plan.rater.id)
    cancelled, ended, back = [], [], 0
    for batch_id in ids:
        try:
            if server.state(batch_id).running:
                server.cancel(batch_id)
                cancelled.append(batch_id)
            else:
                ended.append(batch_id)
        except JudgeError as exc:
            raise UserError(f"batch {batch_id} could not be cancelled: {exc.message}") from None
        back += queue.unbatch(study, batch_id, "cancelled", "the batch was cancelled", counts=False)
        queue.forget_batch(study, batch_id)
    return cancelled, ended, back

"""Workers that drain the queue for one judge: ask, parse, store -- in a background thread.

Used by `tui-rater judge` (headless) and by the app (`annotate --judge`). Each worker owns its
own study connection; the backend is shared: one API client, or one batched llama.cpp engine
per process whose concurrent sequences serve every worker thread.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from tui_rater.domain import protocols
from tui_rater.domain.decoding import Decoding
from tui_rater.domain.errors import UserError
from tui_rater.domain.modes import Question, Unsupported, mode_of
from tui_rater.domain.protocols import EvaluationProtocol, derive_seed
from tui_rater.domain.protocols.guard import ProtocolFault, counted
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.domain.values import Item
from tui_rater.judge import queue, sources
from tui_rater.judge.backends.base import Backend, Message, OptionProbabilities, TokenCounts
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.queue import Job, RatingResult
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store.study import Study

BackendFactory = Callable[[JudgeSpec], Backend]


def make_backend(
    spec: JudgeSpec, parallel: int | None = None, background: bool = False, prompts: list[list[Message]] | None = None
) -> Backend:
    """A worker's backend. A local model is loaded once per process: every call returns a handle on the same
    engine (closing the last handle frees it), with ``parallel`` concurrent sequences when it is first made, at a
    lower priority when ``background`` (a judge inside the app). The judge's backend makes it."""
    return spec.kind.make(spec, parallel=parallel, background=background, prompts=prompts)


def lease_size(spec: JudgeSpec) -> tuple[int, int]:
    """(min_jobs, max_jobs) a worker leases at once: the backend's policy (``JudgeBackend.lease_size``)."""
    return spec.kind.lease_size(spec)


def _sized_factory(
    factory: BackendFactory,
    spec: JudgeSpec,
    workers: int,
    background: bool,
    prompts: list[list[Message]] | None = None,
) -> BackendFactory:
    """The default factory, told how many workers share a local engine (its number of sequences), whether it
    runs behind the app, and the run's longest prompts (its KV cache is sized by them)."""
    if factory is make_backend:
        return partial(make_backend, parallel=workers, background=background, prompts=prompts)
    return factory


class Deferred(Exception):
    """A request whose reply comes later (it waits in a server's batch): the job is neither done nor failed. Not a
    ``JudgeError``, so no handler of a live failure (a constraint style's fallback, a retry) takes it for one."""

    def __init__(self, body: dict[str, Any]):
        super().__init__("the request waits in a batch")
        self.body = body


# failures that say the server did not answer at all (no status, no reply)
UNANSWERED = frozenset({"timeout", "connection"})
# that many different jobs unanswered in a row, over all of a judge's workers, and the run stops with one
# sentence instead of retrying every remaining job (a silent server took ~12 minutes a job: 6 attempts)
UNANSWERED_TO_STOP = 8


@dataclass
class Progress:
    """Shared between workers and whoever shows progress (a Rich bar, the app)."""

    done: int = 0
    failed: int = 0
    parse_failures: int = 0
    retried: int = 0
    cached: int = 0
    # this run's readings by parse status ('ok' = usable): what the run produced, not just how many jobs ended
    readings: dict[str, int] = field(default_factory=dict)
    # replies of a judge with its own top-k / min-p that the server sampled without them (it refused the fields):
    # the judge's label names cuts these replies did not have, so the run says so
    cuts_refused: int = 0
    fatal: JudgeError | None = None
    # the jobs whose requests went unanswered since the last answer (over all workers): a run stops when
    # UNANSWERED_TO_STOP different jobs are in it (a few jobs' retries alone never stop it)
    unanswered: set[int] = field(default_factory=set)
    started: float = field(default_factory=time.monotonic)
    # set when a worker's first job ended (its first request answered, or failed), a worker found nothing to lease,
    # or ended: the feeder queues behind this (its chunks took the GIL and the write lock from the client import, the
    # first leases and the first request: launch -> first request waited for them)
    working: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def add(self, **changes: int) -> None:
        with self.lock:
            for name, delta in changes.items():
                setattr(self, name, getattr(self, name) + delta)
        with self.changed:
            self.changed.notify_all()

    def add_readings(self, statuses: list[str]) -> None:
        with self.lock:
            for status in statuses:
                self.readings[status] = self.readings.get(status, 0) + 1

    def wait_for_change(self, timeout: float) -> None:
        """Until another worker ends a job (its lease may have been the last) or ``timeout``: a worker that found
        nothing to lease looks again then, instead of a whole poll interval after the queue drained."""
        with self.changed:
            self.changed.wait(timeout)


class Worker(threading.Thread):
    def __init__(
        self,
        db_path: str | Path,
        rater_id: int,
        spec: JudgeSpec,
        rater_config: dict[str, Any],
        *,
        progress: Progress,
        stop: threading.Event,
        drain: bool = True,
        backend_factory: BackendFactory = make_backend,
        poll_s: float = 0.5,
        on_result: Callable[[Job], None] | None = None,
        fed: threading.Event | None = None,
    ):
        super().__init__(daemon=True, name=f"judge-{rater_id}")
        # set once every job of the run is in the queue (``judge/feeder.py`` queues a large study's behind the
        # workers); None: all were queued before the workers started
        self.fed = fed
        self.db_path, self.rater_id, self.spec = db_path, rater_id, spec
        self.request_identity = request_identity(rater_config)
        self.progress, self.stop_event, self.drain = progress, stop, drain
        self.backend_factory, self.poll_s, self.on_result = backend_factory, poll_s, on_result
        self.owner = queue.new_owner()
        self.backend: Backend | None = None
        self.counts: TokenCounts | None = None

    def run(self) -> None:
        # nothing escapes this thread: a job's failure is stored with the job; anything else
        # stops the judge visibly (progress.fatal), its leased jobs given back
        try:
            study = self.study = Study.open(self.db_path, create=False, durable=False)
        except Exception as exc:
            self._stop_judge(JudgeError("internal", f"the judge cannot open the study: {type(exc).__name__}: {exc}"))
            return
        self.replies: dict[str, dict[str, Any]] = {}
        min_jobs, max_jobs = lease_size(self.spec)
        held: list[Job] = []
        try:
            queue.reclaim_dead(study)
            while not self.stop_event.is_set():
                jobs = queue.lease(study, self.rater_id, self.owner, max_jobs=max_jobs, min_jobs=min_jobs)
                leased_until = time.monotonic() + queue.LEASE_S
                if not jobs:
                    self.progress.working.set()  # the feeder's chunks are what this worker waits for now
                    # fed is read before the count: a chunk landing in between is then counted
                    fed = self.fed is None or self.fed.is_set()
                    if self.drain and fed and queue.pending(study, self.rater_id) == 0:
                        return
                    self.progress.wait_for_change(self.poll_s)
                    continue
                if self.backend is None:
                    # made at the first job, not before: a worker that finds the queue drained by the others loads
                    # nothing (a late worker reloaded the model the others had just released, under load)
                    held = jobs
                    self.backend = self.backend_factory(self.spec)
                    self.counts = self.backend.counts
                    sources.note_server(study, self.rater_id, self.spec, self.backend)  # what stands behind an alias
                for index, job in enumerate(jobs):
                    held = jobs[index:]
                    if self.stop_event.is_set():
                        queue.release(study, jobs[index:], self.owner)
                        return
                    if leased_until - time.monotonic() < queue.LEASE_S / 2:  # renew when half spent
                        queue.renew(study, jobs[index:], self.owner)
                        leased_until = time.monotonic() + queue.LEASE_S
                    done = self._process(study, job)
                    self.progress.working.set()  # a first job ended (asked, failed or read from the store): feed
                    sources.note(study, self.rater_id, self.spec, self.backend)  # model file / server seen
                    if not done:
                        queue.release(study, jobs[index + 1 :], self.owner)
                        return
                held = []
        except JudgeError as exc:  # the backend could not start (missing or corrupt model ...)
            self._stop_judge(exc)
            with contextlib.suppress(Exception):
                queue.release(study, held, self.owner)
        except Exception as exc:  # a bug, or the study file failing under us: never a silent death
            self._stop_judge(JudgeError("internal", f"the judge's worker failed: {type(exc).__name__}: {exc}"))
            with contextlib.suppress(Exception):
                queue.release(study, held, self.owner)
        finally:
            self.progress.working.set()  # a worker that ends never holds the feeder back
            if self.backend is not None:
                with contextlib.suppress(Exception):
                    self.backend.close()
            study.close()

    @property
    def _made_backend(self) -> Backend:
        """The backend ``run`` made when it leased its first job (every job is asked after that)."""
        if self.backend is None:
            raise RuntimeError("a judge worker asked its backend before making it")
        return self.backend

    def interrupt(self) -> None:
        """Stop now (any thread): a local engine stops between decode steps and its requests come back as
        ``cancelled``; the job is given back. (A request to a server cannot be called back: the caller stops
        waiting for it and gives back its job: ``service.judging.JudgeRun.interrupt``.)"""
        if self.backend is not None:
            self.backend.cancel()

    def _stop_judge(self, exc: JudgeError) -> None:
        self.progress.fatal = exc
        self.stop_event.set()
        with self.progress.changed:  # workers waiting for a lease see the stop now, not a poll later
            self.progress.changed.notify_all()

    # --- one job -------------------------------------------------------------------------

    def process(self, study: Study, job: Job) -> bool:
        """One leased job, outside this thread's loop (``judge/batch.py`` runs a batch's jobs through it); raises
        ``Deferred`` when a request's reply is not in yet."""
        return self._process(study, job)

    def _process(self, study: Study, job: Job) -> bool:
        """Run one job; False when the judge cannot go on (a fatal error)."""
        _with_endpoints([], self.backend)  # forget the endpoints of a job that failed before this one
        try:
            try:
                item = study.item(job.item_key)
                task = study.task(item.task)
                if job.attribute == "*":
                    results = self._conversation(task, item, job)
                else:
                    results = self._question(task, task.attribute(job.attribute), item, job, [])[0]
            except (JudgeError, Deferred):
                raise
            except ProtocolFault as exc:  # a plug-in's reading that never returned: every job would hang the same
                raise JudgeError("protocol", str(exc)) from None
            except UserError as exc:  # e.g. a template that needs a field the item lacks
                raise JudgeError("bad_request", str(exc)) from None
            except Exception as exc:
                # a bug must not silently kill the worker: the job fails, visibly, and the rest go on
                raise JudgeError("internal", f"{type(exc).__name__}: {exc}") from None
        except JudgeError as exc:
            if exc.kind == "cancelled":  # the run is stopping: the job goes back untouched
                queue.release(study, [job], self.owner)
                return False
            status = queue.fail(
                study, job, self.owner, exc.kind, exc.message, retryable=exc.retryable, retry_after=exc.retry_after
            )
            if status == "failed":
                self.progress.add(failed=1)
            elif status == "queued":
                self.progress.add(retried=1)
            # "lost": another worker took the job over after our lease ran out; it is theirs now
            if exc.fatal_for_judge:
                self.progress.fatal = exc
                self.stop_event.set()
                return False
            if exc.kind in UNANSWERED:
                with self.progress.lock:
                    self.progress.unanswered.add(job.id)
                    streak = len(self.progress.unanswered)
                if streak >= UNANSWERED_TO_STOP:  # a silent server: each job would wait out its retries
                    if self.stop_event.is_set():  # another worker said so first
                        return False
                    self._stop_judge(
                        JudgeError(
                            "server_unusable",
                            f"{streak} jobs in a row got no answer (the last: {exc.kind}: {exc.message}); "
                            "stopping the run: check the server, then run the same command again to continue",
                        )
                    )
                    return False
            return True
        with self.progress.lock:
            self.progress.unanswered.clear()
        replies, self.replies = self.replies, {}
        results = _with_endpoints(results, self.backend)
        if queue.complete(study, job, self.owner, results, replies):
            self.progress.add_readings([counted(r.parse_status, r.details) for r in results])
            self.progress.add(done=1, parse_failures=sum(r.parse_status != "ok" for r in results))
            if self.on_result:
                self.on_result(job)
        return True

    def _conversation(self, task: Task, item: Item, job: Job) -> list[RatingResult]:
        """The paper's ChatGPT setting: the questions in one chat, in the task's order."""
        history: list[Message] = []
        results = []
        for attribute in task.attributes:
            ratings, reply = self._question(task, attribute, item, job, history)
            results.extend(ratings)
            history.append({"role": "assistant", "content": reply})
        return results

    def _question(
        self, task: Task, attribute: Attribute, item: Item, job: Job, history: list[Message]
    ) -> tuple[list[RatingResult], str]:
        """Ask one question the way its protocol says; (ratings, the reply text for a conversation)."""
        spec = self.spec
        protocol = protocols.for_mode(task, attribute, spec.mode)
        prompt = protocol.render(task, attribute, item.fields, spec.variant, job.presentation)
        history.append({"role": "user", "content": prompt.text})
        messages = list(history)
        facts = {"template_id": prompt.template_id, "template_sha256": prompt.template_hash}
        # each job's random stream is its own, yet reproducible (judge configuration, item, question, sample)
        seed = partial(derive_seed, self.request_identity, item.task, item.id, attribute.name, job.presentation)
        question = Question(
            protocol,
            attribute,
            spec.variant,
            job.presentation,
            job.sample,
            messages,
            facts,
            seed,
            spec.decoding,
            spec.max_retries,
            spec.min_mass,
            local=spec.kind.reads_distribution,
        )
        try:
            rated, reply = mode_of(spec.mode).ask(self, question)
        except Unsupported as exc:
            raise JudgeError("unsupported", str(exc)) from None
        return [RatingResult(r.attribute, r.sample, r.value, r.raw, r.status, r.details) for r in rated], reply

    # --- what a mode asks of the model (domain/modes.py's Asker): each answer cached in the study file ----------

    def reply(
        self, messages: list[Message], decoding: Decoding, grammar: str | None, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        return self._cached(
            messages,
            [decoding.seed, decoding.temperature],
            partial(self._complete, messages, decoding, grammar, schema),
        )

    def option_probabilities(self, messages: list[Message], labels: list[str]) -> dict[str, Any]:
        return self._cached(
            messages, None, lambda: _option_reply(self._made_backend.option_probabilities(messages, labels))
        )

    def top_tokens(self, messages: list[Message], k: int) -> dict[str, Any]:
        return self._cached(messages, None, lambda: {"top": self._made_backend.top_tokens(messages, k)})

    def _complete(
        self, messages: list[Message], decoding: Decoding, grammar: str | None, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        completion = self._made_backend.complete(messages, decoding, grammar=grammar, json_schema=schema)
        reply = {
            "text": completion.text,
            "structured": completion.structured,
            "finish_reason": completion.finish_reason,
        }
        if completion.sampling_sent:  # the server refused the paper's top_k / min_p
            reply["sampling_sent"] = completion.sampling_sent
            if decoding.extensions() != Decoding().extensions():  # the user's own cuts, not the papers' none
                self.progress.add(cuts_refused=1)
        return reply

    def scale_mass(self, protocol: EvaluationProtocol, attribute: Attribute, messages: list[Message]) -> float | None:
        """The probability that the reply begins on the scale, unconstrained: the number distribution mode stores
        and the pre-flight check shows (one probe per question, answered from the store on a re-run)."""
        starts = list(protocol.answer_starts(attribute, self.spec.variant))
        try:
            probe = self._made_backend.option_probabilities
            reply = self._cached(
                messages,
                "scale-mass",
                lambda: {"mass": sum(OptionProbabilities.of(probe(messages, starts)).probabilities.values())},
            )
        except JudgeError:  # an option the model has no token path for: no mass to weigh
            return None
        return float(reply["mass"])

    def _cached(self, messages: list[Message], seed: object, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Identical requests (model, prompt, parameters, seed) are answered from the store."""
        key = hashlib.sha256(json.dumps([self.request_identity, messages, seed]).encode()).hexdigest()
        study = self.study
        found = queue.cached_reply(study, key)
        if found is not None:
            self.progress.add(cached=1)
            return found
        reply = compute()
        self.replies[key] = reply  # stored with the job's result, in one transaction
        return reply


def _with_endpoints(results: list[RatingResult], backend: Backend | None) -> list[RatingResult]:
    """A judge with several endpoints: which of them answered this job's requests (none: answered from the
    store), kept with each of its ratings."""
    endpoints = backend.take_endpoints() if backend is not None else []
    if not endpoints:
        return results
    return [replace(result, details={**(result.details or {}), "endpoints": endpoints}) for result in results]


def _option_reply(found: Mapping[str, float] | OptionProbabilities) -> dict[str, Any]:
    """What is cached and read of a distribution pass: the scored options, and those the server did not score."""
    scores = OptionProbabilities.of(found)
    reply: dict[str, Any] = {"probabilities": scores.probabilities}
    if scores.unscored:
        reply["unscored"] = list(scores.unscored)
        reply["unscored_mass_at_most"] = scores.unscored_mass_at_most
    return reply


def request_identity(rater_config: dict[str, Any]) -> str:
    """What makes two requests the same: the judge configuration without library versions."""
    return json.dumps({k: v for k, v in rater_config.items() if not k.endswith("_version")}, sort_keys=True)


def job_shapes(task: Task, spec: JudgeSpec) -> list[tuple[str, str, int]]:
    """(attribute, presentation, sample) of every job one item needs for this judge configuration."""
    if spec.conversation:
        presentations = protocols.of(task.attributes[0]).presentations(task.attributes[0])
        return [("*", p, s) for p in presentations for s in range(spec.decoding.samples)]
    per_pass = mode_of(spec.mode).per_pass  # one forward pass yields every sample
    shapes = []
    for attribute in task.attributes:
        protocol = protocols.for_mode(task, attribute, spec.mode)
        for presentation in protocol.presentations(attribute):
            shapes += [(attribute.name, presentation, s) for s in range(1 if per_pass else spec.decoding.samples)]
    return shapes


def run_judge(
    db_path: str | Path,
    rater_id: int,
    spec: JudgeSpec,
    rater_config: dict[str, Any],
    *,
    workers: int = 1,
    drain: bool = True,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    backend_factory: BackendFactory = make_backend,
    background: bool = False,
    prompts: list[list[Message]] | None = None,
    fed: threading.Event | None = None,
) -> tuple[list[Worker], Progress, threading.Event]:
    """Start ``workers`` threads for one judge; the caller joins them (or sets ``stop``). ``background``: a local
    model decodes at a lower priority than the app's screen."""
    progress = progress or Progress()
    stop = stop or threading.Event()
    spec.kind.preload()
    backend_factory = _sized_factory(backend_factory, spec, workers, background, prompts)
    threads = [
        Worker(
            db_path,
            rater_id,
            spec,
            rater_config,
            progress=progress,
            stop=stop,
            drain=drain,
            backend_factory=backend_factory,
            fed=fed,
        )
        for _ in range(workers)
    ]
    for thread in threads:
        thread.start()
    return threads, progress, stop

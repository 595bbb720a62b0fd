"""Workers that drain the queue for one judge: ask, parse, store -- in a background thread.

Used by `tui-rater judge` (headless) and by the app (`annotate --judge`). Each worker owns its
own study connection; the backend is shared: one API client, or one batched llama.cpp engine
per process whose concurrent sequences serve every worker thread.
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tui_rater.domain.parsing import parse_choice, parse_score
from tui_rater.domain.prompts import render
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.errors import UserError
from tui_rater.judge import queue
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.queue import Job, RatingResult
from tui_rater.judge.scoring import option_labels, score_distribution
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store.study import Study

BackendFactory = Callable[[JudgeSpec], object]


def make_backend(spec: JudgeSpec, parallel: int | None = None):
    """A worker's backend. A local model is loaded once per process: every call returns a handle on the same
    engine (closing the last handle frees it), with ``parallel`` concurrent sequences when it is first made."""
    if spec.is_api:
        from tui_rater.judge.backends.api import ApiBackend

        return ApiBackend(spec)
    from tui_rater.judge.backends.local import DEFAULT_SEQUENCES, LocalBackend

    return LocalBackend(spec, parallel=parallel or DEFAULT_SEQUENCES)


def lease_size(spec: JudgeSpec) -> tuple[int, int]:
    """(min_jobs, max_jobs) a worker leases at once. API workers take a few items per transaction; a local
    worker takes one job, so that an item's questions and samples run at once in the shared engine and share
    the item's prefix there (instead of one worker asking them one after another)."""
    return (4, 64) if spec.is_api else (1, 1)


def _sized_factory(factory: BackendFactory, spec: JudgeSpec, workers: int) -> BackendFactory:
    """The default factory, told how many workers share a local engine (its number of sequences)."""
    if factory is make_backend and not spec.is_api:
        return functools.partial(make_backend, parallel=workers)
    return factory


@dataclass
class Progress:
    """Shared between workers and whoever shows progress (a Rich bar, the app)."""

    done: int = 0
    failed: int = 0
    parse_failures: int = 0
    retried: int = 0
    cached: int = 0
    fatal: JudgeError | None = None
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(default_factory=threading.Condition)

    def add(self, **changes: int) -> None:
        with self.lock:
            for name, delta in changes.items():
                setattr(self, name, getattr(self, name) + delta)
        with self.changed:
            self.changed.notify_all()

    def wait_for_change(self, timeout: float) -> None:
        """Until another worker ends a job (its lease may have been the last) or ``timeout``: a worker that found
        nothing to lease looks again then, instead of a whole poll interval after the queue drained."""
        with self.changed:
            self.changed.wait(timeout)


def parse_reply(text: str, attribute: Attribute, structured: bool = False):
    scale = attribute.scale
    if structured:
        try:
            answer = json.loads(text)["score"]
            if scale.kind == "choice":
                return parse_choice(str(answer), tuple(option_labels(scale)))
            return parse_score(str(answer), (scale.low, scale.high))
        except (ValueError, KeyError, TypeError):
            pass  # fall back to reading the text
    if scale.kind == "choice":
        return parse_choice(text, tuple(c.key for c in scale.choices))
    return parse_score(text, (scale.low, scale.high))


class Worker(threading.Thread):
    def __init__(
        self,
        db_path: str | Path,
        rater_id: int,
        spec: JudgeSpec,
        rater_config: dict,
        *,
        progress: Progress,
        stop: threading.Event,
        drain: bool = True,
        backend_factory: BackendFactory = make_backend,
        poll_s: float = 0.5,
        on_result: Callable[[Job], None] | None = None,
    ):
        super().__init__(daemon=True, name=f"judge-{rater_id}")
        self.db_path, self.rater_id, self.spec = db_path, rater_id, spec
        self.request_identity = json.dumps(
            {k: v for k, v in rater_config.items() if not k.endswith("_version")}, sort_keys=True
        )
        self.progress, self.stop_event, self.drain = progress, stop, drain
        self.backend_factory, self.poll_s, self.on_result = backend_factory, poll_s, on_result
        self.owner = queue.new_owner()
        self.backend = None
        self.counts = None

    def run(self) -> None:
        study = self.study = Study.open(self.db_path, create=False, durable=False)
        self.replies: dict[str, dict] = {}
        min_jobs, max_jobs = lease_size(self.spec)
        try:
            queue.reclaim_dead(study)
            self.backend = self.backend_factory(self.spec)
            self.counts = self.backend.counts
            while not self.stop_event.is_set():
                jobs = queue.lease(study, self.rater_id, self.owner, max_jobs=max_jobs, min_jobs=min_jobs)
                leased_until = time.monotonic() + queue.LEASE_S
                if not jobs:
                    if self.drain and queue.pending(study, self.rater_id) == 0:
                        return
                    self.progress.wait_for_change(self.poll_s)
                    continue
                for index, job in enumerate(jobs):
                    if self.stop_event.is_set():
                        queue.release(study, jobs[index:], self.owner)
                        return
                    if leased_until - time.monotonic() < queue.LEASE_S / 2:  # renew when half spent
                        queue.renew(study, jobs[index:], self.owner)
                        leased_until = time.monotonic() + queue.LEASE_S
                    if not self._process(study, job):
                        queue.release(study, jobs[index + 1 :], self.owner)
                        return
        except JudgeError as exc:  # the backend could not start (missing or corrupt model ...)
            self.progress.fatal = exc
            self.stop_event.set()
        finally:
            if self.backend is not None:
                self.backend.close()
            study.close()

    # --- one job -------------------------------------------------------------------------

    def _process(self, study: Study, job: Job) -> bool:
        """Run one job; False when the judge cannot go on (a fatal error)."""
        item = study.item(job.item_key)
        task = study.task(item.task)
        try:
            try:
                if job.attribute == "*":
                    results = self._conversation(task, item.fields, job)
                else:
                    results = self._attribute(task, task.attribute(job.attribute), item.fields, job, [])
            except UserError as exc:  # e.g. a template that needs a field the item lacks
                raise JudgeError("bad_request", str(exc)) from None
            except (KeyError, ValueError, TypeError, RuntimeError) as exc:
                # a bug must not silently kill the worker: the job fails, visibly, and the rest go on
                raise JudgeError("internal", f"{type(exc).__name__}: {exc}") from None
        except JudgeError as exc:
            status = queue.fail(
                study, job, self.owner, exc.kind, exc.message, retryable=exc.retryable, retry_after=exc.retry_after
            )
            if status == "failed":
                self.progress.add(failed=1)
            else:
                self.progress.add(retried=1)
            if exc.fatal_for_judge:
                self.progress.fatal = exc
                self.stop_event.set()
                return False
            return True
        replies, self.replies = self.replies, {}
        if queue.complete(study, job, self.owner, results, replies):
            self.progress.add(done=1, parse_failures=sum(r.parse_status != "ok" for r in results))
            if self.on_result:
                self.on_result(job)
        return True

    def _conversation(self, task: Task, fields: dict, job: Job) -> list[RatingResult]:
        """The paper's ChatGPT setting: the questions in one chat, in the task's order."""
        history: list[dict] = []
        results = []
        for attribute in task.attributes:
            result = self._attribute(task, attribute, fields, job, history)
            results.extend(result)
            history.append({"role": "assistant", "content": result[0].raw or ""})
        return results

    def _attribute(
        self, task: Task, attribute: Attribute, fields: dict, job: Job, history: list[dict]
    ) -> list[RatingResult]:
        spec = self.spec
        swapped = is_pairwise(task) and job.sample >= (1 if spec.mode == "distribution" else spec.samples)
        if swapped:  # Chen et al.: every pair is judged in both orders
            fields = {**fields, "story_a": fields["story_b"], "story_b": fields["story_a"]}
        if spec.mode == "implicit":
            return self._implicit(task, attribute, fields, job, history)
        prompt = render(task, attribute, fields, spec.variant)
        history.append({"role": "user", "content": prompt.text})
        messages = list(history)
        provenance = {"template_id": prompt.template_id, "template_sha256": prompt.template_hash}
        if is_pairwise(task):
            provenance["order"] = "swapped" if swapped else "original"
        if spec.mode == "distribution":
            results = self._distribution(attribute, messages, job, provenance)
            return [self._canonical(task, r, swapped) for r in results]
        constrain = attribute.scale if spec.mode == "constrained" else None
        attempts = []
        for attempt in range(spec.max_retries + 1):
            # a regenerated reply gets a new seed; the paper regenerated until a rating came
            seed = spec.seed + job.sample + 1000 * attempt
            reply = self._cached(messages, seed, lambda seed=seed: self._complete(messages, seed, constrain))
            result = parse_reply(reply["text"], self._reply_attribute(task, attribute), reply.get("structured", False))
            attempts.append(reply["text"])
            if result.ok:
                details = {**provenance, "seed": seed, "attempts": attempt + 1}
                value = self._on_task_scale(task, result.value, details)
                rating = RatingResult(attribute.name, job.sample, value, reply["text"], "ok", details)
                return [self._canonical(task, rating, swapped)]
        details = {**provenance, "seed": seed, "attempts": len(attempts), "earlier_replies": attempts[:-1]}
        return [RatingResult(attribute.name, job.sample, None, attempts[-1], result.failure, details)]

    def _reply_attribute(self, task: Task, attribute: Attribute) -> Attribute:
        """The scale the reply is written on: Chen et al.'s Explicit V4 answers in 1-5 stars."""
        if task.name == "story-explicit" and self.spec.variant == "v4":
            from dataclasses import replace as _replace

            return _replace(attribute, scale=_replace(attribute.scale, kind="likert", low=1, high=5))
        return attribute

    def _on_task_scale(self, task: Task, value: float, details: dict) -> float:
        if task.name == "story-explicit" and self.spec.variant == "v4":
            details["stars"] = value
            return (value - 1) * 25.0  # Figure 4: V4's stars normalised into [0, 100]
        return value

    def _canonical(self, task: Task, rating: RatingResult, swapped: bool) -> RatingResult:
        """A pairwise verdict in terms of the item (0 = story_a better, 1 = story_b, 2 = tie)."""
        if not is_pairwise(task) or rating.value is None or rating.value == 2:
            return rating
        position = int(rating.value)  # 0 = the first text shown, 1 = the second
        # V3 asks which storyline is *worse*: the other one is the better
        better_shown = 1 - position if self.spec.variant == "v3" else position
        canonical = 1 - better_shown if swapped else better_shown
        details = dict(rating.details or {})
        details["answered"] = "AB"[position]
        return RatingResult(rating.attribute, rating.sample, float(canonical), rating.raw, rating.parse_status, details)

    def _implicit(self, task: Task, attribute: Attribute, fields: dict, job: Job, history: list) -> list[RatingResult]:
        """Chen et al. §2.1: the yes/no question; Implicit = max(p(yes), 1 - p(no)), stored x 100."""
        from tui_rater.domain.prompts import CHEN_IMPLICIT, fill

        if task.name != "story-explicit":
            raise JudgeError("unsupported", "--mode implicit applies to the story-explicit task (Chen et al. §2.1)")
        text = fill(CHEN_IMPLICIT, fields)
        messages = [*history, {"role": "user", "content": text}]
        reply = self._cached(messages, None, lambda: {"top": self.backend.top_tokens(messages, 5)})
        score, p_yes, p_no = implicit_score([tuple(t) for t in reply["top"]])
        details = {"template_id": "chen/implicit", "p_yes": p_yes, "p_no": p_no, "top5": reply["top"]}
        return [RatingResult(attribute.name, job.sample, 100.0 * score, None, "ok", details)]

    def _complete(self, messages, seed, constrain) -> dict:
        completion = self.backend.complete(
            messages,
            temperature=self.spec.temperature,
            top_p=self.spec.top_p,
            max_tokens=self.spec.max_tokens,
            seed=seed,
            constrain=constrain,
        )
        return {"text": completion.text, "structured": completion.structured}

    def _distribution(self, attribute: Attribute, messages, job: Job, provenance: dict) -> list[RatingResult]:
        """One forward pass; N samples drawn from the scale's distribution (samples 0..N-1)."""
        spec = self.spec
        if attribute.scale.kind not in ("likert", "choice"):
            raise JudgeError(
                "unsupported",
                f"--mode distribution needs a discrete scale; {attribute.name} is "
                f"{attribute.scale.kind} (use --mode text)",
            )
        labels = option_labels(attribute.scale)
        reply = self._cached(
            messages, None, lambda: {"probabilities": self.backend.option_probabilities(messages, labels)}
        )
        try:
            scored = score_distribution(
                reply["probabilities"],
                attribute.scale,
                n_samples=spec.samples,
                temperature=spec.temperature,
                top_p=spec.top_p,
                seed=spec.seed + job.item_key,
            )
        except ValueError as exc:
            return [
                RatingResult(
                    attribute.name,
                    job.sample * spec.samples + s,
                    None,
                    None,
                    "no_number",
                    {**provenance, "error": str(exc)},
                )
                for s in range(spec.samples)
            ]
        details = {**provenance, "distribution": scored.probabilities, "mass": scored.mass, "expected": scored.expected}
        first = job.sample * spec.samples  # a pairwise task's swapped order takes the next N sample slots
        return [
            RatingResult(
                attribute.name,
                first + s,
                value,
                None,
                "ok",
                details
                if s == 0
                else {"expected": scored.expected, **{k: v for k, v in details.items() if k == "order"}},
            )
            for s, value in enumerate(scored.samples)
        ]

    def _cached(self, messages, seed, compute: Callable[[], dict]) -> dict:
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


def jobs_for(task: Task, spec: JudgeSpec) -> tuple[list[str], int]:
    """(job attributes, samples per job) for a judge configuration on a task."""
    if spec.conversation:
        return ["*"], spec.samples
    if spec.mode == "distribution":
        # one forward pass yields all N samples (both orders for a pairwise task)
        return list(task.attribute_names), 2 if is_pairwise(task) else 1
    if is_pairwise(task):
        return list(task.attribute_names), 2 * spec.samples  # every pair in both orders
    return list(task.attribute_names), spec.samples


def is_pairwise(task: Task) -> bool:
    return {"story_a", "story_b"} <= set(task.fields)


# Chen et al. §2.1, Eq. 1: the yes / no token variants
YES_TOKENS = {"Yes", "YES", "yes"}
NO_TOKENS = {"No", "NO", "no"}


def implicit_score(top: list[tuple[str, float]]) -> tuple[float, float, float]:
    """Implicit Score = max(p(yes), 1 - p(no)) over the top-k next tokens; returns (score, p_yes, p_no)."""
    p_yes = sum(p for token, p in top if token.strip() in YES_TOKENS)
    p_no = sum(p for token, p in top if token.strip() in NO_TOKENS)
    return max(p_yes, 1 - p_no), p_yes, p_no


def run_judge(
    db_path: str | Path,
    rater_id: int,
    spec: JudgeSpec,
    rater_config: dict,
    *,
    workers: int = 1,
    drain: bool = True,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
    backend_factory: BackendFactory = make_backend,
) -> tuple[list[Worker], Progress, threading.Event]:
    """Start ``workers`` threads for one judge; the caller joins them (or sets ``stop``)."""
    progress = progress or Progress()
    stop = stop or threading.Event()
    if spec.is_api:
        import openai  # noqa: F401 - once here, not under the import lock of 16 starting threads
    backend_factory = _sized_factory(backend_factory, spec, workers)
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
        )
        for _ in range(workers)
    ]
    for thread in threads:
        thread.start()
    return threads, progress, stop

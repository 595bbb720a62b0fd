"""Judging as a service: resolve a judge configuration, plan its jobs, run its workers.

The CLI (``tui-rater judge``), the app (``annotate --judge``), the benchmarks and the tests all
judge through these functions; none of them enqueues jobs or starts workers by hand.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tui_rater.config import LOCAL_ONLY, JudgeDefaults
from tui_rater.domain import protocols
from tui_rater.domain.decoding import Decoding
from tui_rater.domain.errors import UserError
from tui_rater.domain.modes import MODES, mode_of
from tui_rater.domain.readiness import AGREEMENT_READY, NOT_READY
from tui_rater.domain.tasks import Task
from tui_rater.domain.values import Item, Rater
from tui_rater.judge import queue
from tui_rater.judge.backends import registry
from tui_rater.judge.backends.options import table
from tui_rater.judge.backends.registry import for_model
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.feeder import CHUNK_ITEMS, Feeder, Span
from tui_rater.judge.hub import fetch_model, is_hub_model
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name, usable_cores
from tui_rater.judge.worker import BackendFactory, Progress, Worker, job_shapes, make_backend, run_judge
from tui_rater.store.study import Study

if TYPE_CHECKING:
    from tui_rater.stats.sections.readings import JudgeReadings

T = TypeVar("T")
Messages = list[dict[str, str]]


@dataclass(frozen=True)
class JudgeOptions:
    """What the user asked for; None means: the protocol's default, else the config file's."""

    model: str
    mode: str = "text"
    variant: str | None = None
    # the decoding settings the user gave, by Decoding's field names; the others are the protocol's or the config's
    decoding: dict[str, Any] = field(default_factory=dict)
    conversation: bool = False
    max_retries: int | None = None
    min_mass: float | None = None
    n_ctx: int | None = None
    n_gpu_layers: int | None = None
    n_threads: int | None = None
    chat_template: str | None = None
    base_url: str | None = None
    replicas: tuple[str, ...] = ()  # more --base-url: endpoints serving the same model (``JudgeSpec.replicas``)
    api_key_env: str | None = None
    timeout_s: float = 120.0
    judge_name: str | None = None
    backend_options: tuple[str, ...] = ()  # --backend-option NAME=VALUE, as given (the backend parses them)


def resolve_spec(options: JudgeOptions, tasks: list[Task], defaults: JudgeDefaults | None = None) -> JudgeSpec:
    """The full judge configuration: the user's flags over the protocols' paper defaults over the config.

    Every question of every task must accept the mode and the variant; the tasks must agree on
    the defaults the user did not set (one judge configuration is one rater), else one sentence
    asks to judge one task at a time.
    """
    defaults = defaults or JudgeDefaults()
    # the backend's own options, checked before anything is fetched or stored (hf:… is a local model's spec)
    extra = backend_options(options, defaults)
    if is_hub_model(options.model):  # hf:OWNER/REPO/FILE.gguf: the file in the Hugging Face cache (downloaded once)
        options = replace(options, model=fetch_model(options.model))
    own = for_model(options.model).option_names()  # the config file's local-model settings are not another's
    defaults = replace(defaults, **{name: getattr(JudgeDefaults(), name) for name in LOCAL_ONLY if name not in own})
    if not tasks:
        raise UserError("there is nothing to judge: the study holds no items")
    if options.conversation and not mode_of(options.mode).in_conversation:
        raise UserError("--conversation works with --mode text or constrained")
    variant = options.variant or _agreed(
        {task.name: _one(task, lambda p, t, a: p.default_variant(t, a), options.mode) for task in tasks}, "prompt"
    )
    base = defaults.decoding
    if mode_of(options.mode).at_answer_position:
        # the scale's probabilities are read whole and the samples drawn from them: top-k and min-p, cuts of a
        # sampled reply's tokens, would change nothing but the judge's label (k40m0.05), so they are refused when
        # given and the config file's (kept for sampled replies) left out
        cuts = Decoding().extensions()
        given = [name for name, default in cuts.items() if options.decoding.get(name, default) != default]
        if given:
            flags = " and ".join("--" + name.replace("_", "-") for name in given)
            raise UserError(
                f"{flags} cut the tokens of a sampled reply; --mode {options.mode} reads the scale's probabilities "
                "without sampling a reply, so leave them out"
            )
        base = replace(base, **cuts)
    for task in tasks:
        for attribute in task.attributes:
            protocols.for_mode(task, attribute, options.mode).check_variant(task, attribute, variant)
    decoding = _agreed(
        {task.name: _one(task, lambda p, t, a: p.decoding(variant, base), options.mode) for task in tasks},
        "decoding",
    )
    return JudgeSpec(
        model=options.model,
        mode=options.mode,
        variant=variant,
        decoding=decoding.given(options.decoding),
        conversation=options.conversation,
        max_retries=_pick(options.max_retries, defaults.max_retries),
        min_mass=_pick(options.min_mass, 0.5),
        n_ctx=_pick(options.n_ctx, defaults.n_ctx),
        n_gpu_layers=_pick(options.n_gpu_layers, defaults.n_gpu_layers),
        # the config file's count may be a bigger machine's: here it is every core (a flag above them is refused)
        n_threads=_pick(options.n_threads, min(defaults.n_threads, usable_cores())),
        chat_template=options.chat_template,
        base_url=options.base_url or defaults.base_url,
        replicas=options.replicas if options.base_url else defaults.replicas,
        api_key_env=options.api_key_env or defaults.api_key_env,
        timeout_s=options.timeout_s,
        judge_name=options.judge_name,
        extra=extra,
    ).validate()


def backend_options(options: JudgeOptions, defaults: JudgeDefaults) -> dict[str, object]:
    """The judge's own options (``JudgeSpec.extra``): its backend's table in the config file under its
    ``--backend-option`` flags. A table naming no installed backend is refused, whichever backend judges now (a
    misspelt name must not leave a judge on defaults the user meant to change)."""
    source = f"config file {defaults.config_file}" if defaults.config_file else "the config file"
    installed = registry.names() if defaults.backend_options else []
    for name in defaults.backend_options:
        if name not in installed:
            raise UserError(
                f"{source}: {table(name)} names no installed judge backend (the installed ones are "
                f"{', '.join(installed)})"
            )
    kind = for_model(options.model)
    return kind.option_values(options.backend_options, defaults.backend_options.get(kind.name), source)


def takes_server(model: str) -> bool:
    """Whether the judge a model spec asks for is asked at a server's URL (``--base-url``, ``--judge-server``)."""
    return "base_url" in for_model(model).option_names()


def only_questions(tasks: list[Task], names: Collection[str]) -> list[Task]:
    """The tasks with only the questions named (``judge --attribute``), those with none of them left out; every name
    must be a question of one of the tasks. No names: the tasks as they are."""
    if not names:
        return tasks
    known = {attribute.name for task in tasks for attribute in task.attributes}
    unknown = [name for name in names if name not in known]
    if unknown:
        where = f"task {tasks[0].name!r}" if len(tasks) == 1 else "the tasks judged"
        raise UserError(f"{where} has no question {unknown[0]!r} (its questions: {', '.join(sorted(known))})")
    kept = [replace(task, attributes=tuple(a for a in task.attributes if a.name in names)) for task in tasks]
    return [task for task in kept if task.attributes]


def _pick(flag: T | None, default: T) -> T:
    """The user's flag where given, else the default."""
    return default if flag is None else flag


def _one(task: Task, ask: Callable[..., T], mode: str) -> T:
    """What the task's questions say; they must agree within a task."""
    answers = [ask(protocols.for_mode(task, a, mode), task, a) for a in task.attributes]
    if any(answer != answers[0] for answer in answers[1:]):
        raise UserError(f"the questions of task {task.name!r} need different judge settings; judge them separately")
    return answers[0]


def _agreed(per_task: dict[str, T], what: str) -> T:
    values = list(per_task.values())
    if any(value != values[0] for value in values[1:]):
        listed = ", ".join(f"{name}: {value}" for name, value in per_task.items())
        raise UserError(f"the tasks need different {what} settings ({listed}); judge one task at a time with --task")
    return values[0]


@dataclass
class JudgePlan:
    """A judge configuration's rater and its jobs in the queue."""

    spec: JudgeSpec
    config: dict[str, Any]
    rater: Rater
    tasks: list[str]
    added: int
    pending: int
    # a local judge's longest prompts (chat messages): its KV cache is sized by them, not by --n-ctx x --workers
    prompts: list[list[dict[str, str]]] = field(default_factory=list)
    # the items whose jobs are not queued yet: ``start_judge`` queues them behind the workers (``judge/feeder.py``)
    rest: list[Span] = field(default_factory=list)

    @property
    def items_left(self) -> int:
        return sum(span.count for span in self.rest)


FIRST_ITEMS = 2000  # `judge` queues this many items' jobs (per task) before its workers start, the rest behind them


def plan_judge(
    study: Study,
    spec: JudgeSpec,
    task_names: list[str],
    limit: int | None = None,
    *,
    first: int | None = None,
    attributes: Collection[str] = (),
) -> JudgePlan:
    """Create (or find) the judge's rater and enqueue the jobs it has not done yet.

    ``first``: queue only the first items' jobs of each task now; the rest are left in ``rest``, for ``start_judge``
    to queue while the workers run (a 100,000-item study's 1.2M jobs took 16 s before the first worker started).
    None: everything now (the app, ``--batch``, scripts). ``attributes``: only these questions' jobs (empty: every
    question's; ``only_questions`` checks the names).
    """
    spec.kind.check_access(spec)  # fail now, with one sentence, when there is no key
    spec.kind.check_endpoints(spec)  # several endpoints: refused before the study changes when they differ
    config = provenance(spec)
    rater = study.judge(rater_name(spec, config), config)
    added = 0
    prompts: list[list[dict[str, str]]] = []
    rest: list[Span] = []
    for name in task_names:
        task = study.task(name)
        shapes = [shape for shape in job_shapes(task, spec) if not attributes or shape[0] in attributes]
        size = queue.task_size(study, name) if limit is None else min(limit, queue.task_size(study, name))
        now = size if first is None else min(size, first)
        added += queue.enqueue_task(study, rater.id, name, shapes, 0, now)
        if now < size:
            rest.append(Span(name, shapes, now, size - now))
        if spec.kind.sized_by_prompts:
            prompts += longest_prompts(task, study.longest_items(name, LONGEST_ITEMS, limit), spec)
    return JudgePlan(spec, config, rater, list(task_names), added, queue.pending(study, rater.id), prompts, rest)


def existing_plan(study: Study, spec: JudgeSpec, task_names: list[str]) -> JudgePlan | None:
    """The judge's plan as it stands, queueing nothing and creating no rater (None: the study has no such judge):
    for what only acts on what a judge already has (`judge --batch --cancel`), so that finding nothing to do
    leaves the study byte for byte as it was."""
    config = provenance(spec)
    rater = study.existing_judge(rater_name(spec, config), config)
    if rater is None:
        return None
    return JudgePlan(spec, config, rater, list(task_names), 0, queue.pending(study, rater.id))


LONGEST_ITEMS = 8  # items whose prompts are measured in tokens (by the loaded model) to size a local KV cache


def longest_prompts(task: Task, items: list[Item], spec: JudgeSpec, count: int = LONGEST_ITEMS) -> list[Messages]:
    """The prompts of the ``count`` items with the most text: what a local judge's KV cache is sized by. (Measuring
    every prompt in tokens would cost seconds on 100k items; one longer in tokens than these still runs, with fewer
    sequences at once.)"""
    longest = sorted(items, key=lambda item: -sum(len(v.encode()) for v in item.fields.values() if v))[:count]
    found: list[Messages] = []
    for attribute in task.attributes:
        protocol = protocols.for_mode(task, attribute, spec.mode)
        for presentation in protocol.presentations(attribute):
            for item in longest:
                try:
                    text = protocol.render(task, attribute, item.fields, spec.variant, presentation).text
                except UserError:  # a field the template needs is missing: that job fails on its own
                    continue
                found.append([{"role": "user", "content": text}])
    return found


class WarmUp(threading.Thread):
    """The judge backend's imports (``JudgeBackend.preload``: ``import openai`` is ~0.5 s of a ~1 s launch) begun in
    a thread at the start of `judge`, while the command opens the study, resolves the judge and queues the first
    jobs, then, once the judge is resolved (``resolved``), what its first request would make (``warm``: the API
    client). The workers' start imports the same modules again: Python's import lock makes it wait for what this
    thread has not finished, never import it twice. Most of both is pure Python under the GIL, so what it gains is
    the time the other thread spends in SQLite (which releases the GIL) and in file reads. It is a head start only:
    an error here is left for the run to meet, and say, where it needs what failed."""

    def __init__(self, model: str):
        super().__init__(daemon=True, name="judge-warm-up")
        self.kind = for_model(model)
        self._spec: JudgeSpec | None = None
        self._given = threading.Event()

    def run(self) -> None:
        try:
            self.kind.preload()
            self._given.wait()
            if self._spec is not None:
                self.kind.warm(self._spec)
        except Exception:  # met again, and said, where the run itself imports or connects
            pass

    def resolved(self, spec: JudgeSpec | None) -> None:
        """The judge to warm the client of (the first call counts); None: none (the command ends before)."""
        if not self._given.is_set():
            self._spec = spec
            self._given.set()


def warm_up(model: str) -> WarmUp | None:
    """Begin the judge backend's imports in a thread (``WarmUp``); None for a model no backend takes (the run says
    why, in one sentence, where it resolves the judge)."""
    try:
        warming = WarmUp(model)
    except UserError:
        return None
    warming.start()
    return warming


def default_workers(spec: JudgeSpec) -> int:
    """API: 8 clients; a local model: 16 concurrent sequences of the one engine (never 16 copies of the model)."""
    return spec.kind.default_workers()


@dataclass
class JudgeRun:
    """A judge's worker threads, their shared progress and the event that stops them."""

    plan: JudgePlan
    threads: list[Worker]
    progress: Progress
    stop_event: threading.Event = field(default_factory=threading.Event)
    feeder: Feeder | None = None  # queues the plan's ``rest`` behind the workers

    def alive(self) -> bool:
        return any(t.is_alive() for t in self._all())

    def _all(self) -> list[threading.Thread]:
        return [*self.threads, *([self.feeder] if self.feeder else [])]

    def total(self) -> int:
        """The jobs this run has to do: those queued when it planned, and those the feeder has added since."""
        return self.plan.pending + (self.feeder.added if self.feeder else 0)

    def queuing(self) -> bool:
        """Jobs are still being added (the progress bar's total may grow)."""
        return self.feeder is not None and not self.feeder.fed.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Join the workers (and the feeder); True when all have ended."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread in self._all():
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        return not self.alive()

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        self.wait(timeout)

    def interrupt(self) -> None:
        """Stop now: no worker takes another job, a local engine stops between decode steps (its jobs come back)."""
        self.stop_event.set()
        for thread in self.threads:
            thread.interrupt()

    def owners(self) -> list[str]:
        return [thread.owner for thread in self.threads]

    def held(self, study: Study) -> int:
        """Jobs this run's workers hold now."""
        return queue.leased_by(study, self.owners())

    def give_back(self, study: Study) -> int:
        """Give back every job a worker still holds (one waiting on a server that does not answer cannot be called
        back, and is not waited for); return how many."""
        return queue.release_owners(study, self.owners())


STOP_WAIT_S = 1.0  # Ctrl-C: how long the workers get to end their current step before their jobs are taken back


def stop_now(study: Study, runs: list[JudgeRun], wait_s: float = STOP_WAIT_S) -> int:
    """Interrupt runs, wait up to ``wait_s`` for their workers, give back what they still hold: how many jobs were
    given back here. Workers still alive after it (a request to a silent server) store nothing any more."""
    for run in runs:
        run.interrupt()
    deadline = time.monotonic() + wait_s
    for run in runs:
        run.wait(max(0.0, deadline - time.monotonic()))
    return sum(run.give_back(study) for run in runs)


def start_judge(
    db_path: str | Path,
    plan: JudgePlan,
    workers: int | None = None,
    *,
    drain: bool = True,
    stop: threading.Event | None = None,
    backend_factory: BackendFactory = make_backend,
    background: bool = False,
    chunk_items: int = CHUNK_ITEMS,
) -> JudgeRun:
    """Start the workers of a planned judge (they drain its queue, or keep polling when ``drain`` is off), and the
    thread queueing the plan's ``rest`` in chunks of ``chunk_items`` items; ``background``: behind the app, a local
    model gives way to the screen."""
    count = workers or default_workers(plan.spec)
    if not 1 <= count <= 64:
        raise UserError("--workers must be between 1 and 64")
    stop = stop or threading.Event()
    progress = Progress()
    feeder = None
    if plan.rest:
        feeder = Feeder(db_path, plan.rater.id, plan.rest, progress=progress, stop=stop, chunk_items=chunk_items)
        feeder.start()
    threads, _, _ = run_judge(
        db_path,
        plan.rater.id,
        plan.spec,
        plan.config,
        workers=count,
        drain=drain,
        stop=stop,
        backend_factory=backend_factory,
        background=background,
        prompts=plan.prompts,
        progress=progress,
        fed=feeder.fed if feeder else None,
    )
    return JudgeRun(plan, threads, progress, stop, feeder)


def judge_study(
    study: Study,
    spec: JudgeSpec,
    task_names: list[str],
    *,
    workers: int | None = None,
    limit: int | None = None,
    backend_factory: BackendFactory = make_backend,
) -> JudgeRun:
    """Plan and run a judge to the end (blocking): for scripts, benchmarks and tests."""
    run = start_judge(study.path, plan_judge(study, spec, task_names, limit), workers, backend_factory=backend_factory)
    run.wait()
    return run


@dataclass(frozen=True)
class RunYield:
    """What a run produced: usable readings (parsed, on the scale) and typed failures by kind. A run whose jobs
    all ended but none of whose readings is usable did not succeed (a first judge once ended with 120 of 120
    ``no_number`` and exit 0)."""

    usable: int
    failures: dict[str, int]

    @classmethod
    def of(cls, readings: dict[str, int]) -> RunYield:
        failures = {kind: n for kind, n in sorted(readings.items(), key=lambda kv: (-kv[1], kv[0])) if kind != "ok"}
        return cls(readings.get("ok", 0), failures)

    @property
    def total(self) -> int:
        return self.usable + sum(self.failures.values())

    @property
    def useless(self) -> bool:
        return self.total > 0 and self.usable == 0

    def describe(self) -> str:
        """``45 of 60 readings usable; typed failures: 15 no_number``."""
        line = f"{self.usable} of {self.total} readings usable"
        if self.failures:
            line += "; typed failures: " + ", ".join(f"{n} {kind}" for kind, n in self.failures.items())
        return line


@dataclass(frozen=True)
class JudgeReadiness:
    """A judge's readiness per question of the run's tasks: the agreement-ready rule (domain/readiness.py) over
    everything it stored, as the report applies it (``stats/sections/readings.py``), so the run's summary, its
    advice and the report say the same thing."""

    judge: str
    mode: str
    max_retries: int
    questions: dict[tuple[str, str], JudgeReadings]  # (task, question) -> its readings and verdict

    @property
    def not_ready(self) -> list[tuple[str, str, JudgeReadings]]:
        return [(task, question, r) for (task, question), r in self.questions.items() if not r.ready]

    def summary(self) -> str:
        """One line: agreement-ready on every question, or on how many not (each question's reason follows)."""
        if not self.questions:
            return ""
        if not self.not_ready:
            return f"{self.judge} is {AGREEMENT_READY} on all {len(self.questions)} questions"
        return (
            f"{self.judge} is {NOT_READY} on {len(self.not_ready)} of {len(self.questions)} questions (the report "
            "marks its numbers and verdicts so):"
        )

    def reasons(self) -> list[str]:
        """``story · grammaticality: not agreement-ready: <why>``, per question that is not ready."""
        tasks = {task for task, _ in self.questions}
        return [
            (f"{task} · " if len(tasks) > 1 else "") + f"{question}: {NOT_READY}: {r.reason}"
            for task, question, r in self.not_ready
        ]

    def advice(self) -> str:
        """What would help, never a mode the same rule calls not ready: a mode that reads the probability that
        failed (constrained and distribution read the same one) fails with it; any other is for ``judge --check``
        to judge before a run."""
        if not self.not_ready:
            return ""
        preflight = mode_of(self.mode).preflight
        helps = []
        low = [r for _task, _question, r in self.not_ready if r.low_mass]
        if low:
            said = f"the model puts less than half of its next-token probability {low[0].where}"
            same = [
                m.name for m in MODES.values() if m.name != self.mode and m.preflight.reads_mass == preflight.reads_mass
            ]
            if preflight.reads_mass is not None and same:
                said += f" (--mode {' or '.join(same)} reads the same probability: not agreement-ready either)"
            helps.append(
                said
                + ": a larger instruction-tuned model, or a chat template that fits it (--chat-template), would help"
            )
        if any(not r.low_mass for _task, _question, r in self.not_ready):
            said = "too many of its readings are typed failures"
            if preflight.regenerates:
                said += f": a higher --max-retries (now {self.max_retries}) regenerates a reply that does not read, or"
            else:
                said += ":"
            helps.append(said + " a larger instruction-tuned model would help")
        helps.append(
            "`tui-rater judge --check` applies the same rule to every mode before a run and names a mode only when "
            "it is agreement-ready"
        )
        return "; ".join(helps)


def judge_readiness(study: Study, plan: JudgePlan) -> JudgeReadiness:
    """The agreement-ready rule over what the judge stored for these tasks (the report's readings in force)."""
    from tui_rater.stats.sections.data import load_readings
    from tui_rater.stats.sections.readings import judge_readings

    label = plan.rater.label
    questions = {
        (task, question): r
        for task in plan.tasks
        for (judge, question), r in judge_readings(load_readings(study, task)).items()
        if judge == label
    }
    return JudgeReadiness(label, plan.spec.mode, plan.spec.max_retries, questions)


JOB_STATUSES = queue.STATUSES


def queue_counts(study: Study, rater_id: int | None = None) -> dict[str, int]:
    """Jobs per status (queued, leased, batched, done, failed, cancelled), of one judge or of all."""
    return queue.counts(study, rater_id)


def queue_failures(study: Study, limit: int = 20) -> list[dict[str, Any]]:
    return queue.failures(study, limit)


def unfinished_jobs(study: Study, rater_id: int) -> int:
    """A judge's jobs not done yet (queued, or leased by a worker of any process)."""
    return queue.pending(study, rater_id)


def reclaim_dead(study: Study) -> int:
    """Queue again the jobs that processes no longer running on this host left leased."""
    return queue.reclaim_dead(study)


def cancel_jobs(study: Study, rater_id: int | None = None) -> int:
    return queue.cancel(study, rater_id)


def cancelled_in_batches(study: Study, rater_id: int | None = None) -> int:
    """Cancelled jobs whose server batch has not been read yet (``judge --batch`` drops their replies)."""
    return queue.cancelled_batched(study, rater_id)


def waiting_jobs(study: Study) -> int:
    """The study's judge jobs still to do (queued, or leased by a worker): what cancelling would stop."""
    return queue.pending(study)


def retry_jobs(study: Study, rater_id: int | None = None) -> int:
    return queue.retry(study, rater_id)


class BackgroundJudges:
    """Judges running behind the annotation app: enqueue each one's work for a task, keep draining."""

    def __init__(self, study: Study, task_name: str, specs: list[JudgeSpec], workers_per_judge: int = 1):
        self.stop_event = threading.Event()
        self.runs: list[tuple[str, JudgeRun]] = []
        for spec in specs:
            plan = plan_judge(study, spec, [task_name])
            workers = spec.kind.background_workers(workers_per_judge)
            run = start_judge(study.path, plan, workers, drain=False, stop=self.stop_event, background=True)
            self.runs.append((plan.rater.label, run))

    def summary(self, compact: bool = False) -> str:
        """One line: each judge's label and state. ``compact``: each judge by its number alone (``J1``),
        for a status line too narrow for the labels -- a stopped judge's state must stay readable."""
        parts = []
        for name, run in self.runs:
            progress = run.progress
            if progress.fatal:
                state = f"stopped: {progress.fatal.kind}"
            elif not run.alive():
                state = "stopped"
            else:
                state = f"{progress.done} done"
            if progress.failed:
                state += f", {progress.failed} failed"
            parts.append(f"{(name.split(' ')[0] if compact else name)[:20]} {state}")
        return "judges: " + "; ".join(parts)

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        for _, run in self.runs:
            run.wait(timeout)

    def interrupt(self) -> None:
        """The screen is closing: every judge stops taking jobs, a local one between two decode steps."""
        for _, run in self.runs:
            run.interrupt()

    def held(self, study: Study) -> int:
        return sum(run.held(study) for _, run in self.runs)

    def alive(self) -> bool:
        return any(run.alive() for _, run in self.runs)

    def stop_now(self, study: Study, wait_s: float = 0.3) -> int:
        """Stop within ``wait_s`` (quitting the app): jobs still held are given back; how many."""
        return stop_now(study, [run for _, run in self.runs], wait_s)


__all__ = [
    "BackgroundJudges",
    "JudgeError",
    "JudgeOptions",
    "JudgePlan",
    "JudgeReadiness",
    "JudgeRun",
    "RunYield",
    "cancel_jobs",
    "default_workers",
    "judge_readiness",
    "judge_study",
    "plan_judge",
    "queue_counts",
    "queue_failures",
    "reclaim_dead",
    "resolve_spec",
    "retry_jobs",
    "start_judge",
    "stop_now",
    "unfinished_jobs",
    "warm_up",
]

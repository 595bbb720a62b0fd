"""`tui-rater judge` as one use case: a typed request in, one outcome out (a check's result, batches cancelled or
sent, or a live run's counts). The caller says what it shows while the work runs through ``JudgeEvents``: the
CLI prints notes and draws the progress bar; a script can pass ``QuietEvents``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from tui_rater.domain.errors import UserError
from tui_rater.service import judging

if TYPE_CHECKING:
    from tui_rater.config import JudgeDefaults
    from tui_rater.domain.tasks import Task
    from tui_rater.judge.spec import JudgeSpec
    from tui_rater.service.batch import BatchRun
    from tui_rater.service.preflight import Preflight
    from tui_rater.store.study import Study


@dataclass(frozen=True)
class JudgeRequest:
    """The `judge` command's flags as one value (``judge``: the judge's own flags, as ``JudgeOptions``)."""

    judge: judging.JudgeOptions
    task: str | None = None  # None: every task in the study
    workers: int | None = None  # None: ``judging.default_workers``
    limit: int | None = None  # only the first N items of each task
    check: bool = False  # pre-flight only: stores nothing
    check_items: int = 2
    batch: bool = False  # API judges: the OpenAI Batch API
    cancel: bool = False  # with ``batch``: cancel this judge's batches
    attributes: tuple[str, ...] = ()  # only these questions (empty: every question of each task)


class JudgeEvents(Protocol):
    """What the caller is told while the use case runs (each is called from the calling thread)."""

    def note(self, text: str) -> None:
        """A sentence to show now, before a wait (a large model's load, the replicas asked)."""

    def planned(self, plan: judging.JudgePlan, workers: int) -> None:
        """A live run is about to start its workers."""

    def sending(self, plan: judging.JudgePlan) -> None:
        """``batch``: the judge's batches are about to be read and its jobs sent."""

    def watch(self, run: judging.JudgeRun, unfinished: Callable[[], int]) -> None:
        """Wait for the run's workers (a KeyboardInterrupt here ends the use case with ``Interrupted``)."""


class QuietEvents:
    """Events for a script: nothing shown, the run waited for."""

    def note(self, text: str) -> None:
        pass

    def planned(self, plan: judging.JudgePlan, workers: int) -> None:
        pass

    def sending(self, plan: judging.JudgePlan) -> None:
        pass

    def watch(self, run: judging.JudgeRun, unfinished: Callable[[], int]) -> None:
        run.wait()


@dataclass(frozen=True)
class Checked:
    """``--check``: the pre-flight's result (its ``ready`` is the exit status)."""

    result: Preflight


@dataclass(frozen=True)
class Cancelled:
    """``--batch --cancel``: ``plan`` None when the study has no such judge."""

    spec: JudgeSpec
    plan: judging.JudgePlan | None
    cancelled: list[str]
    ended: list[str]
    queued_again: int


@dataclass(frozen=True)
class Batched:
    """``--batch``: what the judge's batches did, the queue after it, and what the readings are good for."""

    plan: judging.JudgePlan
    run: BatchRun
    left: dict[str, int]
    produced: judging.RunYield
    ready: judging.JudgeReadiness | None  # None when the run read nothing or stopped


@dataclass(frozen=True)
class Interrupted:
    """Ctrl-C during a live run: the caller stops it (``judging.stop_now``) and says what was kept."""

    run: judging.JudgeRun


@dataclass(frozen=True)
class Judged:
    """A live run that ended: its counts, what its readings are good for, and the queue after it."""

    plan: judging.JudgePlan
    run: judging.JudgeRun
    queued_in_all: int | None  # jobs queued by the plan and its feeder (None: all were queued at the start)
    left: dict[str, int]
    by_others: int  # jobs another process on the same file did meanwhile
    produced: judging.RunYield
    ready: judging.JudgeReadiness


JudgeOutcome = Checked | Cancelled | Batched | Interrupted | Judged


def check_request(request: JudgeRequest) -> None:
    """The flags that go together, before a study or a model is looked at (one sentence each)."""
    if request.cancel and not request.batch:
        raise UserError("--cancel goes with --batch (to stop live jobs: `tui-rater queue --cancel`)")
    if request.attributes and request.judge.conversation:
        raise UserError("--attribute asks single questions; --conversation asks all of an item's questions in one chat")
    if request.batch and (request.check or not request.judge.model.startswith("api:")):
        from tui_rater.judge.batch import API_ONLY

        raise UserError(API_ONLY if not request.check else "--check and --batch go separately: check first, then batch")


def warm_up(request: JudgeRequest) -> judging.WarmUp | None:
    """Begin importing the judge backend's library (openai: half of `judge`'s launch) in a thread, to go on beside the
    study's opening and the first jobs' queueing (``judging.WarmUp``): call it first, and give it to ``judge``."""
    return None if request.cancel else judging.warm_up(request.judge.model)


def judge(
    study: Study,
    request: JudgeRequest,
    defaults: JudgeDefaults | None = None,
    events: JudgeEvents | None = None,
    warming: judging.WarmUp | None = None,
) -> JudgeOutcome:
    """Run the `judge` command's work on an open study (``check_request`` first, when the study is not open yet;
    ``warm_up`` before it is opened: else it is begun here)."""
    events = events or QuietEvents()
    check_request(request)
    warming = warming or warm_up(request)
    try:
        return _judge(study, request, defaults, events, warming)
    finally:
        if warming is not None:
            warming.resolved(None)  # (a no-op once given the judge: the thread ends either way)


def _judge(
    study: Study, request: JudgeRequest, defaults: JudgeDefaults | None, events: JudgeEvents,
    warming: judging.WarmUp | None,
) -> JudgeOutcome:  # fmt: skip
    from tui_rater.judge.spec import load_note

    task_names = [request.task] if request.task else study.item_task_names()
    if not task_names:
        raise UserError(f"{study.path} holds no items; import some first")
    tasks = judging.only_questions([study.task(name) for name in task_names], request.attributes)
    task_names = [task.name for task in tasks]
    spec = judging.resolve_spec(request.judge, tasks, defaults)
    if warming is not None:  # (a batch sends its requests through a client of its own)
        warming.resolved(None if request.batch else spec)
    note = load_note(spec)
    if note:  # a large model: its checksum and load take a while; say so before the wait
        events.note(note)
    if request.check:
        return Checked(_check(study, spec, tasks, request, events))
    if request.batch:
        from tui_rater.judge.batch import refusal

        if why := refusal(spec):  # before anything is stored
            raise UserError(why)
    if request.cancel:  # acts on the batches the judge has: queues nothing, creates no judge
        return _cancel(study, spec, task_names)
    # a batch is sent whole; a live run queues the first items' jobs now and the rest while its workers run
    plan = judging.plan_judge(
        study, spec, task_names, request.limit, first=None if request.batch else judging.FIRST_ITEMS,
        attributes=request.attributes,
    )  # fmt: skip
    if request.batch:
        events.sending(plan)
        return _batch(study, plan)
    return _live(study, plan, request.workers or judging.default_workers(spec), events)


def _check(study: Study, spec: JudgeSpec, tasks: list[Task], request: JudgeRequest, events: JudgeEvents) -> Preflight:
    from tui_rater.judge.errors import JudgeError
    from tui_rater.judge.spec import strip_credentials
    from tui_rater.service.preflight import check_judge

    if request.check_items < 1:
        raise UserError("--check-items must be at least 1")
    if spec.replicas:  # several endpoints: all asked what they serve; the questions go to the first
        from tui_rater.judge.backends.api_pool import check_endpoints

        check_endpoints(spec)
        events.note(
            f"checking the first endpoint, {strip_credentials(spec.endpoints[0])}; the other "
            f"{len(spec.replicas)} were asked what they serve (the same model, or nothing said)"
        )
        spec = spec.at(spec.endpoints[0])
    try:
        return check_judge(study, spec, tasks, items=request.check_items, workers=request.workers)
    except JudgeError as exc:  # the model or the server could not be set up: no question could be asked
        raise UserError(exc.message) from None


def _cancel(study: Study, spec: JudgeSpec, task_names: list[str]) -> Cancelled:
    """Cancel the judge's batches; with none, change nothing (no judge created, no job queued)."""
    from tui_rater.service import batch

    plan = judging.existing_plan(study, spec, task_names)
    if plan is None:
        return Cancelled(spec, None, [], [], 0)
    cancelled, ended, back = batch.cancel_batches(study, plan)
    return Cancelled(spec, plan, cancelled, ended, back)


def _batch(study: Study, plan: judging.JudgePlan) -> Batched:
    from tui_rater.service import batch

    run = batch.judge_batch(study, plan)
    left = judging.queue_counts(study, plan.rater.id)
    produced = judging.RunYield.of(run.progress.readings)
    ready = None
    if not run.progress.fatal and produced.total:
        ready = judging.judge_readiness(study, plan)  # the report's rule, as a live run says it
    return Batched(plan, run, left, produced, ready)


def _live(study: Study, plan: judging.JudgePlan, workers: int, events: JudgeEvents) -> JudgeOutcome:
    events.planned(plan, workers)

    def unfinished() -> int:  # this judge's jobs not done yet, by this process or by another on the same file
        return judging.unfinished_jobs(study, plan.rater.id)

    run = judging.start_judge(study.path, plan, workers)
    try:
        events.watch(run, unfinished)
    except KeyboardInterrupt:
        return Interrupted(run)
    progress = run.progress
    if progress.fatal:
        raise UserError(f"the judge stopped: {progress.fatal.message}")
    queued_in_all = plan.added + run.feeder.added if run.feeder is not None else None
    left = judging.queue_counts(study, plan.rater.id)
    total = run.total()
    by_others = total - min(total, left["queued"] + left["leased"]) - progress.done - progress.failed
    produced = judging.RunYield.of(progress.readings)
    ready = judging.judge_readiness(study, plan)  # the report's rule over what it stored, as --check applies it
    return Judged(plan, run, queued_in_all, left, by_others, produced, ready)

"""Judge commands: judge (enqueue and drain), queue (inspect, cancel, retry), reparse."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from tui_rater.cli.common import (
    Subparsers,
    data,
    judge_flags,
    judge_options,
    lead_only,
    make_console,
    new_table,
    open_study,
    say,
    say_readiness,
    whole,
)
from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from collections.abc import Callable

    from tui_rater.config import Settings
    from tui_rater.judge.worker import Progress, Worker
    from tui_rater.service.judge_command import Judged
    from tui_rater.service.judging import JudgePlan, JudgeRun
    from tui_rater.service.study import Study


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    from tui_rater.service.paths import llama_log_path

    p = sub.add_parser(
        "judge",
        parents=[common],
        help="ask an LLM judge to rate the items (headless, resumable)",
        description="Enqueue the judge's missing work and drain the queue with a progress bar, then say how many "
        "readings are usable (exit 1 when none is). Safe to interrupt (Ctrl-C stops within ~2 s, exit 130) and "
        "re-run: finished ratings are kept, the rest resumes. A local model's own llama.cpp log goes to "
        f"{llama_log_path()} ($TUI_RATER_CACHE_DIR), never to the terminal.",
    )
    judge_flags(p)
    p.add_argument("--task", help="only this task (default: every task in the study)")
    p.add_argument(
        "--workers",
        type=whole(1, 256),
        default=None,
        help="parallel workers (default: 8 API; a local model: 16 sequences decoded together in one copy of it)",
    )
    p.add_argument("--limit", type=whole(1, 10**12), help="only the first N items of each task")
    p.add_argument(
        "--attribute",
        action="append",
        default=[],
        metavar="NAME",
        help="only this question (repeatable; default: every question of the task)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="pre-flight: show the first items' prompts as the model reads them (tokens, BOS, the scale's "
        "tokens, the next-token mass on the scale, a reply as the run would read it), a verdict per mode and the "
        "mode to use; stores nothing. Exit 0 only when the mode asked is ready",
    )
    p.add_argument(
        "--check-items", type=whole(1, 1000), default=2, metavar="N", help="--check: items per task (default 2)"
    )
    p.add_argument("--format", choices=("text", "json"), default="text", help="--check: output format")
    p.add_argument(
        "--batch",
        action="store_true",
        help="API judges: send the jobs as one OpenAI Batch API request (half the price, answered within 24 h) and "
        "exit; run the same command again to read the batches that ended and send what is left",
    )
    p.add_argument(
        "--cancel", action="store_true", help="with --batch: cancel this judge's batches; their jobs are queued again"
    )
    lead_only(p, lambda args: "cancel a judge's batches" if args.cancel else None)
    p.set_defaults(run=cmd_judge)

    p = sub.add_parser("queue", parents=[common], help="show the judge queue; cancel or retry jobs")
    p.add_argument("--cancel", action="store_true", help="cancel queued and leased jobs")
    p.add_argument("--retry", action="store_true", help="queue failed and cancelled jobs again")
    p.add_argument("--rater", help="only this judge: its label or name (as `queue` and `judges` list it)")
    lead_only(p, _queue_action)
    p.set_defaults(run=cmd_queue)

    p = sub.add_parser("reparse", parents=[common], help="re-apply the reply parser to stored judge replies")
    lead_only(p, lambda args: "re-read every judge's stored replies")
    p.set_defaults(run=cmd_reparse)


def _queue_action(args: argparse.Namespace) -> str | None:
    if args.cancel:
        return "cancel the judges' queue"
    return "queue the judges' failed jobs again" if args.retry else None


def cmd_judge(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service import judge_command as use

    request = use.JudgeRequest(
        judge=judge_options(args),
        task=args.task,
        workers=args.workers,
        limit=args.limit,
        check=args.check,
        check_items=args.check_items,
        batch=args.batch,
        cancel=args.cancel,
        attributes=tuple(args.attribute),
    )
    use.check_request(request)  # before a model is looked at
    warming = use.warm_up(request)  # openai imported in a thread while the study is opened and the first jobs queued
    study = open_study(args, settings, create=False, readonly=args.check)  # a check stores nothing
    outcome = use.judge(study, request, settings.judge, _Shown(), warming)
    if isinstance(outcome, use.Checked):
        from tui_rater.cli import preflight as show

        show.show(outcome.result, args.format)
        return 0 if outcome.result.ready else 1
    if isinstance(outcome, use.Cancelled):
        from tui_rater.cli.batch import cancelled

        return cancelled(outcome)
    if isinstance(outcome, use.Batched):
        from tui_rater.cli.batch import batched

        return batched(outcome)
    if isinstance(outcome, use.Interrupted):
        return _interrupted(study, outcome.run)
    return _judged(outcome)


class _Shown:
    """The use case's events on the terminal: notes on stderr, the progress bar while the workers run."""

    def note(self, text: str) -> None:
        say(text, err=True)

    def planned(self, plan: JudgePlan, workers: int) -> None:
        more = f" (queueing the jobs of {plan.items_left} more items meanwhile)" if plan.rest else ""
        say(
            f"judge {plan.rater.label} ({plan.rater.name}): {plan.added} new jobs, {plan.pending} to run{more}, "
            f"{workers} worker(s)",
            err=True,
        )

    def sending(self, plan: JudgePlan) -> None:
        say(f"judge {plan.rater.label} ({plan.rater.name}): {plan.added} new jobs, {plan.pending} to send", err=True)

    def watch(self, run: JudgeRun, unfinished: Callable[[], int]) -> None:
        _watch(run.threads, run.progress, run.total, unfinished)


def _judged(outcome: Judged) -> int:
    plan, progress, left, produced, ready = (
        outcome.plan,
        outcome.run.progress,
        outcome.left,
        outcome.produced,
        outcome.ready,
    )
    if outcome.queued_in_all is not None:
        say(f"queued {outcome.queued_in_all} new jobs in all", err=True)
    by_others = outcome.by_others
    say(
        f"done: {progress.done} jobs"
        + (f" ({progress.cached} answered from the store)" if progress.cached else "")
        + (f", {by_others} by another process on this file" if by_others > 0 else "")
        + f", failed: {left['failed']}, still queued: {left['queued'] + left['leased']}"
        + (f", cancelled: {left['cancelled']}" if left["cancelled"] else "")
    )
    if produced.total:
        say(produced.describe())
    if progress.cuts_refused:
        say(
            f"tui-rater: note: the server refused top_k / min_p: {progress.cuts_refused} replies were sampled "
            "with its own settings, not this judge's --top-k / --min-p (each such rating records sampling_sent)",
            err=True,
        )
    if produced.useless:  # jobs ended, nothing usable came of them: not a success
        say_readiness(ready, advise=False)
        say(f"tui-rater: error: {produced.describe()} — {ready.advice() or _CHECK}", err=True)
        return 1
    say_readiness(ready)
    if left["cancelled"]:  # work left undone, as failed jobs are: not a success (it said "done: 0 jobs", exit 0)
        cancelled = left["cancelled"]
        say(
            f"tui-rater: error: {cancelled} job{'s' if cancelled != 1 else ''} of {plan.rater.label} "
            f"{'were' if cancelled != 1 else 'was'} cancelled (`queue --cancel`) and not run; "
            f"`tui-rater queue --retry --rater {plan.rater.label}` queues them again, then run this command again",
            err=True,
        )
    return 1 if left["failed"] or left["cancelled"] else 0


_CHECK = "see why with `tui-rater judge --check` (what the model reads and answers)"


def _watch(threads: list[Worker], progress: Progress, total: Callable[[], int], unfinished: Callable[[], int]) -> None:
    """The progress bar of the whole queue: a job another process on the same file did counts too (without it, two
    `judge` runs on one study each ended at about half the bar, with time still "left"). ``total()`` grows while a
    large study's jobs are still being queued."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("[bold]judging"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.2f} jobs/s"),
        TimeRemainingColumn(),
        TextColumn("failed {task.fields[failed]}  retrying {task.fields[retried]}"),
    )
    bar = Progress(*columns, transient=False)
    # started inside the try: a Ctrl-C that lands while the bar starts (after it took over sys.stdout and
    # sys.stderr, before a with-statement would have entered) must still give the streams back, or every later
    # message -- "stopping: ...", "interrupted: ..." -- went into the dead bar's buffer and never reached stderr
    try:
        bar.start()
        task = bar.add_task("judge", total=total(), rate=0.0, failed=0, retried=0)
        checked, every, completed = 0.0, 1.0, 0
        while any(t.is_alive() for t in threads):
            for t in threads:
                t.join(timeout=0.2)
            now = time.monotonic()
            size = total()
            if now - checked >= every:  # one count query a second, less often where it costs (a million jobs)
                left = unfinished()
                checked = time.monotonic()
                every = max(1.0, 20 * (checked - now))
                completed = size - min(size, left)
            completed = max(completed, min(size, progress.done + progress.failed))
            bar.update(
                task,
                total=size,
                completed=completed,
                rate=progress.done / max(1e-9, now - progress.started),
                failed=progress.failed,
                retried=progress.retried,
            )
        size = total()
        bar.update(task, total=size, completed=max(size - min(size, unfinished()), progress.done + progress.failed))
    finally:
        bar.stop()


def _interrupted(study: Study, run: JudgeRun) -> int:
    """Ctrl-C: stop within ~2 s, saying what is being waited for; no job is left leased; exit 130 (it once took
    2.5 minutes of silence, then a segfault, and left 3 jobs leased). A second Ctrl-C stops waiting at once."""
    import os
    import sys

    from tui_rater.cli.common import close_all
    from tui_rater.service import judging

    held = run.held(study)
    say(
        f"stopping: finishing the current step, releasing {held} job{'s' if held != 1 else ''}… "
        "(Ctrl-C again: at once)",
        err=True,
    )
    try:
        judging.stop_now(study, [run])
    except KeyboardInterrupt:
        run.give_back(study)
    progress = run.progress
    say(
        f"interrupted: {progress.done} jobs done and saved in this run; every job not done is queued again "
        "(run the same command to go on)",
        err=True,
    )
    if run.alive():
        # a worker still waiting on a server that does not answer (it cannot be called back), or llama.cpp still in
        # a step: not waited for. The interpreter's exit would run library destructors under that thread (the
        # segfault Ctrl-C once ended in); its job is already given back and it can store nothing any more.
        close_all()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    return 130


def cmd_queue(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service import judging

    study = open_study(args, settings, create=False, readonly=not (args.cancel or args.retry))
    rater_id = None
    if args.rater:
        matches = [r for r in study.raters("llm") if args.rater in (r.name, r.label)]
        if not matches:
            raise UserError(f"no judge named {args.rater!r} in {study.path}")
        rater_id = matches[0].id
    if args.cancel:  # --cancel and --retry are a lead's (`lead_only` above)
        cancelled = judging.cancel_jobs(study, rater_id)
        in_batch = judging.cancelled_in_batches(study, rater_id)
        if in_batch:  # a server's batch is not stopped from here (no key, no URL): it runs and is paid for
            say(
                f"cancelled {cancelled} jobs; the replies of the {in_batch} cancelled jobs waiting in a server's "
                "batch will not be stored (`tui-rater judge ... --batch --cancel` also stops the batch on the server)"
            )
        else:
            say(f"cancelled {cancelled} jobs")
    if args.retry:
        say(f"queued {judging.retry_jobs(study, rater_id)} jobs again")
    statuses = judging.JOB_STATUSES
    table = new_table("Judge queue", ["judge", *statuses])
    table.columns[0].overflow = "fold"  # the whole name, as --rater takes it: folded, never cut with "…"
    for rater in study.raters("llm"):
        if rater_id is not None and rater.id != rater_id:
            continue
        c = judging.queue_counts(study, rater.id)
        if sum(c.values()):
            table.add_row(data(rater.label or rater.name), *(data(c[k]) for k in statuses))
    console = make_console()
    console.print(table)
    failed = judging.queue_failures(study)
    if failed:
        errors = new_table("Recent failures", ["item", "attribute", "sample", "attempts", "error"])
        for f in failed:
            # the error may quote a server's reply body: literal, like every value from data
            errors.add_row(
                data(f"{f['task']}/{f['item']}"),
                data(f["attribute"]),
                data(f["sample"]),
                data(f["attempts"]),
                data(f"{f['error_kind']}: {f['last_error']}"),
            )
        console.print(errors)
    return 0


def cmd_reparse(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.reparse import reparse

    study = open_study(args, settings, create=False)
    result = reparse(study)
    statuses = ", ".join(f"{n} now {status}" for status, n in sorted(result.by_status.items()))
    say(
        f"re-read {result.checked} stored judge ratings: {result.changed} changed"
        + (f" ({statuses})" if statuses else "")
    )
    return 0

"""`tui-rater judge --batch`: what the batches of a judge did, in a few lines; the process never waits for one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui_rater.cli.common import say

if TYPE_CHECKING:
    from tui_rater.service.judge_command import Batched, Cancelled


def cancelled(outcome: Cancelled) -> int:
    """The judge's batches cancelled; with none, it said so and changed nothing (no judge created, no job queued)."""
    plan, cancelled, ended, back = outcome.plan, outcome.cancelled, outcome.ended, outcome.queued_again
    if plan is None:
        say(f"judge {outcome.spec.model}: no batch to cancel (the study has no such judge)")
        return 0
    label = f"judge {plan.rater.label} ({plan.rater.name})"
    if not cancelled and not ended:
        say(f"{label}: no batch to cancel")
        return 0
    said = []
    if cancelled:
        said.append(f"cancelled batch{'es' if len(cancelled) > 1 else ''} {', '.join(cancelled)}")
    if ended:
        said.append(
            f"batch{'es' if len(ended) > 1 else ''} {', '.join(ended)} had already ended (not read: "
            "nothing to cancel on the server)"
        )
    say(f"{'; '.join(said)}; {back} jobs queued again")
    return 0


def batched(outcome: Batched) -> int:
    """Exit 0 while batches run or were submitted; 1 when jobs failed or nothing read was usable (as a live run)."""
    run, left, produced, ready = outcome.run, outcome.left, outcome.produced, outcome.ready
    for state in run.running:
        say(
            f"batch {state.id}: {state.status}, {state.completed} of {state.total} requests answered"
            + (f", {state.failed} failed" if state.failed else "")
            + "; run the same command later to read it"
        )
    for found in run.collected:
        say(
            f"batch {found.state.id} ({found.state.status}) read: {found.done} jobs done, {found.queued} queued "
            f"again, {found.failed} failed"
            + (f", {found.next_round} asked again in the next batch" if found.next_round else "")
            + (
                f"; {found.dropped} repl{'ies' if found.dropped != 1 else 'y'} dropped, not stored: "
                f"{'their jobs were' if found.dropped != 1 else 'its job was'} cancelled"
                if found.dropped
                else ""
            )
        )
        if found.conflicts:  # counted in "failed" above; said apart, at the end of what the batch did
            say(
                f"tui-rater: error: batch {found.state.id}'s results hold {found.conflicts} request"
                f"{'s' if found.conflicts != 1 else ''} answered twice with different answers: "
                f"{'those jobs' if found.conflicts != 1 else 'that job'} failed (conflict), nothing of "
                f"{'them' if found.conflicts != 1 else 'it'} stored (`tui-rater queue --retry` asks again)",
                err=True,
            )
    if run.answered_from_store:
        say(f"{run.answered_from_store} jobs answered from the store")
    if run.submitted:
        say(
            f"submitted batch {run.submitted}: {run.requests} request{'s' if run.requests != 1 else ''}, "
            "answered within 24 h at half the price; "
            "this process can exit: run the same command again to read the replies (add --cancel to cancel)"
        )
    elif not run.running:
        say("no batch running and nothing left to send")
    say(
        f"queue: {left['batched']} batched, {left['queued'] + left['leased']} queued, {left['done']} done, "
        f"{left['failed']} failed"
    )
    if produced.total:
        say(produced.describe())
    if run.progress.fatal:
        say(f"tui-rater: error: {run.progress.fatal.message}", err=True)
        return 1
    if not produced.total:
        return 1 if left["failed"] else 0
    from tui_rater.cli.common import say_readiness

    assert ready is not None  # the use case judged the readiness of every run that read something
    if produced.useless:
        say_readiness(ready, advise=False)
        say(
            f"tui-rater: error: {produced.describe()} — {ready.advice() or 'see why with `tui-rater judge --check`'}",
            err=True,
        )
        return 1
    say_readiness(ready)
    return 1 if left["failed"] else 0

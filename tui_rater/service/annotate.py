"""`tui-rater annotate` (and `demo`) as one use case: the checks before the screen opens, the judges to run beside
the person, the uncertain order drawn, and the session the app shows. The app itself is the caller's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from tui_rater.domain.errors import UserError
from tui_rater.judge.hub import FIRST_JUDGE  # a constant (the module imports nothing heavy at the top)

if TYPE_CHECKING:
    from tui_rater.config import JudgeDefaults
    from tui_rater.judge.spec import JudgeSpec
    from tui_rater.service.judging import JudgeOptions
    from tui_rater.store.session import AnnotationSession
    from tui_rater.store.study import Study

__all__ = ["FIRST_JUDGE", "MAX_ANNOTATOR_NAME", "AnnotateRequest", "Annotation", "open_annotation", "pick_task"]

# a person's name labels their ratings in every table: a line, not a paragraph
MAX_ANNOTATOR_NAME = 80


@dataclass(frozen=True)
class AnnotateRequest:
    """What the person asked for: their name, the task, the order of the items, and the judges beside them."""

    task: str
    annotator: str
    order: str = "imported"
    seed: int = 0
    retest: float | None = None  # the share of one's rated items shown again, blind
    spacing: int = 10
    replan: bool = False
    reveal: bool = False
    judges: tuple[JudgeOptions, ...] = ()
    uncertain_judge: str | None = None


@dataclass(frozen=True)
class Annotation:
    """The session the app shows, and the judges it starts beside the person (checked, not started)."""

    session: AnnotationSession
    judge_specs: tuple[JudgeSpec, ...]


def pick_task(study: Study, task: str | None) -> str:
    """The task asked for; else the study's only one (or ``story`` among several); else one sentence."""
    if task is not None:
        return task
    names = study.item_task_names()
    if not names:
        raise UserError(f"{study.path} holds no items; import some first")
    picked = names[0] if len(names) == 1 else ("story" if "story" in names else None)
    if picked is None:
        raise UserError(f"the study holds several tasks ({', '.join(names)}); choose one with --task")
    return picked


def check_request(request: AnnotateRequest) -> None:
    """The flags that go together (one sentence each), before anything is stored."""
    from tui_rater.domain.display import check_name

    check_name(request.annotator, "--annotator", MAX_ANNOTATOR_NAME)
    retest = request.retest
    if retest is not None and not 0 < retest <= 1:
        raise UserError(f"--retest takes the share of your rated items to show again, in (0, 1], not {retest:g}")
    if retest is not None and request.reveal:
        raise UserError("--retest asks for your rating blind; --reveal shows the others' ratings: use one of them")
    if request.uncertain_judge and request.order != "uncertain":
        raise UserError("--uncertain-judge goes with --order uncertain")


def open_annotation(study: Study, request: AnnotateRequest, defaults: JudgeDefaults | None = None) -> Annotation:
    """Check the request, resolve and check its judges (started later, by the app), draw the uncertain order
    (or read it back) and open the person's session: each failure is one sentence before the screen opens."""
    from tui_rater.store.session import AnnotationSession

    check_request(request)
    specs: tuple[JudgeSpec, ...] = ()
    if request.judges:  # checked before anything is stored (one sentence), started by the app
        from tui_rater.service.judging import resolve_spec

        tasks = [study.task(request.task)]
        specs = tuple(resolve_spec(options, tasks, defaults) for options in request.judges)
        for spec in specs:
            spec.kind.check_access(spec)
    if request.order == "uncertain":  # drawn (or read back) before the screen opens: one sentence if it cannot be
        from tui_rater.service.planning import plan_uncertain_order

        plan_uncertain_order(
            study, request.task, request.annotator, request.uncertain_judge, request.seed, request.replan
        )
    session = AnnotationSession.open(
        study,
        request.task,
        request.annotator,
        order=request.order,
        seed=request.seed,
        retest=request.retest or 0.0,
        spacing=request.spacing,
        replan=request.replan,
    )
    return Annotation(session, specs)

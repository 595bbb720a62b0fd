"""``tui-rater progress``: per annotator and task, how far they are and how well they rate.

Every number is read from the ratings and notes tables (and the plan's assignments), so it is the
same whatever process wrote them. Gold items count for the gold accuracy only: the gaps to the other
people and to the judges are measured on the other items, as the report's statistics are.

The judges are the LLM judges only: an adjudicator's decision is no judge's reading (nor a person's rating),
so deciding items moves nobody's figures. A judge's score of an item is its samples and presentations
combined by the question's protocol, as the report combines them. How far a person is from the others
depends on the question's level of measurement: on a numeric question the mean distance (scale points) from
the others' mean; on a nominal one (a choice, a pairwise A / B / tie) the disagreement rate, the share of the
others' answers unlike theirs -- answer codes have no distance, and their mean is no answer.

An annotator is marked, with the figure that marks them, when their gold accuracy is low, their
median time per item is far below the others', they give the same answer nearly every time
(straight-lining), or the reliability model finds their κ against the answers everybody implies far below the
others' (``service/rater_marks.py``): signs of rating without reading that a lead should look at, not verdicts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui_rater.domain import progress_figures as figures
from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.progress_figures import Values
from tui_rater.domain.protocols import Level
from tui_rater.domain.tasks import Task
from tui_rater.service.adjudication import judge_scores
from tui_rater.service.rater_marks import model_marks
from tui_rater.store.adjudication import voices
from tui_rater.store.progress_reads import (
    last_activity,
    people_values,
    people_who_rated,
    planned_items,
    retest_differences,
    seconds_per_item,
    skipped_and_flagged,
)
from tui_rater.store.study import Study
from tui_rater.store.team import (
    complete_pairs,
    gold_answers,
    load_team_plan,
    team_share,
    unplanned_keys,
)


@dataclass
class AnnotatorProgress:
    annotator: str
    task: str
    assigned: int | None  # None: a dynamic plan, or no plan
    done: int
    remaining: int | None
    skipped: int
    flagged: int
    median_seconds: float | None
    last_activity: str | None
    gold_answered: int
    gold_accuracy: float | None
    # numeric (ordinal, interval) questions: mean |their value - the others' mean| on shared items, scale points
    gap_people: float | None
    shared_people: int  # the (item, question) pairs it is taken over
    gap_judges: float | None  # the same against the judges' mean (their scores of the item)
    shared_judges: int
    # nominal questions (choice, pairwise): the disagreement rate, the share of the others' answers unlike theirs
    # on an item, averaged over the shared items (0: always the same answer, 1: never)
    disagreement_people: float | None
    shared_people_nominal: int
    disagreement_judges: float | None  # the same against each judge's answer (its samples and orders combined)
    shared_judges_nominal: int
    retest_gap: float | None  # mean |second - first rating| of the items shown again (``annotate --retest``)
    retested: int
    marks: list[str] = field(default_factory=list)


@dataclass
class TaskProgress:
    task: str
    mode: str | None  # fixed, dynamic, or None without a plan
    items: int
    gold_items: int
    team_share: float | None
    annotators: list[AnnotatorProgress]
    unplanned: int = 0  # a fixed plan's items nobody is assigned (imported after it was drawn)


@dataclass(frozen=True)
class _TaskReads:
    """What every annotator's row of a task is computed from (read once per task)."""

    task: Task
    mode: str | None  # the plan's: fixed, dynamic, or None without a plan
    per_item: int
    keys: list[int]
    gold: dict[int, dict[str, float]]
    pairs: set[tuple[int, int]]  # (rater id, item key) rated in full
    values: Values
    judged: dict[tuple[int, str], list[float]]  # (item, question) -> the judges' scores
    questions: dict[str, figures.Question]


def task_progress(study: Study, task_name: str) -> TaskProgress:
    task = study.task(task_name)
    plan = load_team_plan(study, task.name)
    gold = gold_answers(study, task.name)
    keys = [item.key for item in study.items(task.name)]
    members = list(plan.settings.get("annotators", [])) if plan is not None else []
    rated_by = people_who_rated(study, task.name)
    names = members + [n for n in rated_by if n not in members]
    raters = {r.name: r.id for r in study.raters("human")}
    values = _values(study, task.name)
    by_judge = _judge_scores(study, task)
    mode, per_item = (plan.mode, plan.per_item) if plan is not None else (None, 1)
    reads = _TaskReads(
        task,
        mode,
        per_item,
        keys,
        gold,
        complete_pairs(study, task.name),
        values,
        figures.scores_by_question(by_judge),
        _questions(task),
    )
    rows = [_annotator(study, reads, name, raters.get(name)) for name in names]
    _mark(rows, values, set(gold))
    found = model_marks(task, values, by_judge, set(gold))  # from the reliability model, with its figure
    for row in rows:
        row.marks.extend(found.get(row.annotator, []))
    share = team_share(study, plan) if plan is not None else None
    return TaskProgress(
        task.name,
        mode,
        len(keys) - len(gold),
        len(gold),
        share,
        rows,
        len(unplanned_keys(study, task.name)),
    )


def _questions(task: Task) -> dict[str, figures.Question]:
    """What the figures need of each question the task asks: its scale, and whether it is nominal."""
    return {q.name: figures.Question(q.scale, protocols.of(q).level is Level.NOMINAL) for q in task.attributes}


def _values(study: Study, task: str) -> Values:
    """(item, question) -> person's name -> their value in force (a list of one: ``annotate`` stores sample 0)."""
    found: dict[tuple[int, str], dict[str, list[float]]] = {}
    for key, attribute, name, value in people_values(study, task):
        found.setdefault((key, attribute), {}).setdefault(name, []).append(value)
    return found


def _judge_scores(study: Study, task: Task) -> dict[tuple[int, str, str], float]:
    """(item, question, judge) -> the LLM judge's score of it (never an adjudicator's decision: no judge's reading).

    Only a judge that answered in every presentation scores an item (a pair in both orders), as in the report."""
    readings = voices(study, task.name, ("llm",))
    shown: dict[tuple[int, str, str], set[str]] = {}
    for voice in readings:
        if voice.value is not None:
            shown.setdefault((voice.item_key, voice.attribute, voice.rater), set()).add(voice.presentation)
    found: dict[tuple[int, str, str], float] = {}
    for (key, attribute, judge), score in judge_scores(task, readings).items():
        question = task.attribute(attribute)
        if set(protocols.of(question).presentations(question)) <= shown[(key, attribute, judge)]:
            found[(key, attribute, judge)] = score
    return found


def _annotator(study: Study, reads: _TaskReads, name: str, rater_id: int | None) -> AnnotatorProgress:
    """One person's row: their reads (named store queries, plain values), then the figures (pure functions of
    them, domain/progress_figures.py)."""
    task = reads.task.name
    done = figures.done_by(reads.pairs, rater_id)
    skipped, flagged = skipped_and_flagged(study, task, rater_id)
    mine, mine_gold = planned_items(study, task, rater_id)
    assigned, remaining = figures.plan_counts(
        reads.mode, reads.per_item, mine, mine_gold, reads.keys, reads.gold, reads.pairs, done, skipped
    )
    answered, right, gaps = figures.gold_and_gaps(name, reads.values, reads.judged, reads.gold, reads.questions)
    again = retest_differences(study, task, rater_id)
    return AnnotatorProgress(
        annotator=name,
        task=task,
        assigned=assigned,
        done=len(done),
        remaining=remaining,
        skipped=len(skipped),
        flagged=len(flagged),
        median_seconds=figures.median_seconds(seconds_per_item(study, task, rater_id), done),
        last_activity=last_activity(study, task, rater_id),
        gold_answered=answered,
        gold_accuracy=figures.share_or_none(right, answered),
        gap_people=figures.mean_or_none(gaps.people),
        shared_people=len(gaps.people),
        gap_judges=figures.mean_or_none(gaps.judges),
        shared_judges=len(gaps.judges),
        disagreement_people=figures.mean_or_none(gaps.people_nominal),
        shared_people_nominal=len(gaps.people_nominal),
        disagreement_judges=figures.mean_or_none(gaps.judges_nominal),
        shared_judges_nominal=len(gaps.judges_nominal),
        retest_gap=figures.mean_or_none(again),
        retested=len(again),
    )


def _mark(rows: list[AnnotatorProgress], values: Values, gold: set[int]) -> None:
    for row in rows:
        others = [r.median_seconds for r in rows if r is not row and r.median_seconds is not None]
        found = (
            figures.gold_mark(row.gold_accuracy, row.gold_answered),
            figures.fast_mark(row.median_seconds, others, row.done),
            figures.same_answer_mark(figures.own_answers(values, row.annotator, gold)),
        )
        row.marks.extend(mark for mark in found if mark is not None)


def study_progress(study: Study, task: str | None) -> list[TaskProgress]:
    names = [task] if task else study.item_task_names()
    if not names:
        raise UserError(f"{study.path} holds no items yet")
    return [task_progress(study, name) for name in names]

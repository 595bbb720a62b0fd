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

import statistics
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
    retest_differences,
    seconds_per_item,
    skips_and_flags,
)
from tui_rater.store.retest import RETEST_NOTE
from tui_rater.store.study import Study
from tui_rater.store.team import (
    TeamPlan,
    assignments,
    complete_pairs,
    gold_answers,
    load_team_plan,
    team_share,
    unplanned_keys,
)

GOLD_ACCURACY_MIN = 0.7  # below this share of gold answers right (with at least GOLD_MIN answers)
GOLD_MIN = 3
FAST_RATIO = 1 / 3  # a median time per item under a third of the others' median
FAST_MIN_ITEMS = 5
SAME_ANSWER_SHARE = 0.9  # the same value in this share of their ratings (with at least SAME_ANSWER_MIN)
SAME_ANSWER_MIN = 10


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


def task_progress(study: Study, task_name: str) -> TaskProgress:
    task = study.task(task_name)
    plan = load_team_plan(study, task.name)
    gold = gold_answers(study, task.name)
    keys = [item.key for item in study.items(task.name)]
    members = list(plan.settings.get("annotators", [])) if plan is not None else []
    rated_by = people_who_rated(study, task.name)
    names = members + [n for n in rated_by if n not in members]
    raters = {r.name: r.id for r in study.raters("human")}
    pairs = complete_pairs(study, task.name)
    values = _values(study, task.name)
    by_judge = _judge_scores(study, task)
    judged: dict[tuple[int, str], list[float]] = {}
    for (key, attribute, _judge), score in by_judge.items():
        judged.setdefault((key, attribute), []).append(score)
    rows = [_annotator(study, task, plan, name, raters.get(name), pairs, values, judged, gold, keys) for name in names]
    _mark(rows, values, set(gold))
    found = model_marks(task, values, by_judge, set(gold))  # from the reliability model, with its figure
    for row in rows:
        row.marks.extend(found.get(row.annotator, []))
    share = team_share(study, plan) if plan is not None else None
    return TaskProgress(
        task.name,
        plan.mode if plan else None,
        len(keys) - len(gold),
        len(gold),
        share,
        rows,
        len(unplanned_keys(study, task.name)),
    )


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


def _annotator(
    study: Study,
    task: Task,
    plan: TeamPlan | None,
    name: str,
    rater_id: int | None,
    pairs: set[tuple[int, int]],
    values: Values,
    judged: dict[tuple[int, str], list[float]],
    gold: dict[int, dict[str, float]],
    keys: list[int],
) -> AnnotatorProgress:
    """One person's row: their reads (named store queries), then the figures (domain/progress_figures.py)."""
    done_keys = {key for rater, key in pairs if rater == rater_id}
    notes = skips_and_flags(study, task.name, rater_id)
    skipped = {key for kind, key, text in notes if kind == "skip" and text != RETEST_NOTE}
    flagged = {key for kind, key, _text in notes if kind == "flag"}
    assigned = remaining = None
    if plan is not None:
        mine = assignments(study, task.name, rater_id) if rater_id is not None else []
        if plan.mode == "fixed":
            assigned, remaining = figures.fixed_plan_counts({a.item_key for a in mine}, done_keys, skipped)
        else:
            mine_gold = {a.item_key for a in mine if a.gold} if rater_id else set()
            remaining = figures.dynamic_plan_remaining(keys, gold, plan.per_item, pairs, mine_gold, done_keys, skipped)
    questions = {q.name: figures.Question(q.scale, protocols.of(q).level is Level.NOMINAL) for q in task.attributes}
    answered, right, gaps = figures.gold_and_gaps(name, values, judged, gold, questions)
    again = retest_differences(study, task.name, rater_id)
    return AnnotatorProgress(
        annotator=name,
        task=task.name,
        assigned=assigned,
        done=len(done_keys),
        remaining=remaining,
        skipped=len(skipped),
        flagged=len(flagged),
        median_seconds=figures.median_seconds(seconds_per_item(study, task.name, rater_id), done_keys),
        last_activity=last_activity(study, task.name, rater_id),
        gold_answered=answered,
        gold_accuracy=right / answered if answered else None,
        gap_people=figures.mean_or_none(gaps.people),
        shared_people=len(gaps.people),
        gap_judges=figures.mean_or_none(gaps.judges),
        shared_judges=len(gaps.judges),
        disagreement_people=figures.mean_or_none(gaps.people_nominal),
        shared_people_nominal=len(gaps.people_nominal),
        disagreement_judges=figures.mean_or_none(gaps.judges_nominal),
        shared_judges_nominal=len(gaps.judges_nominal),
        retest_gap=figures.mean_or_none([gap for (gap,) in again]),
        retested=len(again),
    )


def _mark(rows: list[AnnotatorProgress], values: Values, gold: set[int]) -> None:
    for row in rows:
        if row.gold_accuracy is not None and row.gold_answered >= GOLD_MIN and row.gold_accuracy < GOLD_ACCURACY_MIN:
            row.marks.append(f"gold {row.gold_accuracy:.0%} right ({row.gold_answered} answers)")
        others = [r.median_seconds for r in rows if r is not row and r.median_seconds is not None]
        if row.median_seconds is not None and others and row.done >= FAST_MIN_ITEMS:
            typical = statistics.median(others)
            if row.median_seconds < FAST_RATIO * typical:
                row.marks.append(f"fast: {row.median_seconds:.1f} s per item, the others {typical:.1f} s")
        # gold items aside: their answers are known, so rating them right is no sign of straight-lining
        own = [
            vs[-1] for (key, _q), by_rater in values.items() if key not in gold and (vs := by_rater.get(row.annotator))
        ]
        if len(own) >= SAME_ANSWER_MIN:
            top = max(own.count(v) for v in set(own)) / len(own)
            if top >= SAME_ANSWER_SHARE:
                row.marks.append(f"same answer {top:.0%} of {len(own)} ratings")


def study_progress(study: Study, task: str | None) -> list[TaskProgress]:
    names = [task] if task else study.item_task_names()
    if not names:
        raise UserError(f"{study.path} holds no items yet")
    return [task_progress(study, name) for name in names]

"""``annotate --order uncertain``: rate where the judge is least sure, without biasing the estimates.

Showing the items the judge is least sure of first puts a person's ratings where they change the
answer, but a deterministic "most uncertain first" order makes the rated items a biased sample: in
the statistics helper's simulation, prediction-powered intervals from such ratings covered the true
mean 18% of the time (docs/VERDICT.md §4). So the order is an *active sample* (Zrnic & Candès,
"Active Statistical Inference", ICML 2024): items are drawn at random, with a probability that grows
with the judge's uncertainty (half of the budget spread evenly), and the order nests the samples of
every size (``stats.active.sequential_order``), so wherever the person stops, the items rated so far
are a sample whose inclusion probabilities are known (``active_sample``).

The plan is drawn once per annotator, task and seed, and stored with each item's uncertainty and
draw: a restart continues it, and the probabilities stay the ones the items were drawn with even
after the judge rates more.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols import derive_seed
from tui_rater.domain.values import Rater
from tui_rater.stats import active
from tui_rater.stats.uncertainty import distribution_uncertainty, item_uncertainty
from tui_rater.store.plans import (
    JudgeReadings,
    Plan,
    Showing,
    judge_readings,
    judges_of,
    load_plan,
    rated_items,
    save_plan,
)
from tui_rater.store.study import Study
from tui_rater.store.team import assignments, check_member, gold_keys, load_team_plan

UNCERTAIN = "uncertain"


def choose_judge(study: Study, task: str, name: str | None) -> str:
    """The judge whose uncertainty orders the items: the one named, else the task's only judge."""
    judges = judges_of(study, task)
    if name is not None:
        # a judge's label (``J1 tiny text``, as reports show it) names it too
        name = next((r.name for r in study.raters("llm") if r.label == name and r.name in judges), name)
        if name not in judges:
            known = f" (judges with ratings of it: {', '.join(judges)})" if judges else ""
            raise UserError(f"judge {name!r} has no ratings of task {task!r}{known}")
        return name
    if not judges:
        raise UserError(
            f"--order uncertain needs a judge's ratings of task {task!r}; run `tui-rater judge` on it first"
        )
    if len(judges) > 1:
        raise UserError(f"several judges rated task {task!r} ({', '.join(judges)}); choose one with --uncertain-judge")
    return judges[0]


def _question_uncertainty(
    readings: JudgeReadings, level: str, points: list[float], low: float, high: float
) -> float | None:
    """The entropy of the judge's distributions (averaged over the presentations of a pair) when it
    gave them, else the disagreement of its samples (``stats/uncertainty.py``); None when neither."""
    # the stored distribution holds every option (labels in the reply's terms; only the probabilities matter)
    scores = [distribution_uncertainty(dict(enumerate(d.values())), len(d)).score for d in readings.distributions]
    known = [s for s in scores if s is not None]
    if known:
        return float(np.mean(known))
    return item_uncertainty(level=level, samples=readings.samples, points=points or None, low=low, high=high).score


def item_uncertainties(study: Study, task_name: str, judge: str) -> dict[int, float | None]:
    """Item key -> the judge's uncertainty about it, averaged over the task's questions it has one for."""
    task = study.task(task_name)
    readings = judge_readings(study, task.name, judge)
    found: dict[int, float | None] = {}
    for item in study.items(task.name):
        scores = []
        for attribute in task.attributes:
            entry = readings.get((item.key, attribute.name))
            if entry is None:
                continue
            level = protocols.of(attribute).level.value
            scale = attribute.scale
            score = _question_uncertainty(entry, level, scale.points, scale.low, scale.high)
            if score is not None:
                scores.append(score)
        found[item.key] = float(np.mean(scores)) if scores else None
    return found


def plan_uncertain_order(
    study: Study, task_name: str, annotator: str, judge: str | None = None, seed: int = 0, replan: bool = False
) -> Plan:
    """This annotator's uncertain order of the task: the stored one, or a new draw."""
    task = study.task(task_name)
    if protocols.one_item_per_annotator(task):
        raise UserError(f"--order uncertain does not apply to task {task.name!r}: each annotator rates one packet")
    team = load_team_plan(study, task.name)
    if team is not None:
        check_member(team, annotator)
    rater = _existing_human(study, annotator)  # created only once the plan is drawn: a refusal writes nothing
    stored = load_plan(study, rater.id, task.name, UNCERTAIN) if rater is not None else None
    if stored is not None and not replan:
        made = (stored.settings.get("judge"), stored.settings.get("seed"))
        if (judge or made[0], seed) == made:
            return stored
        raise UserError(
            f"{annotator} already rates {task.name!r} in an uncertain order drawn from judge {made[0]!r} with "
            f"--seed {made[1]}; rate on with those, or draw a new order with --replan"
        )
    name = choose_judge(study, task.name, judge)
    uncertainty = item_uncertainties(study, task.name, name)
    if all(u is None for u in uncertainty.values()):
        raise UserError(
            f"judge {name!r} gave no distribution and fewer than two samples per question of {task.name!r}, so its "
            "uncertainty is unknown; judge again with --mode distribution or --samples 2 or more"
        )
    keys = sorted(uncertainty.keys() & _streamed(study, task.name, rater))
    u = np.array([np.nan if uncertainty[k] is None else uncertainty[k] for k in keys], dtype=float)
    rng = np.random.default_rng(derive_seed(seed, annotator, task.name, UNCERTAIN))
    order, draws = active.sequential_order(u, rng, active.UNIFORM_SHARE)
    showings = [
        Showing(keys[i], uncertainty=None if math.isnan(u[i]) else float(u[i]), draw=float(draws[i])) for i in order
    ]
    settings = {"judge": name, "seed": seed, "uniform_share": active.UNIFORM_SHARE}
    rater_id = rater.id if rater is not None else study.human(annotator).id
    return save_plan(study, rater_id, task.name, UNCERTAIN, settings, showings)


def _streamed(study: Study, task: str, rater: Rater | None) -> set[int]:
    """The items an uncertain order is drawn from: with a team plan, this annotator's assigned items (fixed)
    or every item (dynamic), gold items aside; without one, every item."""
    keys = {item.key for item in study.items(task)}
    plan = load_team_plan(study, task)
    if plan is None:
        return keys
    keys -= gold_keys(study, task)
    if plan.mode == "fixed":
        mine = assignments(study, task, rater.id) if rater is not None else []
        keys &= {a.item_key for a in mine if not a.gold}
    return keys


def _existing_human(study: Study, name: str) -> Rater | None:
    return next((r for r in study.raters("human") if r.name == name), None)


@dataclass(frozen=True)
class ActiveSample:
    """The items of an uncertain order and how they were drawn, for ``stats.active.active_mean``.

    ``drawn``: the first ``rated`` items of the order, all rated by the annotator (the prefix that is
    a sample; items rated further down, out of order, are not part of it); ``probability``: each
    item's inclusion probability π for a sample of that size. A judge value is needed for every item,
    and the human value only where ``drawn``."""

    item_keys: list[int]  # in the order's order
    uncertainty: np.ndarray  # as drawn (NaN: unknown, counted as the average)
    probability: np.ndarray
    drawn: np.ndarray
    rated: int
    judge: str


def active_sample(study: Study, task_name: str, annotator: str) -> ActiveSample | None:
    """The annotator's active sample of the task so far, or None without an uncertain order."""
    task = study.task(task_name)
    rater = _existing_human(study, annotator)
    plan = load_plan(study, rater.id, task.name, UNCERTAIN) if rater is not None else None
    if rater is None or plan is None:
        return None
    keys = [s.item_key for s in plan.showings]
    u = np.array([np.nan if s.uncertainty is None else s.uncertainty for s in plan.showings], dtype=float)
    complete = rated_items(study, task.name, rater.id)
    prefix = next((i for i, key in enumerate(keys) if key not in complete), len(keys))
    share = float(plan.settings.get("uniform_share", active.UNIFORM_SHARE))
    probability = active.sampling_probabilities(u, prefix, share) if prefix else np.zeros(len(keys))
    drawn = np.arange(len(keys)) < prefix
    return ActiveSample(keys, u, probability, drawn, prefix, str(plan.settings.get("judge")))

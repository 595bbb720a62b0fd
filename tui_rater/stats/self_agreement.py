"""A solo rater's test-retest summary on one task: how well they agree with themselves, and with each
judge (the app's pane and the report's ``retest`` section).

With one person there is no inter-rater agreement to hold a judge to; the person's agreement with
themselves is the ceiling ("you agree with yourself at α 0.62, with the judge at 0.55"). Both use the
same statistics (``stats/retest.py``: α at the question's level of measurement, κ, % identical), the
person's first ratings (never the retests) against the judge's value of each item (its samples
aggregated as its protocol says, rounded to the scale's points on ordered and nominal scales).
Chiang & Lee's teachers needed five to ten stories to calibrate (App. C.3.1): the agreement is also
given without the items first rated among the person's first ``CALIBRATION_ITEMS``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tui_rater.domain import protocols
from tui_rater.domain.protocols import Level
from tui_rater.domain.questions import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats.retest import CALIBRATION_ITEMS, RetestAgreement, RetestReliability, agreement, retest_reliability
from tui_rater.store.retest import RetestPair, ValueInForce, retest_pairs, values_in_force
from tui_rater.store.study import Study


@dataclass(frozen=True)
class JudgeAgreement:
    """The person's first ratings against one judge, on every item both rated."""

    judge: str
    agreement: RetestAgreement


@dataclass(frozen=True)
class AttributeRetest:
    attribute: str
    reliability: RetestReliability  # the person against themselves
    judges: list[JudgeAgreement]


@dataclass(frozen=True)
class RetestSummary:
    task: str
    annotator: str
    attributes: list[AttributeRetest]

    @property
    def pairs(self) -> int:
        return sum(a.reliability.pairs for a in self.attributes)

    def attribute(self, name: str) -> AttributeRetest | None:
        return next((a for a in self.attributes if a.attribute == name), None)


def retest_summary(
    study: Study,
    task_name: str,
    annotator: str,
    calibration_items: int = CALIBRATION_ITEMS,
    *,
    only_retested: bool = False,
) -> RetestSummary:
    """``only_retested``: the first ratings' agreement with the judges only for the questions the person retested
    (the report shows nothing else; the retest pane shows it for every question). Without a retest that skips
    reading the values in force and scoring every judge: 30 % of a 10k report without retests (issue 35)."""
    task = study.task(task_name)
    rater = next((r for r in study.raters("human") if r.name == annotator), None)
    pairs = retest_pairs(study, task.name, rater.id) if rater is not None else []
    retested = {p.attribute for p in pairs}
    wanted = {a.name for a in task.attributes if a.name in retested or not only_retested}
    values = values_in_force(study, task.name, annotator) if wanted else []
    attributes = []
    for attribute in task.attributes:
        mine = [p for p in pairs if p.attribute == attribute.name]
        rows = [row for row in values if row[1] == attribute.name]
        attributes.append(
            AttributeRetest(
                attribute.name,
                _reliability(attribute, mine, calibration_items),
                _against_judges(attribute, rows, annotator) if attribute.name in wanted else [],
            )
        )
    return RetestSummary(task.name, annotator, attributes)


def _level(attribute: Attribute) -> tuple[str, list[float] | None]:
    return protocols.of(attribute).level.value, attribute.scale.points or None


def _reliability(attribute: Attribute, pairs: list[RetestPair], calibration_items: int) -> RetestReliability:
    level, labels = _level(attribute)
    return retest_reliability(
        [p.first for p in pairs],
        [p.retest for p in pairs],
        [p.first_position for p in pairs],
        level=level,
        labels=labels,
        retest_position=[p.retest_position for p in pairs],
        first_time=[p.first_time for p in pairs],
        calibration_items=calibration_items,
    )


def _against_judges(attribute: Attribute, rows: list[ValueInForce], annotator: str) -> list[JudgeAgreement]:
    level, labels = _level(attribute)
    protocol = protocols.of(attribute)
    person = {item: value for item, _a, name, kind, _p, value in rows if kind == "human" and name == annotator}
    if not person:
        return []
    samples: dict[str, dict[int, dict[str, list[float]]]] = {}  # judge -> item -> presentation -> samples
    for item, _a, name, kind, presentation, value in rows:
        if kind == "llm":
            samples.setdefault(name, {}).setdefault(item, {}).setdefault(presentation, []).append(value)
    items = sorted(person)
    found = []
    for judge, by_item in sorted(samples.items()):
        judged = [_judge_value(protocol, by_item.get(item, {})) for item in items]
        judge_values = np.array([np.nan if v is None else v for v in judged], dtype=float)
        if labels and level != Level.INTERVAL:  # a mean of samples between two points counts as the nearer
            present = ~np.isnan(judge_values)
            judge_values[present] = ag.to_labels(judge_values[present], labels)
        mine = np.array([person[item] for item in items], dtype=float)
        found.append(JudgeAgreement(judge, agreement(mine, judge_values, level=level, labels=labels)))
    return found


def _judge_value(protocol: protocols.EvaluationProtocol, by_presentation: dict[str, list[float]]) -> float | None:
    """The judge's answer to an item: its samples aggregated per presentation, then the presentations
    combined (a pair judged in both orders), as its protocol says."""
    answers = [protocol.aggregate(values) for values in by_presentation.values()]
    present = [a for a in answers if a is not None]
    return protocol.combine_presentations(present) if present else None

"""The adjudication queue: the items whose raters disagree beyond a margin, most disagreeing first.

Per question, the voices are the people's ratings in force (and, with judges, each judge's score of the
item: its samples combined, and its presentations, by the question's protocol, as the report combines
them). Whether they disagree, and by how much, the question's protocol says (``spread``, ``disagrees``,
``spread_share``): the range beyond the margin for numbers, any two answers for categories.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Task
from tui_rater.domain.values import Item, Voice
from tui_rater.store.adjudication import adjudicated_values, voices
from tui_rater.store.study import Study
from tui_rater.store.team import gold_keys

if TYPE_CHECKING:
    from tui_rater.store.adjudication import Adjudication


@dataclass(frozen=True)
class Split:
    """One question of one item on which the raters disagree beyond the margin."""

    attribute: str
    values: tuple[tuple[str, float], ...]  # (rater label, value): each person, and each judge's score
    spread: float  # in the question's terms (the protocol's)
    share: float  # 0 .. 1, comparable across questions


@dataclass(frozen=True)
class Disagreement:
    item: Item
    splits: tuple[Split, ...]
    decided: dict[str, float] = field(default_factory=dict)  # attribute -> the decided value in force

    @property
    def share(self) -> float:
        return max(split.share for split in self.splits)

    def as_dict(self, task: Task) -> dict[str, object]:
        def shown(attribute: str, value: float | None) -> str:
            return protocols.of(task.attribute(attribute)).format_value(task.attribute(attribute), value)

        return {
            "item": self.item.id,
            "system": self.item.system,
            "disagreement": round(self.share, 4),
            "questions": [
                {
                    "attribute": split.attribute,
                    "spread": split.spread,
                    "ratings": [
                        {"rater": who, "value": value, "shown": shown(split.attribute, value)}
                        for who, value in split.values
                    ],
                    "decided": self.decided.get(split.attribute),
                }
                for split in self.splits
            ],
        }


def check_margin(margin: float) -> None:
    if not math.isfinite(margin) or margin < 0:
        raise UserError(
            f"--margin is how far apart ratings may be before they count as a disagreement: 0 or more, not {margin:g}"
        )


def judge_scores(task: Task, judged: list[Voice]) -> dict[tuple[int, str, str], float]:
    """(item, attribute, judge) -> the judge's score of the item: samples, then presentations combined."""
    per_presentation: dict[tuple[int, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for voice in judged:
        if voice.value is not None:
            per_presentation[(voice.item_key, voice.attribute, voice.rater)][voice.presentation].append(voice.value)
    scores = {}
    for key, samples in per_presentation.items():
        if key[1] not in task.attribute_names:
            continue
        protocol = protocols.of(task.attribute(key[1]))
        combined = [protocol.aggregate(values) for _, values in sorted(samples.items())]
        if any(value is None for value in combined):
            continue  # a vote that ties: no answer from this judge
        score = protocol.combine_presentations([value for value in combined if value is not None])
        if score is not None:
            scores[key] = score
    return scores


def disagreements(study: Study, task_name: str, margin: float = 0.0, with_judges: bool = False) -> list[Disagreement]:
    """The items where the raters disagree beyond ``margin`` on some question, most disagreeing first."""
    check_margin(margin)
    task = study.task(task_name)
    # one pass over the ratings in force (grouping them is most of the cost: 0.3 s a pass at 120k ratings)
    every = voices(study, task.name, ("human", "llm") if with_judges else ("human",))
    by_question: dict[tuple[int, str], list[tuple[str, float]]] = defaultdict(list)
    for voice in every:
        if voice.kind == "human" and voice.value is not None:
            by_question[(voice.item_key, voice.attribute)].append((voice.rater, voice.value))
    if with_judges:
        judged = [voice for voice in every if voice.kind == "llm"]
        for (item_key, attribute, judge), score in judge_scores(task, judged).items():
            by_question[(item_key, attribute)].append((judge, score))
    decided = adjudicated_values(study, task.name)
    # a gold item has a known answer: a split on it says who was wrong, not what the answer is (they score
    # the annotators in `progress`, and are left out of every statistic an adjudicated value feeds)
    gold = gold_keys(study, task.name)
    splits: dict[int, list[Split]] = defaultdict(list)
    for (item_key, attribute), said in by_question.items():
        if len(said) < 2 or attribute not in task.attribute_names or item_key in gold:
            continue
        question = task.attribute(attribute)
        protocol = protocols.of(question)
        values = [value for _, value in said]
        if protocol.disagrees(question, values, margin):
            spread, share = protocol.spread(question, values), protocol.spread_share(question, values)
            splits[item_key].append(Split(attribute, tuple(said), spread, share))
    order = {name: position for position, name in enumerate(task.attribute_names)}
    items = {item.key: item for item in study.items(task.name)}
    found = [
        Disagreement(
            items[key],
            tuple(sorted(found, key=lambda s: order.get(s.attribute, len(order)))),
            {a: decided[a][key] for a in task.attribute_names if key in decided.get(a, {})},
        )
        for key, found in splits.items()
        if key in items
    ]
    return sorted(found, key=lambda d: (-d.share, -len(d.splits), d.item.position))


def open_adjudication(study: Study, task: str, adjudicator: str) -> Adjudication:
    """The adjudicator's decisions on a task, as the adjudication screen stores them."""
    from tui_rater.store.adjudication import Adjudication

    return Adjudication(study, task, adjudicator)

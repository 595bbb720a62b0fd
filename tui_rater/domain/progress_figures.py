"""`progress`'s per-annotator figures as pure functions of what the store read (issue 31 item 1).

``service/progress.py`` reads each figure's inputs through named store queries (``store/progress_reads.py``,
``store/team.py``) and hands them here: no study, no SQL, so each figure -- the plan's counts, the gold accuracy,
the gaps to the people and to the judges by level of measurement, the median time, the retest gap, the marks -- is
tested on plain values. Written by hand: they are counts, shares and means over a few sets (no library of the
field computes "how far a person is from the others" with these rules).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tui_rater.domain.questions import Scale

CONTINUOUS_TOLERANCE = 0.1  # a 0-100 gold answer counts as right within a tenth of the scale
# the marks: signs of rating without reading that a lead should look at, not verdicts
GOLD_ACCURACY_MIN = 0.7  # below this share of gold answers right (with at least GOLD_MIN answers)
GOLD_MIN = 3
FAST_RATIO = 1 / 3  # a median time per item under a third of the others' median
FAST_MIN_ITEMS = 5
SAME_ANSWER_SHARE = 0.9  # the same value in this share of their ratings (with at least SAME_ANSWER_MIN)
SAME_ANSWER_MIN = 10

# (item key, question) -> rater's name -> their values in force (a list of one: ``annotate`` stores sample 0)
Values = dict[tuple[int, str], dict[str, list[float]]]


def mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def mean_or_none(xs: Sequence[float]) -> float | None:
    return mean(xs) if xs else None


def share_or_none(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def done_by(pairs: Iterable[tuple[int, int]], rater_id: int | None) -> set[int]:
    """The items a person rated in full (``pairs``: (rater id, item key) of every (person, item) rated in full)."""
    return {key for rater, key in pairs if rater == rater_id}


def plan_counts(
    mode: str | None,
    per_item: int,
    mine: set[int],
    mine_gold: set[int],
    keys: Iterable[int],
    gold: Iterable[int],
    pairs: Iterable[tuple[int, int]],
    done: set[int],
    skipped: set[int],
) -> tuple[int | None, int | None]:
    """(items planned for the person, items left to them) under the task's plan: both None without a plan, the
    first None under a dynamic plan (it serves whoever comes next: nobody is given items ahead)."""
    if mode is None:
        return None, None
    if mode == "fixed":
        return fixed_plan_counts(mine, done, skipped)
    return None, dynamic_plan_remaining(keys, gold, per_item, pairs, mine_gold, done, skipped)


def fixed_plan_counts(mine: set[int], done: set[int], skipped: set[int]) -> tuple[int, int]:
    """A fixed plan: (items assigned to the person, those neither rated in full nor skipped)."""
    return len(mine), len(mine - done - skipped)


def dynamic_plan_remaining(
    keys: Iterable[int],
    gold: Iterable[int],
    per_item: int,
    pairs: Iterable[tuple[int, int]],
    mine_gold: set[int],
    done: set[int],
    skipped: set[int],
) -> int:
    """A dynamic plan: the items still open to anybody (fewer than ``per_item`` people rated them in full, gold
    aside) plus the person's own gold items, less those they rated in full or skipped."""
    counts: dict[int, int] = {}
    for _rater, key in pairs:
        counts[key] = counts.get(key, 0) + 1
    gold_keys = set(gold)
    open_items = {k for k in keys if k not in gold_keys and counts.get(k, 0) < per_item}
    return len((open_items | mine_gold) - done - skipped)


def median_seconds(seconds: Mapping[int, float], done: set[int]) -> float | None:
    """The median time per item over the items the person rated in full (those with a time)."""
    timed = [seconds[k] for k in done if k in seconds]
    return statistics.median(timed) if timed else None


def is_right(scale: Scale, value: float, answer: float) -> bool:
    """A gold answer is right when equal on a scale of points, within a tenth of the range on a continuous one."""
    if scale.points:
        return bool(value == answer)
    return abs(value - answer) <= CONTINUOUS_TOLERANCE * (scale.high - scale.low)


@dataclass
class Gaps:
    """One person's distances from the others, per shared (item, question), by the question's level."""

    people: list[float] = field(default_factory=list)
    judges: list[float] = field(default_factory=list)
    people_nominal: list[float] = field(default_factory=list)
    judges_nominal: list[float] = field(default_factory=list)

    def add(self, nominal: bool, value: float, people: Sequence[float], judges: Sequence[float]) -> None:
        if nominal:  # the share of the others' answers unlike theirs: codes have no distance and no mean
            if people:
                self.people_nominal.append(sum(v != value for v in people) / len(people))
            if judges:
                self.judges_nominal.append(sum(v != value for v in judges) / len(judges))
            return
        if people:
            self.people.append(abs(value - mean(people)))
        if judges:
            self.judges.append(abs(value - mean(judges)))


@dataclass(frozen=True)
class Question:
    """What the figures need of a question: its scale (gold answers) and whether it is nominal (gaps)."""

    scale: Scale
    nominal: bool


def scores_by_question(by_judge: Mapping[tuple[int, str, str], float]) -> dict[tuple[int, str], list[float]]:
    """(item, question, judge) -> score, regrouped as (item, question) -> the judges' scores."""
    found: dict[tuple[int, str], list[float]] = {}
    for (key, attribute, _judge), score in by_judge.items():
        found.setdefault((key, attribute), []).append(score)
    return found


def gold_and_gaps(
    name: str,
    values: Values,
    judged: Mapping[tuple[int, str], Sequence[float]],
    gold: Mapping[int, Mapping[str, float]],
    questions: Mapping[str, Question],
) -> tuple[int, int, Gaps]:
    """(gold answers given, of them right, the gaps to the others): gold items count for the gold accuracy only,
    the gaps are measured on the other items and on the questions the task still asks. ``values`` holds every
    person's ratings of the task, ``judged`` each (item, question)'s judge scores."""
    right = answered = 0
    gaps = Gaps()
    for (key, attribute), by_rater in values.items():
        own = by_rater.get(name)
        if not own:
            continue
        value = own[-1]
        question = questions.get(attribute)
        if key in gold:
            if attribute in gold[key] and question is not None:  # a question the task no longer asks: not scored
                answered += 1
                right += is_right(question.scale, value, gold[key][attribute])
            continue
        if question is None:
            continue  # a question the task no longer asks
        people = [v for n, vs in by_rater.items() if n != name for v in vs]
        gaps.add(question.nominal, value, people, judged.get((key, attribute), []))
    return answered, right, gaps


def own_answers(values: Values, name: str, gold: set[int]) -> list[float]:
    """A person's answers in force, gold items aside (their answers are known, so rating them right is no sign of
    straight-lining)."""
    return [vs[-1] for (key, _q), by_rater in values.items() if key not in gold and (vs := by_rater.get(name))]


def gold_mark(accuracy: float | None, answered: int) -> str | None:
    """A mark when a person got too few gold answers right (with enough of them to tell)."""
    if accuracy is not None and answered >= GOLD_MIN and accuracy < GOLD_ACCURACY_MIN:
        return f"gold {accuracy:.0%} right ({answered} answers)"
    return None


def fast_mark(seconds: float | None, others: Sequence[float], done: int) -> str | None:
    """A mark when a person's median time per item is far below the median of the others' medians."""
    if seconds is None or not others or done < FAST_MIN_ITEMS:
        return None
    typical = statistics.median(others)
    if seconds < FAST_RATIO * typical:
        return f"fast: {seconds:.1f} s per item, the others {typical:.1f} s"
    return None


def same_answer_mark(own: Sequence[float]) -> str | None:
    """A mark when one value is nearly all of a person's answers (straight-lining)."""
    if len(own) < SAME_ANSWER_MIN:
        return None
    top = max(own.count(v) for v in set(own)) / len(own)
    return f"same answer {top:.0%} of {len(own)} ratings" if top >= SAME_ANSWER_SHARE else None

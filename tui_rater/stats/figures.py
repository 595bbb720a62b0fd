"""The numbers behind the HTML report's plots, per question (data only; ``plots.py`` draws them).

- rating distributions per evaluator: counts per scale point (each item's verdict for nominal answers,
  as the live pane), or every rating of a 0-100 scale;
- human vs judge per item (scores only): the humans' per-item score against each judge's;
- confusion counts per judge (scales with points): humans (rows) x judge (columns), as ``agreement.confusion``;
- calibration per judge (distribution mode): the judge's expected score (``details.expected``, the mean of
  its next-token distribution over the scale) against the humans' mean, item by item;
- convergence curves, read back from the report's ``verdict_convergence`` and ``ppi_convergence`` records.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from tui_rater.domain.protocols import Level
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats.records import ALL, HUMANS, Record
from tui_rater.stats.sections.data import ReportData
from tui_rater.store import readings as stored


@dataclass
class Distribution:
    evaluator: str
    counts: list[int] = field(default_factory=list)  # per scale point (label_names), when the scale has points
    values: list[float] = field(default_factory=list)  # every rating, on a scale without points


@dataclass
class Paired:
    """One judge against the humans, item by item (only items both rated)."""

    judge: str
    human: np.ndarray
    judge_values: np.ndarray


@dataclass
class Confusion:
    judge: str
    counts: np.ndarray  # humans (rows) x judge (columns), over the scale's points


@dataclass
class QuestionFigures:
    attribute: str
    level: str
    low: float
    high: float
    label_names: list[str]
    distributions: list[Distribution] = field(default_factory=list)
    scatters: list[Paired] = field(default_factory=list)
    confusions: list[Confusion] = field(default_factory=list)
    calibrations: list[Paired] = field(default_factory=list)  # judge_values = the expected score

    @property
    def nominal(self) -> bool:
        return self.level == Level.NOMINAL.value


def question_figures(data: ReportData) -> list[QuestionFigures]:
    expected = expected_scores(data)
    return [_question(data, attribute, expected) for attribute in data.task.attributes]


def _question(
    data: ReportData, attribute: Attribute, expected: dict[tuple[str, str], dict[int, float]]
) -> QuestionFigures:
    protocol = data.protocol(attribute)
    labels = attribute.scale.points
    names = [protocol.format_value(attribute, v) for v in labels]
    found = QuestionFigures(attribute.name, protocol.level.value, attribute.scale.low, attribute.scale.high, names)
    for evaluator in data.evaluators():
        found.distributions.append(_distribution(data, attribute, evaluator, labels, found.nominal))
    if not data.humans:
        return found
    human = data.item_values(HUMANS, attribute, ALL)
    for judge in data.judges:
        llm = data.item_values(judge, attribute, ALL)
        both = ~(np.isnan(human) | np.isnan(llm))
        if not both.any():
            continue
        if not found.nominal:
            found.scatters.append(Paired(judge, human[both], llm[both]))
        if labels:
            found.confusions.append(Confusion(judge, ag.confusion(human, llm, labels)))
        by_item = expected.get((judge, attribute.name))
        if by_item and not found.nominal:
            mean_of = dict(zip(data.keys(ALL).tolist(), human.tolist()))
            keys = [k for k in by_item if k in mean_of and not math.isnan(mean_of[k])]
            if keys:
                found.calibrations.append(
                    Paired(judge, np.array([mean_of[k] for k in keys]), np.array([by_item[k] for k in keys]))
                )
    return found


def _distribution(
    data: ReportData, attribute: Attribute, evaluator: str, labels: list[float], nominal: bool
) -> Distribution:
    if nominal:  # each item's verdict (its annotators' vote), never the codes' mean
        values = data.item_values(evaluator, attribute, ALL)
        values = values[~np.isnan(values)]
        return Distribution(evaluator, [int(np.sum(values == label)) for label in labels])
    m = data.matrix(evaluator, attribute.name, ALL)
    ratings = m[~np.isnan(m)] if m.size else np.array([])
    if labels:
        rounded = ag.to_labels(ratings, labels) if ratings.size else ratings
        return Distribution(evaluator, [int(np.sum(rounded == label)) for label in labels])
    return Distribution(evaluator, values=[float(v) for v in ratings])


def expected_scores(data: ReportData) -> dict[tuple[str, str], dict[int, float]]:
    """(judge, question) -> item key -> the judge's expected score, averaged over its passes (presentations)."""
    rows = stored.expected_scores(data.study, data.task.name)
    found: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for judge, attribute, item_key, value in rows:
        if value is not None and math.isfinite(value):
            found[(judge, attribute)][int(item_key)] = float(value)
    return dict(found)


# --- convergence, from the records ------------------------------------------------------------------


@dataclass
class Curve:
    """One line of a convergence plot: n (rated items) -> statistic -> value."""

    attribute: str
    judge: str
    system: str
    points: dict[int, dict[str, float | None]] = field(default_factory=dict)

    def series(self, statistic: str) -> tuple[list[int], list[float]]:
        """The points where the statistic is defined, by n."""
        ns = sorted(n for n, values in self.points.items() if values.get(statistic) is not None)
        return ns, [float(self.points[n][statistic]) for n in ns]  # type: ignore[arg-type]


def curves(records: list[Record], table: str) -> list[Curve]:
    """The convergence curves of one table (``verdict_convergence`` or ``ppi_convergence``)."""
    found: dict[tuple[str, str, str], Curve] = {}
    for r in records:
        if r.table != table or (r.value is None and r.n == 0):
            continue
        curve = found.setdefault((r.attribute, r.evaluator, r.system), Curve(r.attribute, r.evaluator, r.system))
        curve.points.setdefault(r.n, {})[r.statistic] = r.value
    return list(found.values())

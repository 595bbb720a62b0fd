"""What the app's agreement pane shows, computed off the UI thread from the study file."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tui_rater.stats import agreement as ag
from tui_rater.stats.report import ALL, HUMANS, Report
from tui_rater.store.study import Study


@dataclass
class JudgeRow:
    judge: str
    alpha: ag.Stat
    tau: ag.Stat
    exact: ag.Stat
    bias: ag.Stat


@dataclass
class Gap:
    item_key: int
    item_id: str
    human: float
    llm: float

    @property
    def size(self) -> float:
        return abs(self.llm - self.human)


@dataclass
class AttributePane:
    attribute: str
    labels: list[float]
    rows: list[JudgeRow] = field(default_factory=list)
    confusion: np.ndarray | None = None  # humans (rows) x first judge (columns)
    confusion_judge: str | None = None
    distributions: dict[str, list[int]] = field(default_factory=dict)  # evaluator -> count per label
    gaps: list[Gap] = field(default_factory=list)


@dataclass
class PaneData:
    task: str
    n_ratings: int
    attributes: list[AttributePane]
    queue: dict[str, int]
    failures: list[dict]


def pane_data(study: Study, task_name: str, queue: dict[str, int], failures: list[dict], top_gaps: int = 5) -> PaneData:
    """The pane's numbers; ``queue`` and ``failures`` describe the judge queue (the service reads them)."""
    task = study.task(task_name)
    report = Report(study, task)
    ids = {item.key: item.id for item in study.items(task_name)}
    attributes = []
    for attribute in task.attributes:
        labels = attribute.scale.points
        pane = AttributePane(attribute.name, labels)
        human = report.item_means(HUMANS, attribute.name, ALL) if report.humans else None
        for judge in report.judges:
            llm = report.item_means(judge, attribute.name, ALL)
            if human is None:
                continue
            both = np.vstack([human, llm])
            pane.rows.append(
                JudgeRow(
                    judge,
                    ag.alpha(both, "interval"),
                    ag.kendall_tau(human, llm),
                    ag.exact_agreement(human, llm, labels or None),
                    ag.bias(llm, human),
                )
            )
            if pane.confusion is None and labels:
                pane.confusion = ag.confusion(human, llm, labels)
                pane.confusion_judge = judge
                keys = report.item_keys
                gaps = [
                    Gap(keys[i], ids.get(keys[i], str(keys[i])), float(human[i]), float(llm[i]))
                    for i in range(len(keys))
                    if not (np.isnan(human[i]) or np.isnan(llm[i]))
                ]
                pane.gaps = sorted(gaps, key=lambda g: -g.size)[:top_gaps]
        if labels:
            for evaluator in report.evaluators():
                m = report.matrix(evaluator, attribute.name, ALL)
                values = ag.to_labels(m[~np.isnan(m)], labels) if m.size else np.array([])
                pane.distributions[evaluator] = [int(np.sum(values == label)) for label in labels]
        attributes.append(pane)
    return PaneData(task_name, report.frame.height, attributes, queue, failures)

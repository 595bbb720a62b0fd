"""What the app's agreement pane shows, computed off the UI thread from the study file (data, no text).

Per question, the humans' per-item score against each judge's, by the question's level of
measurement: for scores Krippendorff's α (interval), Kendall's τ-b, exact agreement and the mean
bias; for nominal answers (a choice, a pairwise A / B / tie) Cohen's κ, α nominal, exact agreement
and verdict shares -- never a mean or τ of answer codes. Each judge carries its readings: share read,
scale mass, and whether it is agreement-ready (``sections/readings.py``), and the alternative annotator
test's verdict -- may it replace the humans? -- when at least 3 humans rated the question
(``sections/verdict.py``, at the default ε).

The pane is looked at after every rating, so what it says must hold at every look (issue 33 item 3): the verdict
it words ("may replace") is the anytime-valid alt-test (e-values per person, e-BH; ``stats/sequential.py``), the
fixed-n ω and ρ beside it are labelled as such; and for scored questions each system's mean comes as
confidence sequences (prediction-powered and human-only) that cover the truth at every look at once.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tui_rater.domain.protocols import Level
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats.pane_types import NONE as _NONE
from tui_rater.stats.pane_types import AttributePane as AttributePane
from tui_rater.stats.pane_types import Gap as Gap
from tui_rater.stats.pane_types import JudgeRow as JudgeRow
from tui_rater.stats.pane_types import PaneData as PaneData
from tui_rater.stats.pane_types import Verdict as Verdict
from tui_rater.stats.pane_types import WatchedMean as WatchedMean
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.report import Report
from tui_rater.stats.sections.converging import rating_order
from tui_rater.stats.sections.nominal import choice_labels, cohen_kappa
from tui_rater.stats.sections.readings import JudgeReadings, readiness
from tui_rater.stats.sections.settings import FDR
from tui_rater.stats.sections.verdict import judge_ratings, level_of, rated, verdict_humans
from tui_rater.stats.sections.watched import mean_sequence, verdict_curve
from tui_rater.store.study import Study


def pane_data(
    study: Study, task_name: str, queue: dict[str, int], failures: list[dict[str, Any]], top_gaps: int = 5
) -> PaneData:
    """The pane's numbers; ``queue`` and ``failures`` describe the judge queue (the service reads them)."""
    task = study.task(task_name)
    report = Report(study, task)
    ids = {item.key: item.id for item in study.items(task_name)}
    found = readiness(report)
    panes = [_attribute_pane(report, attribute, found, ids, top_gaps) for attribute in task.attributes]
    return PaneData(task_name, report.frame.height, panes, queue, failures)


def _attribute_pane(
    report: Report,
    attribute: Attribute,
    found: dict[tuple[str, str], JudgeReadings],
    ids: dict[int, str],
    top_gaps: int,
) -> AttributePane:
    protocol = report.protocol(attribute)
    nominal = protocol.level is Level.NOMINAL
    labels = attribute.scale.points
    names = [key for _, key in choice_labels(report, attribute)] if nominal else [f"{v:g}" for v in labels]
    pane = AttributePane(attribute.name, labels, protocol.level.value, names, humans=bool(report.humans))
    human = report.item_values(HUMANS, attribute, ALL) if report.humans else None
    judges = sorted(set(report.judges) | {j for (j, a) in found if a == attribute.name})
    for judge in judges:
        llm = report.item_values(judge, attribute, ALL) if judge in report.judges else None
        pane.rows.append(_row(judge, human, llm, list(zip(labels, names)), nominal, found.get((judge, attribute.name))))
    _verdicts(report, attribute, pane.rows)
    if not nominal and human is not None:
        pane.watched = _watched_means(report, attribute)
    # the confusion map and the gaps: the first agreement-ready judge with ratings (else the first one)
    compared = sorted((row for row in pane.rows if row.n), key=lambda row: not row.ready)
    if human is not None and compared and labels:
        judge = compared[0].judge
        llm = report.item_values(judge, attribute, ALL)
        pane.confusion = ag.confusion(human, llm, labels)
        pane.confusion_judge = judge
        pane.gaps = _gaps(report, attribute, human, llm, ids, nominal)[:top_gaps]
    if labels:
        for evaluator in report.evaluators():
            if nominal:  # each item's verdict (the annotators' vote)
                values = report.item_values(evaluator, attribute, ALL)
                values = values[~np.isnan(values)]
            else:
                m = report.matrix(evaluator, attribute.name, ALL)
                values = ag.to_labels(m[~np.isnan(m)], labels) if m.size else np.array([])
            pane.distributions[evaluator] = [int(np.sum(values == label)) for label in labels]
    return pane


def _row(
    judge: str,
    human: np.ndarray | None,
    llm: np.ndarray | None,
    named: list[tuple[float, str]],
    nominal: bool,
    readings: JudgeReadings | None,
) -> JudgeRow:
    labels = [value for value, _ in named]
    if human is None or llm is None:
        return JudgeRow(judge, _NONE, None if nominal else _NONE, _NONE, None if nominal else _NONE, readings=readings)
    both = np.vstack([human, llm])
    if nominal:
        verdicts = llm[~np.isnan(llm)]
        shares = {name: float(np.mean(verdicts == v)) for v, name in named} if verdicts.size else {}
        return JudgeRow(
            judge,
            ag.alpha(both, "nominal", labels),
            None,
            ag.exact_agreement(human, llm),
            None,
            kappa=cohen_kappa(human, llm, labels),
            shares=shares,
            readings=readings,
        )
    return JudgeRow(
        judge,
        ag.alpha(both, "interval"),
        ag.kendall_tau(human, llm),
        ag.exact_agreement(human, llm, labels or None),
        ag.bias(llm, human),
        readings=readings,
    )


def _gaps(
    report: Report, attribute: Attribute, human: np.ndarray, llm: np.ndarray, ids: dict[int, str], nominal: bool
) -> list[Gap]:
    keys = report.keys(ALL)
    protocol = report.protocol(attribute)
    gaps = []
    for i, key in enumerate(keys):
        if np.isnan(human[i]) or np.isnan(llm[i]):
            continue
        gap = Gap(int(key), ids.get(int(key), str(key)), float(human[i]), float(llm[i]))
        if nominal:
            gap.human_label = protocol.format_value(attribute, float(human[i]))
            gap.llm_label = protocol.format_value(attribute, float(llm[i]))
            if gap.size == 0:
                continue
        gaps.append(gap)
    return sorted(gaps, key=lambda g: -g.size)


def _verdicts(report: Report, attribute: Attribute, rows: list[JudgeRow]) -> None:
    """Each judge's alt-test (skipped at once with fewer than 3 human raters: the solo rater's usual case)."""
    humans, reason = verdict_humans(report, attribute)
    eps = report.settings.verdict.eps
    for row in rows:
        if row.judge not in report.judges or not rated(report, row.judge, attribute):
            continue
        if reason:
            row.verdict = Verdict(eps, note=reason)
            continue
        judge = judge_ratings(report, row.judge, attribute)
        level = level_of(report, attribute)
        result = at.alt_test(humans, judge, judge_name=row.judge, level=level, epsilon=eps, alpha=FDR)
        curve = verdict_curve(report, attribute, row.judge, rating_order(report).get(attribute.name, []))
        row.verdict = Verdict(
            eps,
            result.winning_rate,
            result.advantage_probability,
            result.passed,
            result.humans_tested,
            result.note,
            curve[-1][1] if curve else None,
        )


def _watched_means(report: Report, attribute: Attribute) -> list[WatchedMean]:
    order = rating_order(report).get(attribute.name, [])
    out = []
    for judge in report.judges:
        for system in report.systems:
            found = mean_sequence(report, attribute, judge, system, order)
            if found.sequence is None:
                if found.note != "the judge rated none of these items":
                    out.append(WatchedMean(judge, system, note=found.note))
                continue
            ppi, humans = found.sequence.ppi, found.sequence.humans
            out.append(
                WatchedMean(
                    judge,
                    system,
                    found.rated,
                    (float(ppi.low[-1]), float(ppi.high[-1])),
                    (float(humans.low[-1]), float(humans.high[-1])),
                )
            )
    return out

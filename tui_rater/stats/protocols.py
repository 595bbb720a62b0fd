"""Report records for the pairwise and system-level protocols (added by ``Report.build``).

- SPA tasks: P[X > Y] per comparison and evaluator, t-test against 0.5, Holm, the tau = 1.1 filter,
  and the standard protocol's Likert deltas -- the layout of the SPA paper's Table 1;
- pairwise tasks: position bias and order consistency per judge (both orders judged), and
  Bradley-Terry abilities from all pairwise preferences (items whose ``system`` reads "X vs Y");
- Chen et al.'s meta-evaluation of a judge's scores against the human scores.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from tui_rater.domain import protocols
from tui_rater.domain.protocols import ORIGINAL, SWAPPED
from tui_rater.stats import systems as st

if TYPE_CHECKING:
    from tui_rater.stats.report import Report

_VERSUS = re.compile(r"^\s*(.+?)\s+(?:vs\.?|\|)\s+(.+?)\s*$")


def is_spa(report: Report) -> bool:
    return any("spa" in protocols.of(a).report_sections for a in report.task.attributes)


def spa_records(report: Report, tau: float | None = st.SPA_TAU) -> None:
    packets = {item.key: json.loads(item.fields["packet"]) for item in report.study.items(report.task.name)}
    # SPA's questions say which writers they compare (p: x over y) or rate (likert: writer)
    compared = {a.name: (a.params["x"], a.params["y"]) for a in report.task.attributes if "x" in a.params}
    rated = {a.name: a.params["writer"] for a in report.task.attributes if "writer" in a.params}
    pairs, seen = [], set()
    for x, y in compared.values():
        if frozenset((x, y)) not in seen:
            seen.add(frozenset((x, y)))
            pairs.append((x, y))
    # annotators: a human on one packet; a judge's sample on one packet (its samples as annotators)
    groups: dict[str, dict[str, dict]] = {}
    for item_key, attribute, rater, kind, sample, value in report.frame.select(
        "item_key", "attribute", "rater", "kind", "sample", "value"
    ).iter_rows():
        writers = packets[item_key]["writers"]
        evaluator = "humans" if kind == "human" else rater
        annotator = f"{rater}/{item_key}" if kind == "human" else f"{sample}/{item_key}"
        entry = groups.setdefault(evaluator, {}).setdefault(annotator, {"p": {}, "likert": {}})
        if attribute in compared:
            x, y = compared[attribute]
            entry["p"][(writers[x], writers[y])] = value / 100.0
        elif attribute in rated:
            entry["likert"][writers[rated[attribute]]] = value
    any_packet = next(iter(packets.values()), None)
    if not any_packet:
        return
    comparisons = [(any_packet["writers"][x], any_packet["writers"][y]) for x, y in pairs]
    for evaluator, annotators in groups.items():
        result = st.spa(
            {a: v["p"] for a, v in annotators.items()},
            comparisons,
            {a: v["likert"] for a, v in annotators.items() if v["likert"]} or None,
            tau,
        )
        for c in result.comparisons:
            label = f"{c.system_x} > {c.system_y}"
            report._add(
                "spa",
                label,
                c.system_x,
                evaluator,
                "p_x_over_y",
                value=c.p_x_over_y,
                n=c.n,
                p=c.p_holm,
                evaluator_b=c.system_y,
                note="" if c.p_x_over_y is not None else "no answers",
            )
            report._add(
                "spa",
                label,
                c.system_x,
                evaluator,
                "spa_t",
                value=c.t,
                n=c.n,
                p=c.p_value,
                evaluator_b=c.system_y,
                note="" if c.t is not None else "fewer than 2 annotators or no variation",
            )
            report._add(
                "spa",
                label,
                c.system_x,
                evaluator,
                "likert_delta",
                value=c.likert_delta,
                n=c.likert_n,
                p=c.likert_p_holm,
                evaluator_b=c.system_y,
                note="" if c.likert_delta is not None else "no Likert ratings",
            )
        report._add(
            "spa",
            "*",
            "all",
            evaluator,
            "annotators_kept",
            value=float(result.annotators),
            n=result.annotators + len(result.excluded),
            note=f"excluded (P[X>Y] + P[Y>X] > {tau}): {len(result.excluded)}" if tau else "no filter",
        )


def is_pairwise(report: Report) -> bool:
    return any("position" in protocols.of(a).report_sections for a in report.task.attributes)


def pairwise_records(report: Report) -> None:
    for attribute in report.task.attributes:
        rows = report.frame.filter(pl.col("attribute") == attribute.name)
        for judge in report.judges:
            mine = rows.filter(pl.col("rater") == judge)
            verdicts = {
                (k, p, s): v for k, p, s, v in mine.select("item_key", "presentation", "sample", "value").iter_rows()
            }
            pairs = sorted({(k, s) for k, _, s in verdicts})
            judgements = [(verdicts.get((k, ORIGINAL, s)), verdicts.get((k, SWAPPED, s))) for k, s in pairs]
            bias = st.position_bias(judgements)
            report._add(
                "position",
                attribute.name,
                report.overall,
                judge,
                "first_position_rate",
                value=bias.first_position_rate,
                n=bias.pairs,
                note="" if bias.first_position_rate is not None else "no decisive verdicts",
            )
            report._add(
                "position",
                attribute.name,
                report.overall,
                judge,
                "order_consistency",
                value=bias.consistent_rate,
                n=bias.pairs,
                note="" if bias.consistent_rate is not None else "no pair judged in both orders",
            )
            for verdict, count in bias.verdicts.items():
                report._add(
                    "position",
                    attribute.name,
                    report.overall,
                    judge,
                    f"final_{verdict}",
                    value=float(count),
                    n=bias.pairs,
                    note="inconsistent orders count as ties",
                )
        _bradley_terry(report, attribute.name, rows)


def _bradley_terry(report: Report, attribute: str, rows: pl.DataFrame) -> None:
    pairs = {}
    for item in report.study.items(report.task.name):
        match = _VERSUS.match(item.system or "")
        if match:
            pairs[item.key] = match.groups()
    if not pairs:
        return
    names = sorted({s for pair in pairs.values() for s in pair})
    index = {s: i for i, s in enumerate(names)}
    wins: dict[str, np.ndarray] = {}
    for item_key, kind, rater, value in rows.select("item_key", "kind", "rater", "value").iter_rows():
        if item_key not in pairs:
            continue
        a, b = (index[s] for s in pairs[item_key])
        for evaluator in ("humans" if kind == "human" else rater, "all"):
            m = wins.setdefault(evaluator, np.zeros((len(names), len(names))))
            if value == 0:
                m[a, b] += 1
            elif value == 1:
                m[b, a] += 1
            else:  # a tie: half a win each
                m[a, b] += 0.5
                m[b, a] += 0.5
    for evaluator, m in wins.items():
        result = st.bradley_terry(m, names)
        for system, strength in zip(result.systems, result.log_strength):
            report._add(
                "bt",
                attribute,
                system,
                evaluator,
                "bt_log_strength",
                value=strength,
                n=int(m.sum()),
                note=f"relative to {names[0]}" + ("" if result.converged else "; did not converge"),
            )


def meta_records(report: Report) -> None:
    """Chen et al.: each judge's per-item score vs the humans', sample- and dataset-level."""
    if not report.humans or not report.judges:
        return
    prompt_of = {item.key: item.fields.get("prompt", "") for item in report.study.items(report.task.name)}
    inputs = [prompt_of.get(k, "") for k in report.item_keys]
    for attribute in report.task.attributes:
        if attribute.scale.kind == "choice":
            continue
        human = report.item_means("humans", attribute.name, "all")
        for judge in report.judges:
            meta = st.meta_evaluation(inputs, list(human), list(report.item_means(judge, attribute.name, "all")))
            for statistic, value in (
                ("sample_spearman", meta.sample_spearman),
                ("sample_pearson", meta.sample_pearson),
                ("dataset_spearman", meta.dataset_spearman),
                ("dataset_pearson", meta.dataset_pearson),
            ):
                report._add(
                    "meta",
                    attribute.name,
                    "all",
                    "humans",
                    statistic,
                    value=value,
                    n=meta.inputs if statistic.startswith("sample") else meta.texts,
                    evaluator_b=judge,
                    note="" if value is not None else "too few texts per input or no variation",
                )
            for difficulty, (tau, n) in meta.kendall_pairs.items():
                report._add(
                    "meta",
                    attribute.name,
                    "all",
                    "humans",
                    f"pair_tau_b_{difficulty}",
                    value=tau,
                    n=n,
                    evaluator_b=judge,
                    note="" if tau is not None else "no pairs",
                )

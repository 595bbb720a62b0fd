"""System-level probabilistic assessment (Ethayarajh & Jurafsky 2022, §5.2), laid out as their Table 1.

P[X > Y] per comparison and evaluator, the two-sided t-test against 0.5 with Holm's correction, the
τ = 1.1 filter on annotators, and the standard protocol's Likert deltas. Annotators: a human on one
packet; a judge's sample on one packet (its samples as annotators). The questions say which writers
they compare (params ``x`` and ``y``) or rate (param ``writer``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import systems as st
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData


def spa(data: ReportData, attributes: Sequence[Attribute]) -> None:
    packets = {item.key: json.loads(item.fields["packet"]) for item in data.study.items(data.task.name)}
    any_packet = next(iter(packets.values()), None)
    if not any_packet:
        return
    compared = {a.name: (a.params["x"], a.params["y"]) for a in attributes if "x" in a.params}
    rated = {a.name: a.params["writer"] for a in attributes if "writer" in a.params}
    pairs, seen = [], set()
    for x, y in compared.values():
        if frozenset((x, y)) not in seen:
            seen.add(frozenset((x, y)))
            pairs.append((x, y))
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for item_key, attribute, rater, kind, sample, value in data.frame.select(
        "item_key", "attribute", "rater", "kind", "sample", "value"
    ).iter_rows():
        writers = packets[item_key]["writers"]
        evaluator = HUMANS if kind == "human" else rater
        annotator = f"{rater}/{item_key}" if kind == "human" else f"{sample}/{item_key}"
        entry = groups.setdefault(evaluator, {}).setdefault(annotator, {"p": {}, "likert": {}})
        if attribute in compared:
            x, y = compared[attribute]
            entry["p"][(writers[x], writers[y])] = value / 100.0
        elif attribute in rated:
            entry["likert"][writers[rated[attribute]]] = value
    comparisons = [(any_packet["writers"][x], any_packet["writers"][y]) for x, y in pairs]
    for evaluator, annotators in groups.items():
        result = st.spa(
            {a: v["p"] for a, v in annotators.items()},
            comparisons,
            {a: v["likert"] for a, v in annotators.items() if v["likert"]} or None,
            data.settings.spa.tau,
        )
        _records(data, evaluator, result, data.settings.spa.tau)


def _records(data: ReportData, evaluator: str, result: st.SpaResult, tau: float | None) -> None:
    for c in result.comparisons:
        label = f"{c.system_x} > {c.system_y}"
        for statistic, value, n, p, missing in (
            ("p_x_over_y", c.p_x_over_y, c.n, c.p_holm, "no answers"),
            ("spa_t", c.t, c.n, c.p_value, "fewer than 2 annotators or no variation"),
            ("likert_delta", c.likert_delta, c.likert_n, c.likert_p_holm, "no Likert ratings"),
        ):
            if value is not None:  # a mean or a difference without a p-value: say why there is no test
                missing = "" if p is not None else "one annotator: no test" if n < 2 else "no variation: no test"
            data.add(
                "spa",
                label,
                c.system_x,
                evaluator,
                statistic,
                value=value,
                n=n,
                p=p,
                evaluator_b=c.system_y,
                note=missing,
            )
    data.add(
        "spa",
        "*",
        ALL,
        evaluator,
        "annotators_kept",
        value=float(result.annotators),
        n=result.annotators + len(result.excluded),
        note=f"excluded (P[X>Y] + P[Y>X] > {tau}): {len(result.excluded)}" if tau else "no filter",
    )


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = []
    for r in found.of("spa"):
        if r.statistic == "p_x_over_y":
            likert = found.get("spa", r.attribute, r.system, r.evaluator, r.evaluator_b, "likert_delta")
            rows.append(
                [
                    r.system,
                    r.evaluator_b or "",
                    who(r.evaluator, "*"),
                    "n/a" if r.value is None else f"{r.value:.3f}{cells.spa_stars(r.p)}",
                    "n/a"
                    if likert is None or likert.value is None
                    else f"{likert.value:+.3f}{cells.spa_stars(likert.p)}",
                    str(r.n),
                ]
            )
    if not rows:
        return None
    kept = [f"{r.evaluator}: {r.note}" for r in found.of("spa") if r.statistic == "annotators_kept"]
    title = TABLE.title + ("; " + "; ".join(kept) if kept else "")
    return title, ["System X", "System Y", "evaluator", "P[X≻Y] (SPA)", "Likert Δ", "n"], rows


TABLE = Layout(
    "spa", "SPA (Ethayarajh & Jurafsky Table 1 layout): Holm-corrected * α=.10, ** .05, *** .01", ("spa",), _lay_out
)
SECTION = Section("spa", spa, ("spa",), (TABLE,))

"""Per-rater sections of Chiang & Lee: Table 6 (teacher pairs per writer) and Table 12 (per-teacher means).

- ``table6`` (App. C, Table 6): for each writer (system), Kendall's τ between every pair of human
  raters on that writer's items, and their average over the C(k, 2) pairs -- the paper's number
  (on HANNA relevance: 0.109 / -0.014 / 0.126 for human / GPT-2 / Fusion writers);
- ``table12`` (App. E, Table 12): each human rater's mean rating per system (per attack on the
  title tasks), which shows a rater who rates one attack unlike the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import combinations

import numpy as np

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats import intervals as iv
from tui_rater.stats.records import HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData


def raters(data: ReportData, attributes: Sequence[Attribute]) -> None:
    table6(data, attributes)
    table12(data, attributes)


def table6(data: ReportData, attributes: Sequence[Attribute]) -> None:
    if len(data.humans) < 2:
        return
    pairs = list(combinations(data.humans, 2))
    for attribute in attributes:
        for system in data.systems:
            taus: list[float] = []
            for a, b in pairs:
                x = data.rater_values(a, attribute, system)
                y = data.rater_values(b, attribute, system)
                tau = iv.with_interval(ag.kendall_tau(x, y), partial(iv.kendall_tau, x, y))
                data.add("table6", attribute.name, system, a, "kendall_tau", tau, evaluator_b=b)
                if tau.value is not None:
                    taus.append(tau.value)
            defined = f"{len(taus)} of {len(pairs)} rater pairs"
            data.add(
                "table6",
                attribute.name,
                system,
                HUMANS,
                "mean_pair_tau",
                value=float(np.mean(taus)) if taus else None,
                n=len(taus),
                note=f"mean over {defined}" if taus else f"no τ defined ({defined})",
            )


def table12(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in attributes:
        for rater in data.humans:
            for system in data.systems:
                values = data.rater_values(rater, attribute, system)
                s = ag.summary(values[~np.isnan(values)])
                data.add(
                    "table12",
                    attribute.name,
                    system,
                    rater,
                    "mean",
                    value=s.mean,
                    n=s.n,
                    note="" if s.mean is not None else "no ratings",
                )


def _lay_out_table6(found: Found, who: Who) -> Table | None:
    systems = cells.systems(found, "table6")
    if not systems:
        return None
    rows = []
    attributes = list(dict.fromkeys(r.attribute for r in found.of("table6")))
    pairs = list(dict.fromkeys((r.evaluator, r.evaluator_b) for r in found.of("table6")))
    for attribute in attributes:
        for a, b in pairs:
            label = "mean over pairs" if b is None else f"{a} – {b}"
            statistic = "mean_pair_tau" if b is None else "kendall_tau"
            taus = [cells.value(found.get("table6", attribute, s, a, b, statistic), 3) for s in systems]
            rows.append([attribute, label, *taus])
    rows.sort(key=lambda row: (attributes.index(row[0]), row[1] != "mean over pairs"))
    return TABLE6.title, ["attribute", "raters", *systems], rows


def _lay_out_table12(found: Found, who: Who) -> Table | None:
    systems = cells.systems(found, "table12")
    if not systems:
        return None
    keys = list(dict.fromkeys((r.attribute, r.evaluator) for r in found.of("table12")))
    rows = [
        [attribute, rater, *[cells.value(found.get("table12", attribute, s, rater, None, "mean")) for s in systems]]
        for attribute, rater in keys
    ]
    return TABLE12.title, ["attribute", "rater", *systems], rows


TABLE6 = Layout(
    "table6",
    "Table 6 — Kendall's τ between two human raters per writer, mean over the rater pairs",
    ("table6",),
    _lay_out_table6,
)
TABLE12 = Layout("table12", "Table 12 — each human rater's mean per system", ("table12",), _lay_out_table12)
SECTION = Section("raters", raters, ("table6", "table12"), (TABLE6, TABLE12))  # Table 6 per writer, 12 per rater

"""Sections for nominal answers (a choice; a pairwise A / B / tie): shares, κ and α nominal -- never means.

A tie is not "more than B": answer codes are categories, so no mean, standard deviation, ordinal or
interval α, or rank correlation of the codes is computed (Stevens' levels of measurement). Instead:

- ``nominal`` table: each evaluator's verdict shares per system (and pooled), and the agreement
  among its own annotators (Krippendorff's α nominal, % of items all agree on);
- ``nominal_pairs`` table: Cohen's κ (unweighted), α nominal and % exact agreement between the
  humans' verdict and each judge's, and between every two human raters.

An evaluator's verdict on an item is its annotators' vote (``protocol.aggregate``); a judge's pair
judged in both orders counts as a tie when the orders disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import combinations

import numpy as np

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats import gwet
from tui_rater.stats import intervals as iv
from tui_rater.stats.records import HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData


def nominal(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in attributes:
        for evaluator in data.evaluators():
            for system in data.systems_and_pooled():
                shares(data, attribute, evaluator, system)
                m = data.matrix(evaluator, attribute.name, system)
                points = attribute.scale.points
                alpha = ag.alpha(m, "nominal", points)
                add = partial(data.add, "nominal", attribute.name, system, evaluator)
                add("alpha_nominal", iv.with_interval(alpha, partial(iv.alpha, m, "nominal")))
                add("percent_exact", iv.with_interval(ag.percent_exact(m), partial(iv.percent_exact, m)))
                if points:
                    add("ac1", gwet.with_skew_note(gwet.ac(m, points, "nominal"), alpha, m, "AC1", "α nominal"))
        agreement(data, attribute)


def choice_labels(data: ReportData, attribute: Attribute) -> list[tuple[float, str]]:
    """(stored value, the choice's key as the protocol shows it) for every choice."""
    protocol = data.protocol(attribute)
    return [(value, protocol.format_value(attribute, value)) for value in attribute.scale.points]


def shares(data: ReportData, attribute: Attribute, evaluator: str, system: str) -> None:
    verdicts = data.item_values(evaluator, attribute, system)
    rated = int(np.sum((~np.isnan(data.matrix(evaluator, attribute.name, system))).any(axis=0)))  # rated by any
    decided = verdicts[~np.isnan(verdicts)]
    undecided = rated - decided.size
    note = f"{undecided} rated items without a single verdict (votes tied or an order missing)" if undecided else ""
    for value, key in choice_labels(data, attribute):
        data.add(
            "nominal",
            attribute.name,
            system,
            evaluator,
            f"share_{key}",
            value=float(np.mean(decided == value)) if decided.size else None,
            n=int(decided.size),
            note=note if decided.size else "no verdicts",
        )


def agreement(data: ReportData, attribute: Attribute) -> None:
    """Cohen's κ, α nominal and exact agreement: humans vs each judge, and every two humans (systems pooled)."""
    system = data.overall
    comparisons: list[tuple[str, str, np.ndarray, np.ndarray]] = []
    if data.humans:
        human = data.item_values(HUMANS, attribute, system)
        comparisons += [(HUMANS, judge, human, data.item_values(judge, attribute, system)) for judge in data.judges]
    for a, b in combinations(data.humans, 2):
        comparisons.append((a, b, data.rater_values(a, attribute, system), data.rater_values(b, attribute, system)))
    points = attribute.scale.points
    for a, b, x, y in comparisons:
        both = np.vstack([x, y])
        add = partial(data.add, "nominal_pairs", attribute.name, system, a, evaluator_b=b)
        kappa = iv.with_interval(cohen_kappa(x, y, points), partial(iv.weighted_kappa, x, y, points, "none"))
        add("cohen_kappa", kappa)
        add("alpha_nominal", iv.with_interval(ag.alpha(both, "nominal", points), partial(iv.alpha, both, "nominal")))
        add("exact_agreement", iv.with_interval(ag.exact_agreement(x, y), partial(iv.exact_agreement, x, y)))


def cohen_kappa(x: np.ndarray, y: np.ndarray, points: list[float]) -> ag.Stat:
    """Cohen's (1960) unweighted κ over the choices: every disagreement weighs the same."""
    return ag.weighted_kappa(x, y, points, "none")


def _lay_out_shares(found: Found, who: Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.evaluator, r.system) for r in found.of("nominal")))
    if not keys:
        return None
    rows = []
    for attribute, evaluator, system in keys:
        shares = [
            r
            for r in found.of("nominal")
            if (r.attribute, r.evaluator, r.system) == (attribute, evaluator, system)
            and r.statistic.startswith("share_")
        ]
        cell = "  ".join(f"{r.statistic.removeprefix('share_')} {cells.value(r)}" for r in shares)
        alpha = found.get("nominal", attribute, system, evaluator, None, "alpha_nominal")
        exact = found.get("nominal", attribute, system, evaluator, None, "percent_exact")
        n = shares[0].n if shares else 0
        rows.append(
            [
                attribute,
                who(evaluator, attribute),
                cells.column(system),
                cell,
                cells.value(alpha),
                cells.gwet_value(found.get("nominal", attribute, system, evaluator, None, "ac1")),
                cells.value(exact, 0, "%"),
                str(n),
            ]
        )
    header = ["attribute", "evaluator", "system", "verdict shares", "α nominal", "AC1", "all agree", "items"]
    skewed = any(cells.SKEW_MARK in row[5] for row in rows)
    return SHARES.title + (f" ({cells.SKEW_LEGEND})" if skewed else ""), header, rows


def _lay_out_pairs(found: Found, who: Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.system, r.evaluator, r.evaluator_b) for r in found.of("nominal_pairs")))
    if not keys:
        return None
    rows = []
    for attribute, system, a, b in keys:
        kappa = found.get("nominal_pairs", attribute, system, a, b, "cohen_kappa")
        alpha = found.get("nominal_pairs", attribute, system, a, b, "alpha_nominal")
        exact = found.get("nominal_pairs", attribute, system, a, b, "exact_agreement")
        n = exact.n if exact else 0
        rows.append(
            [
                attribute,
                who(a, attribute),
                who(b, attribute),
                cells.value(kappa, 3),
                cells.value(alpha, 3),
                cells.value(exact, 0, "%"),
                str(n),
            ]
        )
    return PAIRS.title, ["attribute", "rater", "rater", "κ", "α nominal", "exact", "n"], rows


SHARES = Layout(
    "nominal",
    "Verdict shares and agreement among each evaluator's annotators (α nominal, Gwet's AC1, % all agree)",
    ("nominal",),
    _lay_out_shares,
)
PAIRS = Layout(
    "nominal_pairs",
    "Agreement on nominal answers — Cohen's κ (unweighted), α nominal, % exact",
    ("nominal_pairs",),
    _lay_out_pairs,
)
SECTION = Section("nominal", nominal, ("nominal", "nominal_pairs"), (SHARES, PAIRS))

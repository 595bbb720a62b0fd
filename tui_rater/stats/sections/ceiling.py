"""Section ``ceiling``: each judge figure beside the same figure for a held-out person against the rest
(``stats/ceiling.py``; issue 33 item 2), on every scored question at least 2 persons rated:

- ``ceiling``: per question, Kendall's τ-b, Spearman's ρ and Pearson's r of each judge against the persons'
  mean (as Table 2), of each person against the mean of the others (``evaluator`` the person), and their spread
  over persons (``<figure>_people_low`` / ``_median`` / ``_high``, ``n`` = persons with a figure);
- ``ceiling_by_agreement``: the same τ on the items where the persons agree most, middling and least (equal
  thirds by the spread of their ratings): ``kendall_tau_<third>_agreement`` for each judge and
  ``kendall_tau_<third>_agreement_people_low`` / ``_median`` / ``_high``.

Nominal questions have no τ; their judges are compared in the verdict and nominal tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from tui_rater.domain.protocols import Level
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import ceiling as cl
from tui_rater.stats.records import HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Runs, Section, Table, Who
from tui_rater.stats.sections.data import ReportData

HELD_OUT = "held out: this person against the mean of the other persons, on the items both rated"
STRATIFIED = "kendall_tau"


def ceiling(data: ReportData, attributes: Sequence[Attribute]) -> None:
    system = data.overall
    for attribute in attributes:
        if data.protocol(attribute).level is Level.NOMINAL or len(data.humans) < 2:
            continue
        persons = {h: data.rater_values(h, attribute, system) for h in data.humans}
        persons = {h: v for h, v in persons.items() if np.any(~np.isnan(v))}
        if len(persons) < 2:
            continue
        group = data.item_values(HUMANS, attribute, system)
        judges = {j: data.item_values(j, attribute, system) for j in data.judges}
        judges = {j: v for j, v in judges.items() if np.any(~np.isnan(v))}
        add = partial(data.add, "ceiling", attribute.name, system)
        for figure, compute in cl.FIGURES.items():
            for judge, values in judges.items():
                add(judge, figure, compute(group, values))
            found = cl.leave_one_person_out(persons, figure)
            for person, stat in found.persons.items():
                add(person, figure, stat, note=HELD_OUT)
            _spread(add, figure, found)
        _by_agreement(data, attribute, persons, group, judges)


def _spread(add: partial[None], statistic: str, found: cl.Ceiling) -> None:
    for end in ("low", "median", "high"):
        value = getattr(found, end)
        add(HUMANS, f"{statistic}_people_{end}", value=value, n=found.counted, note=found.note or HELD_OUT)


def _by_agreement(
    data: ReportData,
    attribute: Attribute,
    persons: dict[str, np.ndarray],
    group: np.ndarray,
    judges: dict[str, np.ndarray],
) -> None:
    thirds = cl.agreement_thirds(persons)
    add = partial(data.add, "ceiling_by_agreement", attribute.name, data.overall)
    compute = cl.POINT_FIGURES[STRATIFIED]
    for third in cl.THIRDS:
        inside = thirds == third
        statistic = f"{STRATIFIED}_{third}_agreement"
        for judge, values in judges.items():
            add(judge, statistic, compute(np.where(inside, group, np.nan), np.where(inside, values, np.nan)))
        shown = {h: np.where(inside, v, np.nan) for h, v in persons.items()}
        # each held-out person against the rest *on this third's items*: the rest's mean uses the same items
        _spread(add, statistic, cl.leave_one_person_out(shown, STRATIFIED, intervals=False))


# --- layout --------------------------------------------------------------------------------

LABELS = {"kendall_tau": "τ", "spearman": "ρ", "pearson": "r"}


def _people(found: Found, table: str, attribute: str, statistic: str) -> str:
    ends = {
        r.statistic.rsplit("_", 1)[1]: r
        for r in found.of(table)
        if r.attribute == attribute and r.evaluator == HUMANS and r.statistic.startswith(f"{statistic}_people_")
    }
    low, median, high = (ends.get(e) for e in ("low", "median", "high"))
    if low is None or low.value is None or high is None or median is None:
        return "n/a"
    return f"{cells.value(low)}–{cells.value(high)} (median {cells.value(median)}, {low.n} persons)"


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = []
    for r in found.of("ceiling"):
        if r.statistic not in cl.FIGURES or r.evaluator == HUMANS or r.note.startswith("held out"):
            continue
        people = _people(found, "ceiling", r.attribute, r.statistic)
        rows.append([r.attribute, who(r.evaluator, r.attribute), LABELS[r.statistic], cells.value(r), people])
    return (CEILING.title, ["attribute", "judge", "figure", "judge", "people (held out)"], rows) if rows else None


def _lay_out_strata(found: Found, who: Who) -> Table | None:
    rows = []
    for r in found.of("ceiling_by_agreement"):
        if r.evaluator == HUMANS:
            continue
        third = r.statistic.removeprefix(f"{STRATIFIED}_").removesuffix("_agreement")
        people = _people(found, "ceiling_by_agreement", r.attribute, r.statistic)
        rows.append([r.attribute, who(r.evaluator, r.attribute), third, str(r.n), cells.value(r), people])
    if not rows:
        return None
    return STRATA.title, ["attribute", "judge", "agreement", "n", "judge τ", "people τ (held out)"], rows


CEILING = Layout(
    "ceiling",
    "The people's own ceiling: each judge figure against the persons' mean, beside the same figure for each "
    "person held out against the rest (lowest–highest over persons)",
    ("ceiling",),
    _lay_out,
)
STRATA = Layout(
    "ceiling_by_agreement",
    "Kendall's τ by how much the persons agree on an item (equal thirds by the spread of their ratings)",
    ("ceiling_by_agreement",),
    _lay_out_strata,
)
SECTION = Section("ceiling", ceiling, ("ceiling", "ceiling_by_agreement"), (CEILING, STRATA), Runs.JUDGED)

"""The alt-test's inputs as the report's own columns, scored once per question and judge and shared by the verdict
(``sections/verdict.py``), its convergence curve (``sections/converging.py``) and the anytime-valid curve
(``sections/watched.py``): the items x people matrix comes from ``ReportData.rater_values`` (no dict per person),
and each judge's W^f, W^h from ``alt_columns.scored`` (issue 35 item 2: they were scored 7 times per question and
judge, from dicts built item by item)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import alt_columns as ac
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections.data import ReportData

Floats = ac.Floats


def too_few_humans(count: int) -> str:
    """Why no alt-test can run (fewer than 3 human raters at all), or '' when it may."""
    if count >= at.MIN_HUMANS:
        return ""
    return (
        f"{count} human rater{'s' if count != 1 else ''} rated this question; the alt-test needs at "
        f"least {at.MIN_HUMANS} on the same items"
    )


def level_of(data: ReportData, attribute: Attribute) -> str:
    return data.protocol(attribute).level.value


def people(data: ReportData, attribute: Attribute) -> tuple[list[str], Floats, str]:
    """(the people who rated the question, their items x people matrix over ``data.keys(ALL)`` with NaN where
    unrated, why no alt-test can run or ''): the people ``verdict.verdict_humans`` gives, in its order."""
    cache: dict[str, tuple[list[str], Floats, str]] = data.extra.setdefault("alt_people", {})
    key = attribute.name
    if key not in cache:
        keys = data.keys(ALL)
        if len(data.humans) < at.MIN_HUMANS:
            # as ``verdict.verdict_humans``: a solo rater's study says how many rated, no ratings gathered
            reason = too_few_humans(data.matrix(HUMANS, attribute.name, ALL).shape[0])
            cache[key] = ([], np.empty((len(keys), 0)), reason)
        else:
            columns = [data.rater_values(human, attribute, ALL) for human in data.humans]
            kept = [k for k, column in enumerate(columns) if not np.all(np.isnan(column))]
            matrix = np.column_stack([columns[k] for k in kept]) if kept else np.empty((len(keys), 0))
            cache[key] = ([data.humans[k] for k in kept], matrix, too_few_humans(len(kept)))
    return cache[key]


def scoring(data: ReportData, attribute: Attribute) -> str:
    return at.SCORING_FOR_LEVEL[level_of(data, attribute)]


def scored(data: ReportData, attribute: Attribute, judge: str) -> ac.Scored:
    """The judge's W^f and W^h against the people on the question (call where ``people`` gives no reason)."""
    cache: dict[tuple[str, str], ac.Scored] = data.extra.setdefault("alt_scored", {})
    key = (attribute.name, judge)
    if key not in cache:
        names, matrix, _ = people(data, attribute)
        judged = data.item_values(judge, attribute, ALL)
        cache[key] = ac.scored(data.keys(ALL), names, matrix, judged, scoring(data, attribute))
    return cache[key]


def judged_order(data: ReportData, attribute: Attribute, judge: str, order: Sequence[Hashable]) -> tuple[int, Floats]:
    """(how many items of ``order`` the judge rated, each test row's place among them: inf where not there):
    the curves' n counts the items both rated, in the order their human ratings were completed."""
    keys = data.keys(ALL)
    judged = data.item_values(judge, attribute, ALL)
    wanted = np.asarray(order, dtype=np.int64)  # the report's item keys
    at_key = np.searchsorted(keys, wanted)
    at_key = at_key[(at_key < len(keys)) & (keys[np.minimum(at_key, len(keys) - 1)] == wanted)]
    at_key = at_key[~np.isnan(judged[at_key])]
    rank = np.full(len(keys), math.inf)
    rank[at_key[::-1]] = np.arange(len(at_key), dtype=float)[::-1]  # an item's first place, as ``alt_columns.ranks``
    found = scored(data, attribute, judge)
    return len(at_key), rank[found.positions]

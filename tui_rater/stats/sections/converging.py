"""Section ``convergence``: how the alt-test verdict and the bias-corrected system means settle as human
ratings arrive (``stats/convergence.py``, docs/VERDICT.md §4). A curve that still moves at its right end
means: rate more before deciding.

The items are taken in the order their human ratings were completed (the id of the latest human rating
of the item and question in force), and both statistics are recomputed on the first n of them for about
20 values of n (``default_sizes``; 12 from 30 items on for the verdict, each the alt-test's indicators, scored
once for the verdict (``sections/alt_data.py``), masked to the first n items):

- ``verdict_convergence``: per question and judge, ω, ρ and the verdict at each n (at least 3 humans);
- ``ppi_convergence``: per question (ordinal or interval), judge and system, the prediction-powered mean
  and the human-only mean with their intervals at each n.

Each record's ``n`` is the number of rated items the point is computed on.

Reading a curve point by point is peeking: the fixed-n figures (``winning_rate``, ``verdict``, ``ppi_ci_*``,
``classical_ci_*``) are for the analysis at the end. Beside them, figures valid at every point at once
(issue 33 item 3; ``stats/sequential.py``, docs/VERDICT.md §7): ``anytime_winning_rate`` and ``anytime_verdict``
(the alt-test by e-values and e-BH) and the 95 % confidence sequences ``ppi_cs_low`` / ``ppi_cs_high`` and
``classical_cs_low`` / ``classical_cs_high``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import partial

import numpy as np
import polars as pl

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import convergence as cv
from tui_rater.stats import ppi as pp
from tui_rater.stats import sequential as sq
from tui_rater.stats.records import ALL, HUMANS, Record
from tui_rater.stats.sections import alt_data, cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.bias_corrected import CONFIDENCE, inclusion, scored
from tui_rater.stats.sections.data import ReportData
from tui_rater.stats.sections.settings import FDR
from tui_rater.stats.sections.verdict import rated
from tui_rater.stats.sections.watched import mean_sequence, rated_in_order, verdict_curve_of

ANYTIME_VERDICT = "anytime-valid: e-values per person, e-BH (valid at every point of the curve at once)"
ANYTIME_MEAN = "anytime-valid 95 % confidence sequence (betting; valid at every point of the curve at once)"
VERDICT_POINTS = 12
SETTLED_POINTS = 3  # points of the verdict curve, from ⅔ of the rated items on, that must agree


def rating_order(data: ReportData) -> dict[str, list[int]]:
    """question -> its human-rated item keys, in the order their human ratings were completed."""
    if "rating_order" not in data.extra:
        last = (
            # the three columns it needs, then the people's rows: a copy of every column of their 1.2M rows was a
            # 100k study's report's peak memory (issue 35)
            data.frame.select("kind", "attribute", "item_key", "rating_id")
            .filter(pl.col("kind") == "human")
            .group_by("attribute", "item_key")
            .agg(pl.col("rating_id").max())
            .sort("rating_id")
        )
        # each question's keys as one list (the rows' order kept within a group), not a Python loop over the rows
        grouped = last.group_by("attribute", maintain_order=True).agg(pl.col("item_key"))
        order: dict[str, list[int]] = dict(zip(grouped["attribute"].to_list(), grouped["item_key"].to_list()))
        data.extra["rating_order"] = order
    found: dict[str, list[int]] = data.extra["rating_order"]
    return found


def verdict_sizes(total: int) -> list[int]:
    """Where the verdict curve is computed: no human is tested on fewer than 30 items, so the curve starts
    there; 12 points (each a t-test per human on the indicators masked to the prefix)."""
    return cv.default_sizes(total, points=VERDICT_POINTS, smallest=at.MIN_ITEMS_PER_HUMAN)


def convergence(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in attributes:
        _verdict_curve(data, attribute)
    for attribute in scored(data, attributes):
        _ppi_curves(data, attribute)


def _verdict_curve(data: ReportData, attribute: Attribute) -> None:
    _, _, reason = alt_data.people(data, attribute)
    for judge in data.judges:
        add = partial(data.add, "verdict_convergence", attribute.name, ALL, judge)
        if reason:
            if rated(data, judge, attribute):
                add("winning_rate", value=None, note=reason)
            continue
        if not rated(data, judge, attribute):
            continue
        # the items the judge rated too: n counts items both rated (a judge of 32 items ran to n = 96); each
        # prefix is a mask over the indicators the verdict scored (``alt_data``), not a new alt-test
        length, rank = alt_data.judged_order(data, attribute, judge, rating_order(data).get(attribute.name, []))
        found = alt_data.scored(data, attribute, judge)
        sizes = verdict_sizes(length)
        points = cv.alt_test_prefixes(
            found,
            rank,
            length,
            sizes,
            scoring=alt_data.scoring(data, attribute),
            epsilon=data.settings.verdict.eps,
            alpha=FDR,
        )
        watched = dict(verdict_curve_of(data, attribute, judge, rank, length, sizes))
        for point in points:
            add("winning_rate", value=point.winning_rate, n=point.rated, note=point.note)
            add("advantage_probability", value=point.advantage_probability, n=point.rated, note=point.note)
            passed = None if point.passed is None else float(point.passed)
            add("verdict", value=passed, n=point.rated, note=point.note)
            anytime = watched.get(point.rated)
            if anytime is not None:
                note = anytime.note or ANYTIME_VERDICT
                add("anytime_winning_rate", value=anytime.winning_rate, n=point.rated, note=note)
                passed = None if anytime.passed is None else float(anytime.passed)
                add("anytime_verdict", value=passed, n=point.rated, note=note)
        value, caveat = settled(points)
        if points:
            data.add(
                "verdict", attribute.name, ALL, judge, "verdict_settled", value=value, n=points[-1].rated, note=caveat
            )


def settled(points: Sequence[cv.AltTestPoint]) -> tuple[float | None, str]:
    """Has the verdict settled? 1.0 when it is the same at every point of the curve's last third (n from ⅔ of
    the rated items on, at least SETTLED_POINTS points), 0.0 when it changes there, None when the curve has
    too few points to tell; and the caveat the verdict row shows (or '')."""
    if not points:
        return None, ""
    total = points[-1].rated
    tail = [p for p in points if p.rated >= 2 * total / 3 and p.passed is not None]
    if len(tail) < SETTLED_POINTS:
        return None, (
            f"with {total} rated items the verdict cannot yet be seen to settle (its curve needs "
            f"{SETTLED_POINTS} points from ⅔ of the items on): rate more items before relying on it"
        )
    if len({p.passed for p in tail}) == 1:
        return 1.0, ""
    moves = " → ".join(f"{p.rated}: {p.winning_rate:.2f}" for p in tail if p.winning_rate is not None)
    return 0.0, (
        f"the verdict has not settled: it changes over the last third of the rated items (ω at n {moves}); "
        "rate more items before relying on it"
    )


def _ppi_curves(data: ReportData, attribute: Attribute) -> None:
    order = rating_order(data).get(attribute.name, [])
    for judge in data.judges:
        for system in data.systems:
            f = data.item_values(judge, attribute, system)
            if np.all(np.isnan(f)):
                continue
            add = partial(data.add, "ppi_convergence", attribute.name, system, judge)
            if inclusion(data, attribute) is not None:
                # with active sampling each prefix has its own π (the budget changes): not recorded here
                add("ppi_mean", value=None, note="not computed for weighted (active) samples")
                continue
            y = data.item_values(HUMANS, attribute, system) if data.humans else np.full(f.shape, np.nan)
            # items the judge rated too (PPI leaves the others out): n counts items both rated
            mine = rated_in_order(data, attribute, judge, system, order)
            if not mine.size:
                add("ppi_mean", value=None, note="no human ratings of this system yet")
                continue
            rank = np.full(f.shape, math.inf)
            rank[mine[::-1]] = np.arange(mine.size, dtype=float)[::-1]  # an item's first place in the order
            watched = mean_sequence(data, attribute, judge, system, order)
            for point in cv.ppi_prefixes(f, y, rank, mine.size, confidence=CONFIDENCE):
                _point(add, point)
                _watched_point(add, watched.sequence, point.rated, watched.note)


def _watched_point(add: partial[None], sequence: sq.PpiSequence | None, rated: int, note: str) -> None:
    """The confidence sequences where the curve has a point (the sequence has one after every rated item)."""
    found = {} if sequence is None else {"ppi": sequence.ppi, "classical": sequence.humans}
    for prefix in ("ppi", "classical"):
        bounds = found.get(prefix)
        if bounds is None or not 0 < rated <= bounds.low.size:
            for side in ("low", "high"):
                add(f"{prefix}_cs_{side}", value=None, n=rated, note=note or "no confidence sequence")
            continue
        add(f"{prefix}_cs_low", value=float(bounds.low[rated - 1]), n=rated, note=ANYTIME_MEAN)
        add(f"{prefix}_cs_high", value=float(bounds.high[rated - 1]), n=rated, note=ANYTIME_MEAN)


def _point(add: partial[None], point: cv.PpiPoint) -> None:
    for prefix, interval in (("ppi", point.estimate), ("classical", point.classical)):
        _bounds(add, prefix, interval, point.rated)


def _bounds(add: partial[None], prefix: str, interval: pp.Interval, rated: int) -> None:
    add(f"{prefix}_mean", value=interval.estimate, n=rated, note=interval.note)
    add(f"{prefix}_ci_low", value=interval.ci_low, n=rated, note=interval.note)
    add(f"{prefix}_ci_high", value=interval.ci_high, n=rated, note=interval.note)


# --- layout --------------------------------------------------------------------------------

CURVE_POINTS = 5  # points of a convergence curve shown in a text table (all of them are in JSON / HTML)


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = []
    for table, statistic, label in (
        ("verdict_convergence", "winning_rate", "ω fixed-n"),
        ("verdict_convergence", "anytime_winning_rate", "ω anytime"),
        ("ppi_convergence", "ppi_mean", "PPI mean"),
        ("ppi_convergence", "ppi_cs_low", "PPI anytime CS"),
    ):
        for attribute, judge, system in found.keys(table, "attribute", "evaluator", "system"):
            points = [
                r
                for r in found.of(table)
                if r.statistic == statistic and (r.attribute, r.evaluator, r.system) == (attribute, judge, system)
            ]
            if not points:
                continue
            if statistic == "ppi_cs_low":
                key = (attribute, judge, system)
                highs = [
                    r
                    for r in found.of(table)
                    if r.statistic == "ppi_cs_high" and (r.attribute, r.evaluator, r.system) == key
                ]
                rows.append([attribute, who(judge, attribute), system, label, _bounds_curve(points, highs)])
                continue
            rows.append([attribute, who(judge, attribute), system, label, _curve(points)])
    if not rows:
        return None
    return CURVES.title, ["attribute", "judge", "system", "statistic", "curve (n: value)"], rows


def _bounds_curve(lows: list[Record], highs: list[Record]) -> str:
    pairs = list(zip(lows, highs))
    if all(low.value is None for low, _ in pairs):
        return f"n/a: {lows[0].note}" if lows else ""
    shown = [(low, high) for low, high in pairs if low.value is not None and high.value is not None]
    if len(shown) > CURVE_POINTS:
        step = (len(shown) - 1) / (CURVE_POINTS - 1)
        shown = [shown[round(i * step)] for i in range(CURVE_POINTS)]
    return " → ".join(f"{low.n}: {cells.value(low)}–{cells.value(high)}" for low, high in shown)


def _curve(points: list[Record]) -> str:
    if len(points) == 1 and points[0].value is None:
        return f"n/a: {points[0].note}"
    shown = points
    if len(points) > CURVE_POINTS:  # evenly spaced, the first and the last kept
        step = (len(points) - 1) / (CURVE_POINTS - 1)
        shown = [points[round(i * step)] for i in range(CURVE_POINTS)]
    return " → ".join(f"{p.n}: {cells.value(p)}" for p in shown)


CURVES = Layout(
    "convergence",
    "Convergence as human ratings arrive (items in the order their ratings were completed; n = rated items; "
    "fixed-n: read once, at the end; anytime: valid at every point)",
    ("verdict_convergence", "ppi_convergence"),
    _lay_out,
)
# both as human ratings arrive; whether the verdict has settled is a caveat of the verdict table
SECTION = Section("convergence", convergence, ("verdict_convergence", "ppi_convergence", "verdict"), (CURVES,))

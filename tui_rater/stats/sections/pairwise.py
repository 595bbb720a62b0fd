"""Sections for a pairwise comparison judged in both orders (Chen et al. §2.2, App. B-C).

Stored verdicts are in the item's terms: 0 = the first compared text is better, 1 = the second,
2 = a tie (``PairwiseComparison.canonical``). They are categories; these sections never average them.

- ``position``: per judge, how often the first-shown text wins, how often both orders agree, and the
  final verdicts with inconsistent orders counted as ties (MT-Bench's rule); a judge's samples of
  one order are voted first (pairwise V4: five samples);
- ``bt``: Bradley-Terry abilities from the preferences, where items name their systems "X vs Y";
- ``pair_meta``: Chen et al.'s meta-evaluation of a comparison (Tables 5-8): Kendall's τ-b (App. C)
  between the judge's verdict and the human score difference of the pair, over all pairs and split
  into hard / medium / easy by the size of that difference (§4.2).

The human score difference of a pair comes from the humans' own verdicts on it: +1 for the first
text, -1 for the second, 0 for a tie, averaged over the humans who compared the pair.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import partial

import numpy as np

from tui_rater.domain.protocols import FIRST, ORIGINAL, SECOND, SWAPPED, TIE
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import bias as card
from tui_rater.stats import systems as st
from tui_rater.stats.agreement import Stat
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData

# a verdict as a score difference "first minus second" (Chen et al. App. C's s1 vs s2)
PREFERENCE = {FIRST: 1.0, SECOND: -1.0, TIE: 0.0}
_VERSUS = re.compile(r"^\s*(.+?)\s+(?:vs\.?|\|)\s+(.+?)\s*$")


def preference(verdicts: np.ndarray) -> np.ndarray:
    """Verdict codes -> +1 / -1 / 0 (NaN stays NaN)."""
    out = np.full(len(verdicts), np.nan)
    for code, sign in PREFERENCE.items():
        out[verdicts == code] = sign
    return out


def compared_systems(system: str) -> tuple[str, str] | None:
    """The two systems an item "X vs Y" compares (X wrote the first compared text), or None."""
    match = _VERSUS.match(system)
    return (match.group(1), match.group(2)) if match else None


def position(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in attributes:
        for judge in data.judges:
            orders = data.presentation_values(judge, attribute, ALL)
            original, swapped = orders.get(ORIGINAL), orders.get(SWAPPED)
            if original is None and swapped is None:
                continue
            width = len(data.keys(ALL))
            original = original if original is not None else np.full(width, np.nan)
            swapped = swapped if swapped is not None else np.full(width, np.nan)
            judgements = [(_code(o), _code(s)) for o, s in zip(original, swapped) if not (np.isnan(o) and np.isnan(s))]
            bias = st.position_bias(judgements)

            add = partial(data.add, "position", attribute.name, data.overall, judge, n=bias.pairs)
            # the same ratios with their intervals over the pairs (stats/bias.py); shown in the bias card
            counts = card.order_counts(original, swapped)
            first = card.ratio(counts.first, counts.decisive)
            add(
                "first_position_rate",
                _with_interval(first, bias.pairs),
                note="" if bias.first_position_rate is not None else "no decisive verdicts",
            )
            add(
                "order_consistency",
                _with_interval(card.ratio(counts.consistent, counts.complete), bias.pairs),
                note="" if bias.consistent_rate is not None else "no pair judged in both orders",
            )
            for verdict, count in bias.verdicts.items():
                add(f"final_{verdict}", value=float(count), note="inconsistent orders count as ties")


def _with_interval(estimate: card.Estimate, pairs: int) -> Stat:
    interval = estimate.interval
    extra = {"ci_low": interval.low, "ci_high": interval.high, "ci": interval.method}
    return Stat(estimate.value, pairs, "", None, extra)


def _code(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def bt(data: ReportData, attributes: Sequence[Attribute]) -> None:
    """Bradley-Terry log-abilities (Hunter's MM) per evaluator and pooled (``all``).

    Each human's verdict on a pair is one comparison; a judge's final verdict on a pair is one.
    """
    versus = {}
    for item in data.study.items(data.task.name):
        match = _VERSUS.match(item.system or "")
        if match:
            versus[item.key] = match.groups()
    if not versus:
        return
    names = sorted({s for pair in versus.values() for s in pair})
    index = {s: i for i, s in enumerate(names)}
    keys = data.keys(ALL)
    for attribute in attributes:
        wins: dict[str, np.ndarray] = {}
        voices = [(HUMANS, data.rater_values(h, attribute, ALL)) for h in data.humans]
        voices += [(judge, data.item_values(judge, attribute, ALL)) for judge in data.judges]
        for evaluator, verdicts in voices:
            for item_key, verdict in zip(keys, verdicts):
                if np.isnan(verdict) or int(item_key) not in versus:
                    continue
                a, b = (index[s] for s in versus[int(item_key)])
                for who in (evaluator, ALL):
                    _count(wins.setdefault(who, np.zeros((len(names), len(names)))), a, b, verdict)
        for evaluator, m in wins.items():
            result = st.bradley_terry(m, names)
            for system, strength in zip(result.systems, result.log_strength):
                data.add(
                    "bt",
                    attribute.name,
                    system,
                    evaluator,
                    "bt_log_strength",
                    value=strength,
                    n=int(m.sum()),
                    note=f"relative to {names[0]}" + ("" if result.converged else "; did not converge"),
                )


def _count(m: np.ndarray, a: int, b: int, verdict: float) -> None:
    if verdict == FIRST:
        m[a, b] += 1
    elif verdict == SECOND:
        m[b, a] += 1
    else:  # a tie: half a win each
        m[a, b] += 0.5
        m[b, a] += 0.5


def human_difference(data: ReportData, attribute: Attribute) -> np.ndarray:
    """Per pair: the humans' verdicts as +1 / -1 / 0, averaged over the humans who compared it."""
    votes = [preference(data.rater_values(h, attribute, ALL)) for h in data.humans]
    if not votes:
        return np.full(len(data.keys(ALL)), np.nan)
    stack = np.vstack(votes)
    counts = np.sum(~np.isnan(stack), axis=0)
    with np.errstate(all="ignore"):
        return np.where(counts > 0, np.nansum(stack, axis=0) / np.maximum(counts, 1), np.nan)


def _undefined(tau: float | None, n: int) -> str:
    if tau is not None:
        return ""
    return "no pairs" if n == 0 else "undefined: no pair is ordered by both the humans and the judge"


def pair_meta(data: ReportData, attributes: Sequence[Attribute]) -> None:
    if not data.humans:
        return
    for attribute in attributes:
        human = human_difference(data, attribute)
        for judge in data.judges:
            metric = preference(data.item_values(judge, attribute, ALL))
            keep = ~(np.isnan(human) | np.isnan(metric))
            _, (low, high) = st.difficulty_split(human[keep])
            cuts = f"human preference size: hard ≤ {low:.2f} < medium ≤ {high:.2f} < easy" if keep.any() else ""
            for difficulty, (tau, n) in st.pair_tau_b_by_difficulty(human[keep], metric[keep]).items():
                data.add(
                    "pair_meta",
                    attribute.name,
                    data.overall,
                    HUMANS,
                    f"pair_tau_b_{difficulty}",
                    value=tau,
                    n=n,
                    evaluator_b=judge,
                    note="; ".join(x for x in (_undefined(tau, n), cuts) if x),
                )
            if not keep.any():
                data.add(
                    "pair_meta",
                    attribute.name,
                    data.overall,
                    HUMANS,
                    "pair_tau_b_all",
                    value=None,
                    n=0,
                    evaluator_b=judge,
                    note="no pair with both a human and a judge verdict",
                )


def _lay_out_position(found: Found, who: Who) -> Table | None:
    rows = [
        [
            r.attribute,
            who(r.evaluator, r.attribute),
            r.statistic,
            f"{r.value:g}" if r.statistic.startswith("final_") and r.value is not None else cells.value(r),
            str(r.n),
        ]
        for r in found.of("position")
        if r.statistic.startswith("final_")  # the rates are in the bias card, with their intervals
    ]
    return (POSITION.title, ["attribute", "judge", "statistic", "value", "pairs"], rows) if rows else None


def _lay_out_bt(found: Found, who: Who) -> Table | None:
    rows = [
        [r.attribute, who(r.evaluator, r.attribute), r.system, cells.value(r, 3), str(r.n), r.note]
        for r in found.of("bt")
    ]
    header = ["attribute", "evaluator", "system", "log-strength", "comparisons", "note"]
    return (BT.title, header, rows) if rows else None


def _lay_out_pair_meta(found: Found, who: Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.system, r.evaluator_b) for r in found.of("pair_meta")))
    if not keys:
        return None
    rows = []
    for attribute, system, judge in keys:
        shown, cuts = [], ""
        for difficulty in ("hard", "medium", "easy", "all"):
            r = found.get("pair_meta", attribute, system, HUMANS, judge, f"pair_tau_b_{difficulty}")
            shown.append("n/a" if r is None else f"{cells.value(r, 3)} ({r.n})")
            parts = r.note.split("; ") if r is not None else []
            cuts = cuts or next((part for part in parts if part.startswith("human preference size")), "")
        rows.append([attribute, who(judge, attribute), *shown, cuts])
    header = ["attribute", "judge", "hard", "medium", "easy", "all", "difficulty: size of the humans' preference"]
    return PAIR_META.title, header, rows


POSITION = Layout(
    "position",
    "Pairwise judgements in both orders: final verdicts, inconsistent orders counted as ties (position bias "
    "and order consistency: the bias card)",
    ("position",),
    _lay_out_position,
)
BT = Layout("bt", "Bradley–Terry abilities (MM) from all pairwise preferences", ("bt",), _lay_out_bt)
PAIR_META = Layout(
    "pair_meta",
    "Pairwise meta-evaluation (Chen et al. Tables 5–8): Kendall's τ-b of the judge's verdicts against "
    "the humans' preference, by difficulty",
    ("pair_meta",),
    _lay_out_pair_meta,
)
SECTIONS = (
    Section("position", position, ("position",), (POSITION,)),
    Section("bt", bt, ("bt",), (BT,)),
    Section("pair_meta", pair_meta, ("pair_meta",), (PAIR_META,)),
)

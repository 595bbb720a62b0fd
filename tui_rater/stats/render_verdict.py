"""Text tables of the verdict sections (``verdict``, ``ppi``, ``convergence``): one compact table each.
No statistics here; the layout is shared by the Rich, Markdown and HTML renderers (``render.tables``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from tui_rater.stats.records import ALL, Record
from tui_rater.stats.sections.bias_corrected import UNIFORM, WEIGHTED

Table = tuple[str, list[str], list[list[str]]]
Index = dict[tuple[Any, ...], Record]
Who = Callable[[str | None, str], str]

TITLES = {
    "verdict": (
        "Can the judge replace the humans? Alternative annotator test (Calderon et al. 2025): ω = share of "
        "humans the judge beats (one-sided paired t-test with margin ε, Benjamini–Yekutieli), verdict: may "
        "replace when ω ≥ 0.5; ρ = average advantage probability, which ranks judges"
    ),
    "verdict_across": (
        "Alternative annotator test across questions: Benjamini–Yekutieli over every question's p-values together"
    ),
    "ppi": (
        "Bias-corrected system means (prediction-powered inference, Angelopoulos et al. 2023): judge on every "
        "item + mean (human − judge) on the rated ones, 95% intervals, the humans-only mean beside it"
    ),
    "ppi_diff": "Differences between systems, prediction-powered (95% intervals), the humans-only difference beside",
    "convergence": (
        "Convergence as human ratings arrive (items in the order their ratings were completed; n = rated items)"
    ),
}
CURVE_POINTS = 5  # points of a convergence curve shown in a text table (all of them are in JSON / HTML)


def _v(record: Record | None, digits: int = 2) -> str:
    return "n/a" if record is None or record.value is None else f"{record.value:.{digits}f}"


def _keys(records: list[Record], table: str, *fields: str) -> list[tuple[Any, ...]]:
    return list(dict.fromkeys(tuple(getattr(r, f) for f in fields) for r in records if r.table == table))


def verdict(records: list[Record], by: Index, who: Who) -> Table | None:
    keys = _keys(records, "verdict", "attribute", "evaluator")
    if not keys:
        return None
    rows, epsilons = [], {}
    for attribute, judge in keys:
        get = partial(_get, by, "verdict", attribute, judge)
        eps = get("epsilon")
        if eps is not None:
            epsilons[eps.note] = True
        said = get("verdict")
        if said is None or said.value is None:
            cell = "n/a"
        else:
            cell = "yes: may replace" if said.value == 1 else "no"
        rank = get("rank")
        humans = [
            r.evaluator_b
            for r in records
            if r.table == "verdict"
            and (r.attribute, r.evaluator) == (attribute, judge)
            and r.statistic == "wins"
            and r.evaluator_b is not None
        ]
        per_human = "  ".join(_human(get, human) for human in humans)
        rho = f"{_v(get('advantage_probability'), 3)}" + (f" (#{rank.value:g})" if rank and rank.value else "")
        reason = said.note if said is not None and said.value is None else ""
        tested = get("winning_rate")
        rows.append(
            [
                attribute,
                who(judge, attribute),
                _v(tested),
                cell,
                "; ".join(caveats(by, attribute, judge)) or "none",
                rho,
                str(tested.n) if tested else "0",
                per_human or "",
                reason,
            ]
        )
    title = TITLES["verdict"] + ("; " + "; ".join(epsilons) if epsilons else "")
    header = [
        "attribute",
        "judge",
        "ω",
        "verdict",
        "caveats",
        "ρ (rank)",
        "humans",
        "per human: BY-adjusted p, ✓ judge wins",
        "note",
    ]
    return title, header, rows


CAVEATS = ("caveat_human_agreement", "verdict_settled")  # the verdict records whose note is a caveat


def caveats(by: Index, attribute: str, judge: str) -> list[str]:
    """What the verdict row must be read with (the humans barely agree; the verdict has not settled), as
    ``sections/verdict.py`` and ``sections/converging.py`` wrote it: '⚠ ' and the reason, each."""
    found = [_get(by, "verdict", attribute, judge, statistic) for statistic in CAVEATS]
    return [f"⚠ {record.note}" for record in found if record is not None and record.note]


def _get(by: Index, table: str, attribute: str, judge: str, statistic: str, human: str | None = None) -> Record | None:
    return by.get((table, attribute, ALL, judge, human, statistic))


def _human(get: Callable[..., Record | None], human: str) -> str:
    wins, adjusted = get("wins", human), get("p_adjusted", human)
    if wins is None or wins.value is None:
        return f"{human} –"
    return f"{human} {_v(adjusted, 3)}{'✓' if wins.value == 1 else '✗'}"


def verdict_across(records: list[Record], by: Index, who: Who) -> Table | None:
    keys = _keys(records, "verdict_across", "attribute", "evaluator")
    if not keys:
        return None
    rows = []
    for attribute, judge in keys:
        said = by.get(("verdict_across", attribute, ALL, judge, None, "verdict"))
        cell = "n/a" if said is None or said.value is None else "yes" if said.value == 1 else "no"
        rows.append(
            [
                attribute,
                who(judge, attribute),
                _v(by.get(("verdict_across", attribute, ALL, judge, None, "winning_rate"))),
                cell,
                _v(by.get(("verdict_across", attribute, ALL, judge, None, "advantage_probability")), 3),
            ]
        )
    return TITLES["verdict_across"], ["attribute", "judge", "ω", "verdict", "ρ"], rows


def _interval(by: Index, key: tuple[Any, ...], mean: str, prefix: str) -> str:
    estimate = by.get((*key, mean))
    if estimate is None or estimate.value is None:
        return "n/a"
    low, high = by.get((*key, f"{prefix}_ci_low")), by.get((*key, f"{prefix}_ci_high"))
    return f"{estimate.value:.2f} [{_v(low)}, {_v(high)}]"


def _assumption(records: list[Record], table: str) -> str:
    notes = {r.note for r in records if r.table == table and r.statistic in ("ppi_mean", "difference")}
    found = [text for text in (UNIFORM, WEIGHTED) if any(text in note for note in notes)]
    return "; ".join(found)


def ppi(records: list[Record], by: Index, who: Who) -> Table | None:
    keys = _keys(records, "ppi", "attribute", "evaluator", "system")
    if not keys:
        return None
    rows = []
    for attribute, judge, system in keys:
        key = ("ppi", attribute, system, judge, None)
        judge_mean = by.get((*key, "judge_mean"))
        halve = by.get((*key, "extra_ratings_to_halve"))
        estimate = by.get((*key, "ppi_mean"))
        rated = f"{estimate.n}/{judge_mean.n}" if estimate and judge_mean else "n/a"
        why = estimate.note.split("; ")[0] if estimate and estimate.value is None else ""
        rows.append(
            [
                attribute,
                who(judge, attribute),
                system,
                _interval(by, key, "ppi_mean", "ppi"),
                _interval(by, key, "classical_mean", "classical"),
                _v(judge_mean),
                rated,
                f"+{halve.value:g}" if halve and halve.value is not None else "n/a",
                why or (halve.note if halve and halve.value is None else ""),
            ]
        )
    title = TITLES["ppi"] + "; " + _assumption(records, "ppi")
    header = [
        "attribute",
        "judge",
        "system",
        "PPI mean [95%]",
        "humans only",
        "judge mean",
        "rated/items",
        "ratings to halve",
        "note",
    ]
    return title, header, rows


def ppi_diff(records: list[Record], by: Index, who: Who) -> Table | None:
    keys = _keys(records, "ppi_diff", "attribute", "evaluator", "system", "evaluator_b")
    if not keys:
        return None
    rows = []
    for attribute, judge, a, b in keys:
        key = ("ppi_diff", attribute, a, judge, b)
        estimate = by.get((*key, "difference"))
        paired = "paired" if estimate and "paired by prompt" in estimate.note else "unpaired"
        rows.append(
            [
                attribute,
                who(judge, attribute),
                f"{a} − {b}",
                _interval(by, key, "difference", "difference"),
                _interval(by, key, "classical_difference", "classical"),
                paired,
            ]
        )
    title = TITLES["ppi_diff"] + "; " + _assumption(records, "ppi_diff")
    return title, ["attribute", "judge", "systems", "PPI difference [95%]", "humans only", "design"], rows


def convergence(records: list[Record], by: Index, who: Who) -> Table | None:
    rows = []
    for table, statistic, label in (
        ("verdict_convergence", "winning_rate", "ω"),
        ("ppi_convergence", "ppi_mean", "PPI mean"),
    ):
        for attribute, judge, system in _keys(records, table, "attribute", "evaluator", "system"):
            points = [
                r
                for r in records
                if r.table == table
                and r.statistic == statistic
                and (r.attribute, r.evaluator, r.system) == (attribute, judge, system)
            ]
            rows.append([attribute, who(judge, attribute), system, label, _curve(points)])
    if not rows:
        return None
    return TITLES["convergence"], ["attribute", "judge", "system", "statistic", "curve (n: value)"], rows


def _curve(points: list[Record]) -> str:
    if len(points) == 1 and points[0].value is None:
        return f"n/a: {points[0].note}"
    shown = points
    if len(points) > CURVE_POINTS:  # evenly spaced, the first and the last kept
        step = (len(points) - 1) / (CURVE_POINTS - 1)
        shown = [points[round(i * step)] for i in range(CURVE_POINTS)]
    return " → ".join(f"{p.n}: {_v(p)}" for p in shown)


BUILDERS = [verdict, verdict_across, ppi, ppi_diff, convergence]

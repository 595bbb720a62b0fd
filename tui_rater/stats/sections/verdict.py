"""Section ``verdict``: may the judge replace the human raters? The alternative annotator test
(Calderon, Reichart & Dror 2025, arXiv 2501.10970; ``stats/alternative_annotator.py``, docs/VERDICT.md §1).

Per question and judge, with at least 3 human raters on the same items:

- ``verdict`` table: the winning rate ω (the share of humans the judge beats, each by a one-sided
  paired t-test with margin ε, Benjamini-Yekutieli across the humans), the verdict (the judge may
  replace the humans when ω >= 0.5), the average advantage probability ρ and the judges' rank by ρ
  (the paper's measure for comparing judges); per left-out human ρ^f_j, ρ^h_j, t with its one-sided
  p, the BY-adjusted p and whether the judge wins against that human;
- ``verdict_across`` table: the same judge on every question at once, with the false-discovery-rate
  procedure applied to all the questions' p-values together (the authors' FAQ, ``alt_test_across``).

Alignment by the protocol's level of measurement (accuracy for nominal answers, -RMSE for ordinal
and interval ones); the judge's one value per item is its samples combined by the protocol
(``aggregate``: a mean, or a vote for nominal answers). A question the data cannot decide gets records
with ``value = null`` and the reason. A judge that is not agreement-ready is marked on these records
as on every other (``readings.mark_not_ready``).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from functools import partial

import numpy as np

from tui_rater.domain.readiness import NOT_READY
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats import alt_columns as ac
from tui_rater.stats import alt_intervals
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import intervals as iv
from tui_rater.stats.records import ALL, HUMANS, Record
from tui_rater.stats.sections import alt_data, cells
from tui_rater.stats.sections.alt_data import level_of as level_of  # where the other sections look for it
from tui_rater.stats.sections.alt_data import too_few_humans as too_few_humans
from tui_rater.stats.sections.base import (
    Footnotes,
    Found,
    Layout,
    Section,
    Table,
    Who,
    not_ready_note,
    without_not_ready,
)
from tui_rater.stats.sections.data import ReportData
from tui_rater.stats.sections.settings import FDR

Ratings = Mapping[Hashable, float]  # item key -> a rating (the stats functions' own type)
# Krippendorff (2004, Content Analysis, 2nd ed., §11.4.4): rely on data with α >= .800, draw tentative
# conclusions from .667 <= α < .800, none below .667. A judge "no worse than the humans" means little when
# the humans themselves agree less than that: the verdict row says so (``caveat_human_agreement``).
LOW_HUMAN_ALPHA = 0.667
Humans = dict[str, Ratings]


def human_ratings(data: ReportData, attribute: Attribute) -> Humans:
    """human rater -> item key -> their rating of the question (raters with none left out)."""
    keys = data.keys(ALL)
    out: Humans = {}
    for human in data.humans:
        values = data.rater_values(human, attribute, ALL)
        kept = ~np.isnan(values)
        mine: dict[Hashable, float] = dict(zip(keys[kept].tolist(), values[kept].tolist()))
        if mine:
            out[human] = mine
    return out


def judge_ratings(data: ReportData, judge: str, attribute: Attribute) -> Ratings:
    """item key -> the judge's one value (its samples and presentations combined by the protocol)."""
    values = data.item_values(judge, attribute, ALL)
    kept = ~np.isnan(values)
    found: dict[Hashable, float] = dict(zip(data.keys(ALL)[kept].tolist(), values[kept].tolist()))
    return found


def verdict_humans(data: ReportData, attribute: Attribute) -> tuple[Humans, str]:
    """(each human's ratings of the question, why no alt-test can run or ''); with fewer than 3 humans in the
    whole task (a solo rater's study) the ratings are not even gathered."""
    if len(data.humans) < at.MIN_HUMANS:
        return {}, too_few_humans(data.matrix(HUMANS, attribute.name, ALL).shape[0])
    humans = human_ratings(data, attribute)
    return humans, too_few_humans(len(humans))


def rated(data: ReportData, judge: str, attribute: Attribute) -> bool:
    """Has the judge a value of this question for any item?"""
    return bool(np.any(~np.isnan(data.item_values(judge, attribute, ALL))))


def verdict(data: ReportData, attributes: Sequence[Attribute]) -> None:
    eps, source = data.settings.verdict.eps, data.settings.verdict.epsilon_source
    across: dict[str, dict[str, tuple[ac.Scored, str]]] = {}
    levels = {a.name: level_of(data, a) for a in attributes}
    for attribute in attributes:
        _, _, reason = alt_data.people(data, attribute)
        if reason:
            for judge in data.judges:
                if rated(data, judge, attribute):
                    _no_verdict(data, attribute.name, judge, eps, source, reason)
            continue
        scoring = alt_data.scoring(data, attribute)
        # each judge's indicators scored once (``alt_data``), read by the test, its intervals and the pooled test
        judges = {j: alt_data.scored(data, attribute, j) for j in data.judges if rated(data, j, attribute)}
        if not judges:
            continue
        tests = [
            at.alt_test_scored(f, scoring=scoring, judge_name=j, epsilon=eps, alpha=FDR) for j, f in judges.items()
        ]
        ranked = at.ranked(tests)
        rhos = [r.advantage_probability for r in ranked if r.advantage_probability is not None]
        human_alpha = ag.alpha(
            data.matrix(HUMANS, attribute.name, ALL), levels[attribute.name], attribute.scale.points or None
        )
        for result in ranked:
            found = alt_intervals.intervals_of(alt_intervals.per_item_of(judges[result.judge]), epsilon=eps, alpha=FDR)
            _records(data, attribute.name, result, source, rhos, found)
            _agreement_caveat(data, attribute.name, result.judge, human_alpha)
            across.setdefault(result.judge, {})[attribute.name] = (judges[result.judge], scoring)
    for judge, settings in across.items():
        if len(settings) > 1:
            _across(data, judge, settings, eps)


def _no_verdict(data: ReportData, attribute: str, judge: str, eps: float, source: str, reason: str) -> None:
    add = partial(data.add, "verdict", attribute, ALL, judge)
    add("epsilon", value=eps, note=source)
    for statistic in ("winning_rate", "verdict", "advantage_probability", "rank"):
        add(statistic, value=None, note=reason)


def _verdict_note(result: at.AltTest, source: str) -> str:
    if result.passed is None:
        return "; ".join(x for x in (result.note, source) if x)
    said = "may replace the humans (ω ≥ 0.5)" if result.passed else "may not replace the humans (ω < 0.5)"
    return f"{said}; {source}"


def _rank(rho: float | None, rhos: list[float]) -> float | None:
    """1 for the highest ρ; judges with equal ρ share a rank (1, 1, 3)."""
    return None if rho is None else float(1 + sum(other > rho for other in rhos))


def _with(value: float | None, n: int, interval: iv.Interval) -> ag.Stat:
    """A figure of the alt-test with its item-bootstrap interval (``stats/alt_intervals.py``)."""
    return iv.with_interval(ag.Stat(value, n), interval)


def _records(
    data: ReportData,
    attribute: str,
    result: at.AltTest,
    source: str,
    rhos: list[float],
    found: alt_intervals.AltIntervals,
) -> None:
    add = partial(data.add, "verdict", attribute, ALL, result.judge)
    note = result.note
    add("epsilon", value=result.epsilon, note=source)
    add("winning_rate", _with(result.winning_rate, result.humans_tested, found.winning_rate), note=note)
    passed = None if result.passed is None else float(result.passed)
    add("verdict", value=passed, n=result.humans_tested, note=_verdict_note(result, source))
    add(
        "advantage_probability",
        _with(result.advantage_probability, result.items, found.advantage_probability),
        note=note,
    )
    ranked = result.advantage_probability is not None
    add(
        "rank",
        value=_rank(result.advantage_probability, rhos),
        n=len(rhos),
        note=f"by ρ among {len(rhos)} judge{'s' if len(rhos) != 1 else ''}" if ranked else note,
    )
    _per_human(data, attribute, result, found)


def _agreement_caveat(data: ReportData, attribute: str, judge: str, human_alpha: ag.Stat) -> None:
    """The humans' own agreement (α at the question's level, every item they rated): below LOW_HUMAN_ALPHA
    the verdict row carries a caveat, with the judge's τ with the humans where Table 2 has it."""
    caveat = ""
    if human_alpha.value is not None and human_alpha.value < LOW_HUMAN_ALPHA:
        tau = next(
            (
                r.value
                for r in data.records
                if (r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic)
                == ("table2", attribute, data.overall, HUMANS, judge, "kendall_tau")
                and r.value is not None
            ),
            None,
        )
        caveat = (
            f"the humans' own α is {human_alpha.value:.2f}, below {LOW_HUMAN_ALPHA} (Krippendorff 2004: too "
            "unreliable for even tentative conclusions): the judge need only be no worse than raters who "
            "barely agree" + (f"; its τ with the humans is {tau:.2f}" if tau is not None else "")
        )
    data.add(
        "verdict",
        attribute,
        ALL,
        judge,
        "caveat_human_agreement",
        value=human_alpha.value,
        n=human_alpha.n,
        note=caveat,
    )


def _per_human(data: ReportData, attribute: str, result: at.AltTest, found: alt_intervals.AltIntervals) -> None:
    tested = [c for c in result.comparisons if c.tested]
    # the undefined p (0/0) counts as 1, as in the test's own Benjamini-Yekutieli step
    adjusted = dict(zip((c.human for c in tested), at.by_adjusted([1.0 if c.p is None else c.p for c in tested])))
    for c in result.comparisons:
        add = partial(data.add, "verdict", attribute, ALL, result.judge, evaluator_b=c.human, n=c.items, note=c.note)
        judge_interval, human_interval = found.per_human.get(c.human, (iv.none("not tested"),) * 2)
        add("rho_judge", _with(c.rho_judge, c.items, judge_interval))
        add("rho_human", _with(c.rho_human, c.items, human_interval))
        add("t", value=c.t, p=c.p)
        add("p_adjusted", value=adjusted.get(c.human) if c.p is not None else None)
        add("wins", value=float(c.rejected) if c.tested else None)


def _across(data: ReportData, judge: str, settings: dict[str, tuple[ac.Scored, str]], eps: float) -> None:
    results = at.alt_test_across_scored(settings, judge_name=judge, epsilon=eps, alpha=FDR)
    pooled = f"Benjamini-Yekutieli over the p-values of {len(settings)} questions together"
    for attribute, result in results.items():
        add = partial(data.add, "verdict_across", attribute, ALL, judge)
        note = "; ".join(x for x in (result.note, pooled) if x)
        add("winning_rate", value=result.winning_rate, n=result.humans_tested, note=note)
        passed = None if result.passed is None else float(result.passed)
        add("verdict", value=passed, n=result.humans_tested, note=_verdict_note(result, pooled))
        add("advantage_probability", value=result.advantage_probability, n=result.items, note=note)


# --- layouts -------------------------------------------------------------------------------

CAVEATS = ("caveat_human_agreement", "verdict_settled")  # the verdict records whose note is a caveat


def caveats(found: Found, attribute: str, judge: str) -> list[str]:
    """What the verdict row must be read with (the humans barely agree; the verdict has not settled), as
    this section and ``sections/converging.py`` wrote it: '⚠ ' and the reason, each. A judge that is not
    agreement-ready is said once by the table (``qualified``), not in each caveat its records carry."""
    records = [found.get("verdict", attribute, ALL, judge, None, statistic) for statistic in CAVEATS]
    notes = [without_not_ready(record.note) for record in records if record is not None]
    return [f"⚠ {note}" for note in notes if note]


def qualified(passed: bool, not_ready: str | None, footnotes: Footnotes) -> str:
    """The verdict as a cell: a judge that is not agreement-ready never gets a plain "yes" (its readings do not
    describe answers to the question, whatever the test says): "yes* (not agreement-ready)", the reason once
    under the table."""
    if not passed:
        return "no"
    if not_ready is None:
        return "yes: may replace"
    footnotes.mark(not_ready_note(not_ready))  # the reason, once under the table (the caveats column names it)
    return f"yes* ({NOT_READY})"


def not_ready_caveat(not_ready: str | None, footnotes: Footnotes) -> list[str]:
    return [] if not_ready is None else [f"⚠ {NOT_READY} {footnotes.mark(not_ready_note(not_ready))}"]


def _lay_out_verdict(found: Found, who: Who) -> Table | None:
    keys = found.keys("verdict", "attribute", "evaluator")
    if not keys:
        return None
    rows, epsilons, footnotes = [], {}, Footnotes()
    for attribute, judge in keys:
        get = partial(found.get, "verdict", attribute, ALL, judge)
        eps = get(None, "epsilon")
        if eps is not None:
            epsilons[without_not_ready(eps.note)] = True
        not_ready = who.reason(judge, attribute)
        said = get(None, "verdict")
        cell = "n/a" if said is None or said.value is None else qualified(said.value == 1, not_ready, footnotes)
        rank = get(None, "rank")
        humans = [
            r.evaluator_b
            for r in found.of("verdict")
            if (r.attribute, r.evaluator) == (attribute, judge) and r.statistic == "wins" and r.evaluator_b is not None
        ]
        per_human = "  ".join(_human(get, human) for human in humans)
        rho = _shown(get(None, "advantage_probability"), 3)
        rho += f" (#{rank.value:g})" if rank and rank.value else ""
        reason = without_not_ready(said.note) if said is not None and said.value is None else ""
        tested = get(None, "winning_rate")
        rows.append(
            [
                attribute,
                who(judge, attribute),
                _shown(tested),
                cell,
                "; ".join(not_ready_caveat(not_ready, footnotes) + caveats(found, attribute, judge)) or "none",
                rho,
                str(tested.n) if tested else "0",
                per_human or "",
                reason,
            ]
        )
    title = "; ".join(x for x in (VERDICT.title, *epsilons, footnotes.said()) if x)
    header = [
        "attribute",
        "judge",
        "ω [95% CI]",
        "verdict",
        "caveats",
        "ρ [95% CI] (rank)",
        "humans",
        "per human: BY-adjusted p, ✓ judge wins",
        "note",
    ]
    return title, header, rows


def _shown(record: Record | None, digits: int = 2) -> str:
    """A figure and its item-bootstrap interval, where it has one."""
    return " ".join(x for x in (cells.value(record, digits), cells.interval(record)) if x)


def _human(get: Callable[[str | None, str], Record | None], human: str) -> str:
    wins, adjusted = get(human, "wins"), get(human, "p_adjusted")
    if wins is None or wins.value is None:
        return f"{human} –"
    return f"{human} {cells.value(adjusted, 3)}{'✓' if wins.value == 1 else '✗'}"


def _lay_out_across(found: Found, who: Who) -> Table | None:
    keys = found.keys("verdict_across", "attribute", "evaluator")
    if not keys:
        return None
    rows, footnotes = [], Footnotes()
    for attribute, judge in keys:
        get = partial(found.get, "verdict_across", attribute, ALL, judge, None)
        not_ready = who.reason(judge, attribute)
        said = get("verdict")
        cell = "n/a" if said is None or said.value is None else qualified(said.value == 1, not_ready, footnotes)
        # the same caveats as the question's own verdict row: pooling the p-values does not lift them
        warned = not_ready_caveat(not_ready, footnotes) + caveats(found, attribute, judge)
        rows.append(
            [
                attribute,
                who(judge, attribute),
                cells.value(get("winning_rate")),
                cell,
                "; ".join(warned) or "none",
                cells.value(get("advantage_probability"), 3),
            ]
        )
    title = "; ".join(x for x in (ACROSS.title, footnotes.said()) if x)
    return title, ["attribute", "judge", "ω", "verdict", "caveats", "ρ"], rows


VERDICT = Layout(
    "verdict",
    "Can the judge replace the humans? Alternative annotator test (Calderon et al. 2025): ω = share of "
    "humans the judge beats (one-sided paired t-test with margin ε, Benjamini–Yekutieli), verdict: may "
    "replace when ω ≥ 0.5; ρ = average advantage probability, which ranks judges",
    ("verdict",),
    _lay_out_verdict,
)
ACROSS = Layout(
    "verdict_across",
    "Alternative annotator test across questions: Benjamini–Yekutieli over every question's p-values together",
    ("verdict_across", "verdict"),
    _lay_out_across,
)
# the alternative annotator test; across questions too
SECTION = Section("verdict", verdict, ("verdict", "verdict_across"), (VERDICT, ACROSS))

"""The alternative annotator test (Calderon, Reichart & Dror 2025, arXiv 2501.10970, ACL 2025).

Can the judge replace the human raters? Leave each human out in turn (the paper's method section): on every item that
human rated, score how well the judge and how well the left-out human align with the *remaining*
humans; W^f = 1 when the judge aligns at least as well, W^h = 1 when the human does (a tie gives
both a 1). Per human j, ρ^f_j and ρ^h_j are the means of those indicators, and the one-sided
paired t-test of

    H0_j: ρ^f_j <= ρ^h_j - ε   against   H1_j: ρ^f_j > ρ^h_j - ε

on d_i = W^h_i - W^f_i (reject when the mean of d is significantly below ε). ε is the cost-benefit
margin: the judge is cheaper, so it may be a little worse than a human and still replace one.
The Benjamini-Yekutieli procedure controls the false discovery rate across the humans; the
winning rate ω is the share of humans whose H0 is rejected, and the judge *passes* (may replace
the humans) when ω >= 0.5. The average advantage probability ρ = mean_j ρ^f_j ranks judges.

Alignment scores per level of measurement (the paper's "alignment scoring function"): accuracy (share of
the remaining humans with the same label) for nominal labels; negative RMSE against the remaining
humans for numeric ratings -- the paper uses it for its Likert datasets (SummEval, CEBaB stars,
10k prompts, lesions), so it is used for ordinal and interval levels alike. Free text needs a
similarity function; pass it as ``scoring``.

Undefined results come back as ``None`` with the reason in ``note``, never NaN or an exception.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import stats as sp

from tui_rater.stats import alt_columns as ac
from tui_rater.stats.agreement import no_variation

# The paper's rule of thumb for ε (its discussion of the threshold, repeated in the authors' FAQ):
# the more a human costs and the more reliable they are, the larger the margin the cheaper judge
# is granted. Use a smaller ε when the humans agree little among themselves.
EPSILON_EXPERT = 0.2
EPSILON_SKILLED = 0.15
EPSILON_CROWD = 0.1
# the FAQ: at least three humans (two give no consensus to compare with), and at least 30 items
# per human for the t-test's normality assumption (50-100 recommended)
MIN_HUMANS = 3
MIN_ITEMS_PER_HUMAN = 30
MIN_HUMANS_PER_ITEM = 2  # the left-out human and at least one remaining
PASSING_WINNING_RATE = 0.5


# The rule that decides whether there is a verdict at all, stated once: the report's test (``_human_comparison``,
# ``_decide``) and the plan's forecast (``tui-rater assign``, ``service/team.py``) both ask these.
def is_tested(shared_items: int, min_items_per_human: int = MIN_ITEMS_PER_HUMAN) -> bool:
    """Is a human tested: did they rate at least ``min_items_per_human`` of the items that the judge and at least
    one other human rated too (``shared_items``)?"""
    return shared_items >= max(2, min_items_per_human)


def has_verdict(
    shared_items: Sequence[int], min_humans: int = MIN_HUMANS, min_items_per_human: int = MIN_ITEMS_PER_HUMAN
) -> bool:
    """Is there a verdict: are at least ``min_humans`` humans tested? ``shared_items``: each human's count."""
    return sum(is_tested(n, min_items_per_human) for n in shared_items) >= min_humans


def verdict_rule(min_humans: int = MIN_HUMANS, min_items_per_human: int = MIN_ITEMS_PER_HUMAN) -> str:
    """The rule in words (said by the report's note and by the plan's forecast)."""
    return (
        f"at least {min_humans} humans who each rated at least {max(2, min_items_per_human)} of the items the judge "
        "and another human rated"
    )


Ratings = Mapping[Hashable, float]  # item -> rating
Scoring = Callable[[float, Sequence[float]], float]  # (one rating, the remaining humans') -> alignment


def accuracy(rating: float, others: Sequence[float]) -> float:
    """ACC: the share of the remaining humans who gave the same label (nominal scales)."""
    return float(np.mean([rating == other for other in others]))


def neg_rmse(rating: float, others: Sequence[float]) -> float:
    """-RMSE against the remaining humans (numeric scales); higher is better."""
    diffs = np.asarray(others, dtype=float) - float(rating)
    return -float(np.sqrt(np.mean(diffs**2)))


SCORINGS: dict[str, Scoring] = {"accuracy": accuracy, "neg_rmse": neg_rmse}
SCORING_FOR_LEVEL = {"nominal": "accuracy", "ordinal": "neg_rmse", "interval": "neg_rmse"}


@dataclass(frozen=True)
class HumanComparison:
    """The judge against one left-out human (one hypothesis H0_j)."""

    human: str
    items: int  # items this human rated that at least one other human rated too
    rho_judge: float | None = None  # ρ^f_j: share of items where the judge aligns at least as well
    rho_human: float | None = None  # ρ^h_j: share where the left-out human does
    t: float | None = None
    p: float | None = None  # one-sided p-value of H0_j
    tested: bool = False  # enough items to test; the untested do not count in ω or ρ
    rejected: bool = False  # H0_j rejected by Benjamini-Yekutieli: the judge wins against this human
    note: str = ""


@dataclass(frozen=True)
class AltTest:
    judge: str
    scoring: str
    epsilon: float
    alpha: float  # the false discovery rate q of Benjamini-Yekutieli
    items: int  # items used (rated by the judge and by >= 2 humans)
    comparisons: list[HumanComparison] = field(default_factory=list)
    winning_rate: float | None = None  # ω
    advantage_probability: float | None = None  # ρ
    passed: bool | None = None  # ω >= 0.5: the judge may replace the humans
    note: str = ""

    @property
    def humans_tested(self) -> int:
        return sum(c.tested for c in self.comparisons)


def benjamini_yekutieli(pvalues: Sequence[float], q: float = 0.05) -> list[bool]:
    """Which hypotheses the Benjamini-Yekutieli step-up procedure rejects at FDR level q.

    Reject the k smallest p-values, k the largest rank with p_(k) <= k q / (m H_m), where
    H_m = 1 + 1/2 + ... + 1/m (valid under any dependence between the tests).
    """
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(p, kind="stable")
    thresholds = np.arange(1, m + 1) * q / (m * harmonic)
    below = np.nonzero(p[order] <= thresholds)[0]
    rejected = np.zeros(m, dtype=bool)
    if below.size:
        rejected[order[: below[-1] + 1]] = True
    return rejected.tolist()


def by_adjusted(pvalues: Sequence[float]) -> list[float]:
    """Benjamini-Yekutieli adjusted p-values (R's p.adjust(method = "BY")): reject where <= q."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    if m == 0:
        return []
    harmonic = float(np.sum(1.0 / np.arange(1, m + 1)))
    order = np.argsort(p, kind="stable")[::-1]
    ranks = np.arange(m, 0, -1)
    adjusted_desc = np.minimum.accumulate(np.minimum(1.0, p[order] * m * harmonic / ranks))
    adjusted = np.empty(m)
    adjusted[order] = adjusted_desc
    return adjusted.tolist()


def _better_or_equal(a: float, b: float) -> bool:
    # the paper's >= (ties count for both); a relative tolerance so that two mathematically equal
    # RMSEs computed in a different order still tie
    return a >= b - 1e-12 * max(1.0, abs(a), abs(b))


def _one_sided_t(d: np.ndarray, epsilon: float) -> tuple[float | None, float | None, str]:
    """One-sided one-sample t-test of mean(d) < ε (the paired test on W^h - W^f)."""
    n = d.size
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if no_variation(d):
        # every item gave the same d: the t statistic is ±inf (p = 0 or 1), or 0/0 when mean == ε
        if mean < epsilon:
            return -math.inf, 0.0, "no variation in W^h - W^f; mean below ε"
        if mean > epsilon:
            return math.inf, 1.0, "no variation in W^h - W^f; mean above ε"
        return None, None, "no variation in W^h - W^f and mean equal to ε: undefined, not rejected"
    t = (mean - epsilon) / (sd / math.sqrt(n))
    return t, float(sp.t.cdf(t, n - 1)), ""


def _human_comparison(
    humans: Mapping[str, Ratings],
    judge: Ratings,
    human: str,
    items: set[Hashable],
    score: Scoring,
    epsilon: float,
    min_items: int,
) -> HumanComparison:
    """One left-out human, item by item: for a scoring given as a function (the built-in ones go through
    ``alt_columns``, over arrays)."""
    mine = [i for i in humans[human] if i in items]
    if not is_tested(len(mine), min_items):
        return HumanComparison(human, len(mine), note=f"only {len(mine)} items (< {min_items}): not tested")
    w_judge, w_human = [], []
    for item in mine:
        others = [ratings[item] for name, ratings in humans.items() if name != human and item in ratings]
        judge_score = score(judge[item], others)
        human_score = score(humans[human][item], others)
        w_judge.append(_better_or_equal(judge_score, human_score))
        w_human.append(_better_or_equal(human_score, judge_score))
    return _comparison(human, np.asarray(w_judge, dtype=float), np.asarray(w_human, dtype=float), epsilon)


def _comparison(human: str, wf: np.ndarray, wh: np.ndarray, epsilon: float) -> HumanComparison:
    t, p, note = _one_sided_t(wh - wf, epsilon)
    return HumanComparison(human, wf.size, float(wf.mean()), float(wh.mean()), t, p, tested=True, note=note)


def _prepared(
    humans: Mapping[str, Ratings], judge: Ratings, min_humans_per_item: int
) -> tuple[dict[str, dict[Hashable, float]], dict[Hashable, float], set[Hashable]]:
    # a missing rating (None, NaN: a judge failure) is no rating, never a comparison with NaN
    kept = {name: {i: v for i, v in ratings.items() if _present(v)} for name, ratings in humans.items()}
    judged = {i: v for i, v in judge.items() if _present(v)}
    counts: dict[Hashable, int] = {}
    for ratings in kept.values():
        for item in ratings:
            counts[item] = counts.get(item, 0) + 1
    items = {i for i, c in counts.items() if c >= max(2, min_humans_per_item) and i in judged}
    return kept, judged, items


def comparisons_on(
    found: ac.Scored, epsilon: float, min_items: int, within: npt.NDArray[np.bool_] | None = None
) -> list[HumanComparison]:
    """The comparisons on the rows of ``found`` where ``within`` holds (all when None), from its indicators: a
    prefix of the convergence curve is a mask, never a new scoring."""
    pairs = zip(found.w_judge, found.w_human) if within is None else found.within(within)
    rows = []
    for name, (wf, wh) in zip(found.humans, pairs):
        if not is_tested(wf.size, min_items):
            rows.append(HumanComparison(name, wf.size, note=f"only {wf.size} items (< {min_items}): not tested"))
        else:
            rows.append(_comparison(name, wf, wh, epsilon))
    return rows


def alt_test_scored(
    found: ac.Scored,
    *,
    scoring: str,
    judge_name: str = "judge",
    epsilon: float = EPSILON_EXPERT,
    alpha: float = 0.05,
    min_humans: int = MIN_HUMANS,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    within: npt.NDArray[np.bool_] | None = None,
) -> AltTest:
    """``alt_test`` from the indicators scored once (``alt_columns``), on the rows where ``within`` holds (all
    when None)."""
    rows = comparisons_on(found, epsilon, max(2, min_items_per_human), within)
    used = len(found.keys) if within is None else int(np.count_nonzero(within))
    rejected = _by_rejections(rows, alpha)
    return _decide(judge_name, rows, used, scoring, epsilon, alpha, rejected, min_humans, min_items_per_human)


def human_comparisons(
    humans: Mapping[str, Ratings],
    judge: Ratings,
    *,
    level: str = "interval",
    epsilon: float = EPSILON_EXPERT,
    scoring: str | Scoring | None = None,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
) -> tuple[list[HumanComparison], int, str]:
    """The leave-one-out comparisons (before the multiple-comparison step): (rows, items used, scoring)."""
    score, scoring_name = _scoring(level, scoring)
    min_items = max(2, min_items_per_human)
    if SCORINGS.get(scoring_name) is score:
        found = ac.from_dicts(humans, judge, scoring_name, min_humans_per_item)
        return comparisons_on(found, epsilon, min_items), len(found.keys), scoring_name
    humans, judge, items = _prepared(humans, judge, min_humans_per_item)
    rows = [_human_comparison(humans, judge, h, items, score, epsilon, min_items) for h in humans]
    return rows, len(items), scoring_name


def alt_test_on_subsets(
    humans: Mapping[str, Ratings],
    judge: Ratings,
    subsets: Sequence[set[Hashable]],
    *,
    judge_name: str = "judge",
    level: str = "interval",
    epsilon: float = EPSILON_EXPERT,
    alpha: float = 0.05,
    scoring: str | Scoring | None = None,
    min_humans: int = MIN_HUMANS,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
) -> list[AltTest]:
    """``alt_test`` with the humans' ratings restricted to each subset of items in turn (the convergence curve's
    prefixes): the same results, with each item scored once rather than once per subset."""
    score, scoring_name = _scoring(level, scoring)
    if SCORINGS.get(scoring_name) is not score:  # a custom scoring: the test on each subset as it is
        return [
            alt_test(
                {name: {i: v for i, v in ratings.items() if i in subset} for name, ratings in humans.items()},
                judge,
                judge_name=judge_name,
                level=level,
                epsilon=epsilon,
                alpha=alpha,
                scoring=scoring,
                min_humans=min_humans,
                min_items_per_human=min_items_per_human,
                min_humans_per_item=min_humans_per_item,
            )
            for subset in subsets
        ]
    found = ac.from_dicts(humans, judge, scoring_name, min_humans_per_item)
    return [
        alt_test_scored(
            found,
            scoring=scoring_name,
            judge_name=judge_name,
            epsilon=epsilon,
            alpha=alpha,
            min_humans=min_humans,
            min_items_per_human=min_items_per_human,
            within=np.fromiter((i in subset for i in found.keys), dtype=bool, count=len(found.keys)),
        )
        for subset in subsets
    ]


def _present(value: object) -> bool:
    return value is not None and not (isinstance(value, float) and math.isnan(value))


def _scoring(level: str, scoring: str | Scoring | None) -> tuple[Scoring, str]:
    if scoring is None:
        if level not in SCORING_FOR_LEVEL:
            raise ValueError(f"unknown level of measurement {level!r}")
        scoring = SCORING_FOR_LEVEL[level]
    if isinstance(scoring, str):
        return SCORINGS[scoring], scoring
    return scoring, getattr(scoring, "__name__", "custom")


def _decide(
    judge_name: str,
    rows: list[HumanComparison],
    items: int,
    scoring: str,
    epsilon: float,
    alpha: float,
    rejected: Mapping[str, bool],
    min_humans: int,
    min_items_per_human: int,
) -> AltTest:
    rows = [
        HumanComparison(**{**r.__dict__, "rejected": bool(rejected.get(r.human, False))}) if r.tested else r
        for r in rows
    ]
    tested = [r for r in rows if r.tested]
    if not has_verdict([r.items for r in rows], min_humans, min_items_per_human):
        note = (
            f"{len(tested)} humans with enough items (the test needs {verdict_rule(min_humans, min_items_per_human)})"
        )
        return AltTest(judge_name, scoring, epsilon, alpha, items, rows, note=note)
    omega = sum(r.rejected for r in tested) / len(tested)
    rho = float(np.mean([r.rho_judge for r in tested]))
    return AltTest(judge_name, scoring, epsilon, alpha, items, rows, omega, rho, omega >= PASSING_WINNING_RATE)


def alt_test(
    humans: Mapping[str, Ratings],
    judge: Ratings,
    *,
    judge_name: str = "judge",
    level: str = "interval",
    epsilon: float = EPSILON_EXPERT,
    alpha: float = 0.05,
    scoring: str | Scoring | None = None,
    min_humans: int = MIN_HUMANS,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
    min_humans_per_item: int = MIN_HUMANS_PER_ITEM,
) -> AltTest:
    """The alt-test of one judge against ``humans`` (rater -> item -> rating) on one attribute.

    Items rated by fewer than ``min_humans_per_item`` humans, or not by the judge, are dropped;
    humans left with fewer than ``min_items_per_human`` items are not tested (as the authors' code
    does) and do not count in ω or ρ. With fewer than ``min_humans`` tested humans there is no
    verdict.
    """
    rows, items, scoring_name = human_comparisons(
        humans,
        judge,
        level=level,
        epsilon=epsilon,
        scoring=scoring,
        min_items_per_human=min_items_per_human,
        min_humans_per_item=min_humans_per_item,
    )
    rejected = _by_rejections(rows, alpha)
    return _decide(judge_name, rows, items, scoring_name, epsilon, alpha, rejected, min_humans, min_items_per_human)


def _by_rejections(rows: Sequence[HumanComparison], alpha: float) -> dict[str, bool]:
    tested = [r for r in rows if r.tested]
    # an undefined p-value (0/0) is never a rejection
    decisions = benjamini_yekutieli([1.0 if r.p is None else r.p for r in tested], alpha)
    return {r.human: d for r, d in zip(tested, decisions)}


def alt_test_across(
    settings: Mapping[str, tuple[Mapping[str, Ratings], Ratings]],
    *,
    judge_name: str = "judge",
    levels: Mapping[str, str] | None = None,
    epsilon: float = EPSILON_EXPERT,
    alpha: float = 0.05,
    min_humans: int = MIN_HUMANS,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
) -> dict[str, AltTest]:
    """One judge in several settings (attributes, domains): setting -> (humans, judge ratings).

    The FAQ ("several environments or domains"): test each setting on its own but apply the
    false-discovery-rate procedure to all the p-values at once; ω is then read per setting.
    """
    per_setting = {}
    for name, (humans, judge) in settings.items():
        level = (levels or {}).get(name, "interval")
        per_setting[name] = human_comparisons(
            humans, judge, level=level, epsilon=epsilon, min_items_per_human=min_items_per_human
        )
    return _pooled(per_setting, judge_name, epsilon, alpha, min_humans, min_items_per_human)


def alt_test_across_scored(
    settings: Mapping[str, tuple[ac.Scored, str]],
    *,
    judge_name: str = "judge",
    epsilon: float = EPSILON_EXPERT,
    alpha: float = 0.05,
    min_humans: int = MIN_HUMANS,
    min_items_per_human: int = MIN_ITEMS_PER_HUMAN,
) -> dict[str, AltTest]:
    """``alt_test_across`` from each setting's indicators scored once: setting -> (indicators, scoring)."""
    min_items = max(2, min_items_per_human)
    per_setting = {
        name: (comparisons_on(found, epsilon, min_items), len(found.keys), scoring)
        for name, (found, scoring) in settings.items()
    }
    return _pooled(per_setting, judge_name, epsilon, alpha, min_humans, min_items_per_human)


def _pooled(
    per_setting: Mapping[str, tuple[list[HumanComparison], int, str]],
    judge_name: str,
    epsilon: float,
    alpha: float,
    min_humans: int,
    min_items_per_human: int,
) -> dict[str, AltTest]:
    pooled = [(name, r) for name, (rows, _, _) in per_setting.items() for r in rows if r.tested]
    decisions = benjamini_yekutieli([1.0 if r.p is None else r.p for _, r in pooled], alpha)
    rejected: dict[str, dict[str, bool]] = {name: {} for name in per_setting}
    for (name, row), decision in zip(pooled, decisions):
        rejected[name][row.human] = decision
    return {
        name: _decide(judge_name, rows, items, scoring, epsilon, alpha, rejected[name], min_humans, min_items_per_human)
        for name, (rows, items, scoring) in per_setting.items()
    }


def rank_judges(humans: Mapping[str, Ratings], judges: Mapping[str, Ratings], **options: Any) -> list[AltTest]:
    """Every judge's alt-test, best first by the average advantage probability ρ (the paper's
    measure for comparing judges); judges without a ρ come last."""
    return ranked([alt_test(humans, ratings, judge_name=name, **options) for name, ratings in judges.items()])


def ranked(results: Sequence[AltTest]) -> list[AltTest]:
    """The judges' tests best first by ρ (ties keep their order); those without a ρ last."""
    return sorted(results, key=lambda r: math.inf if r.advantage_probability is None else -r.advantage_probability)

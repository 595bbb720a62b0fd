"""System-level judgements: SPA (Ethayarajh & Jurafsky §5.2), Bradley-Terry, pairwise position bias,
and Chen et al.'s meta-evaluation. Pure functions over numbers; they return dataclasses."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from scipy import stats as sp

from tui_rater.stats.agreement import FloatArray, TestResult, holm, no_variation

SPA_TAU = 1.1  # §5.2 step 3: exclude annotators with P[X>Y] + P[Y>X] > 1.1


# --- SPA -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SpaComparison:
    system_x: str
    system_y: str
    p_x_over_y: float | None  # the mean of the annotators' P[X > Y]
    n: int
    t: float | None
    p_value: float | None
    p_holm: float | None = None
    likert_delta: float | None = None  # standard protocol: mean Likert(X) - Likert(Y)
    likert_n: int = 0
    likert_p: float | None = None
    likert_p_holm: float | None = None


@dataclass(frozen=True)
class SpaResult:
    comparisons: list[SpaComparison]
    annotators: int
    excluded: list[str] = field(default_factory=list)


def spa(
    probabilities: dict[str, dict[tuple[str, str], float]],
    comparisons: list[tuple[str, str]],
    likert: dict[str, dict[str, float]] | None = None,
    tau: float | None = SPA_TAU,
) -> SpaResult:
    """Aggregate SPA answers.

    ``probabilities[annotator][(X, Y)]`` is that annotator's P[X > Y] in [0, 1]; ``comparisons`` the
    (X, Y) pairs to report; ``likert[annotator][system]`` the optional Likert rating of each system's
    first continuation. Annotators failing the tau filter even once are excluded (step 3).
    """
    excluded = []
    if tau is not None:
        for annotator, answers in probabilities.items():
            for (x, y), p_xy in answers.items():
                p_yx = answers.get((y, x))
                if p_yx is not None and p_xy + p_yx > tau + 1e-12:
                    excluded.append(annotator)
                    break
    kept = {a: v for a, v in probabilities.items() if a not in excluded}
    rows = []
    for x, y in comparisons:
        values = np.array([answers[(x, y)] for answers in kept.values() if (x, y) in answers], dtype=float)
        t = p = None
        if values.size >= 2 and not no_variation(values):
            result = sp.ttest_1samp(values, 0.5)  # two-sided Student's t-test against chance
            t, p = float(result.statistic), float(result.pvalue)
        # every annotator gave the same P[X > Y]: the t-test is undefined (0/0), and two annotators who both say
        # 70% are no evidence at p = 0 -- no p-value rather than a guessed one
        delta = delta_p = None
        n_likert = 0
        if likert:
            pairs = [(r[x], r[y]) for a, r in likert.items() if a not in excluded and x in r and y in r]
            n_likert = len(pairs)
            if pairs:
                a, b = np.array(pairs, dtype=float).T
                delta = float((a - b).mean())
                if len(pairs) >= 2 and not no_variation(a - b, a, b):
                    delta_p = float(sp.ttest_rel(a, b).pvalue)  # the standard protocol's paired t-test
        rows.append(
            SpaComparison(
                x,
                y,
                float(values.mean()) if values.size else None,
                int(values.size),
                t,
                p,
                likert_delta=delta,
                likert_n=n_likert,
                likert_p=delta_p,
            )
        )
    # Holm-Bonferroni across the comparisons, separately for SPA and for the Likert deltas
    rows = _with_holm(rows, "p_value", "p_holm")
    rows = _with_holm(rows, "likert_p", "likert_p_holm")
    return SpaResult(rows, len(kept), excluded)


def _with_holm(rows: list[SpaComparison], source: str, target: str) -> list[SpaComparison]:
    present = [i for i, r in enumerate(rows) if getattr(r, source) is not None]
    if not present:
        return rows
    adjusted = holm([getattr(rows[i], source) for i in present])
    out = list(rows)
    for i, value in zip(present, adjusted):
        out[i] = SpaComparison(**{**out[i].__dict__, target: value})
    return out


# --- Bradley-Terry --------------------------------------------------------------------------------


@dataclass(frozen=True)
class BradleyTerry:
    systems: list[str]
    log_strength: list[float]  # relative to the first system (= 0)
    iterations: int
    converged: bool


def bradley_terry(wins: np.ndarray, systems: list[str], max_iter: int = 10_000, tol: float = 1e-10) -> BradleyTerry:
    """Hunter's (2004) MM algorithm. ``wins[i, j]`` = times i beat j (ties count half to each)."""
    wins = np.asarray(wins, dtype=float)
    k = len(systems)
    games = wins + wins.T
    total_wins = wins.sum(axis=1)
    strength = np.ones(k)
    converged = False
    iteration = 0
    for iteration in range(1, max_iter + 1):  # noqa: B007 - the count is reported
        denominator = np.array(
            [
                sum(games[i, j] / (strength[i] + strength[j]) for j in range(k) if j != i and games[i, j])
                for i in range(k)
            ]
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            updated = np.where(denominator > 0, total_wins / denominator, strength)
        updated = np.maximum(updated, 1e-300)
        updated /= np.exp(np.mean(np.log(updated)))  # fix the scale (geometric mean 1)
        if np.max(np.abs(np.log(updated) - np.log(strength))) < tol:
            strength = updated
            converged = True
            break
        strength = updated
    log_strength = np.log(strength) - math.log(strength[0])
    return BradleyTerry(list(systems), [float(v) for v in log_strength], iteration, converged)


# --- pairwise comparisons judged in both orders (Chen et al. §2.2; MT-Bench's rule) ---------------


@dataclass(frozen=True)
class PositionBias:
    pairs: int  # (item, sample) pairs judged in both orders
    first_position_rate: float | None  # of non-tie verdicts, how often the first-shown text won
    consistent_rate: float | None  # both orders gave the same (canonical) verdict
    verdicts: dict[str, int]  # final verdicts after "inconsistent counts as tie": A, B, tie


def position_bias(judgements: list[tuple[float | None, float | None]]) -> PositionBias:
    """``judgements``: per pair, (canonical verdict shown in the original order, in the swapped order),
    each 0 = A (story_a better), 1 = B, 2 = tie, None = no verdict."""
    first = decisive = consistent = complete = 0
    verdicts = {"A": 0, "B": 0, "tie": 0}
    for original, swapped in judgements:
        for verdict, swapped_order in ((original, False), (swapped, True)):
            if verdict in (0, 1):
                decisive += 1
                shown_first = (verdict == 0) != swapped_order  # A shown first unless swapped
                first += shown_first
        if original is None or swapped is None:
            continue
        complete += 1
        if original == swapped:
            consistent += 1
            verdicts[{0: "A", 1: "B", 2: "tie"}[int(original)]] += 1
        else:
            verdicts["tie"] += 1  # inconsistent across orders: a tie, as in MT-Bench
    return PositionBias(
        complete, first / decisive if decisive else None, consistent / complete if complete else None, verdicts
    )


# --- Chen et al.'s meta-evaluation --------------------------------------------------------------------


@dataclass(frozen=True)
class MetaEvaluation:
    sample_spearman: float | None  # per input (prompt), then averaged
    sample_pearson: float | None
    dataset_spearman: float | None  # all texts at once
    dataset_pearson: float | None
    inputs: int
    texts: int
    kendall_pairs: dict[str, tuple[float | None, int]]  # difficulty -> (tau-b, pairs), App. C


def _corr(fn: Callable[[FloatArray, FloatArray], TestResult], x: npt.ArrayLike, y: npt.ArrayLike) -> float | None:
    a, b = np.asarray(x, float), np.asarray(y, float)
    if a.size < 3 or no_variation(a) or no_variation(b):
        return None
    value = fn(a, b).statistic
    return float(value) if math.isfinite(value) else None


def pair_tau_b(human_diffs: np.ndarray, metric_diffs: np.ndarray) -> float | None:
    """App. C: tau_b = (P - Q) / sqrt((P + Q + T)(P + Q + U)) over text pairs."""
    h, m = np.sign(human_diffs), np.sign(metric_diffs)
    concordant = int(np.sum((h * m) > 0))
    discordant = int(np.sum((h * m) < 0))
    ties_human = int(np.sum((h == 0) & (m != 0)))
    ties_metric = int(np.sum((m == 0) & (h != 0)))
    denominator = math.sqrt((concordant + discordant + ties_human) * (concordant + discordant + ties_metric))
    return (concordant - discordant) / denominator if denominator else None


def difficulty_split(human_diffs: np.ndarray) -> tuple[dict[str, np.ndarray], tuple[float, float]]:
    """Chen et al. §4.2: pairs split into hard / medium / easy by the size of the human score difference.

    The paper gives no cut-offs; the thirds of |difference| are used (hard: up to the 1/3 quantile,
    medium: up to the 2/3 quantile, easy: above). Returns the masks (and ``all``) and the two cut-offs.
    """
    gap = np.abs(np.asarray(human_diffs, dtype=float))
    if gap.size == 0:
        return {}, (math.nan, math.nan)
    low, high = (float(q) for q in np.quantile(gap, [1 / 3, 2 / 3]))
    # hard pairs: humans barely tell the texts apart; easy: a large human score gap
    return {
        "all": np.ones_like(gap, bool),
        "hard": gap <= low,
        "medium": (gap > low) & (gap <= high),
        "easy": gap > high,
    }, (low, high)


def pair_tau_b_by_difficulty(human_diffs: np.ndarray, metric_diffs: np.ndarray) -> dict[str, tuple[float | None, int]]:
    """App. C's τ-b over all pairs and over the hard / medium / easy thirds: difficulty -> (τ-b, pairs)."""
    human_d, metric_d = np.asarray(human_diffs, dtype=float), np.asarray(metric_diffs, dtype=float)
    masks, _ = difficulty_split(human_d)
    return {name: (pair_tau_b(human_d[mask], metric_d[mask]), int(mask.sum())) for name, mask in masks.items()}


def meta_evaluation(inputs: list[str], human: list[float], metric: list[float]) -> MetaEvaluation:
    """Correlations of a metric (an LLM's scores) with human scores, Chen et al. §3.2 and App. C."""
    inputs_arr = np.array(inputs, dtype=object)
    human_arr, metric_arr = np.asarray(human, float), np.asarray(metric, float)
    keep = ~(np.isnan(human_arr) | np.isnan(metric_arr))
    inputs_arr, human_arr, metric_arr = inputs_arr[keep], human_arr[keep], metric_arr[keep]
    spearman, pearson = [], []
    human_diffs, metric_diffs = [], []
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(inputs_arr):
        groups.setdefault(key, []).append(i)
    for indices in groups.values():
        s = _corr(sp.spearmanr, human_arr[indices], metric_arr[indices])
        p = _corr(sp.pearsonr, human_arr[indices], metric_arr[indices])
        if s is not None:
            spearman.append(s)
        if p is not None:
            pearson.append(p)
        for a in range(len(indices)):
            for b in range(a + 1, len(indices)):
                i, j = indices[a], indices[b]
                human_diffs.append(human_arr[i] - human_arr[j])
                metric_diffs.append(metric_arr[i] - metric_arr[j])
    kendall = pair_tau_b_by_difficulty(np.array(human_diffs), np.array(metric_diffs))
    return MetaEvaluation(
        float(np.mean(spearman)) if spearman else None,
        float(np.mean(pearson)) if pearson else None,
        _corr(sp.spearmanr, human_arr, metric_arr),
        _corr(sp.pearsonr, human_arr, metric_arr),
        len(groups),
        int(human_arr.size),
        kendall,
    )

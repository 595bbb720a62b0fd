"""Agreement and comparison statistics. Each returns a dataclass; rendering is elsewhere.

Undefined values (one rater, no variation, too few items) come back as ``value=None`` with the
reason in ``note`` -- never an exception, never NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt
from scipy import stats as sp

# moved to stats/stat.py (numpy only: the app's running sums need them without scipy); re-exported here
from tui_rater.stats.stat import FloatArray as FloatArray
from tui_rater.stats.stat import Stat as Stat
from tui_rater.stats.stat import to_labels as to_labels


def _na(n: int, note: str) -> Stat:
    return Stat(None, n, note)


def no_variation(x: npt.ArrayLike, *operands: npt.ArrayLike) -> bool:
    """Every value the same, up to floating-point noise (1e-12 relative): a t statistic of such values is 0/0 or
    noise over noise (three annotators' 0.7 have a standard deviation of 1e-16: t = 2.5e15), never evidence.

    ``operands``: what ``x`` was computed from (``a - b``): the noise of a difference is relative to ``a`` and
    ``b``, not to the difference (ratings of 60000.3 and 69999.7 on a 60000-70000 scale, each 0.1 below the
    judge's, differ by 0.1 +- 7e-12: a paired t of 5e10)."""
    x = np.asarray(x, dtype=float)
    if x.size == 0:
        return True
    magnitude = max(
        [1.0, float(np.max(np.abs(x)))] + [float(np.max(np.abs(np.asarray(o, dtype=float)))) for o in operands]
    )
    return bool(np.ptp(x) <= 1e-12 * magnitude)


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


# --- one group of raters -------------------------------------------------------------------


@dataclass(frozen=True)
class Summary:
    mean: float | None
    std: float | None  # sample standard deviation (ddof = 1)
    n: int


def summary(values: Iterable[float | None]) -> Summary:
    # a float array has no None: the same numbers in the same order without a Python float each (issue 35)
    x = _floats(values) if _is_float_array(values) else np.asarray([v for v in values if v is not None], dtype=float)
    if x.size == 0:
        return Summary(None, None, 0)
    return Summary(float(x.mean()), float(x.std(ddof=1)) if x.size > 1 else None, int(x.size))


LEVELS = ("nominal", "ordinal", "interval", "ratio")


def alpha(matrix: npt.ArrayLike, level: str = "interval", value_domain: list[float] | None = None) -> Stat:
    """Krippendorff's alpha; ``matrix`` is raters x items with NaN for missing.

    Computed from the pairs of values, never from a values x values coincidence matrix: the
    ``krippendorff`` package builds an items x values x values array, which for 3,000 items on a
    0-100 scale is 800 MB and for a few hundred continuous values (implicit scores, means) more
    memory than the machine has. ``value_domain`` (the scale's points) changes nothing: a point no
    one used has no pairs and, in the ordinal metric, adds nothing between the used ones.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown level of measurement {level!r}")
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] < 2:
        return _na(0, "needs at least two raters")
    present = ~np.isnan(matrix)
    counts = present.sum(axis=0)
    pairable = int((counts >= 2).sum())
    if pairable == 0:
        return _na(0, "no item has two ratings")
    if len(np.unique(matrix[present])) < 2:
        return _na(pairable, "every rating is the same value")
    columns = matrix[:, counts >= 2]
    values = columns[~np.isnan(columns)]
    if level == "ordinal":
        columns, values = _ordinal_ranks(columns, values)
    with np.errstate(all="ignore"):
        observed = _observed_disagreement(columns, level) / values.size
        expected = _expected_disagreement(values, level) / (values.size * (values.size - 1))
    value = _finite(1.0 - observed / expected) if expected > 0 else None
    return Stat(value, pairable, "" if value is not None else "undefined (no variation)")


def _ordinal_ranks(columns: FloatArray, values: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Krippendorff's ordinal metric is the interval metric on each value's mid-rank among the
    pairable values: (sum of n_g for g from c to k, less (n_c + n_k) / 2)^2 = (z_k - z_c)^2 with
    z_v = (the number of values up to v) - n_v / 2."""
    levels, frequency = np.unique(values, return_counts=True)
    midrank = np.cumsum(frequency) - frequency / 2.0
    ranked = np.full(columns.shape, np.nan)
    present = ~np.isnan(columns)
    ranked[present] = midrank[np.searchsorted(levels, columns[present])]
    return ranked, midrank[np.searchsorted(levels, values)]


def _delta(a: FloatArray, b: FloatArray, level: str) -> FloatArray:
    if level == "nominal":
        different: FloatArray = (a != b).astype(float)
        return different
    if level == "ratio":
        total = a + b
        ratio: FloatArray = np.where(total != 0, ((a - b) / np.where(total != 0, total, 1.0)) ** 2, 0.0)
        return ratio
    difference: FloatArray = (a - b) ** 2
    return difference  # interval; ordinal on mid-ranks


def _observed_disagreement(columns: FloatArray, level: str) -> float:
    """Sum over items of (1 / (m_u - 1)) x the disagreement of every ordered pair of its values."""
    weight = 1.0 / (np.sum(~np.isnan(columns), axis=0) - 1)
    total = 0.0
    for a in range(columns.shape[0]):
        for b in range(a + 1, columns.shape[0]):
            both = ~(np.isnan(columns[a]) | np.isnan(columns[b]))
            total += 2.0 * float(np.sum(weight[both] * _delta(columns[a, both], columns[b, both], level)))
    return total


def _expected_disagreement(values: FloatArray, level: str) -> float:
    """The disagreement of every ordered pair of the pairable values (n_c n_k delta_ck summed)."""
    levels, frequency = np.unique(values, return_counts=True)
    n = float(values.size)
    if level == "nominal":
        return float(n * n - np.sum(frequency.astype(float) ** 2))
    if level == "ratio":  # one row of the values x values table at a time: memory in the values, not squared
        return float(
            sum(
                f * np.sum(frequency * _delta(np.full(levels.size, v), levels, level))
                for v, f in zip(levels, frequency)
            )
        )
    centred = values - values.mean()  # sum over ordered pairs of (x_i - x_j)^2 = 2 n sum (x_i - mean)^2
    return float(2.0 * n * np.sum(centred**2))


def percent_exact(matrix: npt.ArrayLike) -> Stat:
    """% of items (rated by >= 2 raters) on which every rater gave the same rating."""
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2 or matrix.size == 0:
        return _na(0, "no item has two ratings")
    rated = np.sum(~np.isnan(matrix), axis=0) >= 2
    total = int(rated.sum())
    if total == 0:
        return _na(0, "no item has two ratings")
    with np.errstate(all="ignore"):
        columns = matrix[:, rated]
        agree = int(np.sum(np.nanmax(columns, axis=0) == np.nanmin(columns, axis=0)))
    return Stat(100.0 * agree / total, total)


# --- two evaluators on the same items ---------------------------------------------------------


def _paired(x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    keep = ~(np.isnan(a) | np.isnan(b))
    return a[keep], b[keep]


def kendall_tau(x: npt.ArrayLike, y: npt.ArrayLike) -> Stat:
    """Kendall's tau-b with its p-value (Chiang & Lee §3.3.1, Table 2)."""
    x, y = _paired(x, y)
    if x.size < 3:
        return _na(int(x.size), "fewer than 3 items rated by both")
    if no_variation(x) or no_variation(y):
        return _na(int(x.size), "one side gives every item the same rating")
    result = sp.kendalltau(x, y)
    return Stat(_finite(result.statistic), int(x.size), p=_finite(result.pvalue))


class TestResult(Protocol):
    """What scipy's correlation tests return: the statistic and its p-value."""

    @property
    def statistic(self) -> float: ...
    @property
    def pvalue(self) -> float: ...


def _correlation(fn: Callable[[FloatArray, FloatArray], TestResult], x: npt.ArrayLike, y: npt.ArrayLike) -> Stat:
    x, y = _paired(x, y)
    if x.size < 3 or no_variation(x) or no_variation(y):
        return _na(int(x.size), "too few items or no variation")
    result = fn(x, y)
    return Stat(_finite(result.statistic), int(x.size), p=_finite(result.pvalue))


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> Stat:
    return _correlation(sp.spearmanr, x, y)


def pearson(x: npt.ArrayLike, y: npt.ArrayLike) -> Stat:
    return _correlation(sp.pearsonr, x, y)


def weighted_kappa(x: npt.ArrayLike, y: npt.ArrayLike, labels: list[float], weights: str = "quadratic") -> Stat:
    """Cohen's kappa with linear or quadratic weights over the scale's full labels."""
    x, y = _paired(x, y)
    if x.size < 2:
        return _na(int(x.size), "fewer than 2 items rated by both")
    labels = sorted(labels)
    k = len(labels)
    ix = {v: i for i, v in enumerate(labels)}
    a, b = to_labels(x, labels), to_labels(y, labels)
    observed = np.zeros((k, k))
    for u, v in zip(a, b):
        observed[ix[u], ix[v]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    grid = np.abs(np.subtract.outer(np.arange(k), np.arange(k))).astype(float)
    w = {"quadratic": grid**2, "linear": grid, "none": (grid > 0).astype(float)}[weights]
    denominator = (w * expected).sum()
    if denominator == 0:
        return _na(int(x.size), "no variation")
    return Stat(float(1 - (w * observed).sum() / denominator), int(x.size))


def bias(llm: npt.ArrayLike, human: npt.ArrayLike) -> Stat:
    """Mean of (LLM - human) over items, with a 95% t confidence interval in ``extra``."""
    x, y = _paired(llm, human)
    if x.size < 2:
        return _na(int(x.size), "fewer than 2 items rated by both")
    d = x - y
    mean = float(d.mean())
    se = 0.0 if no_variation(d, x, y) else float(d.std(ddof=1) / math.sqrt(d.size))
    half = float(sp.t.ppf(0.975, d.size - 1) * se) if se > 0 else 0.0
    return Stat(mean, int(d.size), extra={"ci_low": mean - half, "ci_high": mean + half, "ci": "t, 95%"})


def exact_agreement(x: npt.ArrayLike, y: npt.ArrayLike, labels: list[float] | None = None) -> Stat:
    """% of items on which two evaluators' (rounded) ratings are equal."""
    x, y = _paired(x, y)
    if x.size == 0:
        return _na(0, "no item rated by both")
    if labels:
        x, y = to_labels(x, labels), to_labels(y, labels)
    return Stat(100.0 * float(np.mean(x == y)), int(x.size))


def confusion(x: npt.ArrayLike, y: npt.ArrayLike, labels: list[float]) -> npt.NDArray[np.int_]:
    """Counts: rows = first evaluator's (rounded) rating, columns = second's."""
    x, y = _paired(x, y)
    labels = sorted(labels)
    ix = {v: i for i, v in enumerate(labels)}
    matrix = np.zeros((len(labels), len(labels)), dtype=int)
    for u, v in zip(to_labels(x, labels), to_labels(y, labels)):
        matrix[ix[u], ix[v]] += 1
    return matrix


# --- between systems, and many comparisons --------------------------------------------------------


def _is_float_array(values: object) -> bool:
    return isinstance(values, np.ndarray) and values.ndim == 1 and values.dtype.kind == "f"


def _floats(values: Iterable[float | None]) -> FloatArray:
    return np.asarray(values, dtype=float)


def _present(values: Iterable[float | None]) -> FloatArray:
    """The values that are neither None nor NaN, in order (a float array's without a Python float each)."""
    if _is_float_array(values):
        x = _floats(values)
        return x[~np.isnan(x)]
    return np.asarray([v for v in values if v is not None and not math.isnan(v)], dtype=float)


def welch(a: Iterable[float | None], b: Iterable[float | None]) -> Stat:
    """Welch's t-test (unequal variances); value = t, with df and p."""
    xa, xb = (_present(x) for x in (a, b))
    if xa.size < 2 or xb.size < 2:
        return _na(int(xa.size + xb.size), "each group needs at least 2 ratings")
    if no_variation(xa) and no_variation(xb):
        return _na(int(xa.size + xb.size), "no variation in either group")
    # scipy's ttest_ind(equal_var=False), written out so that a group without variation adds exactly none (its
    # rounding noise made scipy warn of "catastrophic cancellation" and entered the variance)
    va, vb = (0.0 if no_variation(x) else float(x.var(ddof=1)) / x.size for x in (xa, xb))
    t = (float(xa.mean()) - float(xb.mean())) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / (xa.size - 1) + vb**2 / (xb.size - 1))
    p = float(2 * sp.t.sf(abs(t), df))
    return Stat(_finite(t), int(xa.size + xb.size), p=_finite(p), extra={"df": float(df)})


def paired_t(a: npt.ArrayLike, b: npt.ArrayLike) -> Stat:
    a, b = _paired(a, b)
    if a.size < 2:
        return _na(int(a.size), "fewer than 2 pairs")
    if no_variation(a - b, a, b):
        return _na(int(a.size), "no variation in the differences")
    result = sp.ttest_rel(a, b)
    return Stat(_finite(result.statistic), int(a.size), p=_finite(result.pvalue), extra={"df": float(a.size - 1)})


def holm(pvalues: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (as R's p.adjust(method = "holm"))."""
    p = np.asarray(pvalues, dtype=float)
    m = p.size
    order = np.argsort(p)
    adjusted = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        adjusted[i] = running
    return adjusted.tolist()

"""Does the judge's probability mean what it says? Its distribution over a question's scale points, item by item,
against the people's ratings of the same items.

Each *observation* is one person's rating of one item, paired with the judge's distribution of that item (a judge's
distribution pass, or the share of its samples at each point when it was sampled two or more times). Against those:

- **ECE** (expected calibration error, top label): the judge's most probable point and its probability (the
  confidence); observations binned by confidence into ``BINS`` equal-width bins on [0, 1]; ECE = Σ_b (n_b / n) ·
  |share of ratings at the judge's point − mean confidence| over the non-empty bins. The binned shares are the
  reliability diagram. Binned, so biased upward at small n (an exactly calibrated judge scores above 0): no interval.
- **Brier score**: Σ_k (p_k − 1[rating = k])², averaged over observations (0 best, 2 worst).
- **RPS** (ranked probability score, ordinal scales; Epstein 1969): Σ_k (P_k − 1[rating ≤ k])² / (K − 1) over the
  cumulative distribution, averaged (0 best, 1 worst): a miss by two points costs more than a miss by one.
- **JS distance** per item: the Jensen–Shannon distance (base 2, in [0, 1]) between the judge's distribution and
  the people's distribution of ratings of that item, averaged over items with two or more ratings; beside it the
  **noise ceiling**: the same distance between two halves of the people (each item's ratings in an order drawn
  from a seeded generator, the first ⌊m/2⌋ against the rest: ``split_half``). A judge cannot be expected to sit
  closer to the people than they sit to each other; with 2-3 ratings an item the halves are tiny and the ceiling
  is large.

Brier, RPS and the JS distances are means: their 95 % interval is a normal one with the standard error clustered by
item (an item's ratings share its judge distribution).

**After recalibration**: the judge's distribution put through a map fitted on the people's ratings -- for each scale
point an isotonic regression of "the rating is this point" on the judge's probability of it (one-vs-rest,
renormalised: Zadrozny & Elkan 2002; scipy's ``isotonic_regression``, interpolated between the fitted points and
clipped outside them as scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` does -- scikit-learn is a test
dependency only) -- cross-fitted over ``FOLDS`` folds of *items* (``folds``: a seeded permutation), so that no
item's figure comes from a map fitted on its own ratings. The map belongs to the judge it was fitted on (its name
carries its configuration's hash) and to these people; it is never applied to another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as sp

BINS = 10
FOLDS = 5
SEED = 0
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Mean:
    """A mean over observations with its item-clustered 95 % interval."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0


@dataclass(frozen=True)
class Reliability:
    """The reliability diagram's non-empty bins: mean confidence, share of ratings at the judge's point, count."""

    confidence: list[float]
    accuracy: list[float]
    counts: list[int]


@dataclass(frozen=True)
class Scores:
    ece: float | None
    brier: Mean
    rps: Mean | None  # ordinal scales only
    js: Mean  # the judge against the people, per item
    reliability: Reliability
    items: int
    ratings: int


@dataclass(frozen=True)
class Calibration:
    before: Scores
    after: Scores | None  # after the cross-fitted recalibration; None with too few items
    ceiling: Mean  # the people's split-half JS distance
    note: str = ""


def observations(judge: np.ndarray, people: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``judge``: items x K probabilities (a row of NaN: no distribution); ``people``: items x K counts of the
    people's ratings at each point -> (item index, point index) of every observation, items with a distribution."""
    has = ~np.isnan(judge).any(axis=1)
    counts = np.where(has[:, None], people, 0).astype(int)
    item, point = np.nonzero(counts)
    repeat = counts[item, point]
    return np.repeat(item, repeat), np.repeat(point, repeat)


def top_label_ece(p: np.ndarray, rating: np.ndarray, bins: int = BINS) -> tuple[float | None, Reliability]:
    """Top-label ECE of observation-level distributions ``p`` (n x K) against the ratings' point indices."""
    if p.shape[0] == 0:
        return None, Reliability([], [], [])
    confidence = p.max(axis=1)
    hit = (p.argmax(axis=1) == rating).astype(float)
    # the same bins as scikit-learn's calibration_curve(strategy="uniform")
    which = np.searchsorted(np.linspace(0.0, 1.0, bins + 1)[1:-1], confidence, side="left")
    counts = np.bincount(which, minlength=bins)
    conf_sum = np.bincount(which, weights=confidence, minlength=bins)
    hit_sum = np.bincount(which, weights=hit, minlength=bins)
    kept = counts > 0
    mean_conf, share = conf_sum[kept] / counts[kept], hit_sum[kept] / counts[kept]
    ece = float(np.sum(counts[kept] / p.shape[0] * np.abs(share - mean_conf)))
    return ece, Reliability(mean_conf.tolist(), share.tolist(), counts[kept].astype(int).tolist())


def brier(p: np.ndarray, rating: np.ndarray) -> np.ndarray:
    """Each observation's multi-class Brier score Σ_k (p_k − 1[rating = k])²."""
    onehot = np.zeros_like(p)
    onehot[np.arange(len(rating)), rating] = 1.0
    return np.asarray(((p - onehot) ** 2).sum(axis=1))


def rps(p: np.ndarray, rating: np.ndarray) -> np.ndarray:
    """Each observation's ranked probability score over the K ordered points, scaled to [0, 1] by K − 1."""
    k = p.shape[1]
    cumulative = np.cumsum(p, axis=1)[:, :-1]
    below = (np.arange(k - 1)[None, :] >= rating[:, None]).astype(float)
    return np.asarray(((cumulative - below) ** 2).sum(axis=1) / (k - 1))


def js_distance(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Row-wise Jensen–Shannon distance, base 2 (as ``scipy.spatial.distance.jensenshannon(p, q, base=2)``)."""
    p = p / p.sum(axis=1, keepdims=True)
    q = q / q.sum(axis=1, keepdims=True)
    m = (p + q) / 2

    def kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.where(a > 0, a * np.log2(a / m), 0.0).sum(axis=1))

    return np.asarray(np.sqrt(np.clip((kl(p) + kl(q)) / 2, 0.0, None)))


def clustered_mean(values: np.ndarray, item: np.ndarray) -> Mean:
    """The mean of observation values with a normal 95 % interval whose standard error is clustered by item."""
    if values.size == 0:
        return Mean(None)
    mean = float(values.mean())
    groups, index = np.unique(item, return_inverse=True)
    g = groups.size
    if g < 2:
        return Mean(mean, n=int(values.size))
    resid = np.bincount(index, weights=values - mean)
    se = math.sqrt(g / (g - 1) * float((resid**2).sum())) / values.size
    half = float(sp.norm.ppf(0.5 + CONFIDENCE / 2)) * se
    return Mean(mean, mean - half, mean + half, int(values.size))


def scores(judge: np.ndarray, people: np.ndarray, ordinal: bool, bins: int = BINS) -> Scores:
    """Every figure of the judge's distributions (items x K) against the people's counts (items x K)."""
    item, point = observations(judge, people)
    p = judge[item] if item.size else np.zeros((0, judge.shape[1]))
    ece, reliability = top_label_ece(p, point, bins)
    per_item = _js_items(judge, people)
    js_items = np.nonzero(per_item[0])[0]
    return Scores(
        ece,
        clustered_mean(brier(p, point), item),
        clustered_mean(rps(p, point), item) if ordinal and judge.shape[1] > 1 else None,
        clustered_mean(per_item[1][js_items], js_items),
        reliability,
        int(np.unique(item).size),
        int(item.size),
    )


def _js_items(judge: np.ndarray, people: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(items with a distribution and two or more ratings, the JS distance of each item (NaN elsewhere))."""
    usable = ~np.isnan(judge).any(axis=1) & (people.sum(axis=1) >= 2)
    distance = np.full(judge.shape[0], np.nan)
    if usable.any():
        distance[usable] = js_distance(judge[usable], people[usable].astype(float))
    return usable, distance


def split_half(ratings: np.ndarray, points: int, seed: int = SEED) -> Mean:
    """The people's own JS distance: ``ratings`` is people x items of point indices (−1 where unrated). Each
    rating gets a key from ``numpy.random.default_rng(seed).random(ratings.shape)``; per item with two or more
    ratings, its ratings in the order of their keys, the first ⌊m/2⌋ against the rest (vectorised: a loop over
    a million items took seconds)."""
    keys = np.random.default_rng(seed).random(ratings.shape)
    given = ratings >= 0
    keys[~given] = np.inf
    rank = np.argsort(np.argsort(keys, axis=0), axis=0)  # each rating's place in its item's order
    m = given.sum(axis=0)
    usable = np.nonzero(m >= 2)[0]
    if usable.size == 0:
        return Mean(None)
    first = given & (rank < (m // 2)[None, :])
    second = given & ~first
    halves = []
    for part in (first, second):
        item, person = np.nonzero(part.T)
        counts = np.bincount(item * points + ratings[person, item], minlength=ratings.shape[1] * points)
        halves.append(counts.reshape(ratings.shape[1], points)[usable].astype(float))
    return clustered_mean(js_distance(*halves), usable)


def folds(n: int, k: int = FOLDS, seed: int = SEED) -> list[np.ndarray]:
    """``k`` folds of ``range(n)``: a permutation from ``numpy.random.default_rng(seed)`` cut into near-equal parts."""
    return [np.sort(part) for part in np.array_split(np.random.default_rng(seed).permutation(n), k)]


def isotonic(x: np.ndarray, y: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The increasing least-squares fit of ``y`` on ``x`` (ties in ``x`` pooled), read at ``new`` by linear
    interpolation between the fitted points and clipped outside them."""
    from scipy.optimize import isotonic_regression

    ux, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    fitted = isotonic_regression(means, weights=counts.astype(float), increasing=True).x
    return np.asarray(np.interp(new, ux, fitted))


def recalibrated(judge: np.ndarray, people: np.ndarray, k: int = FOLDS, seed: int = SEED) -> np.ndarray | None:
    """The judge's distributions after a one-vs-rest isotonic map per point, cross-fitted over ``folds`` of the
    items with a distribution and a rating: each item's row comes from the maps fitted on the other folds. None
    with fewer than two items a fold."""
    rated = np.nonzero(~np.isnan(judge).any(axis=1) & (people.sum(axis=1) > 0))[0]
    if rated.size < 2 * k:
        return None
    out = np.full_like(judge, np.nan)
    points = judge.shape[1]
    for held in folds(rated.size, k, seed):
        score_items = rated[held]
        fit_items = np.delete(rated, held)
        item, point = observations(judge[fit_items], people[fit_items])
        mapped = np.empty((score_items.size, points))
        for c in range(points):
            # P(rating = c | the judge's probability of c), increasing in it
            mapped[:, c] = isotonic(judge[fit_items][item, c], (point == c).astype(float), judge[score_items, c])
        total = mapped.sum(axis=1, keepdims=True)
        # a row the maps send to all zeros says nothing: the uniform distribution
        out[score_items] = np.where(total > 0, mapped / np.where(total > 0, total, 1.0), 1.0 / points)
    return out


def calibration(
    judge: np.ndarray, people: np.ndarray, ratings: np.ndarray, ordinal: bool, seed: int = SEED
) -> Calibration:
    """Before and after recalibration, and the people's split-half ceiling (``ratings``: people x items of point
    indices, −1 where unrated)."""
    before = scores(judge, people, ordinal)
    mapped = recalibrated(judge, people, seed=seed)
    after = scores(mapped, people, ordinal) if mapped is not None else None
    note = "" if after is not None else f"too few rated items to cross-fit a recalibration over {FOLDS} folds"
    return Calibration(before, after, split_half(ratings, judge.shape[1], seed), note)

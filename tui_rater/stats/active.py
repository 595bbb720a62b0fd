"""Rate where it matters *and* keep the system scores unbiased: active statistical inference
(Zrnic & Candès, "Active Statistical Inference", ICML 2024).

Prediction-powered estimates (``ppi.py``) need the human-rated items to be a uniform random
subset; showing people the items the judge is least sure of breaks that. The fix is to *draw* the
items to rate at random, with a known probability π_i that grows with the judge's uncertainty
(mixed with a uniform share so that no item has a tiny π), and to weight each rating by 1 / π_i:

    θ̂ = (1/N) Σ_i [ f_i + ξ_i (y_i - f_i) / π_i ]        ξ_i = 1 if item i was drawn

which is unbiased because E[ξ_i / π_i] = 1; its variance is the variance of the bracket over N
(items drawn independently, each with its own π_i). Uncertain items, where the judge errs most,
get rated more often, so the interval is narrower than with a uniform draw of the same size.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from tui_rater.stats.ppi import Interval, normal_interval

UNIFORM_SHARE = 0.5  # the share of the rating budget drawn uniformly (guards against tiny π)


def sampling_weights(uncertainty: ArrayLike, uniform_share: float = UNIFORM_SHARE) -> np.ndarray:
    """Each item's share of the rating budget before capping (they sum to 1): ``uniform_share`` spread
    evenly, the rest in proportion to the uncertainty. Items with an unknown uncertainty (NaN) get the average."""
    u = np.asarray(uncertainty, dtype=float)
    n = u.size
    if n == 0:
        return u
    u = np.where(np.isnan(u), np.nanmean(u) if np.any(~np.isnan(u)) else 1.0, u)
    u = np.clip(u, 0, None)
    return (1 - uniform_share) * (u / u.sum() if u.sum() > 0 else np.full(n, 1 / n)) + uniform_share / n


def sampling_probabilities(uncertainty: ArrayLike, budget: float, uniform_share: float = UNIFORM_SHARE) -> np.ndarray:
    """π_i for each item: ``uniform_share`` of the expected ``budget`` of ratings spread evenly, the
    rest in proportion to the uncertainty; capped at 1 (the excess goes to the others).
    Items with an unknown uncertainty (NaN) get the average."""
    weights = sampling_weights(uncertainty, uniform_share)
    n = weights.size
    if n == 0:
        return weights
    budget = min(float(budget), float(n))
    pi = np.zeros(n)
    capped = np.zeros(n, dtype=bool)
    for _ in range(n):  # water-filling: give the budget left to the uncapped items, in proportion
        left = budget - capped.sum()
        pi[~capped] = weights[~capped] * left / weights[~capped].sum()
        over = (pi > 1) & ~capped
        if not over.any():
            break
        capped |= over
        pi[capped] = 1.0
    return pi


def sequential_order(
    uncertainty: ArrayLike, rng: np.random.Generator, uniform_share: float = UNIFORM_SHARE
) -> tuple[np.ndarray, np.ndarray]:
    """(an order of the items, their uniform draws U): an order to rate in whose every prefix is an
    active sample, so a person may stop anywhere (``annotate --order uncertain``).

    Item i is in the Poisson sample at level c when U_i < min(1, c w_i) (``w`` from ``sampling_weights``),
    i.e. when U_i / w_i < c: sorting by U_i / w_i nests the samples of every budget, uncertain items
    early but at random. The first k items are used with π = ``sampling_probabilities(u, k)``
    (Ohlsson's sequential Poisson sampling, 1998: the sample size is fixed at k rather than random,
    which leaves the estimate unbiased up to O(1/k))."""
    weights = sampling_weights(uncertainty, uniform_share)
    draws = rng.random(weights.size)
    with np.errstate(divide="ignore"):
        keys = np.where(weights > 0, draws / np.where(weights > 0, weights, 1.0), np.inf)
    return np.argsort(keys, kind="stable"), draws


def draw(probability: ArrayLike, rng: np.random.Generator) -> np.ndarray:
    """Which items to show for rating: independent Bernoulli(π_i) draws (a boolean mask)."""
    return rng.random(np.asarray(probability).size) < np.asarray(probability, dtype=float)


def active_mean(
    judge: ArrayLike, human: ArrayLike, probability: ArrayLike, *, confidence: float = 0.95
) -> tuple[Interval, Interval]:
    """(the active estimate, the human-only inverse-probability-weighted estimate) of the mean
    human rating. ``human`` is NaN where the item was not drawn (or drawn but not yet rated --
    then the estimate is valid only if the ratings still missing are missing at random);
    ``probability`` the π_i each item was drawn with."""
    f, y, pi = (np.asarray(a, dtype=float) for a in (judge, human, probability))
    if not (f.shape == y.shape == pi.shape):
        raise ValueError("judge, human and probability must be aligned item by item")
    rated = ~np.isnan(y)
    if np.any(np.isnan(f)):
        return _none("every item needs a judge rating (the estimate averages the judge over all items)")
    if np.any(rated & ~(pi > 0)):
        return _none("a rated item has a drawing probability of 0: the draw was not the one recorded")
    n = int(rated.sum())
    if n < 2 or f.size < 2:
        return _none(f"needs at least 2 rated items (has {n})")
    weight = np.where(rated, 1.0 / np.where(pi > 0, pi, 1.0), 0.0)
    residual = np.where(rated, y - f, 0.0)
    phi = f + weight * residual  # one term per item; θ̂ is their mean
    human_only = weight * np.where(rated, y, 0.0)  # Horvitz-Thompson
    size = f.size
    return (
        normal_interval(float(phi.mean()), float(phi.var(ddof=1)) / size, n, confidence),
        normal_interval(float(human_only.mean()), float(human_only.var(ddof=1)) / size, n, confidence),
    )


def _none(note: str) -> tuple[Interval, Interval]:
    return Interval(None, note=note), Interval(None, note=note)


def expected_ratings(probability: ArrayLike) -> float:
    """The expected number of items drawn: Σ π_i."""
    return float(np.sum(np.asarray(probability, dtype=float))) if np.size(probability) else 0.0

"""The uncertain order: every prefix of it is an active sample with known inclusion probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import active, ppi

ITEMS, TRUE_MEAN = 400, 3.0


def test_every_prefix_is_the_poisson_sample_of_some_budget():
    """Independently of the sort: the first k items are exactly {i : U_i < π_i(b)} for the budget b at
    which the Poisson sample has k items (``sampling_probabilities``' own water-filling)."""
    rng = np.random.default_rng(5)
    u = rng.random(120) ** 3
    u[[3, 50]] = np.nan  # unknown: counted as the average
    order, draws = active.sequential_order(u, np.random.default_rng(9))
    assert sorted(order.tolist()) == list(range(120))
    for k in (1, 5, 17, 60, 119):
        prefix = set(order[:k].tolist())
        # the budget halfway between the k-th and (k+1)-th item's entry: the Poisson sample there has k items
        weights = active.sampling_weights(u)
        keys = np.sort(draws / weights)
        level = (keys[k - 1] + keys[k]) / 2
        budget = float(np.minimum(1.0, level * weights).sum())
        pi = active.sampling_probabilities(u, budget)
        assert pi == pytest.approx(np.minimum(1.0, level * weights))
        assert set(np.flatnonzero(draws < pi).tolist()) == prefix


def test_the_order_puts_uncertain_items_early_but_at_random():
    u = np.r_[np.ones(50), np.zeros(50)]  # the first half: the judge is as unsure as can be
    firsts = []
    for seed in range(200):
        order, _ = active.sequential_order(u, np.random.default_rng(seed))
        firsts.append(np.mean(order[:20] < 50))
    # weights 3 : 1 (half of the budget uniform): about three quarters of the first 20 are uncertain, not all
    assert 0.65 < np.mean(firsts) < 0.9 and min(firsts) < 1.0 and max(firsts) > 0.5
    a, _ = active.sequential_order(u, np.random.default_rng(1))
    b, _ = active.sequential_order(u, np.random.default_rng(1))
    assert np.array_equal(a, b)


def _study(rng):
    hardness = rng.random(ITEMS)
    quality = rng.normal(TRUE_MEAN, 1.0, ITEMS)
    human = quality + rng.normal(0, 0.5, ITEMS)
    judge = quality + hardness + rng.normal(0, 0.2 + hardness, ITEMS)  # biased where it is unsure
    return judge, human, hardness


def test_stopping_after_any_prefix_keeps_the_estimate_unbiased():
    """Rate the first k of the order, then active_mean with π = sampling_probabilities(u, k): the interval
    covers the true mean about 95% of the time, where the same ratings with plain PPI do not."""
    hits, naive_hits, k = 0, 0, 50
    for seed in range(300):
        rng = np.random.default_rng(seed)
        judge, human, hardness = _study(rng)
        order, _ = active.sequential_order(hardness, rng)
        shown = np.full(ITEMS, np.nan)
        shown[order[:k]] = human[order[:k]]
        estimate, _ = active.active_mean(judge, shown, active.sampling_probabilities(hardness, k))
        hits += estimate.ci_low <= TRUE_MEAN <= estimate.ci_high
        naive = ppi.ppi_mean(judge, shown).estimate
        naive_hits += naive.ci_low <= TRUE_MEAN <= naive.ci_high
    assert 0.91 <= hits / 300 <= 0.99
    assert naive_hits / 300 < hits / 300 - 0.05  # ignoring how the items were drawn biases the estimate

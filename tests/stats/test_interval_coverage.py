"""How often the item-bootstrap intervals cover the truth: seeded simulations with a known population figure (the
slow tier; the figures are in docs/VERDICT.md, "Intervals"). A percentile bootstrap is approximate: the test holds
it to within a few points of 95 % at the sizes the papers use (96-200 items), and fails on an interval that is
too narrow (resampling ratings instead of items, which ignores that an item's raters share it, covers far less)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tui_rater.stats import intervals as iv

pytestmark = pytest.mark.slow

STUDIES = 300


def _coverage(make, interval, truth: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(STUDIES):
        found = interval(*make(rng))
        hits += bool(found.ok and found.low <= truth <= found.high)
    return hits / STUDIES


def test_alpha_interval_covers_the_population_alpha():
    """3 raters = truth + independent noise: the population interval alpha is var(truth) / (var(truth) + var(noise))."""
    noise = 1.0

    def make(rng):
        truth = rng.normal(0, 1, size=100)
        return (truth + rng.normal(0, noise, size=(3, 100)),)

    coverage = _coverage(make, lambda m: iv.alpha(m, "interval"), 1 / (1 + noise**2), seed=1)
    print(f"alpha (interval), 100 items x 3 raters: coverage {coverage:.3f}")
    assert 0.90 <= coverage <= 0.99


def test_kendall_tau_interval_covers_the_population_tau():
    """Bivariate normal with correlation r: the population tau is (2 / pi) arcsin(r) (Kendall 1949)."""
    r = 0.5

    def make(rng):
        x = rng.normal(size=96)
        return x, r * x + math.sqrt(1 - r**2) * rng.normal(size=96)

    coverage = _coverage(make, iv.kendall_tau, 2 / math.pi * math.asin(r), seed=2)
    print(f"Kendall tau-b, 96 items: coverage {coverage:.3f}")
    assert 0.90 <= coverage <= 0.99

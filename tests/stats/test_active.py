"""Active inference: rating the uncertain items more often without biasing the system score."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import active, ppi

ITEMS, BUDGET, TRUE_MEAN = 500, 60, 3.0


def study(rng):
    """The judge is biased and noisy on hard items, and knows which items are hard."""
    hardness = rng.random(ITEMS)
    quality = rng.normal(TRUE_MEAN, 1.0, ITEMS)
    human = quality + rng.normal(0, 0.5, ITEMS)
    judge = quality + hardness + rng.normal(0, 0.2 + hardness, ITEMS)
    return judge, human, hardness


def test_probabilities_spend_the_budget_and_stay_probabilities():
    rng = np.random.default_rng(0)
    u = rng.random(200) ** 4
    pi = active.sampling_probabilities(u, 40)
    assert pi.sum() == pytest.approx(40) and active.expected_ratings(pi) == pytest.approx(40)
    assert np.all(pi > 0) and np.all(pi <= 1)
    assert pi.min() >= 0.5 * 40 / 200 - 1e-12  # the uniform share is a floor
    assert np.all(np.diff(pi[np.argsort(u)]) >= -1e-12)  # more uncertain, more likely
    even = active.sampling_probabilities(np.full(10, 0.3), 4)
    assert even == pytest.approx(np.full(10, 0.4))
    # one item far more uncertain than the rest: capped at 1, the rest share what is left
    capped = active.sampling_probabilities([100.0] + [0.01] * 9, 5, uniform_share=0.0)
    assert capped[0] == 1.0 and capped.sum() == pytest.approx(5)
    unknown = active.sampling_probabilities([0.2, np.nan, 0.4], 1.5)
    assert unknown[1] == pytest.approx(0.5)
    assert active.sampling_probabilities([0.5, 0.5], 10) == pytest.approx([1.0, 1.0])


def test_the_estimate_is_the_inverse_probability_weighted_formula():
    rng = np.random.default_rng(1)
    judge, human_all, hardness = study(rng)
    pi = active.sampling_probabilities(hardness, BUDGET)
    shown = np.where(active.draw(pi, rng), human_all, np.nan)
    estimate, human_only = active.active_mean(judge, shown, pi)
    rated = ~np.isnan(shown)
    expected = judge.mean() + np.sum((shown[rated] - judge[rated]) / pi[rated]) / ITEMS
    assert estimate.estimate == pytest.approx(expected)
    assert human_only.estimate == pytest.approx(np.sum(shown[rated] / pi[rated]) / ITEMS)
    assert estimate.n == rated.sum()


def test_rating_the_most_uncertain_items_biases_ppi_and_active_sampling_does_not():
    naive_hits = active_hits = ht_hits = uniform_hits = 0
    active_width, uniform_width = [], []
    for seed in range(300):
        rng = np.random.default_rng(seed)
        judge, human_all, hardness = study(rng)
        # naive: the BUDGET items the judge is least sure of, then plain PPI
        top = np.argsort(-hardness)[:BUDGET]
        shown = np.full(ITEMS, np.nan)
        shown[top] = human_all[top]
        naive = ppi.ppi_mean(judge, shown).estimate
        naive_hits += naive.ci_low <= TRUE_MEAN <= naive.ci_high
        # active: drawn at random with π growing with the uncertainty
        pi = active.sampling_probabilities(hardness, BUDGET)
        estimate, human_only = active.active_mean(judge, np.where(active.draw(pi, rng), human_all, np.nan), pi)
        active_hits += estimate.ci_low <= TRUE_MEAN <= estimate.ci_high
        ht_hits += human_only.ci_low <= TRUE_MEAN <= human_only.ci_high
        active_width.append(estimate.ci_high - estimate.ci_low)
        flat = np.full(ITEMS, BUDGET / ITEMS)
        uniform, _ = active.active_mean(judge, np.where(active.draw(flat, rng), human_all, np.nan), flat)
        uniform_hits += uniform.ci_low <= TRUE_MEAN <= uniform.ci_high
        uniform_width.append(uniform.ci_high - uniform.ci_low)
    assert naive_hits / 300 < 0.5  # the rectifier is measured where the judge is worst
    assert 0.91 <= active_hits / 300 <= 0.99 and 0.91 <= ht_hits / 300 <= 0.99
    assert 0.91 <= uniform_hits / 300 <= 0.99
    assert np.mean(active_width) < np.mean(uniform_width)  # the ratings went where they help


def test_undefined_cases():
    judge, human = np.array([1.0, 2.0, 3.0]), np.array([1.0, np.nan, np.nan])
    estimate, human_only = active.active_mean(judge, human, [0.5, 0.5, 0.5])
    assert estimate.estimate is None and "at least 2" in estimate.note and human_only.estimate is None
    zero, _ = active.active_mean(judge, [1.0, 2.0, np.nan], [0.0, 0.5, 0.5])
    assert zero.estimate is None and "probability of 0" in zero.note
    gap, _ = active.active_mean([1.0, np.nan, 3.0], [1.0, 2.0, np.nan], [0.5, 0.5, 0.5])
    assert gap.estimate is None and "judge rating" in gap.note

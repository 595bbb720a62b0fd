"""The anytime-valid figures (``stats/sequential.py``, issue 33 item 3) against implementations written here from the
papers: the hedged-capital betting CS's endpoints found by root-finding on the capital process of Waudby-Smith &
Ramdas (2024, §4.3) computed item by item; the alt-test's e-process by its product formula in a loop, and its
e-value property (E[K_T] = 1 on H0's boundary) by Monte Carlo; e-BH by its definition (Wang & Ramdas 2022)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pytest
from scipy import optimize

from tests.stats import sequential_sim as sim
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import ppi
from tui_rater.stats import sequential as sq


def _paper_log_capital(x: list[float], m: float, alpha: float, c: float = 0.5) -> list[float]:
    """log K^±_t(m) = log max(½ Π(1 + λ⁺_i (x_i - m)), ½ Π(1 - λ⁻_i (x_i - m))) for t = 1 .. T, with the
    predictable plug-in λ̇_i = sqrt(2 log(2/α) / (σ̂²_{i-1} i log(1 + i))), μ̂_i = (½ + Σ_{j<=i} x_j)/(i + 1),
    σ̂²_i = (¼ + Σ_{j<=i} (x_j - μ̂_j)²)/(i + 1), σ̂²_0 = ¼, λ⁺ = min(λ̇, c/m), λ⁻ = min(λ̇, c/(1 - m))."""
    up = down = 0.0
    total = squares = 0.0
    sigma2 = 0.25
    out = []
    for i, xi in enumerate(x, start=1):
        bet = math.sqrt(2 * math.log(2 / alpha) / (sigma2 * i * math.log(1 + i)))
        up += math.log(1 + min(bet, c / m) * (xi - m))
        down += math.log(1 - min(bet, c / (1 - m)) * (xi - m))
        out.append(max(up, down) + math.log(0.5))
        total += xi
        mu = (0.5 + total) / (i + 1)
        squares += (xi - mu) ** 2
        sigma2 = (0.25 + squares) / (i + 1)
    return out


def _over(seen: list[float], alpha: float, m: float) -> float:
    """The running intersection's test: the largest log capital so far, minus log(1/α) (< 0: m is in the CS)."""
    return max(_paper_log_capital(seen, m, alpha)) - math.log(1 / alpha)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_betting_cs_endpoints_are_the_papers_capital_crossing_one_over_alpha(seed):
    rng = np.random.default_rng(seed)
    x = rng.beta(2, 5, size=60)
    alpha = 0.05
    found = sq.betting_cs(x, alpha, grid=2000)
    for t in (4, 19, 59):
        mean = float(x[: t + 1].mean())

        over = partial(_over, list(x[: t + 1]), alpha)

        assert over(mean) < 0
        low = optimize.brentq(over, 1e-9, mean, xtol=1e-10)
        high = optimize.brentq(over, mean, 1 - 1e-9, xtol=1e-10)
        # outward-rounded to the grid: never inside the paper's set, at most two grid steps outside it
        assert found.low[t] <= low + 1e-12 and low - found.low[t] <= 2 / 2000
        assert found.high[t] >= high - 1e-12 and found.high[t] - high <= 2 / 2000
        assert found.estimate[t] == pytest.approx(mean)


def test_betting_cs_over_many_studies_equals_each_study_alone():
    rng = np.random.default_rng(7)
    x = rng.random((5, 40))
    together = sq.betting_cs(x)
    for s in range(5):
        alone = sq.betting_cs(x[s])
        assert np.array_equal(alone.low, together.low[s]) and np.array_equal(alone.high, together.high[s])


def test_scaled_cs_refuses_values_off_the_scale():
    with pytest.raises(ValueError, match="rescaled"):
        sq.scaled_cs([1.0, 6.0], 1.0, 5.0)


def test_e_process_is_the_product_of_the_bets_written_item_by_item():
    rng = np.random.default_rng(3)
    d = rng.choice([-1.0, 0.0, 1.0], size=50, p=[0.2, 0.6, 0.2])
    eps = 0.15
    log_k, total, square = 0.0, 0.0, 0.0
    expected = []
    for t, di in enumerate(d):
        x = eps - di
        bet = min(max((total / (t + 1)) / ((1 + square) / (t + 1)), 0.0), 0.75 / (1 - eps))  # aGRAPA, clipped
        log_k += math.log(1 + bet * x)
        expected.append(log_k)
        total, square = total + x, square + x * x
    assert np.allclose(sq.log_e_process(d, eps), expected, rtol=0, atol=1e-12)


def test_e_process_is_an_e_value_on_the_nulls_boundary():
    """E[d] = ε exactly: K_t is a martingale with K_0 = 1, so E[K_T] = 1 -- here exactly, summed over all 3^10
    sequences of 10 items with their probabilities; further inside H0 (E[d] > ε) a supermartingale: below 1."""
    eps, steps = 0.2, 10
    paths = np.array(np.meshgrid(*[[-1.0, 0.0, 1.0]] * steps, indexing="ij")).reshape(steps, -1).T
    k = np.exp(sq.log_e_process(paths, eps)[:, -1])
    for p, boundary in (({-1.0: 0.2, 0.0: 0.4, 1.0: 0.4}, True), ({-1.0: 0.1, 0.0: 0.4, 1.0: 0.5}, False)):
        weight = np.prod(np.vectorize(p.get)(paths), axis=1)
        expected = float(np.sum(weight * k))
        assert expected == pytest.approx(1.0, abs=1e-12) if boundary else expected < 0.99


def _e_bh_by_definition(e: list[float], alpha: float) -> set[int]:
    m = len(e)
    best = 0
    for k in range(1, m + 1):
        if sorted(e, reverse=True)[k - 1] >= m / (alpha * k):
            best = k
    return set(sorted(range(m), key=lambda i: -e[i])[:best])


def test_e_bh_rejects_what_its_definition_rejects():
    rng = np.random.default_rng(5)
    for _ in range(300):
        m = int(rng.integers(1, 8))
        e = np.exp(rng.normal(2.5, 2, size=m)).tolist()
        got = set(np.nonzero(sq.e_bh(np.array(e), 0.05))[0].tolist())
        assert got == _e_bh_by_definition(e, 0.05)
    assert sq.e_bh(np.array([100.0, math.nan, 1.0]), 0.05).tolist() == [True, False, False]  # m = 2 tested


def test_the_advantage_sequence_averages_to_the_fixed_n_tests_rho():
    persons, judge = sim.alt_studies(seed=4, miss=0.1, studies=1)
    humans = {f"h{j}": {i: float(persons[0, j, i]) for i in range(sim.ALT_ITEMS)} for j in range(sim.PERSONS)}
    ratings = {i: float(judge[0, i]) for i in range(sim.ALT_ITEMS)}
    rows, _, _ = at.human_comparisons(humans, ratings, level="ordinal", epsilon=0.2)
    vectorised = sim.advantages(persons, judge)
    for j, row in enumerate(rows):
        d = sq.advantage_sequence(humans, ratings, row.human, list(range(sim.ALT_ITEMS)), "ordinal")
        assert d.mean() == pytest.approx(row.rho_human - row.rho_judge)
        assert np.array_equal(d, vectorised[0, j])


def test_a_judge_like_a_person_is_let_in_and_one_off_the_scale_never():
    persons, _ = sim.alt_studies(seed=8, miss=0.0, studies=1)
    humans = {f"h{j}": {i: float(persons[0, j, i]) for i in range(sim.ALT_ITEMS)} for j in range(sim.PERSONS)}
    order = list(range(sim.ALT_ITEMS))
    copycat = sq.anytime_alt_test(humans, humans["h0"], order, level="ordinal", epsilon=0.2)
    assert copycat.passed is True and copycat.winning_rate == 1.0 and all(e >= 20 for e in copycat.e_values.values())
    off = sq.anytime_alt_test(humans, dict.fromkeys(order, -10.0), order, level="ordinal", epsilon=0.2)
    assert off.passed is False and off.winning_rate == 0.0
    few = sq.anytime_alt_test(humans, humans["h0"], order[:20], level="ordinal", epsilon=0.2)
    assert few.passed is None and "at least 3 humans" in few.note


def test_the_simulations_fixed_n_figures_are_the_products():
    """The slow simulation writes the fixed-n PPI interval and the paper's verdict over arrays: here they equal
    ``ppi.ppi_mean`` and ``alt_test`` at a few looks of a few studies."""
    judge, human = sim.mean_studies(seed=2, studies=3)
    estimate, low, high = sim.fixed_ppi(judge, human)
    for s in range(3):
        for n in (2, 30, sim.RATED):
            shown = np.where(np.arange(sim.ITEMS) < n, human[s], np.nan)
            direct = ppi.ppi_mean(judge[s], shown)
            assert direct.estimate.estimate == pytest.approx(estimate[s, n - 1])
            assert direct.estimate.ci_low == pytest.approx(low[s, n - 1])
            assert direct.estimate.ci_high == pytest.approx(high[s, n - 1])
    persons, judge_ratings = sim.alt_studies(seed=9, miss=0.05, studies=4)
    passes = sim.fixed_passes(sim.advantages(persons, judge_ratings))
    for s in range(4):
        for n in (30, 60, sim.ALT_ITEMS):
            humans = {f"h{j}": {i: float(persons[s, j, i]) for i in range(n)} for j in range(sim.PERSONS)}
            ratings = {i: float(judge_ratings[s, i]) for i in range(n)}
            assert at.alt_test(humans, ratings, level="ordinal", epsilon=sim.EPSILON).passed == passes[s, n - 1]


def test_confidence_sequences_cover_at_every_look_in_a_small_simulation():
    """The quick version of the slow tier's 1,000 studies (``test_sequential_coverage.py``)."""
    found = sim.mean_coverage(seed=5, studies=100)
    assert found["PPI, anytime CS"].every_look >= 0.95 and found["human-only, anytime CS"].every_look >= 0.95
    assert found["human-only, fixed-n interval"].every_look < 0.8  # peeking at the fixed-n interval


def test_the_curve_reads_each_prefix_as_the_test_on_that_prefix_would():
    persons, judge = sim.alt_studies(seed=12, miss=0.1, studies=1)
    humans = {f"h{j}": {i: float(persons[0, j, i]) for i in range(120)} for j in range(sim.PERSONS)}
    del humans["h3"][5], humans["h1"][40]  # persons who skipped items: their sequences are shorter
    ratings = {i: float(judge[0, i]) for i in range(120)}
    order = list(np.random.default_rng(1).permutation(120))
    sizes = [10, 30, 31, 64, 120]
    for n, verdict in sq.anytime_alt_curve(humans, ratings, order, sizes, level="ordinal", epsilon=0.2):
        alone = sq.anytime_alt_test(humans, ratings, order[:n], level="ordinal", epsilon=0.2)
        assert verdict == alone, n


def _step_by_step(x: np.ndarray, alpha: float, grid: int = sq.GRID) -> tuple[np.ndarray, np.ndarray]:
    """WSR's hedged capital one observation at a time over the whole grid (no blocks, no narrowing)."""
    m = (np.arange(grid) + 0.5) / grid
    t = np.arange(1, x.size + 1, dtype=float)
    mu = (0.5 + np.cumsum(x)) / (t + 1)
    sigma2 = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1)
    previous = np.concatenate([[0.25], sigma2[:-1]])
    bets = np.sqrt(2 * math.log(2 / alpha) / (previous * t * np.log1p(t)))
    up_sum, down_sum, worst = np.zeros(grid), np.zeros(grid), np.full(grid, -np.inf)
    low, high = np.empty(x.size), np.empty(x.size)
    for i in range(x.size):
        up_sum = up_sum + np.log1p(np.minimum(bets[i], sq.BET_CAP / m) * (x[i] - m))
        down_sum = down_sum + np.log1p(-np.minimum(bets[i], sq.BET_CAP / (1 - m)) * (x[i] - m))
        worst = np.maximum(worst, np.maximum(up_sum, down_sum) + math.log(0.5))
        inside = np.flatnonzero(worst < math.log(1 / alpha))
        first, last = (inside[0], inside[-1]) if inside.size else (np.argmin(worst),) * 2
        low[i], high[i] = max(0.0, m[first] - 1 / grid), min(1.0, m[last] + 1 / grid)
    return low, high


@pytest.mark.parametrize("shape", ["ratings", "uniform", "jump"])
def test_the_narrowed_grid_gives_the_step_by_step_bounds_to_the_bit(shape):
    """The CS carries only the cells still inside (a cell's worst capital only grows): the same bounds, bit for
    bit, as the whole grid stepped one observation at a time -- an empty set (the jump) included."""
    rng = np.random.default_rng(35)
    x = {
        "ratings": rng.integers(1, 6, 3000) / 5.0,
        "uniform": rng.random(2000),
        "jump": np.r_[np.zeros(300), np.ones(300)],
    }[shape]
    for alpha in (0.05, 0.025):
        found = sq.betting_cs(x, alpha)
        low, high = _step_by_step(x, alpha)
        assert found.low.tobytes() == low.tobytes() and found.high.tobytes() == high.tobytes()

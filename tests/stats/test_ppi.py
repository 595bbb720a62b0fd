"""Prediction-powered inference: checked against the closed-form variances of a simulated model,
Monte-Carlo variances, the textbook two-phase regression estimator, and coverage over 300 seeds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tui_rater.stats import ppi

TRUE_MEAN = 3.0
ITEMS, RATED = 300, 40


def simulate(rng, items=ITEMS, rated=RATED, slope=0.5, offset=2.0, judge_noise=0.3, human_noise=0.5):
    """Item quality q ~ N(3, 1); the (mean) human rating q + noise; a biased, compressed judge
    slope * q + offset + noise (its mean is 3.5, not 3). Humans rate a random subset."""
    quality = rng.normal(TRUE_MEAN, 1.0, items)
    human = quality + rng.normal(0, human_noise, items)
    judge = slope * quality + offset + rng.normal(0, judge_noise, items)
    shown = np.full(items, np.nan)
    subset = rng.choice(items, rated, replace=False)
    shown[subset] = human[subset]
    return judge, shown


# the model's moments (slope 0.5, offset 2, judge noise 0.3, human noise 0.5)
VAR_Y, VAR_F, COV_YF = 1.25, 0.25 + 0.09, 0.5


def theory_ppi(n=RATED, big_n=ITEMS):
    """[Var f + 2 Cov(f, y - f)] / N + Var(y - f) / n, from the model's moments."""
    var_g = VAR_Y + VAR_F - 2 * COV_YF
    return (VAR_F + 2 * (COV_YF - VAR_F)) / big_n + var_g / n


def theory_regression(n=RATED, big_n=ITEMS):
    """Two-phase sampling's regression estimator (Cochran, Sampling Techniques, ch. 12):
    Var = S_y² (1 - ρ²) / n + ρ² S_y² / N -- the PPI++ optimum, written differently."""
    rho2 = COV_YF**2 / (VAR_Y * VAR_F)
    return VAR_Y * (1 - rho2) / n + rho2 * VAR_Y / big_n


def test_the_estimate_is_the_judge_mean_plus_the_rectifier():
    judge, human = simulate(np.random.default_rng(0))
    rated = ~np.isnan(human)
    result = ppi.ppi_mean(judge, human)
    expected = judge.mean() + (human[rated] - judge[rated]).mean()
    assert result.estimate.estimate == pytest.approx(expected, abs=1e-12)
    assert result.judge_mean == pytest.approx(judge.mean()) and result.lam == 1.0
    assert (result.items, result.rated) == (ITEMS, RATED)
    assert result.classical.estimate == pytest.approx(human[rated].mean())
    assert result.classical.std_error == pytest.approx(human[rated].std(ddof=1) / math.sqrt(RATED))


def test_with_every_item_rated_it_is_the_human_mean_and_its_interval():
    rng = np.random.default_rng(1)
    judge, _ = simulate(rng)
    human = judge * 0.7 + rng.normal(0, 0.4, ITEMS)
    for tuned in (False, True):
        result = ppi.ppi_mean(judge, human, power_tuned=tuned)
        assert result.estimate.estimate == pytest.approx(human.mean(), abs=1e-12)
        assert result.estimate.std_error == pytest.approx(result.classical.std_error, rel=1e-9)


def monte_carlo(power_tuned: bool, reps=3000):
    rng = np.random.default_rng(42)
    estimates, variances = [], []
    for _ in range(reps):
        result = ppi.ppi_mean(*simulate(rng), power_tuned=power_tuned)
        estimates.append(result.estimate.estimate)
        variances.append(result.estimate.std_error**2)
    return np.var(estimates, ddof=1), np.mean(variances), np.mean(estimates)


def test_the_variance_formula_matches_monte_carlo_and_the_model():
    empirical, estimated, mean = monte_carlo(power_tuned=False)
    assert mean == pytest.approx(TRUE_MEAN, abs=0.01)  # unbiased although the judge is off by 0.5
    assert empirical == pytest.approx(theory_ppi(), rel=0.08)
    assert estimated == pytest.approx(theory_ppi(), rel=0.05)


def test_power_tuning_reaches_the_regression_estimators_variance():
    empirical, estimated, mean = monte_carlo(power_tuned=True)
    assert mean == pytest.approx(TRUE_MEAN, abs=0.01)
    assert empirical == pytest.approx(theory_regression(), rel=0.1)
    assert estimated == pytest.approx(theory_regression(), rel=0.1)
    assert theory_regression() < theory_ppi() < VAR_Y / RATED  # PPI++ < PPI < human-only here


def coverage(power_tuned: bool, seeds=300, **model):
    hits = {"ppi": 0, "classical": 0}
    widths = {"ppi": [], "classical": []}
    for seed in range(seeds):
        result = ppi.ppi_mean(*simulate(np.random.default_rng(seed), **model), power_tuned=power_tuned)
        for name, interval in (("ppi", result.estimate), ("classical", result.classical)):
            hits[name] += interval.ci_low <= TRUE_MEAN <= interval.ci_high
            widths[name].append(interval.ci_high - interval.ci_low)
    return {k: v / seeds for k, v in hits.items()}, {k: float(np.mean(v)) for k, v in widths.items()}


@pytest.mark.parametrize("power_tuned", [False, True])
def test_the_interval_covers_the_true_mean_95_percent_of_the_time(power_tuned):
    rate, width = coverage(power_tuned)
    # 300 seeds: the binomial standard error at 0.95 is 1.3 points
    assert 0.91 <= rate["ppi"] <= 0.99 and 0.91 <= rate["classical"] <= 0.99
    assert width["ppi"] < 0.8 * width["classical"]  # a good judge narrows the interval


def test_a_useless_judge_widens_ppi_and_power_tuning_falls_back_to_the_human_mean():
    rng = np.random.default_rng(5)
    _, human = simulate(rng, items=2000, rated=200)
    judge = rng.normal(3, 1.5, 2000)  # unrelated to the items
    plain, tuned = ppi.ppi_mean(judge, human), ppi.ppi_mean(judge, human, power_tuned=True)
    assert plain.estimate.std_error > plain.classical.std_error
    assert abs(tuned.lam) < 0.1
    assert tuned.estimate.std_error == pytest.approx(tuned.classical.std_error, rel=0.05)
    rate, _ = coverage(False, judge_noise=3.0, slope=0.0)
    assert 0.91 <= rate["ppi"] <= 0.99  # still valid, only wider


def test_how_many_more_ratings_halve_the_interval():
    ratios = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        judge, human_all = simulate(rng, items=3000, rated=3000)
        order = rng.permutation(3000)
        shown = np.full(3000, np.nan)
        shown[order[:60]] = human_all[order[:60]]
        first = ppi.ppi_mean(judge, shown)
        extra = first.halving.extra_ratings
        assert extra is not None and extra > 60
        shown[order[: 60 + extra]] = human_all[order[: 60 + extra]]
        ratios.append(ppi.ppi_mean(judge, shown).estimate.std_error / first.estimate.std_error)
    assert np.mean(ratios) == pytest.approx(0.5, abs=0.05)


def test_halving_is_impossible_when_the_judge_term_dominates_or_items_run_out():
    rng = np.random.default_rng(3)
    quality = rng.normal(3, 1, 100)
    human = np.where(np.arange(100) < 30, quality, np.nan)
    near_perfect = ppi.ppi_mean(quality + rng.normal(0, 0.01, 100), human)
    assert near_perfect.halving.extra_ratings is None and "judge's own term" in near_perfect.halving.note
    # a noisy judge: its term is negative (2 Cov(f, y) < Var f), but 70 of 100 items are rated already
    judge, human = simulate(rng, items=100, rated=70, judge_noise=2.0)
    crowded = ppi.ppi_mean(judge, human)
    assert crowded.judge_term < 0
    assert crowded.halving.extra_ratings is None and "more than the 100 these items allow" in crowded.halving.note


def test_undefined_cases_are_none_with_a_reason():
    judge = np.array([1.0, 2.0, 3.0, 4.0])
    one = ppi.ppi_mean(judge, [np.nan, 2.0, np.nan, np.nan])
    assert one.estimate.estimate is None and "at least 2 human-rated" in one.note
    assert one.classical.estimate is None and one.items == 4 and one.rated == 1
    missing_judge = ppi.ppi_mean([1.0, np.nan, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, np.nan, np.nan])
    assert missing_judge.items == 4 and missing_judge.rated == 2 and "1 items without a judge" in missing_judge.note
    small = ppi.ppi_mean(judge, [1.0, 2.0, 3.0, np.nan])
    assert small.estimate.estimate is not None and "under-cover" in small.estimate.note


# --- differences between two systems ---------------------------------------------------------------


def paired_study(rng, units=200, rated=50, same_subset=True, effect=0.3):
    """Each unit (a prompt) has an effect shared by both systems' texts: the estimates covary."""
    prompt = rng.normal(0, 1, units)
    quality_a = prompt + effect + rng.normal(0, 0.5, units)
    quality_b = prompt + rng.normal(0, 0.5, units)

    def rate(quality, subset, bias):
        judge = 0.7 * quality + bias + rng.normal(0, 0.3, units)
        human = np.full(units, np.nan)
        human[subset] = quality[subset] + rng.normal(0, 0.5, rated)
        return judge, human

    subset_a = rng.choice(units, rated, replace=False)
    subset_b = subset_a if same_subset else rng.choice(units, rated, replace=False)
    return (*rate(quality_a, subset_a, 0.4), *rate(quality_b, subset_b, 0.0))


@pytest.mark.parametrize("same_subset", [True, False])
@pytest.mark.parametrize("power_tuned", [False, True])
def test_paired_difference_covers_and_pairing_narrows(same_subset, power_tuned):
    hits = classical_hits = 0
    narrower = 0
    for seed in range(300):
        data = paired_study(np.random.default_rng(seed), same_subset=same_subset)
        paired = ppi.ppi_difference(*data, paired=True, power_tuned=power_tuned)
        hits += paired.estimate.ci_low <= 0.3 <= paired.estimate.ci_high
        classical_hits += paired.classical.ci_low <= 0.3 <= paired.classical.ci_high
        unpaired = ppi.ppi_difference(*data, paired=False, power_tuned=power_tuned)
        narrower += paired.estimate.std_error < unpaired.estimate.std_error
    assert 0.91 <= hits / 300 <= 0.99 and 0.91 <= classical_hits / 300 <= 0.99
    # the shared prompt effect cancels in the difference: pairing narrows the interval
    assert narrower >= 290


def test_unpaired_difference_covers():
    hits = 0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        ja, ha = simulate(rng, items=250, rated=40)
        jb, hb = simulate(rng, items=180, rated=30, offset=1.5)  # same humans' mean, another judge bias
        diff = ppi.ppi_difference(ja, ha, jb, hb, paired=False)
        a, b = ppi.ppi_mean(ja, ha), ppi.ppi_mean(jb, hb)
        assert diff.estimate.estimate == pytest.approx(a.estimate.estimate - b.estimate.estimate)
        assert diff.estimate.std_error == pytest.approx(math.hypot(a.estimate.std_error, b.estimate.std_error))
        hits += diff.estimate.ci_low <= 0.0 <= diff.estimate.ci_high
    assert 0.91 <= hits / 300 <= 0.99


def test_paired_classical_difference_is_the_paired_t_interval_when_both_are_rated_together():
    data = paired_study(np.random.default_rng(9))
    _, human_a, _, human_b = data
    both = ~np.isnan(human_a)
    d = human_a[both] - human_b[both]
    result = ppi.ppi_difference(*data, paired=True)
    assert result.classical.estimate == pytest.approx(d.mean())
    assert result.classical.std_error == pytest.approx(d.std(ddof=1) / math.sqrt(d.size))


def test_system_scores_from_item_keyed_ratings():
    rng = np.random.default_rng(4)
    ja, ha, jb, hb = paired_study(rng)
    judge, human, system, unit = {}, {}, {}, {}
    for name, j, h in (("human-written", ja, ha), ("gpt2", jb, hb)):
        for u in range(len(j)):
            key = f"{name}/{u}"
            judge[key], system[key], unit[key] = float(j[u]), name, u
            if not np.isnan(h[u]):
                human[key] = float(h[u])
    scores = ppi.system_scores(judge, human, system, unit)
    assert scores.means["human-written"].estimate.estimate == pytest.approx(ppi.ppi_mean(ja, ha).estimate.estimate)
    (diff,) = scores.differences
    assert (diff.system_a, diff.system_b, diff.paired) == ("gpt2", "human-written", True)
    direct = ppi.ppi_difference(jb, hb, ja, ha, paired=True)
    assert diff.estimate.estimate == pytest.approx(direct.estimate.estimate)
    assert diff.estimate.std_error == pytest.approx(direct.estimate.std_error)
    unpaired = ppi.system_scores(judge, human, system).differences[0]
    assert not unpaired.paired and unpaired.estimate.std_error > diff.estimate.std_error

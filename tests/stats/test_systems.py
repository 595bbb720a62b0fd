"""SPA, Bradley-Terry, position bias and meta-evaluation against reference values."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sp

from tui_rater.stats.systems import bradley_terry, meta_evaluation, pair_tau_b, position_bias, spa


def test_bradley_terry_stigler_citations():
    # BradleyTerry2 vignette: wins row over column
    systems = ["Biometrika", "CommStat", "JASA", "JRSS-B"]
    wins = np.zeros((4, 4))
    for (i, j), (a, b) in {
        (0, 1): (730, 33),
        (0, 2): (498, 320),
        (0, 3): (221, 284),
        (1, 2): (68, 813),
        (1, 3): (17, 276),
        (2, 3): (142, 325),
    }.items():
        wins[i, j], wins[j, i] = a, b
    result = bradley_terry(wins, systems)
    assert result.converged
    assert result.log_strength == pytest.approx([0, -2.9491, -0.4796, 0.2690], abs=1e-4)


def test_bradley_terry_choix_example():
    wins = np.zeros((5, 5))
    for winner, loser in [(1, 0), (0, 4), (3, 1), (0, 2), (2, 4), (4, 3)]:
        wins[winner, loser] += 1
    result = bradley_terry(wins, list("01234"))
    centred = np.array(result.log_strength) - np.mean(result.log_strength)
    assert centred == pytest.approx([0.583, 0.194, 0, -0.194, -0.583], abs=1e-3)


def test_spa_filter_both_orders_ttest_and_holm():
    probabilities = {
        "a1": {("X", "Y"): 0.8, ("Y", "X"): 0.2, ("Y", "Z"): 0.6, ("Z", "Y"): 0.4},
        "a2": {("X", "Y"): 0.7, ("Y", "X"): 0.3, ("Y", "Z"): 0.55, ("Z", "Y"): 0.5},
        "a3": {("X", "Y"): 0.9, ("Y", "X"): 0.15, ("Y", "Z"): 0.7, ("Z", "Y"): 0.3},
        "bad": {("X", "Y"): 0.9, ("Y", "X"): 0.9, ("Y", "Z"): 0.5, ("Z", "Y"): 0.5},  # 1.8 > 1.1
        "edge": {("X", "Y"): 0.6, ("Y", "X"): 0.5, ("Y", "Z"): 0.6, ("Z", "Y"): 0.5},  # exactly 1.1: kept
    }
    likert = {
        "a1": {"X": 4, "Y": 3, "Z": 3},
        "a2": {"X": 5, "Y": 3, "Z": 2},
        "a3": {"X": 4, "Y": 4, "Z": 3},
        "edge": {"X": 3, "Y": 3, "Z": 3},
        "bad": {"X": 1, "Y": 5, "Z": 5},
    }
    result = spa(probabilities, [("X", "Y"), ("Y", "Z")], likert)
    assert result.excluded == ["bad"] and result.annotators == 4
    xy, yz = result.comparisons
    kept = [0.8, 0.7, 0.9, 0.6]
    assert xy.p_x_over_y == pytest.approx(np.mean(kept)) and xy.n == 4
    expected = sp.ttest_1samp(kept, 0.5)
    assert xy.t == pytest.approx(expected.statistic) and xy.p_value == pytest.approx(expected.pvalue)
    ps = [xy.p_value, yz.p_value]
    from tui_rater.stats.agreement import holm

    assert [xy.p_holm, yz.p_holm] == pytest.approx(holm(ps))
    deltas = np.array([4 - 3, 5 - 3, 4 - 4, 3 - 3])
    assert xy.likert_delta == pytest.approx(deltas.mean())
    assert xy.likert_p == pytest.approx(sp.ttest_rel([4, 5, 4, 3], [3, 3, 4, 3]).pvalue)
    unfiltered = spa(probabilities, [("X", "Y")], tau=None)
    assert unfiltered.excluded == [] and unfiltered.comparisons[0].n == 5


def test_position_bias_and_inconsistency_as_tie():
    # (verdict in original order, verdict in swapped order), canonical 0 = A, 1 = B, 2 = tie
    result = position_bias([(0, 0), (0, 1), (1, 1), (2, 0), (None, 1)])
    assert result.pairs == 4 and result.consistent_rate == pytest.approx(2 / 4)
    assert result.verdicts == {"A": 1, "B": 1, "tie": 2}
    # first-shown wins: original A (pos 1) x2, original B (pos 2), swapped A (pos 2) x2, swapped B (pos 1) x3
    assert result.first_position_rate == pytest.approx(5 / 8)


def test_pair_tau_b_formula_and_meta_evaluation():
    assert pair_tau_b(np.array([1, 2, -1, 0]), np.array([3, -1, -2, 1])) == pytest.approx(
        (2 - 1) / np.sqrt((2 + 1 + 1) * (2 + 1 + 0))
    )
    inputs = ["p1"] * 4 + ["p2"] * 4
    human = [10, 20, 30, 40, 50, 60, 70, 80]
    metric = [12, 18, 35, 33, 40, 65, 60, 90]
    meta = meta_evaluation(inputs, human, metric)
    per_input = [sp.spearmanr(human[:4], metric[:4]).statistic, sp.spearmanr(human[4:], metric[4:]).statistic]
    assert meta.sample_spearman == pytest.approx(np.mean(per_input))
    assert meta.dataset_pearson == pytest.approx(sp.pearsonr(human, metric).statistic)
    assert meta.sample_pearson == pytest.approx(
        np.mean([sp.pearsonr(human[:4], metric[:4]).statistic, sp.pearsonr(human[4:], metric[4:]).statistic])
    )
    assert meta.dataset_spearman == pytest.approx(sp.spearmanr(human, metric).statistic)
    assert meta.inputs == 2
    # App. C: pairs of texts for the same input, bucketed by the human score gap in thirds
    pairs = [(i, j) for g in (range(4), range(4, 8)) for i, j in itertools.combinations(g, 2)]
    h = np.array([human[i] - human[j] for i, j in pairs], float)
    m = np.array([metric[i] - metric[j] for i, j in pairs], float)
    gap = np.abs(h)  # 10 x6, 20 x4, 30 x2: thirds at 10 and 20
    buckets = {"all": gap > 0, "hard": gap <= 10, "medium": (gap > 10) & (gap <= 20), "easy": gap > 20}
    assert set(meta.kendall_pairs) == set(buckets)
    for name, mask in buckets.items():
        tau, n = meta.kendall_pairs[name]
        assert n == int(mask.sum()) and tau == pytest.approx(pair_tau_b(h[mask], m[mask])), name
    assert [meta.kendall_pairs[k][1] for k in ("all", "hard", "medium", "easy")] == [12, 6, 4, 2]


def test_spa_without_variation_has_no_p_value():
    """Two annotators who both say P[X>Y] = 70% are no evidence at p = 0: the t-test is undefined (0/0), so the
    comparison keeps its mean and has no p-value, and the Holm correction leaves the other comparisons alone."""
    probabilities = {
        "a1": {("X", "Y"): 0.7, ("Y", "Z"): 0.6},
        "a2": {("X", "Y"): 0.7, ("Y", "Z"): 0.8},
        "a3": {("X", "Y"): 0.7, ("Y", "Z"): 0.9},
    }
    xy, yz = spa(probabilities, [("X", "Y"), ("Y", "Z")], tau=None).comparisons
    assert xy.p_x_over_y == pytest.approx(0.7) and xy.n == 3
    assert (xy.t, xy.p_value, xy.p_holm) == (None, None, None)
    expected = sp.ttest_1samp([0.6, 0.8, 0.9], 0.5).pvalue
    assert yz.p_value == pytest.approx(expected) and yz.p_holm == pytest.approx(expected)  # one test: no correction

"""Reference values from shared/reference/stats.md (published or library-verified)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats as sp

from tui_rater.stats import agreement as ag

nan = np.nan
KRIPPENDORFF = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
)


def test_krippendorff_canonical_example():
    assert ag.alpha(KRIPPENDORFF, "ordinal", [1, 2, 3, 4, 5]).value == pytest.approx(0.815388, abs=1e-6)
    assert ag.alpha(KRIPPENDORFF, "interval").value == pytest.approx(0.849107, abs=1e-6)
    assert ag.alpha(KRIPPENDORFF, "nominal", [1, 2, 3, 4, 5]).value == pytest.approx(113 / 152, abs=1e-6)
    assert ag.alpha(KRIPPENDORFF, "ratio").value == pytest.approx(0.797403, abs=1e-6)
    assert ag.alpha(KRIPPENDORFF, "interval").n == 11  # unit 12 has one value: not pairable


def test_alpha_undefined_cases_are_na_not_crashes():
    assert ag.alpha(np.array([[1, 2, 3]]), "interval").note == "needs at least two raters"
    one_value = ag.alpha(np.array([[3, 3], [3, 3]]), "interval")
    assert one_value.value is None and one_value.note
    unpaired = ag.alpha(np.array([[1, nan], [nan, 2]]), "interval")
    assert unpaired.value is None and "two ratings" in unpaired.note


def test_alpha_names_an_unknown_level():
    """krippendorff.alpha would fail on it with "'str' object is not callable"; the level is named instead."""
    with pytest.raises(ValueError, match="unknown level of measurement 'intervall'"):
        ag.alpha(KRIPPENDORFF, "intervall")


def _alpha_by_definition(matrix: np.ndarray) -> float:
    """Interval α from every ordered pair of values (Krippendorff 2011), the expected part in blocks."""
    units = [column[~np.isnan(column)] for column in matrix.T]
    units = [u for u in units if u.size >= 2]
    observed = sum(float(np.sum(np.subtract.outer(u, u) ** 2)) / (u.size - 1) for u in units)
    values = np.concatenate(units)
    expected = sum(float(np.sum(np.subtract.outer(block, values) ** 2)) for block in np.array_split(values, 20))
    n = values.size
    return 1 - (observed / n) / (expected / (n * (n - 1)))


@pytest.mark.parametrize("level", ["interval", "ordinal", "nominal"])
def test_alpha_of_many_distinct_values(level):
    """Continuous ratings (implicit scores, means of samples): the krippendorff package built an
    items x values x values array -- 536 GiB for these 2,000 items -- and the report died with MemoryError."""
    rng = np.random.default_rng(7)
    truth = rng.random(2000)
    matrix = truth + rng.normal(0, 0.2, (3, 2000))
    matrix[0, :700] = nan
    result = ag.alpha(matrix, level)
    assert result.n == 2000
    if level == "interval":
        assert result.value == pytest.approx(_alpha_by_definition(matrix), rel=1e-9)
    elif level == "ordinal":  # Krippendorff's ordinal δ is the squared difference of mid-ranks (ties averaged)
        ranks = np.full(matrix.shape, nan)
        ranks[~np.isnan(matrix)] = sp.rankdata(matrix[~np.isnan(matrix)])
        assert result.value == pytest.approx(_alpha_by_definition(ranks), rel=1e-9)
    else:  # every value distinct: observed and expected disagreement are both 1
        assert result.value == pytest.approx(0.0, abs=1e-12)


def test_percent_exact():
    result = ag.percent_exact(KRIPPENDORFF)
    # units 1-11 have >= 2 values; all-equal in 1, 3, 4, 5, 7, 9, 10, 11
    assert result.n == 11 and result.value == pytest.approx(100 * 8 / 11)


def test_kendall_tau_b():
    result = ag.kendall_tau([12, 2, 1, 12, 2], [1, 4, 7, 1, 0])
    assert result.value == pytest.approx(-0.4714045, abs=1e-7)
    assert result.p == pytest.approx(0.2827455, abs=1e-7)
    assert ag.kendall_tau([1, 1, 1, 1], [1, 2, 3, 4]).value is None


G1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
G2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def test_welch_and_paired_t_on_r_sleep_data():
    w = ag.welch(G1, G2)
    assert w.value == pytest.approx(-1.860813, abs=1e-6)
    assert w.extra["df"] == pytest.approx(17.77647, abs=1e-5)
    assert w.p == pytest.approx(0.0793941, abs=1e-7)
    paired = ag.paired_t(G1, G2)
    assert paired.value == pytest.approx(-4.062128, abs=1e-6) and paired.p == pytest.approx(0.0028329, abs=1e-7)


def test_holm():
    assert ag.holm([0.01, 0.02, 0.03, 0.04, 0.05]) == pytest.approx([0.05, 0.08, 0.09, 0.09, 0.09])
    assert ag.holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def test_weighted_kappa_scikit_learn_reference():
    y1 = [0] * 46 + [1] * 44 + [2] * 10
    y2 = [0] * 50 + [1] * 40 + [2] * 10
    assert ag.weighted_kappa(y1, y2, [0, 1, 2], "none").value == pytest.approx(0.9315, abs=1e-4)
    assert ag.weighted_kappa(y1, y2, [0, 1, 2], "linear").value == pytest.approx(0.9412, abs=1e-4)
    assert ag.weighted_kappa(y1, y2, [0, 1, 2], "quadratic").value == pytest.approx(0.9541, abs=1e-4)


def test_bias_confusion_and_exact_agreement():
    human = [1, 2, 3, 4, 5, 3]
    llm = [2, 3, 3.4, 5, 5, 3.6]
    b = ag.bias(llm, human)
    assert b.value == pytest.approx(np.mean(np.array(llm) - np.array(human)))
    d = np.array(llm) - np.array(human)
    low, high = sp.t.interval(0.95, df=d.size - 1, loc=d.mean(), scale=sp.sem(d))
    assert (b.extra["ci_low"], b.extra["ci_high"]) == pytest.approx((low, high))
    m = ag.confusion(human, llm, [1, 2, 3, 4, 5])
    assert m.sum() == 6 and m[0, 1] == 1 and m[2, 2] == 1 and m[2, 3] == 1  # 3.6 rounds to 4
    assert ag.exact_agreement(human, llm, [1, 2, 3, 4, 5]).value == pytest.approx(100 * 2 / 6)  # 3=3.4, 5=5


def test_t_tests_of_values_equal_but_for_rounding_are_undefined():
    """0.1 + 0.2 and 0.3 differ by 5.6e-17: a t statistic over such differences is noise over noise (~1e16) and
    its p-value ~0, evidence of nothing. Such values have no variation: no test, a reason instead."""
    from tui_rater.stats.agreement import bias, no_variation, paired_t, welch

    noisy = np.array([0.1 + 0.2, 0.3, 0.3])
    assert np.std(noisy) > 0 and no_variation(noisy) and not no_variation([0.3, 0.3 + 1e-9])
    paired = paired_t(noisy, [0.0, 0.0, 0.0])
    assert (paired.value, paired.p, paired.note) == (None, None, "no variation in the differences")
    sevens = [0.7, 0.7, 0.7]  # their mean is 0.6999999999999998: a variance of 1e-32
    assert np.var(sevens) > 0 and welch(sevens, [0.2, 0.2, 0.2]).value is None
    # one group without variation: Welch's test stands on the other's variance alone, exactly (scipy warned of
    # catastrophic cancellation and let the constant group's rounding noise in)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # scipy's RuntimeWarning, shown under every report of such data
        one_sided = welch([0.7] * 5, [1.0, 2.0, 3.0])
    t = (0.7 - 2.0) / np.sqrt(np.var([1.0, 2.0, 3.0], ddof=1) / 3)
    assert one_sided.value == pytest.approx(t, rel=1e-12) and one_sided.extra["df"] == pytest.approx(2.0)
    assert one_sided.p == pytest.approx(2 * sp.t.sf(abs(t), 2), rel=1e-12)
    assert bias(noisy, [0.0, 0.0, 0.0]).extra == {
        "ci_low": pytest.approx(0.3),
        "ci_high": pytest.approx(0.3),
        "ci": "t, 95%",
    }
    assert paired_t([1.0, 2.0, 4.0], [0.0, 0.0, 0.0]).p is not None  # real variation is still tested
    for correlation in (ag.pearson, ag.spearman, ag.kendall_tau):  # scipy: r = -0.5, tau = -0.82 here
        assert correlation(noisy, [1.0, 2.0, 3.0]).value is None, correlation


def test_differences_of_large_ratings_equal_but_for_rounding_are_no_variation():
    """On a 60000-70000 scale (the ends and span a task may have) a judge 0.1 above the person on every item gives
    differences 0.1 +- 7e-12: the rounding is relative to the ratings, not to the differences (a paired t of 5e10
    with p = 2e-32 was reported, and a confidence interval of noise)."""
    from tui_rater.stats import systems
    from tui_rater.stats.agreement import bias, no_variation, paired_t

    human = np.array([60000.3, 69999.7, 61000.3, 68000.7])
    judge = human + 0.1
    assert np.ptp(judge - human) > 1e-12  # the rounding these values carry
    assert no_variation(judge - human, judge, human)
    paired = paired_t(judge, human)
    assert (paired.value, paired.p, paired.note) == (None, None, "no variation in the differences")
    assert bias(judge, human).extra["ci_low"] == bias(judge, human).extra["ci_high"]
    # a real spread of differences at that size is still tested
    assert paired_t(human + np.array([0.1, 0.2, 0.4, 0.3]), human).p is not None
    assert not no_variation(np.array([0.1, 0.1, 0.1 + 1e-6]), human)
    # SPA's Likert paired t-test (Chiang & Lee's standard protocol) of the same pairs
    answers = {f"a{i}": {("x", "y"): 0.5 + 0.1 * i} for i in range(4)}
    likert = {f"a{i}": {"x": float(judge[i]), "y": float(human[i])} for i in range(4)}
    row = systems.spa(answers, [("x", "y")], likert=likert).comparisons[0]
    assert row.likert_delta is not None and row.likert_p is None


def test_a_float_array_is_summarised_as_its_list_to_the_bit():
    """Table 1's mean and std, and Welch's test, take a float array as it is (issue 35: no Python float per rating);
    the numbers are those of the same ratings as a list, to the last bit, NaN left out of Welch's groups."""
    rng = np.random.default_rng(5)
    a = rng.normal(3.0, 1.1, 10_001)
    b = np.where(rng.random(9_999) < 0.1, np.nan, rng.normal(3.2, 0.9, 9_999))
    assert ag.summary(a) == ag.summary(a.tolist())
    from_arrays, from_lists = ag.welch(a, b), ag.welch(a.tolist(), b.tolist())
    assert (from_arrays.value, from_arrays.p, from_arrays.n, from_arrays.extra) == (
        from_lists.value,
        from_lists.p,
        from_lists.n,
        from_lists.extra,
    )

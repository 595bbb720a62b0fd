"""Convergence curves: each point equals the statistic recomputed on the first n rated items."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import convergence as cv
from tui_rater.stats import ppi


def test_default_sizes():
    assert cv.default_sizes(0) == [] and cv.default_sizes(7) == [7]
    sizes = cv.default_sizes(200)
    assert sizes[0] == 10 and sizes[-1] == 200 and len(sizes) == 20 and sizes == sorted(set(sizes))
    assert cv.default_sizes(15) == [10, 11, 12, 13, 14, 15]


def test_ppi_curve_points_are_the_estimates_on_the_first_n_items():
    rng = np.random.default_rng(0)
    quality = rng.normal(3, 1, 300)
    judge = dict(enumerate(0.6 * quality + 1.5 + rng.normal(0, 0.3, 300)))
    human_all = quality + rng.normal(0, 0.5, 300)
    order = [int(i) for i in rng.permutation(300)[:150]]  # humans rated these, in this order
    human = {i: float(human_all[i]) for i in order}
    points = cv.ppi_convergence(judge, human, order, [5, 40, 150, 999])
    assert [p.rated for p in points] == [5, 40, 150]
    for point in points:
        shown = np.full(300, np.nan)
        shown[order[: point.rated]] = human_all[order[: point.rated]]
        direct = ppi.ppi_mean(np.array(list(judge.values())), shown)
        assert point.estimate == direct.estimate and point.classical == direct.classical
    widths = [p.estimate.ci_high - p.estimate.ci_low for p in points]
    assert widths[0] > widths[1] > widths[2]
    assert points[-1].estimate.ci_low <= 3.0 <= points[-1].estimate.ci_high


def test_alt_test_verdict_settles_as_ratings_arrive():
    rng = np.random.default_rng(2)
    truth = rng.integers(1, 6, 120)
    humans = {f"h{j}": dict(enumerate(np.clip(truth + rng.normal(0, 0.9, 120).round(), 1, 5))) for j in range(3)}
    judge = dict(humans["h0"])  # copies one human: must pass once there are enough items
    order = list(range(120))
    points = cv.alt_test_convergence(humans, judge, order, [10, 29, 30, 60, 120], level="ordinal", epsilon=0.1)
    assert [p.rated for p in points] == [10, 29, 30, 60, 120]
    assert points[0].passed is None and "0 humans" in points[0].note  # fewer than 30 items each
    assert points[1].passed is None
    assert all(p.passed for p in points[2:])
    last = at.alt_test(humans, judge, level="ordinal", epsilon=0.1)
    assert points[-1].winning_rate == last.winning_rate
    assert points[-1].advantage_probability == pytest.approx(last.advantage_probability)


def test_curve_caps_and_sorts_sizes():
    seen = cv.curve(["a", "b", "c"], [3, 1, 10, 1], lambda first: sorted(first))
    assert seen == [(1, ["a"]), (3, ["a", "b", "c"])]
    assert math.isclose(len(cv.curve([], [5], len)), 1)

"""The bias card's length slope detects a planted length effect (issue 32's done-means; figure in docs/VERDICT.md).

200 seeded synthetic studies of 100 items: a true quality per item, three people rating it on a 1-5 scale (their
mean is the people's score), a judge whose expected score (a distribution-mode reading) adds 0.3 scale points per
standard deviation of the text's length, with noise, clipped to the scale. Detected: the card's 95 % interval
excludes 0. The same studies without the effect say how often the interval claims one that is not there.
The slope is the report's own (``stats/bias.py``, the function the bias card calls); its point and interval are
checked against lstsq and a bootstrap written in tests/stats/test_bias_card.py."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import bias

RUNS = 200
ITEMS = 100


def _study(seed: int, effect: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng([2026, seed])
    truth = rng.uniform(1.5, 4.5, ITEMS)
    length = np.round(rng.lognormal(5, 0.5, ITEMS))  # words: median ~150
    people = np.mean(np.clip(np.round(truth + rng.normal(0, 0.8, (3, ITEMS))), 1, 5), axis=0)
    z = (length - length.mean()) / length.std(ddof=1)
    judge = np.clip(truth + effect * z + rng.normal(0, 0.7, ITEMS), 1, 5)
    return judge, people, length


def _detected(effect: float) -> float:
    hits = 0
    for seed in range(RUNS):
        found = bias.length_slope(*_study(seed, effect))
        assert found.interval.ok
        hits += found.interval.low > 0 or found.interval.high < 0
    return hits / RUNS


@pytest.mark.slow
def test_a_length_effect_of_0_3_points_is_detected_in_at_least_80_percent_of_studies():
    rate = _detected(0.3)
    assert rate >= 0.80, rate  # measured: 0.91 (docs/VERDICT.md)


@pytest.mark.slow
def test_without_a_length_effect_the_interval_rarely_claims_one():
    rate = _detected(0.0)
    assert rate <= 0.10, rate  # measured: 0.075 (the percentile interval is a little liberal at 100 items)

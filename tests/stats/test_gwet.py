"""Gwet's AC1 / AC2 (stats/gwet.py) against an implementation written here from Gwet's Handbook (2014, ch. 3,
eq. 3.2-3.5), item by item in plain Python, which is itself checked against the Handbook's published example
(4 raters, 12 units: AC1 = 0.7754, p_a = 0.8182, p_e = 0.1903; AC2 with bipolar weights 0.9004, as the
irrCAC package documents them)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tui_rater.stats import gwet
from tui_rater.stats import intervals as iv

pytestmark = pytest.mark.usefixtures("item_draws")  # the statistics checked on each resample's items

NAN = float("nan")
# Gwet (2014), Table 2.16: units x raters
HANDBOOK = [
    [1, 1, NAN, 1], [2, 2, 3, 2], [3, 3, 3, 3], [3, 3, 3, 3], [2, 2, 2, 2], [1, 2, 3, 4],
    [4, 4, 4, 4], [1, 1, 2, 1], [2, 2, 2, 2], [NAN, 5, 5, 5], [NAN, NAN, 1, 1], [NAN, NAN, 3, NAN],
]  # fmt: skip
CATEGORIES = [1.0, 2.0, 3.0, 4.0, 5.0]


def reference_ac(units: list[list[float]], categories: list[float], weight) -> tuple[float, float, float]:
    """(AC, p_a, p_e), one unit and one category at a time."""
    q = len(categories)
    rated = [[v for v in unit if not math.isnan(v)] for unit in units]
    rated = [unit for unit in rated if unit]
    pa_terms, pi = [], [0.0] * q
    for unit in rated:
        r_i = len(unit)
        r_ik = [sum(1 for v in unit if v == c) for c in categories]
        for k in range(q):
            pi[k] += r_ik[k] / r_i / len(rated)
        if r_i >= 2:
            star = [sum(weight(categories[k], categories[m]) * r_ik[m] for m in range(q)) for k in range(q)]
            pa_terms.append(sum(r_ik[k] * (star[k] - 1) for k in range(q)) / (r_i * (r_i - 1)))
    pa = sum(pa_terms) / len(pa_terms)
    total = sum(weight(a, b) for a in categories for b in categories)
    pe = total / (q * (q - 1)) * sum(p * (1 - p) for p in pi)
    return (pa - pe) / (1 - pe), pa, pe


def identity(a: float, b: float) -> float:
    return 1.0 if a == b else 0.0


def quadratic(a: float, b: float) -> float:
    return 1.0 - (a - b) ** 2 / (max(CATEGORIES) - min(CATEGORIES)) ** 2


def bipolar(a: float, b: float) -> float:
    lo, hi = min(CATEGORIES), max(CATEGORIES)
    raw = {
        (x, y): 0.0 if x == y else (x - y) ** 2 / ((x + y - 2 * lo) * (2 * hi - x - y))
        for x in CATEGORIES
        for y in CATEGORIES
    }
    return 1 - raw[(a, b)] / max(raw.values())


def test_the_reference_reproduces_the_handbook():
    ac1, pa, pe = reference_ac(HANDBOOK, CATEGORIES, identity)
    assert (round(ac1, 5), round(pa, 5), round(pe, 5)) == (0.77544, 0.81818, 0.19032)
    assert round(reference_ac(HANDBOOK, CATEGORIES, bipolar)[0], 5) == 0.90037


@pytest.mark.parametrize(("kind", "weight"), [("nominal", identity), ("ordinal", quadratic)])
def test_ac_equals_the_reference_on_the_handbook_and_on_random_studies(kind, weight):
    matrix = np.asarray(HANDBOOK, dtype=float).T  # raters x items
    assert gwet.ac(matrix, CATEGORIES, kind).value == pytest.approx(reference_ac(HANDBOOK, CATEGORIES, weight)[0])
    for seed in range(5):
        rng = np.random.default_rng(seed)
        m = rng.choice(CATEGORIES, size=(4, 50), p=[0.05, 0.1, 0.15, 0.3, 0.4])
        m[rng.random(m.shape) < 0.3] = np.nan
        units = m.T.tolist()
        assert gwet.ac(m, CATEGORIES, kind).value == pytest.approx(
            reference_ac(units, CATEGORIES, weight)[0], abs=1e-12
        )


def test_ac1_interval_is_the_bootstrap_of_the_reference():
    rng = np.random.default_rng(9)
    m = rng.choice(CATEGORIES, size=(3, 40), p=[0.7, 0.1, 0.1, 0.05, 0.05])
    m[rng.random(m.shape) < 0.1] = np.nan
    rated = m[:, np.sum(~np.isnan(m), axis=0) >= 1]
    draws = []
    for block in iv.resamples(rated.shape[1], 100):
        for w in block.astype(int):
            draws.append(reference_ac(np.repeat(rated, w, axis=1).T.tolist(), CATEGORIES, identity)[0])
    low, high = np.quantile(draws, [0.025, 0.975])
    got = gwet.ac(m, CATEGORIES, "nominal")
    assert (got.extra["ci_low"], got.extra["ci_high"]) == pytest.approx((low, high), abs=1e-9)


def test_skewed_labels_keep_ac1_high_where_alpha_falls():
    """The paradox AC1 is for: 3 raters agree on 'yes' for 95 of 100 items and disagree on the rest."""
    from tui_rater.stats.agreement import alpha

    m = np.ones((3, 100))
    m[0, 95:] = 0.0
    ac1 = gwet.ac(m, [0.0, 1.0], "nominal").value
    assert ac1 is not None and ac1 > 0.9
    assert alpha(m, "nominal").value < 0.1


def test_ratings_off_the_scale_have_no_ac_and_say_why():
    m = np.array([[1.0, 2.5, 3.0], [1.0, 2.0, 3.0]])
    found = gwet.ac(m, CATEGORIES)
    assert found.value is None and "scale" in found.note

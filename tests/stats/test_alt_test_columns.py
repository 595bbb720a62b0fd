"""The alt-test over arrays (issue 35): the work does not grow with the items as numpy calls per item x human, and
the convergence curve scores each item once -- counted (numpy calls seen by a profiler), not timed.

The numbers themselves are checked against the paper's procedure written item by item in this file and by the
golden reports (tests/stats/test_report_golden.py, byte-identical)."""

from __future__ import annotations

import math
import random
import sys

import numpy as np
import pytest
from scipy import stats as sp

from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import convergence as cv


def _study(n: int, seed: int = 3, level: str = "interval"):
    rng = random.Random(seed)
    humans: dict[str, dict[str, float]] = {f"h{k}": {} for k in range(4)}
    judge: dict[str, float] = {}
    for i in range(n):
        truth = rng.randint(1, 5)
        for ratings in humans.values():
            if rng.random() < 0.85:
                ratings[f"i{i}"] = float(min(5, max(1, truth + rng.choice((-1, 0, 0, 1)))))
        judge[f"i{i}"] = truth + rng.choice((0.0, 0.5, -0.5, 1 / 3)) if level == "interval" else float(truth)
    return humans, judge


def _numpy_calls(run) -> int:
    calls = 0

    def profile(frame, event, arg):
        nonlocal calls
        if event == "c_call":
            module = getattr(arg, "__module__", None) or ""
            calls += module.startswith("numpy") or type(arg).__name__ == "ufunc"
        elif event == "call" and "numpy" in frame.f_code.co_filename:
            calls += 1

    sys.setprofile(profile)
    try:
        run()
    finally:
        sys.setprofile(None)
    return calls


@pytest.mark.parametrize("level", ["interval", "nominal"])
def test_numpy_calls_do_not_grow_with_items(level):
    def work(n):
        humans, judge = _study(n, level=level)
        order = sorted(judge, key=lambda k: int(k[1:]))
        return _numpy_calls(lambda: cv.alt_test_convergence(humans, judge, order, [50, n // 2, n], level=level))

    small, large = work(300), work(1_200)
    # per item x human x point, the old loop made ~4 numpy calls: 4x the items gave ~4x the calls
    assert large < 1.3 * small, (small, large)


def _paper(humans, judge, epsilon=0.2, q=0.05, nominal=False):
    """The alt-test written from Calderon et al. (2025) item by item, in plain Python and scipy."""
    humans = {h: dict(r) for h, r in humans.items()}
    items = {i for i in judge if sum(i in r for r in humans.values()) >= 2}
    pvalues, rhos, names = [], [], []
    for h, mine in humans.items():
        wf, wh = [], []
        for i in mine:
            if i not in items:
                continue
            others = [r[i] for g, r in humans.items() if g != h and i in r]

            def align(x, others=others):
                if nominal:
                    return sum(x == o for o in others) / len(others)
                return -math.sqrt(sum((o - x) ** 2 for o in others) / len(others))

            a, b = align(judge[i]), align(mine[i])
            wf.append(float(a >= b - 1e-12 * max(1, abs(a), abs(b))))
            wh.append(float(b >= a - 1e-12 * max(1, abs(a), abs(b))))
        if len(wf) < 30:
            continue
        d = [y - x for x, y in zip(wf, wh)]
        mean = sum(d) / len(d)
        sd = math.sqrt(sum((v - mean) ** 2 for v in d) / (len(d) - 1))
        # no variation: t = -inf (p = 0) below ε, +inf (p = 1) above; 0/0 at ε (undefined, never a rejection)
        p = sp.t.cdf((mean - epsilon) / (sd / math.sqrt(len(d))), len(d) - 1) if sd > 0 else float(mean >= epsilon)
        pvalues.append(p if sd > 0 or mean != epsilon else 1.0)
        rhos.append(sum(wf) / len(wf))
        names.append(h)
    m = len(pvalues)
    harmonic = sum(1 / k for k in range(1, m + 1))
    ranked = sorted(range(m), key=lambda k: pvalues[k])
    last = max((r + 1 for r, k in enumerate(ranked) if pvalues[k] <= (r + 1) * q / (m * harmonic)), default=0)
    rejected = {names[k] for k in ranked[:last]}
    return len(rejected) / m if m >= 3 else None, sum(rhos) / m if m >= 3 else None


@pytest.mark.parametrize("level", ["interval", "nominal"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_curve_matches_the_paper_on_every_prefix(level, seed):
    humans, judge = _study(400, seed, level)
    order = [k for k in judge if any(k in r for r in humans.values())]
    sizes = [40, 120, 250, 400]
    points = cv.alt_test_convergence(humans, judge, order, sizes, level=level)
    for point, n in zip(points, sizes, strict=True):
        first = set(order[:n])
        restricted = {h: {i: v for i, v in r.items() if i in first} for h, r in humans.items()}
        omega, rho = _paper(restricted, judge, nominal=level == "nominal")
        assert point.rated == n
        if omega is None:
            assert point.winning_rate is None
        else:
            assert point.winning_rate == pytest.approx(omega, abs=1e-12)
            assert point.advantage_probability == pytest.approx(rho, abs=1e-12)


def test_a_custom_scoring_still_runs_item_by_item():
    humans, judge = _study(200)

    def absolute(rating, others):
        return -float(np.mean(np.abs(np.asarray(others) - rating)))

    order = list(judge)
    points = cv.alt_test_convergence(humans, judge, order, [100, 200], scoring=absolute)
    whole = at.alt_test(humans, judge, scoring=absolute)
    assert points[-1].winning_rate == whole.winning_rate
    assert points[-1].advantage_probability == whole.advantage_probability
    assert whole.scoring == "absolute"

"""Seeded synthetic studies looked at after every rating, as the live pane does (issue 33 item 3): what peeking
costs the fixed-n figures and what the anytime-valid ones keep. numpy over all studies at once; the product's
sequential code (``tui_rater/stats/sequential.py``) gives the anytime figures, and the fixed-n figures are the
product's formulas written again over arrays (``test_sequential_coverage.py`` checks them against
``ppi.ppi_mean`` and ``alternative_annotator.alt_test`` on a few studies).

Run ``python -m tests.stats.sequential_sim`` for the table in docs/VERDICT.md §7.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats as sp

from tui_rater.stats import alternative_annotator as at
from tui_rater.stats import sequential as sq

STUDIES = 1000
LOW, HIGH = 1.0, 5.0
Z95 = float(sp.norm.ppf(0.975))

# --- the system mean: the judge rated every item, people a random order of them --------------------------------

ITEMS, RATED = 300, 150
QUALITY_MEAN, QUALITY_SD, HUMAN_NOISE, JUDGE_NOISE = 3.2, 0.8, 0.7, 0.3


def likert(z: np.ndarray) -> np.ndarray:
    return np.clip(np.round(z), LOW, HIGH)


def true_human_mean() -> float:
    """E[clip(round(q + noise))] with q + noise ~ N(3.2, sqrt(0.8² + 0.7²)): exact, from the normal CDF."""
    dist = sp.norm(QUALITY_MEAN, np.hypot(QUALITY_SD, HUMAN_NOISE))
    edges = np.array([-np.inf, 1.5, 2.5, 3.5, 4.5, np.inf])
    return float(np.sum(np.arange(1, 6) * np.diff(dist.cdf(edges))))


def mean_studies(seed: int, studies: int = STUDIES) -> tuple[np.ndarray, np.ndarray]:
    """(judge on every item, humans on every item) per study; the first RATED items are the ones rated, in the
    order rated (the items are i.i.d., so their order is a random order)."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(QUALITY_MEAN, QUALITY_SD, size=(studies, ITEMS))
    human = likert(quality + rng.normal(0, HUMAN_NOISE, size=quality.shape))
    judge = likert(0.9 * quality + 0.6 + rng.normal(0, JUDGE_NOISE, size=quality.shape))  # biased, shrunk
    return judge, human


def fixed_ppi(judge: np.ndarray, human: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``ppi.ppi_mean`` (λ = 1) and its normal interval after n = 1 .. RATED ratings: (estimate, low, high),
    NaN at n = 1 (no interval)."""
    f, y = judge, human[:, :RATED]
    g = y - f[:, :RATED]
    n = np.arange(1, RATED + 1, dtype=float)
    mean_g = np.cumsum(g, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var_g = (np.cumsum(g**2, axis=1) - n * mean_g**2) / (n - 1)
        rated_f = f[:, :RATED]
        mean_fr = np.cumsum(rated_f, axis=1) / n
        cov_fg = (np.cumsum(rated_f * g, axis=1) - n * mean_fr * mean_g) / (n - 1)
    var_f = np.var(f, axis=1, ddof=1)[:, None]
    variance = (var_f + 2 * cov_fg) / ITEMS + var_g / n
    estimate = f.mean(axis=1)[:, None] + mean_g
    half = Z95 * np.sqrt(np.maximum(variance, 0))
    return estimate, estimate - half, estimate + half


def fixed_classical(human: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    y = human[:, :RATED]
    n = np.arange(1, RATED + 1, dtype=float)
    mean = np.cumsum(y, axis=1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        var = (np.cumsum(y**2, axis=1) - n * mean**2) / (n - 1)
    half = Z95 * np.sqrt(np.maximum(var, 0) / n)
    return mean - half, mean + half


@dataclass(frozen=True)
class Coverage:
    every_look: float  # share of studies whose interval covered the truth at every look (n >= 2)
    each_look: float  # the share of studies covering at one look, averaged over the looks
    final_width: float  # the mean width at the last look


def _coverage(low: np.ndarray, high: np.ndarray, truth: float) -> Coverage:
    low, high = low[:, 1:], high[:, 1:]  # from the second rating on: no fixed-n interval before
    hit = (low <= truth) & (truth <= high)
    return Coverage(float(hit.all(axis=1).mean()), float(hit.mean()), float((high - low)[:, -1].mean()))


def mean_coverage(seed: int = 33, studies: int = STUDIES) -> dict[str, Coverage]:
    judge, human = mean_studies(seed, studies)
    truth = true_human_mean()
    watched = sq.ppi_cs(judge, judge[:, :RATED], human[:, :RATED], LOW, HIGH, grid=400)
    _, ppi_low, ppi_high = fixed_ppi(judge, human)
    classical_low, classical_high = fixed_classical(human)
    return {
        "PPI, anytime CS": _coverage(watched.ppi.low, watched.ppi.high, truth),
        "PPI, fixed-n interval": _coverage(ppi_low, ppi_high, truth),
        "human-only, anytime CS": _coverage(watched.humans.low, watched.humans.high, truth),
        "human-only, fixed-n interval": _coverage(classical_low, classical_high, truth),
    }


# --- the alt-test: a judge exactly ε worse than every person ----------------------------------------------------

PERSONS, ALT_ITEMS, EPSILON = 4, 200, at.EPSILON_EXPERT
OFF_SCALE = -10.0  # the judge's miss: farther from everyone than any person, so d = 1 on it


def alt_studies(seed: int, miss: float, studies: int = STUDIES) -> tuple[np.ndarray, np.ndarray]:
    """(persons (S, H, T), judge (S, T)). The judge is, with probability 1 - miss, one more person (a fresh
    rating of the item like theirs: exchangeable with the left-out person, so E[d] = 0 there) and otherwise
    off the scale (d = 1): E[W^h - W^f] = miss exactly, for every person -- ``miss = ε`` is H0's boundary."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(3.0, 1.0, size=(studies, 1, ALT_ITEMS))
    persons = likert(quality + rng.normal(0, 0.8, size=(studies, PERSONS, ALT_ITEMS)))
    like_a_person = likert(quality[:, 0] + rng.normal(0, 0.8, size=(studies, ALT_ITEMS)))
    judge = np.where(rng.random((studies, ALT_ITEMS)) < miss, OFF_SCALE, like_a_person)
    return persons, judge


def advantages(persons: np.ndarray, judge: np.ndarray) -> np.ndarray:
    """d = W^h - W^f per (study, left-out person, item) with the paper's -RMSE against the remaining persons."""
    d = np.empty(persons.shape)
    for j in range(persons.shape[1]):
        others = np.delete(persons, j, axis=1)
        human_score = -np.sqrt(np.mean((others - persons[:, j : j + 1]) ** 2, axis=1))
        judge_score = -np.sqrt(np.mean((others - judge[:, None]) ** 2, axis=1))
        d[:, j] = (human_score >= judge_score).astype(float) - (judge_score >= human_score).astype(float)
    return d


def fixed_pvalues(d: np.ndarray, epsilon: float = EPSILON) -> np.ndarray:
    """Each person's one-sided paired t-test p after n = 1 .. T items (S, H, T)."""
    n = np.arange(1, d.shape[-1] + 1, dtype=float)
    mean = np.cumsum(d, axis=-1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt(np.maximum((np.cumsum(d**2, axis=-1) - n * mean**2) / (n - 1), 0))
        t = (mean - epsilon) / (sd / np.sqrt(n))
    p = sp.t.cdf(t, n - 1)  # ±inf when sd = 0: p = 0 or 1, as the product's no-variation rule
    found: np.ndarray = np.where(np.isnan(p), 1.0, p)
    return found


def fixed_passes(d: np.ndarray, epsilon: float = EPSILON, alpha: float = 0.05) -> np.ndarray:
    """The paper's verdict (t-test per person, Benjamini-Yekutieli, ω >= 0.5) after n = 1 .. T items: (S, T),
    False before the 30 items a person needs."""
    n = np.arange(1, d.shape[-1] + 1, dtype=float)
    p = fixed_pvalues(d, epsilon)
    m = d.shape[1]
    ordered = np.sort(p, axis=1)
    thresholds = np.arange(1, m + 1)[:, None] * alpha / (m * np.sum(1 / np.arange(1, m + 1)))
    rejections = np.where((ordered <= thresholds).any(axis=1), m - np.argmax((ordered <= thresholds)[:, ::-1], 1), 0)
    passed: np.ndarray = (rejections / m >= at.PASSING_WINNING_RATE) & (n >= at.MIN_ITEMS_PER_HUMAN)
    return passed


def anytime_passes(d: np.ndarray, epsilon: float = EPSILON, alpha: float = 0.05) -> np.ndarray:
    e = np.exp(np.minimum(sq.log_e_process(d, epsilon), 700.0))  # (S, H, T)
    rejected = sq.e_bh(np.moveaxis(e, 1, -1), alpha)  # (S, T, H)
    n = np.arange(1, d.shape[-1] + 1)
    passed: np.ndarray = (rejected.mean(axis=-1) >= at.PASSING_WINNING_RATE) & (n >= at.MIN_ITEMS_PER_HUMAN)
    return passed


@dataclass(frozen=True)
class Replaced:
    ever: float  # share of studies where "may replace" is shown at some look
    at_the_end: float  # share where it is shown after the last item (one look: the fixed-n use)
    person_ever: float  # share of (study, person) whose H0 alone is rejected at level 0.05 at some look


def person_rejected(d: np.ndarray, anytime: bool, epsilon: float = EPSILON, alpha: float = 0.05) -> np.ndarray:
    """(S, H): is the person's own H0 rejected at some look from the 30th item on (e >= 1/α, or p <= α)?"""
    looks = slice(at.MIN_ITEMS_PER_HUMAN - 1, None)
    if anytime:
        found: np.ndarray = (sq.log_e_process(d, epsilon)[..., looks] >= np.log(1 / alpha)).any(axis=-1)
        return found
    found = (fixed_pvalues(d, epsilon)[..., looks] <= alpha).any(axis=-1)
    return found


def replaced(seed: int = 34, miss: float = EPSILON, studies: int = STUDIES) -> dict[str, Replaced]:
    persons, judge = alt_studies(seed, miss, studies)
    d = advantages(persons, judge)
    out = {}
    for name, passes, anytime in (
        ("anytime (e-BH)", anytime_passes(d), True),
        ("fixed-n (t-test, BY)", fixed_passes(d), False),
    ):
        person = float(person_rejected(d, anytime).mean())
        out[name] = Replaced(float(passes.any(axis=1).mean()), float(passes[:, -1].mean()), person)
    return out


def main() -> None:
    print(f"{STUDIES} studies; system mean: {ITEMS} items judged, {RATED} rated by people, looks at n = 2..{RATED}")
    for name, c in mean_coverage().items():
        print(f"  {name:30} covers at every look {c.every_look:.3f}  at one look {c.each_look:.3f}  "
              f"width at n={RATED} {c.final_width:.2f}")  # fmt: skip
    print(f"alt-test: {PERSONS} persons x {ALT_ITEMS} items, looks at n = 30..{ALT_ITEMS}, ε = {EPSILON}")
    for miss, label in ((EPSILON, "exactly ε worse"), (0.0, "as good as a person")):
        for name, r in replaced(miss=miss).items():
            print(f"  judge {label:20} {name:22} 'may replace' ever {r.ever:.3f}  at the end {r.at_the_end:.3f}  "
                  f"one person's H0 ever {r.person_ever:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

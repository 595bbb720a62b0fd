"""Figures that stay valid while they are watched: the live pane and the convergence curves recompute after
every rating, and a fixed-n interval or test read at every one of those looks is not what it says (a 95 %
interval misses the truth at *some* look far more often than 5 %, a 5 % test rejects at some look far more
often). Here, instead:

- **confidence sequences** for a bounded mean: the hedged-capital betting CS of Waudby-Smith & Ramdas,
  "Estimating means of bounded random variables by betting" (JRSS B 2024, §4.3 and Theorem 3, with their
  predictable plug-in bets λ_t, eq. (26)-(27)). For every candidate mean m two gamblers bet that the ratings
  lie above / below m; their capital K_t(m) is a non-negative martingale when m is the true mean, so by
  Ville's inequality it ever reaches 1/α with probability at most α, and {m : K_s(m) < 1/α for all s <= t}
  covers the truth at *every* t at once with probability >= 1 - α (the running intersection is as valid
  as each set and never wider).
- the **prediction-powered mean** as E[judge] + E[human - judge]: a CS for each at α/2 (the judge's mean
  over the items it rated, the rectifier over the human-rated items in the order they were rated), added --
  a union bound, valid whatever the dependence between the two.
- for the **alternative annotator test** an e-process per person: the paper's H0_j is E[d] >= ε for
  d = W^h - W^f in {-1, 0, 1}; K_t = Π (1 + λ_i (ε - d_i)) with a predictable λ_i >= 0 is a non-negative
  supermartingale under every distribution in H0_j, so K at any stopping time is an e-value (Ramdas,
  Grünwald, Vovk & Shafer 2023, "Game-theoretic statistics and safe anytime-valid inference"). The bets are
  aGRAPA's (Waudby-Smith & Ramdas §B: λ = mean / second moment of the past ε - d, clipped). The persons are
  combined by e-BH (Wang & Ramdas 2022, "False discovery rate control with e-values"), the e-value analogue of
  the paper's Benjamini-Yekutieli step: FDR <= α under any dependence, at any stopping time. A judge exactly
  ε worse than every person makes every H0_j true, so any rejection is a false discovery and "may replace"
  (ω >= 0.5 needs rejections) is shown at some look with probability at most α.

Why written here rather than imported: ``confseq`` (PyPI 0.0.11, last released 2023, a C++/Boost extension)
and ``expectation`` are not kept up and neither vectorises over many studies, which the live pane does not
need but the coverage simulation does (1,000 studies × every look); the betting CS is twenty lines of numpy,
checked in ``tests/stats/test_sequential.py`` against a direct root-finding of the paper's capital process.

Every function takes the observations in the order they arrived; leading axes are independent sequences
(one per simulated study), the last axis is time.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tui_rater.stats import alt_columns as ac
from tui_rater.stats import alternative_annotator as at

ALPHA = 0.05
GRID = 1000  # candidate means per unit of the scale's range: a bound is exact to 1/GRID of the range
BET_CAP = 0.5  # c: the bets are at most c/m and c/(1-m) (the paper's truncation, its default 1/2)
E_BET_CAP = 0.75  # the alt-test's bets: at most c/(1-ε) of the capital, so 1 + λ(ε - d) > 0 even at d = 1
CELLS = 2_000_000  # floats per array in a block of time steps (memory, not precision)
ANYTIME = "anytime-valid: holds at every look (betting confidence sequence, Waudby-Smith & Ramdas 2024)"

Floats = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Sequence95:
    """A confidence sequence over time: ``low[t]``, ``high[t]`` after the first t + 1 observations."""

    low: Floats
    high: Floats
    estimate: Floats  # the running mean (the point the fixed-n figure would show)


def _plug_in_bets(x: Floats, alpha: float) -> Floats:
    """λ̇_t = sqrt(2 log(2/α) / (σ̂²_{t-1} t log(1 + t))) (WSR eq. (26)), σ̂² and μ̂ smoothed towards 1/4
    and 1/2 as the paper does, so that the first bet is finite; predictable: λ̇_t uses x_1 .. x_{t-1} only."""
    t = np.arange(1, x.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(x, axis=-1)) / (t + 1)  # μ̂_t
    sq = np.cumsum((x - mu) ** 2, axis=-1)
    sigma2 = (0.25 + sq) / (t + 1)  # σ̂²_t
    previous = np.concatenate([np.full((*x.shape[:-1], 1), 0.25), sigma2[..., :-1]], axis=-1)
    return np.sqrt(2 * math.log(2 / alpha) / (previous * t * np.log1p(t)))


def betting_cs(x: npt.ArrayLike, alpha: float = ALPHA, grid: int = GRID) -> Sequence95:
    """The hedged-capital CS (θ = 1/2) for the mean of observations in [0, 1], at every time, as the running
    intersection. ``x``: (..., T). Bounds are outward-rounded to the grid (the set {m : K < 1/α} is taken
    as its hull and widened by one grid step each side, so a bound is never narrower than the paper's)."""
    values = np.asarray(x, dtype=float)
    if values.size and (np.nanmin(values) < 0 or np.nanmax(values) > 1):
        raise ValueError("betting_cs takes observations rescaled to [0, 1]")
    # the grid narrowed to the cells still inside (the same bits: each cell's capital is its own sum), else the
    # whole grid where some look's set is empty (its bound is then the cell of least capital, of every cell)
    bounds = _betting_bounds(values, alpha, grid, narrow=True) or _betting_bounds(values, alpha, grid, narrow=False)
    assert bounds is not None
    low, high = bounds
    steps = values.shape[-1]
    estimate = np.cumsum(values, axis=-1) / np.arange(1, steps + 1)
    return Sequence95(low, high, estimate)


def _betting_bounds(values: Floats, alpha: float, grid: int, narrow: bool) -> tuple[Floats, Floats] | None:
    """The running intersection's bounds at every time. ``narrow``: after each block of time steps only the cells
    between the first and the last one still inside are carried on -- a cell's running worst capital only grows,
    so a cell once out is out for good and the hull's bounds are the same -- and None where some set is empty
    (the caller then runs the whole grid). At 50k observations the set is ~1 % of the grid: ~10x less work."""
    lead, steps = values.shape[:-1], values.shape[-1]
    m_all = (np.arange(grid) + 0.5) / grid  # cell midpoints: never 0 or 1, where c/m is unbounded
    bets = _plug_in_bets(values, alpha)
    log_up = np.zeros((*lead, 1, grid))
    log_down = np.zeros((*lead, 1, grid))
    worst = np.full((*lead, 1, grid), -np.inf)
    threshold = math.log(1 / alpha)
    low, high = np.empty(values.shape), np.empty(values.shape)
    lo, hi = 0, grid  # the cells carried: m_all[lo:hi]
    # a block of time steps at once (every study, every m): the capital's running sums are cumulative sums that
    # start from the last block's capital, so each sum is formed in the order the step-by-step loop formed it
    # (the same bits), and the running maximum likewise; memory is a block's, not T x grid (1.6 GB at 100k)
    start = 0
    while start < steps:
        m = m_all[lo:hi]
        # blocks doubling from 16 steps: the set narrows early, and then a block holds many steps
        block = max(1, min(CELLS // (m.size * max(1, math.prod(lead))), max(16, start)))
        stop = min(steps, start + block)
        centred = values[..., start:stop, None] - m
        bet = bets[..., start:stop, None]
        up, down = np.minimum(bet, BET_CAP / m), np.minimum(bet, BET_CAP / (1 - m))  # λ⁺_t(m), λ⁻_t(m)
        # in place: the last block's sum added to this block's first step (x + s == s + x), then summed on --
        # each running sum formed in the order of a cumulative sum over [last; block]
        step_up = np.log1p(up * centred)
        step_up[..., :1, :] += log_up
        log_up = np.cumsum(step_up, axis=-2, out=step_up)
        step_down = np.log1p(-down * centred)
        step_down[..., :1, :] += log_down
        log_down = np.cumsum(step_down, axis=-2, out=step_down)
        gained = np.maximum(log_up, log_down)
        gained += math.log(0.5)
        np.maximum(gained[..., :1, :], worst, out=gained[..., :1, :])
        worst = np.maximum.accumulate(gained, axis=-2, out=gained)
        inside = worst < threshold
        empty = ~inside.any(axis=-1)
        first = lo + np.argmax(inside, axis=-1)
        last = lo + m.size - 1 - np.argmax(inside[..., ::-1], axis=-1)
        if empty.any():
            if narrow:
                return None
            # an empty grid set: the truth can lie between two grid points -- keep the cell of the least capital
            nearest = np.argmin(worst, axis=-1)
            first, last = np.where(empty, nearest, first), np.where(empty, nearest, last)
        low[..., start:stop] = np.maximum(0.0, m_all[first] - 1.0 / grid)
        high[..., start:stop] = np.minimum(1.0, m_all[last] + 1.0 / grid)
        keep = slice(0, m.size)
        if narrow:
            new_lo, new_hi = int(first[..., -1].min()), int(last[..., -1].max()) + 1
            keep = slice(new_lo - lo, new_hi - lo)
            lo, hi = new_lo, new_hi
        log_up, log_down = log_up[..., -1:, keep].copy(), log_down[..., -1:, keep].copy()
        worst = worst[..., -1:, keep].copy()
        start = stop
    return low, high


def scaled_cs(x: npt.ArrayLike, low: float, high: float, alpha: float = ALPHA, grid: int = GRID) -> Sequence95:
    """The CS of values on a scale [low, high], in the scale's terms."""
    span = high - low
    if not span > 0:
        raise ValueError("the scale must have high > low")
    found = betting_cs((np.asarray(x, dtype=float) - low) / span, alpha, grid)
    return Sequence95(low + span * found.low, low + span * found.high, low + span * found.estimate)


@dataclass(frozen=True)
class PpiSequence:
    """The prediction-powered mean at every look (human-rated items, in order), and the human-only mean."""

    ppi: Sequence95
    humans: Sequence95
    judge_items: int


def ppi_cs(
    judge_all: npt.ArrayLike,
    judge_rated: npt.ArrayLike,
    human_rated: npt.ArrayLike,
    low: float,
    high: float,
    alpha: float = ALPHA,
    grid: int = GRID,
) -> PpiSequence:
    """``judge_all``: the judge's value of every item it rated (the last axis); ``judge_rated`` and
    ``human_rated``: the judge's and the humans' values of the human-rated items in the order their ratings
    came. The PPI bound is the judge's CS at its last time (α/2) plus the rectifier's CS (α/2) at each look;
    the human-only mean is the humans' CS at α."""
    f = np.asarray(judge_all, dtype=float)
    judge_mean = scaled_cs(f, low, high, alpha / 2, grid)
    f_low, f_high, f_mean = judge_mean.low[..., -1:], judge_mean.high[..., -1:], judge_mean.estimate[..., -1:]
    rectifier = np.asarray(human_rated, dtype=float) - np.asarray(judge_rated, dtype=float)
    span = high - low
    delta = scaled_cs(rectifier, -span, span, alpha / 2, grid)
    # the mean lies on the scale: the sum of the two bounds is clipped to it (at few items it is wider)
    ppi = Sequence95(np.maximum(low, f_low + delta.low), np.minimum(high, f_high + delta.high), f_mean + delta.estimate)
    return PpiSequence(ppi, scaled_cs(human_rated, low, high, alpha, grid), int(f.shape[-1]))


# --- the alternative annotator test, watched ---------------------------------------------------------------


def log_e_process(d: npt.ArrayLike, epsilon: float) -> Floats:
    """log K_t of the bet against H0: E[d] >= ε, for d = W^h - W^f in {-1, 0, 1} in the order the items came
    (..., T). The bet λ_t >= 0 (aGRAPA): the past mean of x = ε - d over its past second moment, both shrunk
    to a prior of 0 and 1 by one pseudo-observation, clipped to [0, c/(1 - ε)]."""
    x = epsilon - np.asarray(d, dtype=float)
    past_sum = np.cumsum(x, axis=-1) - x
    past_sq = np.cumsum(x**2, axis=-1) - x**2
    t = np.arange(x.shape[-1], dtype=float)  # observations before this one
    bet = np.clip((past_sum / (t + 1)) / ((1 + past_sq) / (t + 1)), 0.0, E_BET_CAP / (1 - epsilon))
    found: Floats = np.cumsum(np.log1p(bet * x), axis=-1)
    return found


def e_bh(e: npt.ArrayLike, alpha: float = ALPHA) -> npt.NDArray[np.bool_]:
    """e-BH (Wang & Ramdas 2022): reject the k hypotheses with the largest e-values, k the largest with
    e_(k) >= m / (α k); the last axis holds the m hypotheses (NaN: not tested, never rejected)."""
    values = np.asarray(e, dtype=float)
    tested = ~np.isnan(values)
    m = tested.sum(axis=-1, keepdims=True)
    ordered = -np.sort(-np.where(tested, values, -np.inf), axis=-1)  # descending, untested last
    k = np.arange(1, values.shape[-1] + 1)
    passes = (ordered >= m / (alpha * k)) & (k <= m)
    count = np.where(passes.any(axis=-1), values.shape[-1] - np.argmax(passes[..., ::-1], axis=-1), 0)
    cut = np.take_along_axis(ordered, np.maximum(count - 1, 0)[..., None], axis=-1)
    rejected: npt.NDArray[np.bool_] = tested & (values >= cut) & (count[..., None] > 0)
    return rejected


@dataclass(frozen=True)
class AnytimeVerdict:
    """The alt-test, watched: per person the e-value now, which e-BH rejects, ω and the verdict."""

    epsilon: float
    alpha: float
    items: int
    e_values: dict[str, float] = field(default_factory=dict)  # tested persons only
    rejected: dict[str, bool] = field(default_factory=dict)
    winning_rate: float | None = None
    passed: bool | None = None
    note: str = ""


def advantage_sequence(
    humans: Mapping[str, Mapping[Hashable, float]],
    judge: Mapping[Hashable, float],
    human: str,
    order: Sequence[Hashable],
    level: str,
) -> Floats:
    """d_i = W^h_i - W^f_i of one left-out person, item by item in ``order`` (the alt-test's indicators, as
    ``alternative_annotator`` scores them; items rated by fewer than 2 persons or not by the judge skipped)."""
    found = ac.from_dicts(humans, judge, at.SCORING_FOR_LEVEL[level])
    j = found.humans.index(human)
    rank = ac.ranks([found.keys[r] for r in found.rows[j]], order)
    return _in_rank_order(found.w_human[j] - found.w_judge[j], rank)[1]


def _in_rank_order(d: Floats, rank: Floats) -> tuple[Floats, Floats]:
    """(the ranks, d) of the items that have a rank, in rank order."""
    kept = np.flatnonzero(np.isfinite(rank))
    by_rank = kept[np.argsort(rank[kept], kind="stable")]
    return rank[by_rank], d[by_rank]


def anytime_alt_test(
    humans: Mapping[str, Mapping[Hashable, float]],
    judge: Mapping[Hashable, float],
    order: Sequence[Hashable],
    *,
    level: str = "interval",
    epsilon: float = at.EPSILON_EXPERT,
    alpha: float = ALPHA,
    min_humans: int = at.MIN_HUMANS,
    min_items_per_human: int = at.MIN_ITEMS_PER_HUMAN,
) -> AnytimeVerdict:
    """The verdict valid at every look, after the items of ``order`` (the order their ratings came): the same
    persons are tested as in the fixed-n test (``min_items_per_human`` shared items each, ``min_humans`` of
    them), each by its e-process, combined by e-BH."""
    curve = anytime_alt_curve(
        humans,
        judge,
        order,
        [len(order)],
        level=level,
        epsilon=epsilon,
        alpha=alpha,
        min_humans=min_humans,
        min_items_per_human=min_items_per_human,
    )
    return curve[-1][1]


def anytime_alt_curve(
    humans: Mapping[str, Mapping[Hashable, float]],
    judge: Mapping[Hashable, float],
    order: Sequence[Hashable],
    sizes: Sequence[int],
    *,
    level: str = "interval",
    epsilon: float = at.EPSILON_EXPERT,
    alpha: float = ALPHA,
    min_humans: int = at.MIN_HUMANS,
    min_items_per_human: int = at.MIN_ITEMS_PER_HUMAN,
) -> list[tuple[int, AnytimeVerdict]]:
    """``anytime_alt_test`` on the first n items of ``order`` for each n of ``sizes``: each person's indicators
    are scored once, in order, and each look reads their e-process where it stands."""
    judged = {i: v for i, v in judge.items() if _present(v)}
    order = [i for i in order if i in judged]
    found = ac.from_dicts(humans, judged, at.SCORING_FOR_LEVEL[level])
    return anytime_curve_of(
        found,
        ac.ranks(found.keys, order),
        len(order),
        sizes,
        epsilon=epsilon,
        alpha=alpha,
        min_humans=min_humans,
        min_items_per_human=min_items_per_human,
    )


def anytime_curve_of(
    found: ac.Scored,
    rank: Floats,
    length: int,
    sizes: Sequence[int],
    *,
    epsilon: float = at.EPSILON_EXPERT,
    alpha: float = ALPHA,
    min_humans: int = at.MIN_HUMANS,
    min_items_per_human: int = at.MIN_ITEMS_PER_HUMAN,
) -> list[tuple[int, AnytimeVerdict]]:
    """``anytime_alt_curve`` from the indicators scored once (``alt_columns.Scored``): ``rank``, each of its rows'
    place in the order the ratings came (inf: not there), ``length`` the order's length (the looks are capped
    there)."""
    sequences = {}
    for name, rows, wf, wh in zip(found.humans, found.rows, found.w_judge, found.w_human):
        positions, d = _in_rank_order(wh - wf, rank[rows])
        sequences[name] = (positions, log_e_process(d, epsilon) if d.size else np.zeros(0))
    in_order = np.sort(rank[np.isfinite(rank)])
    out = []
    for n in sorted({min(max(int(s), 0), length) for s in sizes}):
        counts = {name: int(np.searchsorted(pos, n)) for name, (pos, _) in sequences.items()}
        items = int(np.searchsorted(in_order, n))
        tested = sorted(name for name, c in counts.items() if at.is_tested(c, min_items_per_human))
        if not at.has_verdict(list(counts.values()), min_humans, min_items_per_human):
            rule = at.verdict_rule(min_humans, min_items_per_human)
            note = f"{len(tested)} humans with enough items (the test needs {rule})"
            out.append((n, AnytimeVerdict(epsilon, alpha, items, note=note)))
            continue
        e_values = np.array([math.exp(min(700.0, float(sequences[h][1][counts[h] - 1]))) for h in tested])
        rejected = e_bh(e_values, alpha)
        omega = float(rejected.mean())
        verdict = AnytimeVerdict(
            epsilon,
            alpha,
            items,
            dict(zip(tested, e_values.tolist())),
            dict(zip(tested, rejected.tolist())),
            omega,
            omega >= at.PASSING_WINNING_RATE,
        )
        out.append((n, verdict))
    return out


def _present(value: float | None) -> bool:
    return value is not None and not math.isnan(value)

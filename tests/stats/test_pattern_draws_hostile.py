"""A hostile check of the draw by pattern (issue 35): every bootstrap figure's resample counts drawn as
Multinomial(n, sizes / n) over the items' patterns instead of over the items.

The claim holds only where a figure depends on each item through its pattern alone. The check here does not take
that on trust: it turns each drawn pattern count back into an item-level resample -- the W_p draws of pattern p
shared among its items by a uniform multinomial, which, with W ~ Multinomial(n, sizes / n), is exactly a uniform
multinomial draw over the items -- and recomputes the figure on the *items* so drawn (their own raters, missing
ratings, lengths, groups; every item repeated as often as drawn) with krippendorff, scipy, scikit-learn, numpy or
Gwet's formulas written here (Gwet 2014, ch. 2-4: AC1 / AC2 with missing ratings). Where two items of one pattern
differed in anything the figure reads, the recomputed figure would differ from the report's: the intervals agree
to rounding instead, on data built to have such items (missing ratings, a rating by one rater only, different
raters per item, averaged scores, lengths and groups that differ inside a score's pattern).

Then: edge cases of the draw (2 and 3 items, one pattern, empty groups, a group of all items, the DRAWN_GROUPS and
ITEMS_PER_PATTERN boundaries), determinism (the same report twice, and in two processes through the CLI), two
figures with the same pattern sizes (identical draws, which a combined figure must not read twice), and a seeded
simulation over many studies in the slow tier: the interval ends by pattern have the item bootstrap's distribution.
"""

from __future__ import annotations

import hashlib
import json

import krippendorff
import numpy as np
import pytest
from scipy import stats as sp
from sklearn.metrics import cohen_kappa_score

from tests.support import run_cli_process
from tui_rater.stats import bias, gwet
from tui_rater.stats import intervals as iv

SCALE = [1.0, 2.0, 3.0, 4.0, 5.0]


# --- the draw, written here from its definition ------------------------------------------------------------------


def _seed(sizes: np.ndarray) -> list[int]:
    sizes = np.asarray(sizes, dtype="<i8")
    digest = hashlib.sha256(sizes.tobytes()).digest()
    return [iv.SEED, int(sizes.sum()), int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")]


def _item_counts(keys: np.ndarray, allocate: int = 0) -> np.ndarray:
    """RESAMPLES x items: an item-level resample whose pattern counts are the report's draw. ``keys`` (items x k)
    define the patterns (np.unique's order of rows, the order the report's patterns come in); each resample's W_p
    draws of pattern p are shared among p's items uniformly (seeded by ``allocate``): conditionally on W that is
    the item bootstrap's law, so the result is a uniform multinomial draw over the items."""
    keys = np.asarray(keys, dtype=float).reshape(len(keys), -1)
    _, which, sizes = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    which = which.ravel()
    n = keys.shape[0]
    drawn = np.random.default_rng(_seed(sizes)).multinomial(n, sizes / n, size=iv.RESAMPLES)
    rng = np.random.default_rng(allocate)
    out = np.zeros((iv.RESAMPLES, n), dtype=np.int64)
    for p, size in enumerate(sizes):
        members = np.flatnonzero(which == p)
        out[:, members] = rng.multinomial(drawn[:, p], np.full(size, 1.0 / size))
    return out


def _percentile(values: list[float] | np.ndarray) -> tuple[float, float]:
    found = np.asarray(values, dtype=float)
    assert np.all(np.isfinite(found))
    low, high = np.quantile(found, [0.025, 0.975])
    return float(low), float(high)


def _same(found: iv.Interval, expected: tuple[float, float], tol: float = 1e-9) -> None:
    assert found.ok, found.method
    assert found.low == pytest.approx(expected[0], abs=tol) and found.high == pytest.approx(expected[1], abs=tol)


def _study(n: int, seed: int, raters: int = 3) -> np.ndarray:
    """raters x items on a 1-5 scale: a true score plus rater noise, 25 % missing (items rated by one rater only,
    and by different raters with the same values: the same pattern for alpha and AC, not for the rater model)."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n)
    m = np.clip(truth + rng.integers(-1, 2, (raters, n)), 1, 5).astype(float)
    m[rng.random((raters, n)) < 0.25] = np.nan
    m[:, 0] = [3.0] + [np.nan] * (raters - 1)  # rated once: not pairable, an AC item
    m[:, 1] = [np.nan] * raters  # rated by nobody
    m[:2, 2], m[:2, 3] = [2.0, 4.0], [4.0, 2.0]  # the same pattern, the values from other raters
    return m


# --- 1. each figure recomputed on the items the draw stands for ------------------------------------------------------


@pytest.mark.parametrize("level", ["interval", "ordinal", "nominal"])
def test_alpha_by_pattern_is_krippendorffs_on_the_items_drawn(level):
    """Missing ratings, items rated once or by nobody, two items of one pattern rated by different raters: alpha
    reads an item only through its value counts, and the report's interval is krippendorff's on the items."""
    m = _study(160, 11)
    iv._tables.clear()
    found = iv.alpha(m, level)
    pairable = np.flatnonzero(np.sum(~np.isnan(m), axis=0) >= 2)
    data = m[:, pairable]
    levels = np.unique(data[~np.isnan(data)])
    counts = np.stack([np.sum(data == v, axis=0) for v in levels], axis=1)
    alphas = [
        krippendorff.alpha(reliability_data=np.repeat(data, w, axis=1), level_of_measurement=level)
        for w in _item_counts(counts, allocate=1)
    ]
    _same(found, _percentile(alphas))


def _gwet_ac(m: np.ndarray, kind: str) -> float:
    """Gwet (2014), eqs. 2.23-2.25 and 3.8: AC1 / AC2 with missing ratings, from the raters x items matrix."""
    x = np.asarray(SCALE)
    q = x.size
    w = np.eye(q) if kind == "nominal" else 1.0 - (x[:, None] - x[None, :]) ** 2 / (x[-1] - x[0]) ** 2
    r_ik = np.stack([np.sum(m == v, axis=0) for v in x], axis=1).astype(float)  # items x categories
    r_i = r_ik.sum(axis=1)
    r_ik, r_i = r_ik[r_i > 0], r_i[r_i > 0]
    two = r_i >= 2
    star = r_ik @ w.T
    pa = np.mean(np.sum(r_ik[two] * (star[two] - 1.0), axis=1) / (r_i[two] * (r_i[two] - 1.0)))
    pi = np.mean(r_ik / r_i[:, None], axis=0)
    pe = w.sum() / (q * (q - 1.0)) * np.sum(pi * (1.0 - pi))
    return float((pa - pe) / (1.0 - pe))


@pytest.mark.parametrize("kind", ["nominal", "ordinal"])
def test_gwet_ac_by_pattern_is_gwets_formula_on_the_items_drawn(kind):
    """AC1 / AC2: the items rated at least once resampled (one rating: in the shares, not in p_a)."""
    m = _study(160, 12)
    stat = gwet.ac(m, SCALE, kind)
    rated = np.flatnonzero(np.sum(~np.isnan(m), axis=0) >= 1)
    data = m[:, rated]
    counts = np.stack([np.sum(data == v, axis=0) for v in SCALE], axis=1)
    found = iv.Interval(stat.extra["ci_low"], stat.extra["ci_high"], str(stat.extra["ci"]))
    assert stat.value == pytest.approx(_gwet_ac(m, kind), abs=1e-12)
    acs = [_gwet_ac(np.repeat(data, w, axis=1), kind) for w in _item_counts(counts, allocate=2)]
    _same(found, _percentile(acs))


def test_table_ones_mean_and_percent_exact_on_the_items_drawn():
    """The mean of every rating (an item: its sum and its number of ratings -- [2, 4] and [3, 3] one pattern) and
    % exact (an item rated twice or more: all alike or not)."""
    m = _study(200, 13)
    rated = np.flatnonzero(np.sum(~np.isnan(m), axis=0) >= 1)
    data = m[:, rated]
    keys = np.stack([np.nansum(data, axis=0), np.sum(~np.isnan(data), axis=0)], axis=1)
    means = [np.nanmean(np.repeat(data, w, axis=1)) for w in _item_counts(keys, allocate=3)]
    _same(iv.mean(m), _percentile(means))
    twice = m[:, np.sum(~np.isnan(m), axis=0) >= 2]
    alike = (np.nanmax(twice, axis=0) == np.nanmin(twice, axis=0)).astype(float)
    shares = [100.0 * np.mean(np.repeat(alike, w)) for w in _item_counts(alike, allocate=4)]
    _same(iv.percent_exact(m), _percentile(shares))


@pytest.mark.parametrize("figure", ["tau", "spearman", "pearson", "kappa", "exact"])
def test_two_evaluators_figures_on_the_items_drawn(figure):
    """tau-b, rho, r, quadratic kappa and exact agreement of two raters, items missing on either side dropped:
    each a function of the pair's joint cell, recomputed by scipy / scikit-learn on the drawn items."""
    m = _study(300, 14)
    x, y = m[0], m[2]
    keep = ~np.isnan(x) & ~np.isnan(y)
    a, b = x[keep], y[keep]
    draws = _item_counts(np.stack([a, b], axis=1), allocate=5)
    iv._tables.clear()
    product = {
        "tau": lambda: iv.kendall_tau(x, y),
        "spearman": lambda: iv.spearman(x, y),
        "pearson": lambda: iv.pearson(x, y),
        "kappa": lambda: iv.weighted_kappa(x, y, SCALE),
        "exact": lambda: iv.exact_agreement(x, y),
    }[figure]()
    reference = {
        "tau": lambda u, v: sp.kendalltau(u, v).statistic,
        "spearman": lambda u, v: sp.spearmanr(u, v).statistic,
        "pearson": lambda u, v: sp.pearsonr(u, v).statistic,
        "kappa": lambda u, v: cohen_kappa_score(u, v, labels=SCALE, weights="quadratic"),
        "exact": lambda u, v: 100.0 * np.mean(u == v),
    }[figure]
    if figure == "exact":  # exact agreement reads an item through whether its pair agrees: two patterns
        draws = _item_counts((a == b).astype(float), allocate=5)
    values = [reference(np.repeat(a, w), np.repeat(b, w)) for w in draws]
    _same(product, _percentile(values))


def _bias_data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A judge's score, the people's mean of three (thirds: sums that are not exact in binary), a length taking 6
    values and a family flag: items of one (judge - people) value differ in length and family."""
    rng = np.random.default_rng(seed)
    people = np.round(rng.integers(3, 16, n) / 3.0, 12)
    judge = np.clip(np.round(people) + rng.integers(-1, 2, n), 1, 5).astype(float)
    length = rng.choice([80.0, 120.0, 200.0, 260.0, 400.0, 610.0], n)
    family = rng.random(n) < 0.4
    judge[family] = np.minimum(judge[family] + (rng.random(family.sum()) < 0.3), 5)
    return judge, people, length, family


def test_bias_cards_leniency_self_preference_ratio_on_the_items_drawn():
    j, p, _, g = _bias_data(400, 15)
    d = j - p
    lenient = [np.mean(np.repeat(d, w)) for w in _item_counts(np.stack([d, np.ones_like(d)], axis=1), 6)]
    _same(bias.mean_difference(j, p).interval, _percentile(lenient), 1e-9)
    inner = g.astype(float)
    keys = np.column_stack([d * inner, inner, d * (1.0 - inner), 1.0 - inner])
    preference = []
    for w in _item_counts(keys, allocate=7):
        dd, gg = np.repeat(d, w), np.repeat(g, w)
        preference.append(dd[gg].mean() - dd[~gg].mean())
    _same(bias.group_difference(j, p, g).interval, _percentile(preference))
    top, bottom = (j > p).astype(float), np.ones_like(j) + (j == 5)
    ratios = [np.repeat(top, w).sum() / np.repeat(bottom, w).sum() for w in _item_counts(np.stack([top, bottom], 1))]
    _same(bias.ratio(top, bottom).interval, _percentile(ratios))


def test_bias_cards_length_slope_on_the_items_drawn():
    """The length slope: a regression on the drawn items (numpy's lstsq), the SD of length the study's own."""
    j, p, x, _ = _bias_data(500, 16)
    sd, centre = float(np.std(x, ddof=1)), float(x.mean())
    design = np.column_stack([np.ones_like(x), (x - centre) / sd, p])
    keys = np.hstack([np.einsum("ui,uj->uij", design, design).reshape(x.size, 9), design * j[:, None]])
    slopes = []
    for w in _item_counts(keys, allocate=8):
        slopes.append(np.linalg.lstsq(np.repeat(design, w, axis=0), np.repeat(j, w), rcond=None)[0][1])
    _same(bias.length_slope(j, p, x).interval, _percentile(slopes), 1e-8)


def test_rater_model_patterns_tell_raters_apart():
    """The reliability model reads which rater gave which answer: two items with the same answers from different
    raters are two patterns there (alpha's and AC's one pattern would be wrong for it), and the counts add up."""
    from tui_rater.stats import rater_model as rm

    # item 0: rater 0 says 0, rater 1 says 2; item 1: rater 0 says 2, rater 1 says 0; item 2: as item 0
    labels = rm.Labels(
        np.array([0, 0, 1, 1, 2, 2]), np.array([0, 1, 0, 1, 0, 1]), np.array([0, 2, 2, 0, 0, 2]), 3, 2, 3
    )
    found = rm.rating_patterns(labels)
    assert found.of_item[0] == found.of_item[2] != found.of_item[1]
    assert sorted(found.count.tolist()) == [1.0, 2.0]


# --- 3. edge cases of the draw ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 3])
def test_two_and_three_items(n):
    m = np.array([[1.0, 2.0, 4.0][:n], [1.0, 3.0, 4.0][:n]])
    counts = np.stack([np.sum(m == v, axis=0) for v in np.unique(m)], axis=1)
    draws = _item_counts(counts)
    alphas = []
    for w in draws:
        repeated = np.repeat(m, w, axis=1)
        alphas.append(
            krippendorff.alpha(reliability_data=repeated, level_of_measurement="interval")
            if np.unique(repeated).size > 1
            else np.nan
        )
    share = np.mean(~np.isnan(alphas))
    found = iv.alpha(m, "interval")
    if share < iv.LEAST_DEFINED:
        assert not found.ok
    else:
        _same(found, _percentile(np.asarray(alphas)[~np.isnan(alphas)]))
    assert np.all(draws.sum(axis=1) == n)


def test_one_pattern_every_resample_is_the_study():
    """Every item alike: one group of size n, drawn n times in every resample; the mean's interval is the point."""
    found = iv.group_sums(np.zeros(50, dtype=np.intp), 1)
    assert found is not None and np.all(found == 50)
    interval = iv.mean(np.full((2, 50), 3.0))
    assert interval.ok and interval.low == interval.high == 3.0


def test_empty_groups_are_zero_and_the_rest_multinomial():
    group = np.array([0, 0, 3, 3, 3, 5], dtype=np.intp)
    found = iv.group_sums(group, 7)
    assert found is not None
    assert not found[:, [1, 2, 4, 6]].any() and np.all(found.sum(axis=1) == 6)
    expected = np.random.default_rng(_seed(np.array([2, 3, 1]))).multinomial(6, [2 / 6, 3 / 6, 1 / 6], iv.RESAMPLES)
    assert np.array_equal(found[:, [0, 3, 5]], expected)


@pytest.mark.parametrize(
    ("patterns", "n", "by_pattern"),
    [
        (iv.DRAWN_GROUPS, iv.DRAWN_GROUPS, True),  # every item its own pattern, at the limit
        (iv.DRAWN_GROUPS + 1, iv.DRAWN_GROUPS + 1, False),  # one more
        (iv.DRAWN_GROUPS + 1, iv.ITEMS_PER_PATTERN * (iv.DRAWN_GROUPS + 1), True),  # a sixteenth of the items
        (iv.DRAWN_GROUPS + 1, iv.ITEMS_PER_PATTERN * (iv.DRAWN_GROUPS + 1) - 1, False),  # just more than that
    ],
)
def test_the_boundaries_of_the_draw_by_pattern(patterns, n, by_pattern):
    group = np.concatenate([np.arange(patterns), np.zeros(n - patterns, dtype=int)]).astype(np.intp)
    found = iv.group_sums(group, patterns)
    assert (found is not None) == by_pattern
    if found is not None:
        assert np.all(found.sum(axis=1) == n) and np.all(found >= 0)


def test_the_same_figures_twice_are_the_same_bits_and_do_not_depend_on_item_order():
    """Drawn by pattern, a study's interval is a function of its patterns' sizes: the same twice, and the same
    with the items in another order (the item-level draw gave another interval then)."""
    m = _study(400, 17)
    shuffled = m[:, np.random.default_rng(0).permutation(m.shape[1])]
    for level in ("interval", "ordinal", "nominal"):
        assert iv.alpha(m, level) == iv.alpha(m, level) == iv.alpha(shuffled, level)
    iv._tables.clear()
    first = iv.kendall_tau(m[0], m[1])
    iv._tables.clear()
    assert iv.kendall_tau(m[0], m[1]) == iv.kendall_tau(shuffled[0], shuffled[1]) == first
    assert iv.mean(m) == iv.mean(shuffled)


def test_item_draws_are_not_read_from_the_pattern_draws_cache(monkeypatch):
    """``BY_PATTERN`` off (the ``item_draws`` fixture of the older tests) must give the item-level tables: the joint
    tables kept by cell codes were handed back from a by-pattern figure computed before (failed before the fix:
    a test's expectations from numpy's item draw then depend on which tests ran before it in the process)."""
    m = _study(300, 18)
    x, y = m[0], m[1]
    keep = ~np.isnan(x) & ~np.isnan(y)
    a, b = x[keep], y[keep]
    iv._tables.clear()
    by_pattern = iv.kendall_tau(x, y)
    monkeypatch.setattr(iv, "BY_PATTERN", False)
    by_items = iv.kendall_tau(x, y)
    n = a.size
    w = np.random.default_rng([iv.SEED, n]).multinomial(n, np.full(n, 1.0 / n), size=iv.RESAMPLES)
    expected = _percentile([sp.kendalltau(np.repeat(a, c), np.repeat(b, c)).statistic for c in w])
    _same(by_items, expected)
    assert by_items != by_pattern


def test_a_combined_figure_is_not_two_draws_with_the_same_sizes():
    """Self-preference is a difference of two means: were each drawn apart, two groups with the same pattern sizes
    would get the same seed -- perfectly correlated draws, an interval of about nothing. Its groups here mirror
    each other (same sizes, values shifted), and its interval is as wide as the item bootstrap's (within 20 %),
    drawn once over the items' rows."""
    rng = np.random.default_rng(19)
    half = rng.integers(1, 6, 300).astype(float)
    people = np.concatenate([half, half])
    judge = np.concatenate([half + rng.integers(0, 2, 300), half + rng.integers(0, 2, 300)])
    family = np.repeat([True, False], 300)
    found = bias.group_difference(judge, people, family).interval
    d = judge - people
    n = d.size
    w = np.random.default_rng(123).multinomial(n, np.full(n, 1.0 / n), size=iv.RESAMPLES)
    items = [np.repeat(d, c)[np.repeat(family, c)].mean() - np.repeat(d, c)[~np.repeat(family, c)].mean() for c in w]
    low, high = _percentile(items)
    assert found.ok and found.low is not None and found.high is not None
    assert abs((found.high - found.low) - (high - low)) < 0.2 * (high - low)
    # the two groups' own means do get the same draw (same sizes, same seed): each figure alone is still right
    assert np.array_equal(iv.group_sums(np.repeat([0, 1], [150, 150]), 2), iv.group_sums(np.repeat([1, 0], 150), 2))


@pytest.mark.slow
def test_the_report_is_the_same_in_two_processes(hanna, tmp_path):
    """``tui-rater report`` twice through the CLI, in two processes: the same JSON (every interval to the bit).
    Slow tier: two HANNA reports (the goldens check the same in the fast tier against files another process wrote)."""
    _, _, db = hanna
    outs = []
    for k in range(2):
        out = tmp_path / f"r{k}.json"
        done = run_cli_process("report", "--db", db, "--task", "hanna", "--format", "json", "--out", out, timeout=600)
        assert done.returncode == 0, done.stderr
        outs.append(json.loads(out.read_text()))
    assert outs[0] == outs[1]
    text = json.dumps(outs[0])
    assert "ci_low" in text or "interval" in text


# --- 2. the distribution over many studies (slow) -----------------------------------------------------------


def _item_bootstrap(m: np.ndarray, figure: str, seed: int, half: bool = False) -> tuple[float, float]:
    """The item bootstrap written here: numpy's multinomial over the items (its own seed), the figure recomputed
    on the repeated items by krippendorff / scipy / Gwet's formula; ``half``: resamples of half the items (a wrong
    bootstrap, too wide: the simulation's control)."""
    if figure.startswith("alpha"):
        data = m[:, np.sum(~np.isnan(m), axis=0) >= 2]
    elif figure == "ac2":
        data = m[:, np.sum(~np.isnan(m), axis=0) >= 1]
    else:
        keep = ~np.isnan(m[0]) & ~np.isnan(m[1])
        data = m[:2, keep]
    n = data.shape[1]
    values = []
    for w in np.random.default_rng(seed).multinomial(n // 2 if half else n, np.full(n, 1.0 / n), size=iv.RESAMPLES):
        r = np.repeat(data, w, axis=1)
        if figure == "alpha ordinal":
            values.append(krippendorff.alpha(reliability_data=r, level_of_measurement="ordinal"))
        elif figure == "alpha nominal":
            values.append(krippendorff.alpha(reliability_data=r, level_of_measurement="nominal"))
        elif figure == "ac2":
            values.append(_gwet_ac(r, "ordinal"))
        else:
            values.append(sp.kendalltau(r[0], r[1]).statistic)
    return _percentile(values)


def _report_interval(m: np.ndarray, figure: str) -> tuple[float, float]:
    iv._tables.clear()
    if figure == "alpha ordinal":
        found = iv.alpha(m, "ordinal")
    elif figure == "alpha nominal":
        found = iv.alpha(m, "nominal")
    elif figure == "ac2":
        stat = gwet.ac(m, SCALE, "ordinal")
        found = iv.Interval(stat.extra["ci_low"], stat.extra["ci_high"], "")
    else:
        found = iv.kendall_tau(m[0], m[1])
    assert found.low is not None and found.high is not None
    return found.low, found.high


@pytest.mark.slow
@pytest.mark.parametrize("figure", ["alpha ordinal", "alpha nominal", "tau", "ac2"])
def test_interval_ends_by_pattern_have_the_item_bootstraps_distribution(figure):
    """60 studies (120 items, 3 raters, 25 % missing): for each, the report's interval (by pattern) and an item
    bootstrap written here with its own seed. Both are draws of one bootstrap distribution of the same study, so
    the paired differences of each end have mean 0: |mean| under 4 standard errors. A coarser partition than the
    figure reads -- or a draw that is not the items' (the control: resamples of n / 2 items) -- moves them."""
    studies = 60
    diffs, control = [], []
    for s in range(studies):
        m = _study(120, 1000 + s)
        ours = _item_bootstrap(m, figure, seed=5000 + s)
        theirs = _report_interval(m, figure)
        diffs.append(np.subtract(theirs, ours))
        wrong = _item_bootstrap(m, figure, seed=7000 + s, half=True)  # an m-out-of-n bootstrap: too wide
        control.append(np.subtract(wrong, ours))
    for d, name in ((np.asarray(diffs), "by pattern"), (np.asarray(control), "control")):
        z = d.mean(axis=0) / (d.std(axis=0, ddof=1) / np.sqrt(studies))
        if name == "by pattern":
            assert np.all(np.abs(z) < 4.0), (figure, z)
        else:  # the test can see a wrong interval: the n / 2 bootstrap's is wider at both ends
            assert z[0] < -4.0 and z[1] > 4.0, (figure, z)


def test_alt_tests_omega_rho_and_per_human_rho_on_the_items_drawn():
    """The alt-test's ω, ρ and each human's ρ^f_j, ρ^h_j of each resample (one draw by the items' rows of the
    test's indicators) are ``alt_test``'s -- the test run item by item on the raw ratings, not on the indicators --
    of the drawn items, each copy its own item: items of one row that differ in their ratings (another human
    missing, other values with the same comparisons) would show."""
    from tui_rater.stats import alt_intervals as ai
    from tui_rater.stats import alternative_annotator as at

    rng = np.random.default_rng(21)
    n, names = 90, ["h1", "h2", "h3", "h4"]
    truth = rng.integers(1, 6, n)
    humans = {}
    for name in names:
        values = np.clip(truth + rng.integers(-1, 2, n), 1, 5).astype(float)
        humans[name] = {f"i{u:03d}": float(v) for u, v in enumerate(values) if rng.random() > 0.15}
    judge = {f"i{u:03d}": float(np.clip(t + rng.integers(-1, 2), 1, 5)) for u, t in enumerate(truth)}
    found = ai.per_item(humans, judge)
    omega, rho, judge_share, human_share = ai._draws(found)
    d = (found.w_human - found.w_judge) * found.rated
    levels = [((found.rated > 0) & (d == v)).astype(float) for v in (-1.0, 0.0, 1.0)]
    keys = np.hstack([*levels, found.w_judge, found.w_human])
    verdicts = 0
    for b, w in enumerate(_item_counts(keys, allocate=9)[:120]):
        copies: dict[str, dict[str, float]] = {name: {} for name in names}
        judged: dict[str, float] = {}
        for u, item in enumerate(found.items):
            for k in range(w[u]):
                key = f"{item}#{k}"
                judged[key] = judge[item]
                for name in names:
                    if item in humans[name]:
                        copies[name][key] = humans[name][item]
        test = at.alt_test(copies, judged)
        assert (test.winning_rate is None) == np.isnan(omega[b]), b
        if test.winning_rate is not None:
            assert omega[b] == pytest.approx(test.winning_rate, abs=1e-12), b
            assert rho[b] == pytest.approx(test.advantage_probability, abs=1e-12), b
            verdicts += 1
        for row in test.comparisons:
            j = found.humans.index(row.human)
            if row.rho_judge is not None:
                assert judge_share[b, j] == pytest.approx(row.rho_judge, abs=1e-12), (b, row.human)
                assert human_share[b, j] == pytest.approx(row.rho_human, abs=1e-12), (b, row.human)
    assert verdicts > 100 and len(np.unique(keys, axis=0)) <= len(found.items) - 20  # rows shared by items


def test_rater_models_resample_by_pattern_is_the_model_of_the_items_drawn():
    """The reliability model's bootstrap refits on pattern counts (rater -> answer rows): a resample's fit on those
    weights is the fit on the drawn items themselves (each copy its own item; κ to rounding) and crowd-kit's
    DawidSkene there (its confusion matrices within its tolerance)."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    from tui_rater.stats import rater_model as rm

    rng = np.random.default_rng(3)
    n, raters, answers = 200, 4, 3
    truth = rng.integers(0, answers, n)
    item, rater, label = [], [], []
    for u in range(n):
        for r in range(raters):
            if rng.random() < 0.7:
                item.append(u)
                rater.append(r)
                label.append(truth[u] if rng.random() < 0.6 + 0.1 * r else rng.integers(0, answers))
    labels = rm.Labels(np.array(item), np.array(rater), np.array(label), n, raters, answers)
    found = rm.rating_patterns(labels)
    assert found.labels.n_items < n  # items share patterns
    weights = np.random.default_rng(1).multinomial(n, found.count / n).astype(float)
    fit = rm.dawid_skene(found.labels, weights)
    copies = np.zeros(n, dtype=int)
    share = np.random.default_rng(2)
    for p in range(found.labels.n_items):
        members = np.flatnonzero(found.of_item == p)
        copies[members] = share.multinomial(int(weights[p]), np.full(members.size, 1.0 / members.size))
    items, who, said = [], [], []
    copy = 0
    for u in np.flatnonzero(copies):
        mine = labels.item == u
        for _ in range(copies[u]):
            items += [copy] * int(mine.sum())
            who += labels.rater[mine].tolist()
            said += labels.label[mine].tolist()
            copy += 1
    drawn = rm.Labels(np.array(items), np.array(who), np.array(said), int(copies.sum()), raters, answers)
    on_items = rm.fit_model(drawn, rm.NOMINAL, resamples=0)
    assert np.allclose(rm.reliability(fit, found.labels, weights), on_items.reliability, atol=1e-9)
    crowd = DawidSkene(n_iter=rm.N_ITER, tol=rm.TOL).fit(pd.DataFrame({"worker": who, "task": items, "label": said}))
    for r in range(raters):
        for k in range(answers):
            for c in range(answers):
                assert fit.confusion[r, k, c] == pytest.approx(crowd.errors_.loc[(r, k), c], abs=1e-3)


@pytest.mark.slow
def test_a_figure_with_more_patterns_than_drawn_groups_but_a_sixteenth_of_its_items():
    """Two 0-100 scores, loosely related, at 120,000 items: some 6,000 joint cells, more than ``DRAWN_GROUPS`` and
    fewer than a sixteenth of the items -- drawn by pattern, and Pearson's r of each resample numpy's on the items
    drawn."""
    rng = np.random.default_rng(22)
    n = 120_000
    x = rng.integers(0, 101, n).astype(float)
    y = np.clip(x + rng.integers(-30, 31, n), 0, 100)
    keys = np.stack([x, y], axis=1)
    cells = np.unique(keys, axis=0).shape[0]
    assert iv.DRAWN_GROUPS < cells <= n // iv.ITEMS_PER_PATTERN
    iv._tables.clear()
    found = iv.pearson(x, y)
    assert found.method == iv.METHOD
    values = [np.corrcoef(np.repeat(x, w), np.repeat(y, w))[0, 1] for w in _item_counts(keys, allocate=10)]
    _same(found, _percentile(values))

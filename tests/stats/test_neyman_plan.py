"""``sample-size``'s Neyman allocation (``stats/neyman.py``): where new human ratings should go across the strata of
stratified PPI++, checked against the textbook formula n_h ∝ N_h S_h (Cochran 1977, §5.5) with S_h recomputed here
from the pilot, and against scipy's constrained minimiser of Σ W_h² S_h² / n_h where the pilot or a stratum's size
binds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import optimize

from tests.stats.simulated import likert_study
from tests.stats.test_ppi_recal import stratified_by_hand
from tui_rater.stats import neyman


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """300 items of two systems, a judge ('close') on every one, three people on about 20 % of them."""
    path = tmp_path_factory.mktemp("neyman") / "s.db"
    return likert_study(path, humans=3, prompts=150, seed=11, rated_share=0.2, attributes=("likability",))


def by_hand(sim):
    """Per system: N_h, the pilot's n_h and the SD of y − λ·f there, λ the stratified PPI++'s (written in the test)."""
    people = sim.humans["likability"]
    y = np.array([np.mean([people[h][i] for h in people]) if i in people["h0"] else np.nan for i in sim.ids])
    f = np.array([sim.judges["likability"]["close"][i] for i in sim.ids])
    system = np.array([sim.system[i] for i in sim.ids])
    # λ from the paper's formula (tests/stats/test_ppi_recal.py): Σ a_k C_k / Σ a_k V_k
    parts = []
    for s in sorted(set(system)):
        mine, rated = system == s, (system == s) & ~np.isnan(y)
        parts.append((s, mine.sum(), rated.sum(), y[rated], f[rated], f[mine]))
    w = [big / len(sim.ids) for _, big, _, _, _, _ in parts]
    a = [wk**2 * (1 / n - 1 / big) for wk, (_, big, n, _, _, _) in zip(w, parts)]
    c = [np.cov(yr, fr)[0, 1] for _, _, _, yr, fr, _ in parts]
    v = [np.var(fa, ddof=1) for *_, fa in parts]
    lam = np.dot(a, c) / np.dot(a, v)
    figures = {s: (int(big), int(n), float(np.std(yr - lam * fr, ddof=1))) for s, big, n, yr, fr, _ in parts}
    assert stratified_by_hand(f, y, system)[0] is not None
    return figures, lam


def allocation_of(cli, sim, *extra):
    code, out, err = cli(
        "sample-size", "--db", sim.path, "--task", "story", "--half-width", "0.2", "--judge", "close",
        "--format", "json", *extra,
    )  # fmt: skip
    assert code == 0, err
    plans = json.loads(out)["plans"]
    return next(p for p in plans if p["method"] == "stratified PPI++ (by system)"), plans


def test_the_allocation_is_neyman_from_the_pilots_strata_when_no_bound_binds(cli, pilot):
    figures, lam = by_hand(pilot)
    found, plans = allocation_of(cli, pilot, "--new-items", "40")
    shown = found["allocation"]
    assert shown["new"] == 40 and shown["lam"] == pytest.approx(lam)
    total = sum(n for _, n, _ in figures.values()) + 40
    weight = {s: big * sd for s, (big, _, sd) in figures.items()}
    for stratum in shown["strata"]:
        big, n, sd = figures[stratum["name"]]
        assert (stratum["items"], stratum["rated"]) == (big, n)
        assert stratum["sd"] == pytest.approx(sd, rel=1e-9)
        neyman_total = total * weight[stratum["name"]] / sum(weight.values())  # Cochran (5.26)
        assert abs(stratum["rated"] + stratum["new"] - neyman_total) < 1
    assert sum(s["new"] for s in shown["strata"]) == 40
    # the expected half-width: z·√(judge's term + Σ W_h² S_h² / n_h), the uniform draw's at the expected totals
    # is never narrower than Neyman's (Neyman minimises the people's term)
    assert shown["half_width"] <= shown["half_width_uniform"] + 1e-12
    # only the stratified methods allocate
    assert all("allocation" not in p for p in plans if not p["method"].startswith("stratified"))


def test_without_new_items_it_allocates_what_the_method_needs_beyond_the_pilot(cli, pilot):
    found, _ = allocation_of(cli, pilot, "--attribute", "likability")
    # ±0.2 needs fewer than the pilot's 72 here: nothing to allocate
    assert found["n"] is not None and found["n"] <= found["rated"] and "allocation" not in found
    code, out, err = cli(
        "sample-size", "--db", pilot.path, "--task", "story", "--half-width", "0.15", "--judge", "close",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    plan = next(p for p in json.loads(out)["plans"] if p["method"] == "stratified PPI++ (by system)")
    assert plan["allocation"]["new"] == plan["n"] - plan["rated"] > 0


def test_the_table_shows_each_stratum_and_too_many_new_items_is_one_sentence(cli, pilot):
    code, out, err = cli(
        "sample-size", "--db", pilot.path, "--task", "story", "--half-width", "0.2", "--new-items", "40"
    )
    assert code == 0, err
    assert "Neyman allocation of 40 new human-rated items" in out
    assert "gpt2" in out and "expected half-width with this allocation" in out
    before = Path(pilot.path).read_bytes()
    code, out, err = cli(
        "sample-size", "--db", pilot.path, "--task", "story", "--half-width", "0.2", "--new-items", "1000"
    )
    assert code != 0 and "--new-items 1000" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert Path(pilot.path).read_bytes() == before


def scipy_allocation(items, sd, rated, new):
    """The continuous minimiser of Σ W_h² S_h² / n_h over rated_h ≤ n_h ≤ N_h, Σ n_h = Σ rated + new (SLSQP)."""
    items, sd, rated = (np.asarray(x, dtype=float) for x in (items, sd, rated))
    w = items / items.sum()
    total = rated.sum() + new
    start = np.clip(rated + new * (items - rated) / (items - rated).sum(), rated, items)
    found = optimize.minimize(
        lambda n: float(np.sum(w**2 * sd**2 / n)),
        start,
        method="SLSQP",
        bounds=list(zip(np.maximum(rated, 1e-6), items)),
        constraints=[{"type": "eq", "fun": lambda n: n.sum() - total}],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    assert found.success, found.message
    return found.x - rated


@pytest.mark.parametrize(
    ("items", "sd", "rated", "new"),
    [
        ([100, 100, 100], [1.0, 2.0, 4.0], [10, 10, 10], 60),  # no bound binds
        ([100, 100, 100], [0.2, 1.0, 1.0], [40, 5, 5], 30),  # the first stratum's pilot is above its share
        ([20, 300, 300], [5.0, 1.0, 1.0], [5, 10, 10], 100),  # the first stratum is rated whole
        ([50, 80, 120, 40], [0.5, 1.5, 0.9, 2.5], [6, 9, 12, 5], 77),
    ],
)
def test_bounded_allocation_is_scipys_constrained_minimum_to_the_whole_item(items, sd, rated, new):
    found = neyman.allocate(items, sd, rated, new)
    assert found.sum() == new and np.all(found >= 0) and np.all(np.asarray(rated) + found <= items)
    assert np.max(np.abs(found - scipy_allocation(items, sd, rated, new))) < 1 + 1e-6


def test_a_rectifier_that_does_not_vary_is_allocated_by_size_and_too_many_is_refused():
    assert list(neyman.allocate([100, 300], [0.0, 0.0], [0, 0], 40)) == [10, 30]
    with pytest.raises(ValueError, match="do not fit"):
        neyman.allocate([10, 10], [1.0, 1.0], [5, 5], 11)
    assert math.isinf(neyman.human_variance([neyman.StratumFigures("a", 10, 0, 1.0)], [0]))

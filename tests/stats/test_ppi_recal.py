"""Recalibrated and stratified PPI++ (``stats/ppi_recal.py``): the cross-fitted map against scikit-learn's ``Ridge``,
the point estimates against ``ppi_py``'s, the variances against the closed form of two-phase sampling written here,
and stratified PPI++ against an implementation written here from Fisch et al. (2024)."""

from __future__ import annotations

import json

import numpy as np
import ppi_py
import pytest
from scipy import stats as sp
from sklearn.linear_model import Ridge

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tests.support import run_cli_process
from tui_rater.stats import ppi_recal as pr

Z = float(sp.norm.ppf(0.975))


def simulate(seed: int, items: int = 400, rated: int = 80, shuffled: bool = False):
    """A judge whose probability vector over 5 points carries the item's quality: people's mean is quality + noise;
    the judge's distribution is peaked one point too high on good items (``shuffled``: on a point that is not in
    the people's order at all, so that its expected score says little and its distribution much)."""
    rng = np.random.default_rng(seed)
    quality = rng.integers(1, 6, items).astype(float)
    human = quality + rng.normal(0, 0.6, items)
    centre = np.clip(quality + (quality >= 4), 1, 5) - 1
    if shuffled:
        centre = np.array([2, 0, 4, 1, 3])[quality.astype(int) - 1]
    logits = -1.5 * (np.arange(5)[None, :] - centre[:, None]) ** 2 + rng.normal(0, 0.5, (items, 5))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    score = p @ np.arange(1, 6)
    shown = np.full(items, np.nan)
    subset = rng.choice(items, rated, replace=False)
    shown[subset] = human[subset]
    return p, score, shown


def ppi_plus_plus_by_hand(f: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """(λ̂, estimate, variance) of PPI++ with the rated items inside the N (the two-phase regression estimator):
    λ̂ = Cov_L(y, f) / Var_N(f); Var = [λ² Var(f) + 2λ Cov_L(f, y − λf)] / N + Var_L(y − λf) / n."""
    rated = ~np.isnan(y)
    n, big_n = rated.sum(), f.size
    lam = np.cov(y[rated], f[rated])[0, 1] / np.var(f, ddof=1)
    estimate = ppi_py.ppi_mean_pointestimate(y[rated], f[rated], f, lam=lam)
    g = y[rated] - lam * f[rated]
    fixed = lam**2 * np.var(f, ddof=1) + 2 * lam * np.cov(f[rated], g)[0, 1]
    return lam, float(np.squeeze(estimate)), fixed / big_n + np.var(g, ddof=1) / n


def test_recalibrated_ppi_is_ppi_plus_plus_on_scikit_learns_ridge_cross_fitted_over_rated_items():
    p, _, y = simulate(0)
    rated = np.nonzero(~np.isnan(y))[0]
    unrated = np.nonzero(np.isnan(y))[0]
    f = np.full(y.shape, np.nan)
    f[unrated] = 0.0
    for held in np.array_split(np.random.default_rng(pr.SEED).permutation(rated.size), pr.FOLDS):
        fit = np.delete(rated, held)
        model = Ridge(alpha=pr.RIDGE).fit(p[fit], y[fit])
        f[rated[held]] = model.predict(p[rated[held]])
        f[unrated] += model.predict(p[unrated]) / pr.FOLDS
    _, estimate, variance = ppi_plus_plus_by_hand(f, y)
    found = pr.recalibrated_ppi(p, y)
    assert found.interval.estimate == pytest.approx(estimate, abs=1e-9)
    assert found.interval.std_error == pytest.approx(np.sqrt(variance), rel=1e-9)
    assert found.width == pytest.approx(2 * Z * np.sqrt(variance), rel=1e-9)
    var_y = np.var(y[rated], ddof=1)
    assert found.saved == round(var_y / variance - rated.size)


def test_where_the_judges_points_are_out_of_the_peoples_order_recalibration_narrows_the_interval():
    p, score, y = simulate(1, shuffled=True)
    assert pr.recalibrated_ppi(p, y).width < 0.8 * pr.ppi_plus_plus(score, y).width


def test_ppi_plus_plus_here_is_ppi_pys_estimate_at_the_same_lambda():
    _, score, y = simulate(2)
    lam, estimate, variance = ppi_plus_plus_by_hand(score, y)
    found = pr.ppi_plus_plus(score, y)
    assert lam != pytest.approx(1.0)  # power-tuned, not plain PPI
    assert found.interval.estimate == pytest.approx(estimate, abs=1e-12)
    assert found.interval.std_error == pytest.approx(np.sqrt(variance), rel=1e-12)


def stratified_by_hand(f, y, strata):
    """Fisch et al. (2024), StratPPI: θ̂ = Σ_k w_k θ̂_k(λ) (w_k = N_k / N), each θ̂_k = λ mean_N(f) + mean_n(y − λf),
    with the one λ that minimises Σ_k w_k² Var θ̂_k(λ): d/dλ of Σ_k w_k² {[λ² V_k + 2λ(C_k − λV_k)] / N_k
    + (Var y − 2λC_k + λ²V_k) / n_k} = 0 gives λ = Σ a_k C_k / Σ a_k V_k, a_k = w_k² (1/n_k − 1/N_k). Student t
    with Satterthwaite's degrees of freedom; Neyman allocation n_k ∝ w_k sd_k(y − λf)."""
    parts = []
    for k in sorted(set(strata)):
        mine = strata == k
        rated = mine & ~np.isnan(y)
        parts.append((mine.mean(), f[mine], y[rated], f[rated]))
    a = [w**2 * (1 / len(yr) - 1 / len(fa)) for w, fa, yr, _ in parts]
    cov = [np.cov(yr, fr)[0, 1] for _, _, yr, fr in parts]
    var = [np.var(fa, ddof=1) for _, fa, _, _ in parts]
    lam = np.dot(a, cov) / np.dot(a, var)
    estimate = variance = 0.0
    human_terms, spread = [], {}
    for k, (w, fa, yr, fr) in zip(sorted(set(strata)), parts):
        g = yr - lam * fr
        estimate += w * (lam * fa.mean() + g.mean())
        fixed = (lam**2 * np.var(fa, ddof=1) + 2 * lam * np.cov(fr, g)[0, 1]) / len(fa)
        human_terms.append(w**2 * np.var(g, ddof=1) / len(yr))
        variance += w**2 * fixed + human_terms[-1]
        spread[k] = w * np.std(g, ddof=1)
    df = sum(human_terms) ** 2 / sum(h**2 / (len(p[2]) - 2) for h, p in zip(human_terms, parts))
    total = sum(spread.values())
    return estimate, variance, {k: v / total for k, v in spread.items()}, df


def test_stratified_ppi_is_the_papers_weighted_sum_of_per_stratum_ppi_with_one_tuned_lambda():
    _, score, y = simulate(3)
    strata = np.where(np.arange(score.size) % 3 == 0, "a", np.where(np.arange(score.size) % 3 == 1, "b", "c"))
    estimate, variance, allocation, df = stratified_by_hand(score, y, strata)
    found = pr.stratified_ppi(score, y, strata, "system")
    assert found.interval.estimate == pytest.approx(estimate, abs=1e-12)
    assert found.interval.std_error == pytest.approx(np.sqrt(variance), rel=1e-12)
    half = sp.t.ppf(0.975, df) * np.sqrt(variance)
    assert (found.interval.ci_low, found.interval.ci_high) == pytest.approx((estimate - half, estimate + half))
    # a single stratum is no stratification: refused in words
    one = pr.stratified_ppi(score, y, np.full(score.size, "x"), "nothing")
    assert one.interval.estimate is None and "fewer than two strata" in one.note
    assert found.allocation == pytest.approx(allocation)
    assert found.saved == round(np.nanvar(y, ddof=1) / variance - (~np.isnan(y)).sum())


def test_confidence_strata_are_the_terciles_and_a_thin_stratum_is_refused_in_words():
    confidence = np.linspace(0.2, 1.0, 90)
    strata = pr.confidence_strata(confidence)
    assert [int((strata == s).sum()) for s in ("low", "middle", "high")] == [30, 30, 30]
    _, score, y = simulate(4, items=90, rated=12)
    found = pr.stratified_ppi(score, y, strata, "confidence")
    assert found.interval.estimate is None and "fewer than 5 rated items" in found.interval.note


def test_the_pilot_projection_is_the_equal_width_saving_at_60_ratings():
    _, score, y = simulate(5)
    found = pr.ppi_plus_plus(score, y)
    rated = (~np.isnan(y)).sum()
    lam, _, _ = ppi_plus_plus_by_hand(score, y)
    g = y[~np.isnan(y)] - lam * score[~np.isnan(y)]
    fixed = found.interval.std_error**2 - np.var(g, ddof=1) / rated
    at_60 = fixed + np.var(g, ddof=1) / 60
    assert found.pilot == round(np.nanvar(y, ddof=1) / at_60 - 60)


def test_the_report_puts_every_estimate_beside_classical_and_ppi_plus_plus(tmp_path):
    sim = likert_study(tmp_path / "s.db", humans=3, prompts=40, seed=5, rated_share=0.5)
    from tui_rater.store.study import Study

    study = Study.open(sim.path)
    key = {item.id: item.key for item in study.items("story")}
    reader = study.judge("reader", {"api_model": "r", "mode": "distribution"})
    rng = np.random.default_rng(9)
    stored = {}
    for item in sim.ids:
        centre = sim.judges["likability"]["close"][item] - 1
        logits = -1.0 * (np.arange(5) - centre) ** 2 + rng.normal(0, 0.4, 5)
        p = np.exp(logits) / np.exp(logits).sum()
        stored[item] = p
        details = {"distribution": {str(k + 1): float(p[k]) for k in range(5)}, "mass": 0.9}
        insert(study, key[item], "likability", reader.id, float(np.argmax(p) + 1), details=details)
    study.close()
    out = run_cli_process("report", "--db", sim.path, "--format", "json")
    assert out.returncode == 0, out.stderr
    mine = {
        r["statistic"]: r
        for r in json.loads(out.stdout)["tasks"]["story"]
        if r["table"] == "ppi_distribution" and r["evaluator"] == "reader" and r["attribute"] == "likability"
    }
    for name in ("classical", "ppi_plus_plus", "recalibrated", "stratified_system", "stratified_confidence"):
        assert name in mine and f"{name}_width" in mine and f"{name}_saved" in mine
    # items in key order (the report's), the people's mean where they rated
    ids = sorted(sim.ids, key=lambda i: key[i])
    people = sim.humans["likability"]
    y = np.array([np.mean([people[h][i] for h in people]) if i in people["h0"] else np.nan for i in ids])
    p = np.array([stored[i] for i in ids])
    f = np.array([float(np.argmax(stored[i]) + 1) for i in ids])
    _, estimate, variance = ppi_plus_plus_by_hand(f, y)
    assert mine["ppi_plus_plus"]["value"] == pytest.approx(estimate, abs=1e-9)
    assert mine["ppi_plus_plus"]["ci_high"] - mine["ppi_plus_plus"]["value"] == pytest.approx(Z * np.sqrt(variance))
    systems = np.array([sim.system[i] for i in ids])
    estimate, variance, _, _ = stratified_by_hand(f, y, systems)
    assert mine["stratified_system"]["value"] == pytest.approx(estimate, abs=1e-9)
    assert mine["classical"]["value"] == pytest.approx(np.nanmean(y), abs=1e-9)
    assert mine["recalibrated"]["value"] == pytest.approx(pr.recalibrated_ppi(p, y).interval.estimate, abs=1e-9)
    table = run_cli_process("report", "--db", sim.path, "--format", "table")
    assert "recalibrated PPI++" in table.stdout and "stratified PPI++ (by system)" in table.stdout

"""``tui-rater sample-size`` (``stats/ppi_plan.py``): the human-rated items each estimate of the mean needs for a
target half-width, from a pilot, checked through the CLI against ``ppi_py.ppi_power`` (Broska, Howes & van Loon's
sample size for PPI from the PPI correlation) and against the two-phase variance written here."""

from __future__ import annotations

import json
import math

import numpy as np
import ppi_py
import pytest
from scipy import stats as sp

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tests.support import digest, run_cli_process
from tui_rater.store.study import Study

Z = float(sp.norm.ppf(0.975))
H = 0.2


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """300 items, a judge ('close') on every one, three people on about 20 % of them."""
    path = tmp_path_factory.mktemp("plan") / "s.db"
    return likert_study(path, humans=3, prompts=150, seed=11, rated_share=0.2, attributes=("likability",))


def people_and_judge(sim, judge: str = "close") -> tuple[np.ndarray, np.ndarray]:
    """Every item's people's mean (NaN where unrated) and the judge's rating, in one order."""
    people = sim.humans["likability"]
    y = np.array([np.mean([people[h][i] for h in people]) if i in people["h0"] else np.nan for i in sim.ids])
    f = np.array([sim.judges["likability"][judge][i] for i in sim.ids])
    return y, f


def planned(cli, sim, *extra: str) -> dict[str, dict]:
    code, out, err = cli(
        "sample-size", "--db", sim.path, "--task", "story", "--half-width", H, "--format", "json", *extra
    )
    assert code == 0, err
    return {(p["judge"], p["method"]): p for p in json.loads(out)["plans"]}


def chi2_range(variance: float, df: float) -> tuple[float, float]:
    return variance * df / sp.chi2.ppf(0.975, df), variance * df / sp.chi2.ppf(0.025, df)


def test_humans_only_needs_z2_var_over_h2_items_with_the_pilots_chi_square_range(cli, pilot):
    y, _ = people_and_judge(pilot)
    rated = y[~np.isnan(y)]
    found = planned(cli, pilot, "--judge", "close")[("close", "humans only")]
    var = np.var(rated, ddof=1)
    assert found["rated"] == rated.size and found["items"] == len(pilot.ids)
    assert found["n"] == math.ceil(Z**2 * var / H**2)
    low, high = chi2_range(var, rated.size - 1)
    assert (found["low"], found["high"]) == (math.ceil(Z**2 * low / H**2), math.ceil(Z**2 * high / H**2))


def test_ppi_plus_plus_needs_what_ppi_py_power_analysis_says_and_the_two_phase_formula_exactly(cli, pilot):
    y, f = people_and_judge(pilot)
    found = planned(cli, pilot, "--judge", "close")
    ppi, humans = found[("close", "PPI++")], found[("close", "humans only")]
    mask = ~np.isnan(y)
    n_pilot, big_n = int(mask.sum()), f.size
    # the two-phase variance with the rated items inside the N (PPI++, Angelopoulos, Duchi & Zrnic 2023):
    # [λ²Var(f) + 2λCov_L(f, g)] / N + Var_L(g) / n, g = y − λf, λ = Cov_L(y, f) / Var_N(f)
    lam = np.cov(y[mask], f[mask])[0, 1] / np.var(f, ddof=1)
    g = y[mask] - lam * f[mask]
    fixed = max(lam**2 * np.var(f, ddof=1) + 2 * lam * np.cov(f[mask], g)[0, 1], 0) / big_n
    spread = np.var(g, ddof=1)
    assert ppi["n"] == math.ceil(spread / (H**2 / Z**2 - fixed))
    _, high = chi2_range(spread, n_pilot - 2)
    assert ppi["high"] == math.ceil(high / (H**2 / Z**2 - fixed))
    assert ppi["fewer"] == humans["n"] - ppi["n"] > 0
    # ppi_py: the cheapest (n, N) whose effective sample size is the humans-only n, with N capped at our items
    # and a judge's rating almost free. Its correlation comes from the rated items alone (ours: Var(f) over all
    # N), so the two agree to the sampling error between those, a few per cent
    n0 = Z**2 * np.var(y[mask], ddof=1) / H**2
    theirs = ppi_py.ppi_mean_power(y[mask], f[mask], cost_Y=1.0, cost_Yhat=1e-9, effective_n=n0, n_max=big_n)
    assert ppi["n"] == pytest.approx(theirs["n"], rel=0.08)


def test_a_judge_without_signal_saves_nothing_and_the_strong_one_saves_most(cli, pilot):
    found = planned(cli, pilot)
    assert abs(found[("random", "PPI++")]["fewer"]) <= 0.05 * found[("random", "humans only")]["n"] + 1
    assert found[("copycat", "PPI++")]["fewer"] > found[("close", "PPI++")]["fewer"] > 0
    methods = {m for _, m in found}
    assert {"recalibrated PPI++", "stratified PPI++ (by system)"} <= methods


def test_a_target_no_ratings_reach_is_said_in_words_and_figures_past_the_items_are_not_given(cli, pilot):
    found = planned(cli, pilot, "--judge", "close", "--half-width", "0.01")
    humans, ppi = found[("close", "humans only")], found[("close", "PPI++")]
    assert humans["n"] is None and humans["beyond"] == len(pilot.ids)
    assert f"beyond the {len(pilot.ids)} items" in humans["note"]
    assert ppi["n"] is None and ppi["fewer"] is None


def test_the_table_shows_names_from_data_literally_and_states_the_assumptions(cli, tmp_path):
    sim = likert_study(tmp_path / "s.db", humans=2, prompts=40, seed=3, rated_share=0.5, attributes=("likability",))
    study = Study.open(sim.path)
    key = {item.id: item.key for item in study.items("story")}
    odd = study.judge("[bold]odd[/bold] \x1b[31m", {"api_model": "r", "mode": "text"})
    for item in sim.ids:
        insert(study, key[item], "likability", odd.id, sim.judges["likability"]["close"][item])
    study.close()
    code, out, err = cli("sample-size", "--db", sim.path, "--task", "story", "--half-width", "0.3")
    assert code == 0, err
    judge_column = "".join(line.split("│")[2].strip() for line in out.splitlines() if line.count("│") > 3)
    assert "[bold]odd[/bold]" in judge_column
    assert "\x1b[31m" not in out
    assert "uniform random sample" in out.replace("\n", " ")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--task", "story", "--half-width", "0"), "out of range"),
        (("--task", "story", "--half-width", "nan"), "not a finite number"),
        (("--task", "story", "--half-width", "-1"), "out of range"),
        (("--task", "story", "--half-width", "0.2", "--confidence", "1"), "out of range"),
        (("--task", "story"), "--half-width"),
        (("--task", "nope", "--half-width", "0.2"), "nope"),
        (("--task", "story", "--half-width", "0.2", "--attribute", "[x]"), "no question '[x]'"),
        (("--task", "story", "--half-width", "0.2", "--judge", "[gone]"), "no judge '[gone]'"),
    ],
)
def test_bad_input_is_one_sentence_a_non_zero_exit_and_the_study_untouched(cli, pilot, flags, said):
    before = digest(pilot.path)
    try:
        code, out, err = cli("sample-size", "--db", pilot.path, *flags)
    except SystemExit:  # a bad flag: argparse exits (status 2) after the one sentence
        out, err = run_cli_process("sample-size", "--db", pilot.path, *flags), ""
        code, out, err = out.returncode, out.stdout, out.stderr
    assert code != 0 and out == ""
    assert said in err and err.strip().count("\n") == 0
    assert digest(pilot.path) == before


def test_without_a_pilot_it_says_to_rate_one_first(cli, tmp_path):
    sim = likert_study(tmp_path / "s.db", humans=1, prompts=10, seed=1, rated_share=0.0)
    code, _, err = cli("sample-size", "--db", sim.path, "--task", "story", "--half-width", "0.2")
    assert code != 0 and "no person has rated" in err and err.strip().count("\n") == 0


def test_the_reports_pilot_column_promises_no_saving_from_a_judge_without_signal(cli, tmp_path):
    # the 'random' judge's cross-fitted map: out-of-fold predictions anti-correlated with the people (as a
    # null predictor's are), so its estimated judge's term came out negative and the projection to 60 ratings
    # read "+62 ratings saved" while the estimate was wider than humans only; the term is ≥ 0 at PPI++'s λ
    sim = likert_study(tmp_path / "s.db", humans=3, prompts=60, seed=5, rated_share=0.3)
    code, out, err = cli("report", "--db", sim.path, "--task", "story", "--format", "json")
    assert code == 0, err
    mine = {
        r["statistic"]: r["value"]
        for r in json.loads(out)["tasks"]["story"]
        if r["table"] == "ppi_distribution" and r["evaluator"] == "random" and r["attribute"] == "likability"
    }
    assert mine["recalibrated_saved"] < 0
    assert mine["recalibrated_pilot"] <= 0


def test_on_the_demo_study_where_people_rated_every_item_it_says_this_is_no_pilot(cli, tmp_path):
    db = tmp_path / "demo.db"
    assert cli("demo", "--no-app", "--db", db)[0] == 0
    code, out, err = cli(
        "sample-size",
        "--db",
        db,
        "--task",
        "hanna",
        "--half-width",
        "0.3",
        "--attribute",
        "coherence",
        "--format",
        "json",
    )
    assert code == 0, err
    plans = json.loads(out)["plans"]
    assert plans and all("this is the study, not a pilot" in p["note"] for p in plans)

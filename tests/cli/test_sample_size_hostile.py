"""``tui-rater sample-size`` attacked with odd pilots and odd values: what it prints must be true (checked here against
the chi-square interval and the normal quantile written out with scipy), and bad values are one sentence, through the
CLI and the Python API alike."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sp

from tests.stats.ratings import insert
from tests.support import digest
from tui_rater.domain.errors import UserError
from tui_rater.service.sample_size import SampleSizeOptions, sample_size
from tui_rater.store.study import Study


def pilot_study(path: Path, judge: list[float], people: dict[int, list[float]]) -> Path:
    """Story items i0, i1, … of systems s0 / s1 alternating; the judge 'j' on every item; person h<k> gives the
    k-th value of ``people[item]`` on the items listed there (question 'likability')."""
    study = Study.open(path)
    rows = [{"id": f"i{k}", "system": f"s{k % 2}", "prompt": f"P{k}", "story": f"S{k}"} for k in range(len(judge))]
    study.add_items(study.task("story"), rows)
    key = {item.id: item.key for item in study.items("story")}
    for k, values in people.items():
        for h, value in enumerate(values):
            study.add_rating(key[f"i{k}"], "likability", study.human(f"h{h}").id, value)
    rater = study.judge("j", {"api_model": "j", "mode": "text"})
    for k, value in enumerate(judge):
        insert(study, key[f"i{k}"], "likability", rater.id, value)
    study.close()
    return path


def plans(cli, db: Path, *flags: str) -> dict[str, dict]:
    code, out, err = cli("sample-size", "--db", db, "--task", "story", "--format", "json", *flags)
    assert code == 0, err
    return {p["method"]: p for p in json.loads(out)["plans"]}


def judge_values(seed: int = 0, items: int = 200) -> list[float]:
    return [float(v) for v in np.random.default_rng(seed).integers(1, 6, items)]


def test_a_pilot_whose_people_all_gave_one_rating_has_no_variance_to_plan_from(cli, tmp_path):
    # the stratified estimate's Satterthwaite degrees of freedom were ∞ there, and the chi-square quantile at ∞
    # NaN: the command crashed (exit 70); the humans-only mean and PPI++ said "1 item [1, 1]" for any half-width
    db = pilot_study(tmp_path / "s.db", judge_values(), {k: [3.0, 3.0] for k in range(30)})
    before = digest(db)
    for half_width in ("0.3", "0.001"):
        found = plans(cli, db, "--half-width", half_width)
        assert set(found) >= {"humans only", "PPI++", "stratified PPI++ (by system)"}
        for plan in found.values():
            assert (plan["n"], plan["low"], plan["high"], plan["fewer"]) == (None, None, None, None)
            assert "no variance to plan from" in plan["note"]
    code, out, err = cli("sample-size", "--db", db, "--task", "story", "--half-width", "0.3")
    assert code == 0, err
    assert "n/a" in out and "1 [1, 1]" not in out
    assert digest(db) == before


def test_people_alike_within_each_system_but_not_across_leave_only_the_stratified_plan_without_a_figure(cli, tmp_path):
    # system s0's items all rated 2, s1's all 4: the humans-only mean has a variance, stratified by system has none
    db = pilot_study(tmp_path / "s.db", judge_values(1), {k: [2.0 if k % 2 == 0 else 4.0] for k in range(40)})
    found = plans(cli, db, "--half-width", "0.3")
    y = np.array([2.0 if k % 2 == 0 else 4.0 for k in range(40)])
    z = float(sp.norm.ppf(0.975))
    assert found["humans only"]["n"] == math.ceil(z**2 * np.var(y, ddof=1) / 0.3**2)
    stratified = found["stratified PPI++ (by system)"]
    assert stratified["n"] is None and "no variance to plan from" in stratified["note"]


@pytest.mark.parametrize(("confidence", "shown"), [("0.975", "97.5%"), ("0.999", "99.9%"), ("0.95", "95%")])
def test_the_tables_title_states_the_confidence_asked_for_not_a_rounded_one(cli, tmp_path, confidence, shown):
    # "{:.0%}" printed 0.975 as "98%" and 0.999 as "100%": a 100 % interval is no interval at all
    rng = np.random.default_rng(2)
    judge = judge_values(2)
    db = pilot_study(
        tmp_path / "s.db", judge, {k: [float(np.clip(judge[k] + rng.integers(-1, 2), 1, 5))] for k in range(40)}
    )
    code, out, err = cli(
        "sample-size", "--db", db, "--task", "story", "--half-width", "0.3", "--confidence", confidence
    )
    assert code == 0, err
    title = out.splitlines()[0]
    assert f"a {shown} interval" in title
    # and the figures are the ones of that confidence: the humans-only n at z(0.5 + c/2)
    found = plans(cli, db, "--half-width", "0.6", "--confidence", confidence)["humans only"]
    study = Study.open(db)
    rated = np.array([r["value"] for r in study.current_ratings("story") if r["kind"] == "human"])  # one an item
    study.close()
    z = float(sp.norm.ppf(0.5 + float(confidence) / 2))
    assert found["n"] == math.ceil(z**2 * np.var(rated, ddof=1) / 0.6**2)


@pytest.mark.parametrize(
    ("half_width", "confidence", "said"),
    [
        (math.nan, 0.95, "half-width"),
        (-0.3, 0.95, "half-width"),
        (0.0, 0.95, "half-width"),
        (math.inf, 0.95, "half-width"),
        (0.3, 0.0, "confidence"),
        (0.3, 1.0, "confidence"),
        (0.3, 95.0, "confidence"),
        (0.3, math.nan, "confidence"),
    ],
)
def test_the_python_api_refuses_a_bad_half_width_or_confidence_in_one_sentence(tmp_path, half_width, confidence, said):
    # a NaN half-width crashed math.ceil, a negative one was planned for as if positive, a confidence of 0 divided by 0
    db = pilot_study(tmp_path / "s.db", judge_values(3), {k: [float(1 + k % 5)] for k in range(30)})
    before = digest(db)
    study = Study.open(db)
    try:
        with pytest.raises(UserError, match=said):
            sample_size(study, SampleSizeOptions("story", half_width, confidence))
    finally:
        study.close()
    assert digest(db) == before


def test_a_two_item_pilot_gives_the_humans_only_mean_its_wide_range_and_ppi_no_figure_without_a_degree_of_freedom(
    cli, tmp_path
):
    # PPI++'s variance on 2 rated items has n − 2 = 0 degrees of freedom (the mean and λ): it printed "14 [n/a, n/a]"
    # and "+8" fewer than humans only, a plan with nothing behind it
    db = pilot_study(tmp_path / "s.db", judge_values(0), {0: [3.0], 1: [4.0]})
    found = plans(cli, db, "--half-width", "0.3")
    z, var = float(sp.norm.ppf(0.975)), float(np.var([3.0, 4.0], ddof=1))
    humans = found["humans only"]
    assert humans["n"] == math.ceil(z**2 * var / 0.3**2)
    assert humans["low"] == math.ceil(z**2 * var * 1 / sp.chi2.ppf(0.975, 1) / 0.3**2)
    assert humans["high"] is None and humans["beyond"] == 200  # var / χ²₁(0.025) ≈ 1018·var: past the 200 items
    ppi = found["PPI++"]
    assert (ppi["n"], ppi["low"], ppi["high"], ppi["fewer"]) == (None, None, None, None)
    assert "no degree of freedom" in ppi["note"]


def test_the_json_keeps_a_judges_bidi_and_control_characters_as_escapes_not_raw(cli, tmp_path):
    # ensure_ascii=False wrote U+202E (right-to-left override) and U+009B (a C1 CSI) raw to the terminal; every
    # other command's JSON writes them as \u escapes (preflight, judges, info)
    name = "evil\u202egpj.exe\x9b2J[red]x[/red]"
    rng = np.random.default_rng(4)
    judge = judge_values(4)
    db = pilot_study(
        tmp_path / "s.db", judge, {k: [float(np.clip(judge[k] + rng.integers(-1, 2), 1, 5))] for k in range(40)}
    )
    study = Study.open(db)
    odd = study.judge(name, {"api_model": "odd", "mode": "text"})
    for item in study.items("story"):
        insert(study, item.key, "likability", odd.id, 3.0)
    study.close()
    code, out, err = cli("sample-size", "--db", db, "--task", "story", "--half-width", "0.3", "--format", "json")
    assert code == 0, err
    assert "\u202e" not in out and "\x9b" not in out
    assert name in {plan["judge"] for plan in json.loads(out)["plans"]}

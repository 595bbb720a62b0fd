"""The report's ``ppi`` and ``convergence`` sections from a real study file: a judge on every item, humans on a
random half; every record checked against a direct call of ``stats/ppi.py``, ``stats/active.py`` and
``stats/convergence.py`` on the simulated ratings (kept apart from the study, by item id)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from tests.stats.simulated import SYSTEMS, likert_study
from tests.support import run_cli_process
from tui_rater.stats import active, convergence, ppi
from tui_rater.stats.report import Report, build_report
from tui_rater.stats.sections.converging import verdict_sizes
from tui_rater.stats.sections.settings import ReportSettings, VerdictSettings


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """Two humans rate a random half of 80 items; the judges rate them all."""
    return likert_study(tmp_path_factory.mktemp("ppi") / "ppi.db", humans=2, prompts=40, rated_share=0.5, seed=5)


@pytest.fixture(scope="module")
def records(sample):
    out = run_cli_process("report", "--db", sample.path, "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["tasks"]["story"]


def find(records, table, attribute, system, judge, statistic, other=None, n=None):
    found = [
        r
        for r in records
        if (r["table"], r["attribute"], r["system"], r["evaluator"], r["evaluator_b"], r["statistic"])
        == (table, attribute, system, judge, other, statistic)
        and (n is None or r["n"] == n)
    ]
    assert len(found) == 1, (table, attribute, system, judge, statistic, n, len(found))
    return found[0]


def arrays(sample, attribute, judge, system):
    """The judge's rating of each of the system's items and the humans' mean (NaN where unrated), in
    import order -- computed here from the simulation, not read from the study."""
    items = [i for i in sample.ids if sample.system[i] == system]
    humans = sample.humans[attribute]
    f = np.array([sample.judges[attribute][judge][i] for i in items])
    y = np.array([np.mean([h[i] for h in humans.values()]) if i in sample.order else math.nan for i in items])
    return items, f, y


@pytest.mark.parametrize("judge", ["close", "random"])
def test_each_system_mean_equals_ppi_mean(sample, records, judge):
    attribute = "likability"
    for system in SYSTEMS:
        _, f, y = arrays(sample, attribute, judge, system)
        expected = ppi.ppi_mean(f, y)

        def get(statistic, system=system):
            return find(records, "ppi", attribute, system, judge, statistic)

        assert get("ppi_mean")["value"] == pytest.approx(expected.estimate.estimate)
        assert get("ppi_ci_low")["value"] == pytest.approx(expected.estimate.ci_low)
        assert get("ppi_ci_high")["value"] == pytest.approx(expected.estimate.ci_high)
        assert get("ppi_std_error")["value"] == pytest.approx(expected.estimate.std_error)
        assert get("ppi_mean")["n"] == expected.rated == int(np.sum(~np.isnan(y)))
        assert get("classical_mean")["value"] == pytest.approx(np.nanmean(y))
        assert get("classical_ci_low")["value"] == pytest.approx(expected.classical.ci_low)
        assert get("judge_mean")["value"] == pytest.approx(f.mean()) and get("judge_mean")["n"] == 40
        assert get("rectifier")["value"] == pytest.approx(np.nanmean(y - f))
        halving = get("extra_ratings_to_halve")
        assert halving["value"] == expected.halving.extra_ratings and halving["note"] == expected.halving.note
        # the human sample's draw is not recorded: the record says what it assumes
        assert "assumes the human-rated items are a uniform random sample" in get("ppi_mean")["note"]


def test_differences_equal_system_scores_paired_by_prompt(sample, records):
    attribute = "likability"
    judge = "close"
    judge_by_item = {i: sample.judges[attribute][judge][i] for i in sample.ids}
    humans = sample.humans[attribute]
    human_by_item = {i: float(np.mean([h[i] for h in humans.values()])) for i in sample.order}
    expected = ppi.system_scores(judge_by_item, human_by_item, sample.system, sample.prompt)
    (difference,) = expected.differences
    assert difference.paired and (difference.system_a, difference.system_b) == SYSTEMS

    def get(statistic):
        return find(records, "ppi_diff", attribute, "gpt2", judge, statistic, other="human")

    assert get("difference")["value"] == pytest.approx(difference.estimate.estimate)
    assert get("difference_ci_low")["value"] == pytest.approx(difference.estimate.ci_low)
    assert get("difference_ci_high")["value"] == pytest.approx(difference.estimate.ci_high)
    assert get("classical_difference")["value"] == pytest.approx(difference.classical.estimate)
    assert get("classical_ci_high")["value"] == pytest.approx(difference.classical.ci_high)
    assert get("extra_ratings_to_halve")["value"] == difference.halving.extra_ratings
    assert "paired by prompt" in get("difference")["note"]
    for system, mean in expected.means.items():  # the same means through the other entry point
        assert find(records, "ppi", attribute, system, judge, "ppi_mean")["value"] == pytest.approx(
            mean.estimate.estimate
        )


def test_weighted_by_the_recorded_inclusion_probabilities(sample):
    """With π recorded (active sampling), each human rating is weighted by 1/π: ``active.active_mean``."""
    attribute = "likability"
    study = sample.open()
    key = {item.id: item.key for item in study.items("story")}
    pi = {i: 0.3 + 0.4 * (n % 3) / 2 for n, i in enumerate(sample.ids)}  # 0.3, 0.5, 0.7
    settings = VerdictSettings(inclusion={attribute: {key[i]: p for i, p in pi.items()}})
    records = Report(study, study.task("story"), ReportSettings(verdict=settings)).build()
    study.close()
    by = {(r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic): r for r in records}
    estimates = {}
    for system in SYSTEMS:
        items, f, y = arrays(sample, attribute, "close", system)
        estimate, horvitz_thompson = active.active_mean(f, y, np.array([pi[i] for i in items]))
        estimates[system] = estimate
        got = by[("ppi", attribute, system, "close", None, "ppi_mean")]
        assert got.value == pytest.approx(estimate.estimate) and "weighted by 1/π" in got.note
        assert by[("ppi", attribute, system, "close", None, "ppi_ci_low")].value == pytest.approx(estimate.ci_low)
        assert by[("ppi", attribute, system, "close", None, "classical_mean")].value == pytest.approx(
            horvitz_thompson.estimate
        )
        assert by[("ppi", attribute, system, "close", None, "extra_ratings_to_halve")].value is None
    a, b = estimates["gpt2"], estimates["human"]
    difference = by[("ppi_diff", attribute, "gpt2", "close", "human", "difference")]
    assert difference.value == pytest.approx(a.estimate - b.estimate)
    half = 1.959963984540054 * math.sqrt(a.std_error**2 + b.std_error**2)
    assert by[("ppi_diff", attribute, "gpt2", "close", "human", "difference_ci_high")].value == pytest.approx(
        a.estimate - b.estimate + half
    )
    assert "independent samples" in difference.note
    # the other question was not drawn with recorded π: still the uniform assumption
    other = by[("ppi", "grammaticality", "gpt2", "close", None, "ppi_mean")]
    assert "uniform random sample" in other.note
    # convergence with weights would need each prefix's π: said, not guessed
    curve = [r for r in records if r.table == "ppi_convergence" and r.attribute == attribute]
    assert curve and all(r.value is None and "weighted" in r.note for r in curve)


def test_no_system_means_for_a_judge_that_rated_none_of_a_system(tmp_path):
    sim = likert_study(tmp_path / "part.db", humans=1, prompts=12, attributes=("likability",))
    study = sim.open()
    # a judge that rated only the human-written items
    rater = study.judge("half", {"api_model": "half", "mode": "text"})
    for item in study.items("story"):
        if item.system == "human":
            study.add_rating(item.key, "likability", rater.id, 3.0)
    records = [r for r in build_report(study, "story") if r.evaluator == "half"]
    study.close()
    gpt2 = [r for r in records if r.table == "ppi" and r.system == "gpt2"]
    assert [(r.statistic, r.value, r.note) for r in gpt2] == [
        ("ppi_mean", None, "the judge rated none of this system's items")
    ]
    assert not [r for r in records if r.table == "ppi_diff"]
    assert next(r for r in records if r.table == "ppi" and r.system == "human" and r.statistic == "ppi_mean").value


def test_the_verdict_converges_as_the_direct_curve(tmp_path):
    sim = likert_study(tmp_path / "curve.db", prompts=30, attributes=("likability",), seed=2)
    study = sim.open()
    records = build_report(study, "story")
    study.close()
    humans = sim.humans["likability"]
    for judge in ("copycat", "random"):
        expected = convergence.alt_test_convergence(
            humans, sim.judges["likability"][judge], sim.order, verdict_sizes(len(sim.order)), level="ordinal"
        )
        got = {
            (r.n, r.statistic): r.value
            for r in records
            if r.table == "verdict_convergence" and r.evaluator == judge and r.attribute == "likability"
        }
        assert sorted({n for n, _ in got}) == [p.rated for p in expected] and expected[-1].rated == 60
        assert expected[0].rated == 30  # no human is tested on fewer items
        for point in expected:
            assert got[(point.rated, "winning_rate")] == point.winning_rate
            assert got[(point.rated, "advantage_probability")] == pytest.approx(point.advantage_probability)
            assert got[(point.rated, "verdict")] == float(point.passed)
    assert got[(60, "verdict")] == 0  # the random judge, on every item


def test_the_system_means_converge_as_the_direct_curve(sample, records):
    attribute, judge = "grammaticality", "close"
    humans = sample.humans[attribute]
    for system in SYSTEMS:
        items = [i for i in sample.ids if sample.system[i] == system]
        judge_by_item = {i: sample.judges[attribute][judge][i] for i in items}
        human_by_item = {i: float(np.mean([h[i] for h in humans.values()])) for i in items if i in sample.order}
        order = [i for i in sample.order if i in human_by_item]
        expected = convergence.ppi_convergence(judge_by_item, human_by_item, order)
        assert expected[-1].rated == len(order)
        for point in expected:
            for statistic, value in (
                ("ppi_mean", point.estimate.estimate),
                ("ppi_ci_low", point.estimate.ci_low),
                ("classical_ci_high", point.classical.ci_high),
            ):
                got = find(records, "ppi_convergence", attribute, system, judge, statistic, n=point.rated)
                assert got["value"] == pytest.approx(value)


def test_a_csv_row_per_number(sample):
    out = run_cli_process("report", "--db", sample.path, "--format", "csv")
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("ppi,story,likability,gpt2,close,,ppi_mean,")]
    assert len(rows) == 1

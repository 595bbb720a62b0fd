"""The report's ``verdict`` section (the alternative annotator test, Calderon et al. 2025) from a real study
file through the real CLI, each record checked against a direct call of ``stats/alternative_annotator.py`` on the same
simulated ratings (kept apart from the study, by item id): a judge that copies one human wins, a random
judge loses; ε as the user chose it; no verdict, with the reason, when the data cannot give one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.stats.ratings import insert, vote
from tests.stats.simulated import likert_study
from tests.support import run_cli_process
from tui_rater.cli.reporting import RATER_KINDS
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats.report import build_report
from tui_rater.stats.sections.readings import NOT_READY
from tui_rater.stats.sections.settings import EPSILON_FOR_RATERS, VerdictSettings
from tui_rater.store.study import Study


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    return likert_study(tmp_path_factory.mktemp("verdict") / "sim.db")


def report_json(path, *flags: str) -> list[dict]:
    out = run_cli_process("report", "--db", path, "--format", "json", *flags)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["tasks"]["story"]


def index(records: list[dict], table: str) -> dict[tuple, dict]:
    return {
        (r["attribute"], r["evaluator"], r["evaluator_b"], r["statistic"]): r for r in records if r["table"] == table
    }


@pytest.fixture(scope="module")
def default_report(simulated):
    return report_json(simulated.path)


def test_the_copycat_wins_and_the_random_judge_loses(simulated, default_report):
    verdict = index(default_report, "verdict")
    for attribute in simulated.attributes:
        assert verdict[(attribute, "copycat", None, "verdict")]["value"] == 1
        assert verdict[(attribute, "copycat", None, "winning_rate")]["value"] == 1
        assert "may replace the humans" in verdict[(attribute, "copycat", None, "verdict")]["note"]
        assert verdict[(attribute, "random", None, "verdict")]["value"] == 0
        assert verdict[(attribute, "random", None, "winning_rate")]["value"] == 0
        assert verdict[(attribute, "random", None, "rank")]["value"] == 3  # the worst ρ of three


def test_every_verdict_record_equals_the_direct_alt_test(simulated, default_report):
    verdict = index(default_report, "verdict")
    for attribute in simulated.attributes:
        humans, judges = simulated.humans[attribute], simulated.judges[attribute]
        ranked = at.rank_judges(humans, judges, level="ordinal", epsilon=0.2, alpha=0.05)
        assert [r.judge for r in ranked][-1] == "random"
        for rank, result in enumerate(ranked, 1):

            def got(statistic, human=None, judge=result.judge, attribute=attribute):
                return verdict[(attribute, judge, human, statistic)]

            assert got("winning_rate")["value"] == pytest.approx(result.winning_rate)
            assert got("winning_rate")["n"] == result.humans_tested == 4
            assert got("advantage_probability")["value"] == pytest.approx(result.advantage_probability)
            assert got("advantage_probability")["n"] == result.items == 40
            assert got("verdict")["value"] == float(result.passed)
            assert got("rank")["value"] == rank
            assert got("epsilon")["value"] == 0.2
            tested = [c for c in result.comparisons if c.tested]
            adjusted = at.by_adjusted([1.0 if c.p is None else c.p for c in tested])
            for c, p_by in zip(tested, adjusted):
                assert got("rho_judge", c.human)["value"] == pytest.approx(c.rho_judge)
                assert got("rho_human", c.human)["value"] == pytest.approx(c.rho_human)
                assert got("t", c.human)["p"] == pytest.approx(c.p)
                assert got("p_adjusted", c.human)["value"] == pytest.approx(p_by)
                assert got("wins", c.human)["value"] == float(c.rejected)
                assert (p_by <= 0.05) == c.rejected  # BY-adjusted p and the step-up procedure agree


def test_the_copycat_beats_each_human_by_an_independent_count(simulated, default_report):
    """ρ^f for the copycat against h1, counted by hand: the items where it is at least as close (RMSE) to the
    remaining humans as h1 is."""
    attribute = simulated.attributes[0]
    humans, judge = simulated.humans[attribute], simulated.judges[attribute]["copycat"]
    wins = []
    for item in simulated.order:
        others = np.array([humans[h][item] for h in ("h0", "h2", "h3")])
        judge_rmse = np.sqrt(np.mean((others - judge[item]) ** 2))
        human_rmse = np.sqrt(np.mean((others - humans["h1"][item]) ** 2))
        wins.append(judge_rmse <= human_rmse + 1e-12)
    got = index(default_report, "verdict")[(attribute, "copycat", "h1", "rho_judge")]
    assert got["value"] == pytest.approx(np.mean(wins))


def test_across_questions_equals_the_direct_call(simulated, default_report):
    across = index(default_report, "verdict_across")
    for judge in ("copycat", "random", "close"):
        settings = {a: (simulated.humans[a], simulated.judges[a][judge]) for a in simulated.attributes}
        levels = dict.fromkeys(simulated.attributes, "ordinal")
        expected = at.alt_test_across(settings, judge_name=judge, levels=levels, epsilon=0.2, alpha=0.05)
        for attribute, result in expected.items():
            assert across[(attribute, judge, None, "winning_rate")]["value"] == pytest.approx(result.winning_rate)
            assert across[(attribute, judge, None, "advantage_probability")]["value"] == pytest.approx(
                result.advantage_probability
            )
            assert across[(attribute, judge, None, "verdict")]["value"] == float(result.passed)
            assert "2 questions together" in across[(attribute, judge, None, "verdict")]["note"]


def test_epsilon_is_the_users_and_the_output_says_which(simulated, default_report):
    note = index(default_report, "verdict")[("likability", "close", None, "epsilon")]["note"]
    assert "ε = 0.2" in note and "expert raters" in note
    crowd = index(report_json(simulated.path, "--raters", "crowd"), "verdict")
    assert crowd[("likability", "close", None, "epsilon")]["value"] == 0.1
    assert "crowd raters" in crowd[("likability", "close", None, "verdict")]["note"]
    records = report_json(simulated.path, "--epsilon", "0.45")
    chosen = index(records, "verdict")
    assert chosen[("likability", "close", None, "epsilon")]["value"] == 0.45
    assert "ε = 0.45 (--epsilon)" in chosen[("likability", "close", None, "verdict")]["note"]
    direct = at.alt_test(
        simulated.humans["likability"], simulated.judges["likability"]["random"], level="ordinal", epsilon=0.45
    )
    assert chosen[("likability", "random", None, "winning_rate")]["value"] == pytest.approx(direct.winning_rate)
    assert tuple(EPSILON_FOR_RATERS) == RATER_KINDS  # the CLI's choices, named without importing stats


@pytest.mark.parametrize("bad", ["1", "-0.1", "nan", "inf"])
def test_a_bad_epsilon_is_one_sentence_and_a_nonzero_exit(cli, simulated, bad):
    code, out, err = cli("report", "--db", simulated.path, f"--epsilon={bad}")
    assert code != 0 and "--epsilon must be at least 0 and below 1" in err and out == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_no_verdict_with_fewer_than_three_humans(tmp_path):
    sim = likert_study(tmp_path / "two.db", humans=2, attributes=("likability",))
    records = index(report_json(sim.path), "verdict")
    for judge in ("copycat", "random"):
        for statistic in ("winning_rate", "verdict", "advantage_probability"):
            record = records[("likability", judge, None, statistic)]
            assert record["value"] is None
            assert "2 human raters rated this question; the alt-test needs at least 3" in record["note"]


def test_no_verdict_with_too_few_items_per_human(tmp_path):
    sim = likert_study(tmp_path / "few.db", prompts=10, attributes=("likability",))  # 20 items < 30
    records = index(report_json(sim.path), "verdict")
    record = records[("likability", "copycat", None, "verdict")]
    assert record["value"] is None and record["note"].startswith("0 humans with enough items")
    assert "needs at least 3 humans who each rated at least 30 of the items" in record["note"]  # the threshold said
    assert "only 20 items (< 30): not tested" in records[("likability", "copycat", "h1", "wins")]["note"]
    assert records[("likability", "copycat", "h1", "wins")]["value"] is None


def test_a_judge_not_agreement_ready_carries_the_note_on_its_verdict(tmp_path):
    sim = likert_study(tmp_path / "mass.db", attributes=("likability",))
    study = sim.open()
    key = {item.id: item.key for item in study.items("story")}
    rater = study.judge("unsure", {"api_model": "unsure", "mode": "distribution"})
    for item in sim.ids:  # copies h0, but with almost no next-token probability on the scale
        value = sim.humans["likability"]["h0"][item]
        insert(study, key[item], "likability", rater.id, value, details={"mass": 0.01, "expected": value})
    records = build_report(study, "story")
    study.close()
    unsure = [r for r in records if r.table == "verdict" and r.evaluator == "unsure"]
    assert unsure and all(NOT_READY in r.note for r in unsure)
    assert next(r for r in unsure if r.statistic == "verdict").value == 1  # the numbers stand, marked
    assert not any(NOT_READY in r.note for r in records if r.table == "verdict" and r.evaluator == "copycat")


def test_nominal_answers_are_scored_by_accuracy_on_the_judges_vote(tmp_path):
    """A pairwise question: the humans' A / B / tie, a judge with three samples per order whose vote copies
    the first human, and the orders combined as the protocol says."""
    rng = np.random.default_rng(3)
    study = Study.open(tmp_path / "pairs.db")
    study.add_items(
        study.task("story-pairwise"),
        [{"id": f"p{i}", "prompt": "P", "story_a": f"A{i}", "story_b": f"B{i}"} for i in range(36)],
    )
    items = study.items("story-pairwise")
    truth = rng.integers(0, 3, len(items))
    humans = {f"h{k}": {} for k in range(3)}
    for name, ratings in humans.items():
        rater = study.human(name)
        for item, t in zip(items, truth):
            ratings[item.id] = float(t if rng.random() < 0.7 else rng.integers(0, 3))
            study.add_rating(item.key, "preference", rater.id, ratings[item.id])
    judge = study.judge("voter", {"api_model": "v", "mode": "text"})
    voted = {}
    for item in items:
        first = humans["h0"][item.id]
        samples = [first, first, float((first + 1) % 3)]  # two of three samples agree: the vote is `first`
        for order in ("original", "swapped"):
            for sample, value in enumerate(samples):
                insert(study, item.key, "preference", judge.id, value, presentation=order, sample=sample)
        voted[item.id] = vote(samples)
    everything = build_report(study, "story-pairwise")
    study.close()
    records = {(r.evaluator_b, r.statistic): r for r in everything if r.table == "verdict"}
    # no mean of A / B / tie codes: the pairwise protocol names no "ppi" section
    assert not [r for r in everything if r.table.startswith("ppi")]
    assert [r for r in everything if r.table == "verdict_convergence"]
    direct = at.alt_test(humans, voted, level="nominal", epsilon=0.2)
    assert direct.scoring == "accuracy"
    assert records[(None, "winning_rate")].value == pytest.approx(direct.winning_rate)
    assert records[(None, "advantage_probability")].value == pytest.approx(direct.advantage_probability)
    assert records[(None, "verdict")].value == 1
    for c in direct.comparisons:
        assert records[(c.human, "rho_judge")].value == pytest.approx(c.rho_judge)


def test_the_verdict_table_and_markdown(simulated):
    out = run_cli_process("report", "--db", simulated.path, "--format", "markdown")
    assert out.returncode == 0, out.stderr
    text = out.stdout.split("Can the judge replace the humans? Alternative annotator test")[1]
    assert "ε = 0.2 (the paper's value for expert raters" in text
    line = next(row for row in text.splitlines() if row.startswith("| likability | copycat |"))
    # ω with its item-bootstrap interval (stats/alt_intervals.py)
    assert "| 1.00 [" in line and "] | yes: may replace |" in line and "h1 " in line and "✓" in line
    random_line = next(row for row in text.splitlines() if row.startswith("| likability | random |"))
    assert "| 0.00 [" in random_line and "] | no |" in random_line and "(#3)" in random_line
    assert "Alternative annotator test across questions" in text


def test_verdict_settings_refuse_what_the_cli_refuses():
    with pytest.raises(ValueError):
        VerdictSettings(epsilon=1.0)
    with pytest.raises(ValueError):
        VerdictSettings(raters="students")
    assert VerdictSettings(raters="skilled").eps == 0.15

"""`tui-rater report`'s convergence curves carry figures valid at every point beside the fixed-n ones (issue 33 item
3): the anytime alt-test's ω and verdict at each n against e-values and e-BH written in the test, the human-only
confidence sequence at each n against the paper's capital process root-found; the text table labels which is
which."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.stats.simulated import likert_study
from tests.stats.test_live_anytime import _anytime_omega, _bounds
from tests.support import run_cli_process


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    sim = likert_study(tmp_path_factory.mktemp("anytime") / "a.db", prompts=30, attributes=("likability",))
    out = run_cli_process("report", "--db", sim.path, "--format", "json", timeout=300)
    assert out.returncode == 0, out.stderr
    text = run_cli_process("report", "--db", sim.path, timeout=300)
    assert text.returncode == 0, text.stderr
    return sim, json.loads(out.stdout)["tasks"]["story"], text.stdout


def _get(records, **where) -> list[dict]:
    return [r for r in records if all(r[k] == v for k, v in where.items())]


def test_the_anytime_verdict_at_each_point_of_the_curve(report):
    sim, records, _ = report
    humans = sim.humans["likability"]
    for judge in ("copycat", "close", "random"):
        points = _get(records, table="verdict_convergence", evaluator=judge, statistic="anytime_winning_rate")
        assert len(points) == len(_get(records, table="verdict_convergence", evaluator=judge, statistic="verdict"))
        for point in points:
            omega = _anytime_omega(humans, sim.judges["likability"][judge], sim.order[: point["n"]], 0.2)
            assert point["value"] == pytest.approx(omega), (judge, point["n"])
            assert point["note"].startswith("anytime-valid")
        verdicts = _get(records, table="verdict_convergence", evaluator=judge, statistic="anytime_verdict")
        assert [v["value"] for v in verdicts] == [float(p["value"] >= 0.5) for p in points]


def test_the_human_only_confidence_sequence_at_each_point_of_the_curve(report):
    sim, records, _ = report
    humans = sim.humans["likability"]
    for system in ("gpt2", "human"):
        order = [i for i in sim.order if sim.system[i] == system]
        means = [float(np.mean([humans[h][i] for h in humans])) for i in order]
        lows = _get(records, table="ppi_convergence", evaluator="close", system=system, statistic="classical_cs_low")
        highs = _get(records, table="ppi_convergence", evaluator="close", system=system, statistic="classical_cs_high")
        assert lows and len(lows) == len(highs)
        for low, high in zip(lows, highs):
            lo, hi = _bounds(means[: low["n"]], 1, 5, 0.05)
            assert low["value"] <= lo + 1e-9 and lo - low["value"] <= 2 * 4 / 1000
            assert high["value"] >= hi - 1e-9 and high["value"] - hi <= 2 * 4 / 1000


def test_the_text_table_says_which_figure_is_which(report):
    _, _, text = report
    assert "fixed-n: read once, at the end; anytime: valid at every point" in " ".join(text.split())
    for label in ("ω fixed-n", "ω anytime", "PPI anytime CS"):
        assert label in text

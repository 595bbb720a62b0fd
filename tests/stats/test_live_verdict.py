"""The live pane's alt-test line per judge: computed with the pane's data in its worker (``stats/live.py``),
drawn by ``render_pane``; equal to a direct ``alt_test`` call, or the reason there is no verdict."""

from __future__ import annotations

import pytest

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tui_rater.stats import alternative_annotator as at
from tui_rater.stats.live import pane_data
from tui_rater.ui.agreement import render_pane

QUEUE = {"done": 0, "queued": 0, "leased": 0, "failed": 0}


def test_one_line_per_judge_with_omega_rho_and_the_verdict(tmp_path):
    sim = likert_study(tmp_path / "pane.db", attributes=("likability",))
    study = sim.open()
    key = {item.id: item.key for item in study.items("story")}
    unsure = study.judge("unsure", {"api_model": "unsure", "mode": "distribution"})
    for item in sim.ids:
        insert(study, key[item], "likability", unsure.id, sim.humans["likability"]["h0"][item], details={"mass": 0.02})
    data = pane_data(study, "story", QUEUE, [])
    study.close()
    focus = [a.attribute for a in data.attributes].index("likability")
    rows = {row.judge: row for row in data.attributes[focus].rows}
    for judge in ("copycat", "random", "close"):
        direct = at.alt_test(sim.humans["likability"], sim.judges["likability"][judge], level="ordinal", epsilon=0.2)
        verdict = rows[judge].verdict
        assert verdict is not None and verdict.epsilon == 0.2
        assert verdict.winning_rate == pytest.approx(direct.winning_rate)
        assert verdict.advantage_probability == pytest.approx(direct.advantage_probability)
        assert verdict.passed == direct.passed and verdict.humans == 4
    shown = str(render_pane(data, focus, 0))
    assert "may the judge replace the humans? (alt-test, ε 0.2)" in shown
    lines = shown.splitlines()
    # the words come from the anytime test; the paper's fixed-n ω and ρ on the line below, labelled
    copycat = next(k for k, line in enumerate(lines) if line.startswith("copycat") and "ω" in line)
    assert "anytime ω 1.00  yes, may replace them" in lines[copycat]
    assert "fixed-n ω 1.00" in lines[copycat + 1] and lines[copycat + 1].rstrip().endswith("yes (4 humans)")
    random = next(k for k, line in enumerate(lines) if line.startswith("random") and "ω" in line)
    assert "anytime ω 0.00  not yet" in lines[random] and "may replace" not in lines[random]
    assert "fixed-n ω 0.00" in lines[random + 1] and lines[random + 1].rstrip().endswith("no (4 humans)")
    flagged = next(k for k, line in enumerate(lines) if line.startswith("unsure") and "ω" in line)
    assert "⚠ not agreement-ready" in lines[flagged + 1]


def test_why_there_is_no_verdict_for_a_solo_rater(tmp_path):
    sim = likert_study(tmp_path / "solo.db", humans=1, prompts=8, attributes=("likability",))
    study = sim.open()
    data = pane_data(study, "story", QUEUE, [])
    study.close()
    focus = [a.attribute for a in data.attributes].index("likability")
    pane = data.attributes[focus]
    assert all(row.verdict is not None and row.verdict.passed is None for row in pane.rows)
    shown = str(render_pane(data, focus, 0))
    # the same reason for every judge: said once
    reason = "no verdict: 1 human rater rated this question; the alt-test needs at least 3 on the same items"
    assert shown.count(reason) == 1
    # a question nobody rated: no judge row, no verdict line
    other = [a.attribute for a in data.attributes].index("grammaticality")
    assert "may the judge replace" not in str(render_pane(data, other, 0))

"""The live pane's data by the question's level: κ / α nominal / verdict shares for a pairwise question,
α / τ / bias for scores; each judge's mass and agreement-readiness, rendered beside it."""

from __future__ import annotations

import krippendorff
import numpy as np
import pytest

from tests.stats.ratings import insert, vote
from tui_rater.stats.live import pane_data
from tui_rater.store.study import Study
from tui_rater.ui.agreement import render_pane

QUEUE = {"done": 0, "queued": 0, "leased": 0, "failed": 0}
HUMAN = [0, 1, 2, 0, 1, 0, 0, 1]
ORIGINAL = [0, 1, 2, 1, 1, 0, 2, 1]
SWAPPED = [0, 1, 2, 0, 0, 0, 2, 1]  # pairs 3 and 4 change with the order: ties


@pytest.fixture
def pairwise(tmp_path):
    study = Study.open(tmp_path / "live.db")
    study.add_items(
        study.task("story-pairwise"),
        [{"id": f"p{i}", "prompt": "P", "story_a": f"A{i}", "story_b": f"B{i}"} for i in range(len(HUMAN))],
    )
    items = study.items("story-pairwise")
    human = study.human("h")
    steady = study.judge("steady", {"api_model": "a", "mode": "text"})
    shaky = study.judge("shaky", {"api_model": "b", "mode": "distribution"})
    for i, item in enumerate(items):
        study.add_rating(item.key, "preference", human.id, HUMAN[i])
        for order, verdicts in (("original", ORIGINAL), ("swapped", SWAPPED)):
            insert(study, item.key, "preference", steady.id, verdicts[i], presentation=order)
            insert(study, item.key, "preference", shaky.id, 0, presentation=order, details={"mass": 0.02})
    return study


def test_nominal_pane_shows_kappa_alpha_and_shares_never_tau_or_bias(pairwise):
    data = pane_data(pairwise, "story-pairwise", QUEUE, [])
    pane = data.attributes[0]
    assert pane.nominal and pane.label_names == ["A", "B", "C"]
    row = next(r for r in pane.rows if r.judge == "steady")
    verdicts = np.array([o if o == s else 2 for o, s in zip(ORIGINAL, SWAPPED)], dtype=float)
    human = np.array(HUMAN, dtype=float)
    p_o = np.mean(human == verdicts)
    p_e = sum(np.mean(human == c) * np.mean(verdicts == c) for c in range(3))
    assert row.kappa.value == pytest.approx((p_o - p_e) / (1 - p_e))
    expected_alpha = krippendorff.alpha(reliability_data=np.vstack([human, verdicts]), level_of_measurement="nominal")
    assert row.alpha.value == pytest.approx(expected_alpha)
    assert row.tau is None and row.bias is None
    assert row.shares == {k: pytest.approx(np.mean(verdicts == c)) for c, k in enumerate("ABC")}
    assert pane.distributions["steady"] == [int(np.sum(verdicts == c)) for c in range(3)]
    assert pane.distributions["humans"] == [HUMAN.count(c) for c in range(3)]
    assert [(g.human_label, g.llm_label) for g in pane.gaps] == [
        ("ABC"[int(h)], "ABC"[int(v)]) for h, v in zip(human, verdicts) if h != v
    ]
    shown = str(render_pane(data, 0, 0))
    assert "κ" in shown and "α nom" in shown and "verdict shares" in shown
    assert " τ " not in shown and "bias" not in shown and "gap " not in shown


def test_each_judge_shows_its_mass_and_readiness(pairwise):
    data = pane_data(pairwise, "story-pairwise", QUEUE, [])
    rows = {row.judge: row for row in data.attributes[0].rows}
    assert rows["steady"].ready and rows["steady"].readings.mass_mean is None
    shaky = rows["shaky"]
    assert not shaky.ready and shaky.readings.mass_mean == pytest.approx(0.02)
    shown = str(render_pane(data, 0, 0))
    line = next(line for line in shown.splitlines() if line.startswith("shaky"))
    assert "0.02" in line and "NO ⚠" in line
    assert "⚠ not agreement-ready: 16 of 16 passes put less than 0.5" in shown


def test_score_pane_keeps_interval_alpha_tau_and_bias(tmp_path):
    study = Study.open(tmp_path / "scores.db")
    study.add_items(study.task("story"), [{"id": f"s{i}", "prompt": "P", "story": f"S{i}"} for i in range(5)])
    human, judge = study.human("h"), study.judge("j", {"m": 1})
    for item, h, votes in zip(study.items("story"), (1, 2, 3, 4, 5), ((1, 2), (2, 2), (4, 5), (3, 4), (5, 5))):
        study.add_rating(item.key, "grammaticality", human.id, h)
        for sample, v in enumerate(votes):
            study.add_rating(item.key, "grammaticality", judge.id, v, sample=sample)
    pane = pane_data(study, "story", QUEUE, []).attributes[0]
    row = pane.rows[0]
    means = np.array([1.5, 2, 4.5, 3.5, 5])
    assert not pane.nominal and row.kappa is None and row.tau.n == 5
    assert row.bias.value == pytest.approx(np.mean(means - np.arange(1, 6)))
    # the judge's per-item means 1.5, 4.5, 3.5 round up (to 2, 5, 4) in the confusion map (rows: the human)
    assert pane.confusion[0, 1] == 1 and pane.confusion[2, 4] == 1 and pane.confusion[3, 3] == 1
    assert vote([1, 1, 2]) == 1  # (the helper the nominal tests use)

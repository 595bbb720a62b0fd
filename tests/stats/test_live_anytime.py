"""The live pane's anytime-valid figures (issue 33 item 3) on a simulated study file, against computations written
here: each person's advantage indicators scored with the paper's -RMSE, the e-process as its product of bets,
e-BH by its definition; the system means' confidence sequences root-found on Waudby-Smith & Ramdas's capital
process (``test_sequential._paper_log_capital``)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
from scipy import optimize

from tests.stats.simulated import likert_study
from tests.stats.test_sequential import _e_bh_by_definition, _over
from tui_rater.stats.live import pane_data
from tui_rater.ui.agreement import render_pane

QUEUE = {"done": 0, "queued": 0, "leased": 0, "failed": 0}


def _log_e(d: list[float], eps: float) -> float:
    log_k, total, square = 0.0, 0.0, 0.0
    for t, di in enumerate(d):
        x = eps - di
        bet = min(max((total / (t + 1)) / ((1 + square) / (t + 1)), 0.0), 0.75 / (1 - eps))
        log_k += math.log(1 + bet * x)
        total, square = total + x, square + x * x
    return log_k


def _anytime_omega(humans: dict[str, dict[str, float]], judge: dict[str, float], order: list[str], eps: float):
    e = []
    for name, mine in humans.items():
        d = []
        for item in order:
            others = [r[item] for other, r in humans.items() if other != name]
            judge_score = -math.sqrt(sum((o - judge[item]) ** 2 for o in others) / len(others))
            human_score = -math.sqrt(sum((o - mine[item]) ** 2 for o in others) / len(others))
            d.append(float(human_score >= judge_score) - float(judge_score >= human_score))
        e.append(math.exp(_log_e(d, eps)))
    return len(_e_bh_by_definition(e, 0.05)) / len(e)


def test_the_panes_verdict_is_the_anytime_test_and_says_so(tmp_path):
    sim = likert_study(tmp_path / "pane.db", attributes=("likability",))
    study = sim.open()
    data = pane_data(study, "story", QUEUE, [])
    study.close()
    focus = [a.attribute for a in data.attributes].index("likability")
    rows = {row.judge: row for row in data.attributes[focus].rows}
    humans = sim.humans["likability"]
    for judge in ("copycat", "random", "close"):
        verdict = rows[judge].verdict
        assert verdict is not None and verdict.anytime is not None
        omega = _anytime_omega(humans, sim.judges["likability"][judge], sim.order, 0.2)
        assert verdict.anytime.winning_rate == omega and verdict.anytime.passed == (omega >= 0.5)
    assert rows["copycat"].verdict.anytime.passed and not rows["random"].verdict.anytime.passed
    shown = str(render_pane(data, focus, 0))
    assert "anytime: valid at every look (e-values); fixed-n: read once, at the end" in shown


def _bounds(values: list[float], low: float, high: float, alpha: float) -> tuple[float, float]:
    """The running-intersection CS after every value, root-found on the paper's capital process, in the scale's
    terms."""
    x = [(v - low) / (high - low) for v in values]
    over = partial(_over, x, alpha)
    mean = sum(x) / len(x)
    lo = optimize.brentq(over, 1e-9, mean, xtol=1e-10) if over(1e-9) > 0 else 0.0
    hi = optimize.brentq(over, mean, 1 - 1e-9, xtol=1e-10) if over(1 - 1e-9) > 0 else 1.0
    return low + (high - low) * lo, low + (high - low) * hi


def test_the_panes_system_means_are_confidence_sequences_at_the_last_look(tmp_path):
    sim = likert_study(tmp_path / "means.db", attributes=("likability",), prompts=40)
    study = sim.open()
    data = pane_data(study, "story", QUEUE, [])
    study.close()
    focus = [a.attribute for a in data.attributes].index("likability")
    means = {(m.judge, m.system): m for m in data.attributes[focus].watched}
    humans, judge = sim.humans["likability"], sim.judges["likability"]["close"]
    for system in ("gpt2", "human"):
        order = [i for i in sim.order if sim.system[i] == system]
        human_mean = [float(np.mean([humans[h][i] for h in humans])) for i in order]
        shown = means[("close", system)]
        assert shown.rated == len(order)
        tolerance = 2 * 4 / 1000  # the grid's outward rounding on a scale 4 wide
        lo, hi = _bounds(human_mean, 1, 5, 0.05)
        assert shown.humans is not None
        assert shown.humans[0] <= lo + 1e-9 and lo - shown.humans[0] <= tolerance
        assert shown.humans[1] >= hi - 1e-9 and shown.humans[1] - hi <= tolerance
        # PPI: the judge's mean over its items (item order) at α/2 plus the rectifier's in rating order at α/2
        judged = [judge[i] for i in sim.ids if sim.system[i] == system]
        f_lo, f_hi = _bounds(judged, 1, 5, 0.025)
        d_lo, d_hi = _bounds([h - judge[i] for h, i in zip(human_mean, order)], -4, 4, 0.025)
        assert shown.ppi is not None
        assert shown.ppi[0] == max(1.0, shown.ppi[0]) and abs(shown.ppi[0] - max(1.0, f_lo + d_lo)) <= 3 * tolerance
        assert abs(shown.ppi[1] - min(5.0, f_hi + d_hi)) <= 3 * tolerance
    text = str(render_pane(data, focus, 0))
    assert "system means, anytime 95 % (confidence sequences: valid at every look)" in text
    line = next(line for line in text.splitlines() if line.startswith("close") and " gpt2 " in line)
    shown = means[("close", "gpt2")]
    assert f"{shown.humans[0]:.2f}–{shown.humans[1]:.2f}" in line and f"{shown.ppi[0]:.2f}–{shown.ppi[1]:.2f}" in line

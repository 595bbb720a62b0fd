"""Issue 33 item 3's claim, as a seeded simulation in the slow tier (figures in docs/VERDICT.md §7): 1,000 synthetic
studies looked at after every rating, as the live pane does. The anytime-valid intervals cover the true mean at
every look in >= 95 % of studies; "may replace" is shown at some look for a judge exactly ε worse than every
person in <= 5 % of studies; the fixed-n figures, peeked at the same way, are printed beside them."""

from __future__ import annotations

import pytest

from tests.stats import sequential_sim as sim

pytestmark = pytest.mark.slow


def test_confidence_sequences_cover_the_true_mean_at_every_look():
    found = sim.mean_coverage()
    for name, c in found.items():
        print(f"{name}: every look {c.every_look:.3f}, one look {c.each_look:.3f}, width {c.final_width:.2f}")
    assert found["PPI, anytime CS"].every_look >= 0.95
    assert found["human-only, anytime CS"].every_look >= 0.95
    # what peeking costs the fixed-n intervals: each look covers about 95 %, every look far fewer
    assert found["PPI, fixed-n interval"].every_look < 0.9 and found["human-only, fixed-n interval"].every_look < 0.9


def test_may_replace_is_shown_for_a_judge_exactly_epsilon_worse_in_at_most_5_percent_of_studies():
    found = sim.replaced(miss=sim.EPSILON)
    for name, r in found.items():
        print(f"{name}: ever {r.ever:.3f}, at the end {r.at_the_end:.3f}, one person's H0 ever {r.person_ever:.3f}")
    assert found["anytime (e-BH)"].ever <= 0.05
    assert found["anytime (e-BH)"].person_ever <= 0.05  # each person's e-process alone, over all looks
    assert found["fixed-n (t-test, BY)"].person_ever > 0.1  # the t-test peeked at: one person's H0 falls often
    good = sim.replaced(miss=0.0, studies=300)  # and the test has power: a judge like one more person gets in
    assert good["anytime (e-BH)"].at_the_end >= 0.7

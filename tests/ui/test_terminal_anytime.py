"""The agreement pane in the real app (tmux) shows the figures valid at every look (issue 33 item 3): the verdict
worded by the anytime alt-test with the fixed-n ω labelled beside it, and each system's mean as confidence
sequences -- the same numbers ``stats/live.pane_data`` gives for the file (``tests/stats/test_live_anytime.py``
checks those against computations written from the papers)."""

from __future__ import annotations

import pytest

from tests.stats.simulated import likert_study
from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux
from tui_rater.stats.live import pane_data

pytestmark = [pytest.mark.terminal, needs_tmux]

QUEUE = {"done": 0, "queued": 0, "leased": 0, "failed": 0}


def test_the_pane_shows_the_anytime_verdict_and_the_system_means_confidence_sequences(tmp_path):
    sim = likert_study(tmp_path / "s.db", attributes=("likability",))
    study = sim.open()
    data = pane_data(study, "story", QUEUE, [])
    study.close()
    focus = [a.attribute for a in data.attributes].index("likability")
    means = {(m.judge, m.system): m for m in data.attributes[focus].watched}
    app = TmuxApp(annotate_command(sim.path, "zoe", "story"), tmp_path, size=(80, 60), env="env TERM=xterm")
    try:
        app.wait_text("q quit")
        app.keys("a")
        app.wait_text("judge queue:")
        for _ in range(focus):
            app.key("Right")
        screen = app.wait_text("◀ likability ▶", "system means, anytime 95 %")
        text = flat(screen)
        assert "anytime: valid at every look (e-values); fixed-n: read once, at the end" in text
        lines = [line.strip() for line in screen.splitlines()]
        copycat = next(k for k, line in enumerate(lines) if line.startswith("copycat") and "anytime ω" in line)
        assert "anytime ω 1.00  yes, may replace them" in lines[copycat]
        assert "fixed-n ω 1.00" in lines[copycat + 1]
        random = next(line for line in lines if line.startswith("random") and "anytime ω" in line)
        assert "not yet" in random and "may replace" not in random
        for system in ("gpt2", "human"):
            mean = means[("close", system)]
            assert mean.ppi is not None and mean.humans is not None
            row = next(line for line in lines if line.startswith("close") and f" {system} " in line)
            shown = f"{mean.ppi[0]:.2f}–{mean.ppi[1]:.2f}"
            assert shown in row and f"{mean.humans[0]:.2f}–{mean.humans[1]:.2f}" in row, row
        app.keys("q")
    finally:
        app.close()

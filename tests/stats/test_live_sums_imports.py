"""The pane's running sums, the app's path to its first numbers, import numpy and the store only (issue 35 item 1:
first numbers within 2 s at 100k items). They imported ``stats.agreement`` (scipy), ``stats.live`` and the report's
sections (polars): 0.8 s at low load, 2 s at the loads the pane is used at, before the first sum. Only the pane's
worker process, which computes the full figures, imports those now."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.stats.test_live_sums import JUDGES, PEOPLE, _study
from tui_rater.store.study import Study

HEAVY = ("scipy", "polars", "tui_rater.stats.sections", "tui_rater.stats.agreement", "tui_rater.stats.live")

# what the app's sums thread does (ui/agreement.py: _compute_sums), then what its UI thread does with the look
_FIRST_LOOK = """
import json, sys
from tui_rater.service.live import LivePane, merge
from tui_rater.store.study import Study
from tui_rater.ui.agreement import render_parts
study = Study.open(sys.argv[1])
look = LivePane("story").look(study, always=True)
data = merge(None, look.sums, look.task, look.queue, look.failures)
shown = [(head + body).plain for head, body in (render_parts(data, i, 0) for i in range(len(data.attributes)))]
heavy = [m for m in json.loads(sys.argv[2]) if m in sys.modules]
print(json.dumps({"heavy": heavy, "shown": shown, "n_ratings": data.n_ratings}))
"""


def test_the_running_sums_first_look_imports_no_scipy_polars_or_report_sections(tmp_path: Path) -> None:
    study, raters, keys = _study(tmp_path, "story", 6)
    for i, key in enumerate(keys):
        for person in PEOPLE:
            study.add_rating(key, "grammaticality", raters[person], float(1 + (i + len(person)) % 5))
        study.add_rating(key, "grammaticality", raters[JUDGES[0]], float(1 + i % 5))
        study.add_rating(key, "likability", raters[JUDGES[1]], 2.5)
    path = study.path
    study.close()
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_LOOK, str(path), json.dumps(HEAVY)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["heavy"] == []
    # (not an empty look: the sums read the ratings and the pane shows their figures)
    assert found["n_ratings"] == 6 * 5
    grammaticality = next(text for text in found["shown"] if "◀ grammaticality ▶" in text)
    assert "j1" in grammaticality and "rating distributions" in grammaticality


# what the app does with the worker's answer (ui/agreement.py: _compute, then merge and redraw on the UI thread)
_FULL_ANSWER = """
import json, pickle, sys
from tui_rater.service.live import LivePane, merge
from tui_rater.store.study import Study
from tui_rater.ui.agreement import render_pane
with open(sys.argv[1], "rb") as handle:
    data, marker, seen = pickle.load(handle)
study = Study.open(sys.argv[2])
look = LivePane("story").look(study, always=True)
merged = merge(data, look.sums, look.task, look.queue, look.failures)
shown = [render_pane(merged, i, 0).plain for i in range(len(merged.attributes))]
heavy = [m for m in json.loads(sys.argv[3]) if m in sys.modules]
print(json.dumps({"heavy": heavy, "shown": shown}))
"""


def test_the_full_computations_answer_needs_no_statistics_in_the_app_and_draws_the_same_text(tmp_path: Path) -> None:
    """The answer held each judge's ``JudgeReadings`` (the report's sections, polars) and ``AnytimeVerdict`` (scipy):
    unpickled in the app, it imported them there when the first full result arrived, while the keys waited."""
    import pickle

    from tui_rater.service.live import full_pane, merge
    from tui_rater.stats.live import pane_data
    from tui_rater.ui.agreement import render_pane

    study, raters, keys = _study(tmp_path, "story", 36)  # (the alt-test needs 30 items of 3 humans)
    for i, key in enumerate(keys):
        for person in PEOPLE:
            study.add_rating(key, "grammaticality", raters[person], float(1 + (i + len(person)) % 5))
        study.add_rating(key, "grammaticality", raters[JUDGES[0]], float(1 + i % 5))
        study.add_rating(key, "grammaticality", raters[JUDGES[1]], float(1 + (i * 7) % 5))
    answer = full_pane(study, "story")
    assert answer[0] is not None
    rows = [row for pane in answer[0].attributes for row in pane.rows]
    assert any(row.verdict is not None and row.verdict.anytime is not None for row in rows)  # (not vacuous)
    (tmp_path / "answer.pickle").write_bytes(pickle.dumps(answer))
    # the reference: the full computation's own objects, merged and drawn in this process
    full = pane_data(study, "story", answer[0].queue, answer[0].failures)
    path = study.path
    study.close()
    done = subprocess.run(
        [sys.executable, "-c", _FULL_ANSWER, str(tmp_path / "answer.pickle"), str(path), json.dumps(HEAVY)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["heavy"] == []
    study = Study.open(path)
    try:
        from tui_rater.service.live import LivePane

        look = LivePane("story").look(study, always=True)
        assert look is not None
        expected = merge(full, look.sums, look.task, look.queue, look.failures)
        assert found["shown"] == [render_pane(expected, i, 0).plain for i in range(len(expected.attributes))]
        assert any("anytime" in text and "fixed-n ω" in text for text in found["shown"])
    finally:
        study.close()

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

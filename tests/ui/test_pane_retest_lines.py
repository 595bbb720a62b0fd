"""The pane's test-retest lines come from its worker process as plain segments (``service/retest_lines.py``): the
text drawn is the text the app drew from the summary itself before (issue 35 item 1: the summary's statistics, scipy,
are never imported or run in the app)."""

from __future__ import annotations

import pickle
import subprocess
import sys
from pathlib import Path

import numpy as np
from rich.text import Text

from tui_rater.service.pane_worker import PaneWorker, RetestRequest
from tui_rater.service.retest import retest_summary
from tui_rater.service.retest_lines import retest_lines
from tui_rater.store.study import Study
from tui_rater.ui.retest import retest_text


def _f(stat, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if stat.value is None else f"{stat.value:.{digits}f}{suffix}"


def _drawn_before(summary, attribute: str) -> Text | None:
    """``ui/retest.py:retest_text`` as it was, drawing the summary in the app (the reference)."""
    from tui_rater.domain.display import safe_text

    found = summary.attribute(attribute)
    if found is None or found.reliability.pairs == 0:
        return None
    reliability = found.reliability
    overall, calibrated = reliability.overall, reliability.calibrated
    text = Text()
    text.append(f"test–retest ({safe_text(summary.annotator)}, {attribute}): ", style="bold")
    text.append(f"you agree with yourself at α {_f(overall.alpha)} ({reliability.pairs} rated twice)")
    for judge in found.judges:
        text.append(f", with {safe_text(judge.judge)} at α {_f(judge.agreement.alpha)} ({judge.agreement.pairs} items)")
    text.append("\n")
    shift = reliability.shift
    shown = (
        ""
        if reliability.level == "nominal"
        else (f" · shift {'n/a' if shift.value is None else f'{shift.value:+.2f}'}")
    )
    text.append(
        f"  yourself: κ {_f(overall.kappa)} · identical {_f(overall.exact, 0, '%')}{shown} · without your first "
        f"{reliability.calibration_items} items: α {_f(calibrated.alpha)} ({calibrated.pairs})"
        f" · α {reliability.level}\n",
        style="dim",
    )
    return text


def _study(tmp_path: Path) -> Study:
    study = Study.open(tmp_path / "r.db")
    task = study.task("story")
    study.add_items(task, [{"id": f"s{i}", **{f: f"{f} {i}" for f in task.fields}} for i in range(30)])
    items = study.items("story")
    rng = np.random.default_rng(5)
    person, judge = study.human("[b]ann[/b]"), study.judge("j\x1b[31m1", {"m": "j1"})  # shown literally
    for question in ("grammaticality", "likability"):
        firsts = [
            study.add_rating(item.key, question, person.id, float(rng.integers(1, 6)), parse_status="human")
            for item in items
        ]
        for item, first in zip(items[:12], firsts[:12]):
            value = float(rng.integers(1, 6))
            study.add_rating(item.key, question, person.id, value, parse_status="human", retest_of=first)
        for item in items:
            study.add_rating(item.key, question, judge.id, float(rng.integers(1, 6)))
    return study


def test_the_lines_from_the_worker_draw_the_text_drawn_from_the_summary(tmp_path: Path) -> None:
    study = _study(tmp_path)
    try:
        summary = retest_summary(study, "story", "[b]ann[/b]")
        lines = pickle.loads(pickle.dumps(retest_lines(summary)))  # (as it crosses the pipe)
        assert lines.attributes == [found.attribute for found in summary.attributes]
        shown = 0
        for attribute in lines.attributes:
            before = _drawn_before(summary, attribute)
            assert retest_text(lines, attribute) == before, attribute
            shown += before is not None
        assert shown == 2  # the two questions rated twice (the others: no lines)
        worker = PaneWorker()
        try:
            request = RetestRequest(str(study.path), study.task_files, False, "story", "[b]ann[/b]", None)
            found = worker.compute_retest(request)
        finally:
            worker.close()
        assert found is not None and found[0] is not None
        assert found[0] == lines and found[1] == study.change_marker()
    finally:
        study.close()


def test_the_lines_need_no_statistics_in_the_app() -> None:
    code = (
        "import sys\n"
        "from tui_rater.service.retest_lines import RetestLines\n"
        "from tui_rater.ui.retest import retest_text\n"
        "print(retest_text(RetestLines(['q'], {'q': [('a ', 'bold'), ('b\\n', '')]}), 'q').plain.strip())\n"
        "print(sorted(m for m in ('scipy', 'polars', 'tui_rater.stats.self_agreement') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["a b", "[]"]

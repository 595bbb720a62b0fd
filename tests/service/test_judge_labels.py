"""The app names judges by their labels: the background judges' status line and the live agreement pane
(both computed by the service layer the app calls), with the same label `tui-rater judges` lists."""

from __future__ import annotations

import time

from tests.support import STORIES
from tui_rater.domain.decoding import Decoding
from tui_rater.judge.spec import JudgeSpec
from tui_rater.service.judging import BackgroundJudges
from tui_rater.service.live import agreement_pane
from tui_rater.store.judges import list_judges
from tui_rater.store.study import Study
from tui_rater.ui.agreement import render_pane


def test_background_judges_and_the_live_pane_use_the_labels(tmp_path, serve_zoo):
    study = Study.open(tmp_path / "live.db")
    study.add_items(study.task("story"), STORIES)
    person = study.human("teacher")
    for n, item in enumerate(study.items("story")):
        for attribute in study.task("story").attribute_names:
            study.add_rating(item.key, attribute, person.id, 1 + n % 5)
    _, url = serve_zoo()
    specs = [
        JudgeSpec("api:zoo", decoding=Decoding(samples=1), base_url=url, judge_name="[i]named[/i]").validate(),
        JudgeSpec("api:zoo", decoding=Decoding(samples=1), base_url=url).validate(),
    ]
    judges = BackgroundJudges(study, "story", specs)
    try:
        deadline = time.monotonic() + 60
        while sum(run.progress.done for _, run in judges.runs) < 2 * 4 * len(STORIES):
            assert time.monotonic() < deadline, judges.summary()
            time.sleep(0.05)
        summary, compact = judges.summary(), judges.summary(compact=True)
    finally:
        judges.stop()
    assert summary == "judges: J1 [i]named[/i] 16 done; J2 zoo text 16 done"
    assert compact == "judges: J1 16 done; J2 16 done"  # for a status line too narrow for the labels
    assert [j.label for j in list_judges(study)] == ["J1 [i]named[/i]", "J2 zoo text"]
    data, _ = agreement_pane(study, "story")
    assert data is not None
    assert [row.judge for row in data.attributes[0].rows] == ["J1 [i]named[/i]", "J2 zoo text"]
    shown = str(render_pane(data, 0, 0))
    assert "J1 [i]named[/i]" in shown and "J2 zoo text" in shown
    study.close()

"""Slow work never runs on the UI thread: judges are planned and started after the first screen."""

from __future__ import annotations

from tests.support import STORIES, Script, ok_body, wait_until
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study
from tui_rater.ui.app import AppOptions, JudgeProgress, make_app


async def test_judges_start_after_the_first_screen_and_report_as_messages(tmp_path, fake_server):
    study = Study.open(tmp_path / "bg.db")
    study.add_items(study.task("story"), STORIES)
    url = fake_server(Script([(200, {}, ok_body("Rating: 4"), 0)]))
    spec = JudgeSpec("api:m", base_url=url, samples=1).validate()
    app = make_app(AnnotationSession.open(study.reopen(), "story", "alice"), AppOptions(judge_specs=(spec,)))
    # building the app plans nothing: the jobs are enqueued by a worker once the screen is up
    assert study.db.conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "judges:" in str(app.query_one("#status").render()), "judges shown", 30)
        await pilot.press("4")  # the person rates while the judges work
        await wait_until(pilot, lambda: "16 done" in app.judge_summary, "the judge's 16 jobs done", 60)
        assert study.db.conn.execute("SELECT count(*), sum(status = 'done') FROM jobs").fetchone() == (16, 16)
    assert JudgeProgress("2 done").can_replace(JudgeProgress("1 done"))  # newer progress replaces stale

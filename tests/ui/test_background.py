"""Slow work never runs on the UI thread: judges are planned and started after the first screen."""

from __future__ import annotations

from tests.support import STORIES, Script, ok_body, wait_until
from tui_rater.domain.decoding import Decoding
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study
from tui_rater.ui.app import AppOptions, JudgeProgress, make_app


async def test_judges_start_after_the_first_screen_and_report_as_messages(tmp_path, fake_server):
    study = Study.open(tmp_path / "bg.db")
    study.add_items(study.task("story"), STORIES)
    url = fake_server(Script([(200, {}, ok_body("Rating: 4"), 0)]))
    spec = JudgeSpec("api:m", decoding=Decoding(samples=1), base_url=url).validate()
    app = make_app(AnnotationSession.open(study.reopen(), "story", "alice"), AppOptions(judge_specs=(spec,)))
    # building the app plans nothing: the jobs are enqueued by a worker once the screen is up
    assert study._db.conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "judges:" in str(app.query_one("#status").render()), "judges shown", 30)
        await pilot.press("4")  # the person rates while the judges work
        await wait_until(pilot, lambda: "16 done" in app.judge_summary, "the judge's 16 jobs done", 60)
        assert study._db.conn.execute("SELECT count(*), sum(status = 'done') FROM jobs").fetchone() == (16, 16)
    assert JudgeProgress("2 done").can_replace(JudgeProgress("1 done"))  # newer progress replaces stale


async def test_a_local_judge_runs_inside_the_app(tmp_path, tiny_gguf):
    """``annotate --judge MODEL.gguf``: llama.cpp loads and rates behind the screen. Inside the app Textual's
    sys.stderr has no file descriptor; the engine quiets llama.cpp's log on fd 2 itself, and the screen keeps
    taking keys while it generates, at a lower priority than the screen."""
    study = Study.open(tmp_path / "local.db")
    study.add_items(study.task("story"), STORIES[:2])
    spec = JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=1), mode="constrained").validate()
    app = make_app(AnnotationSession.open(study.reopen(), "story", "alice"), AppOptions(judge_specs=(spec,)))
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: "judges:" in str(app.query_one("#status").render()), "judges shown", 30)
        await pilot.press("4")
        ended = lambda: " 8 done" in app.judge_summary or "stopped" in app.judge_summary
        await wait_until(pilot, ended, "the local judge's 8 jobs done (or the judge stopped)", 120)
        assert "stopped" not in app.judge_summary, app.judge_summary
        # behind the screen the engine decodes at a lower priority (tests/judge/test_engine.py: the threads' nice)
        assert app.judges.runs[0][1].threads[0].backend.engine.background
    stored = study._db.conn.execute(
        "SELECT count(*) FROM ratings r JOIN raters j ON j.id = r.rater_id WHERE j.kind = 'llm'"
    ).fetchone()[0]
    assert stored == 8


def test_the_ui_thread_never_imports_the_statistics_stack():
    """The first `a` used to import polars and scipy (~0.8 s) on the UI thread, and later it waited there for the
    app's own warm-up import. The app, the agreement screen and the retest lines import them only in workers."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import tui_rater.ui.app, tui_rater.ui.agreement, tui_rater.ui.retest\n"
        "from tui_rater.ui.agreement import AgreementScreen, render_pane\n"
        "print(sorted(m for m in ('polars', 'scipy', 'scipy.stats', 'tui_rater.stats.live', "
        "'tui_rater.service.live', 'tui_rater.service.retest') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"

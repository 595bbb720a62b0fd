"""A worker thread never dies silently: a bug in a job fails that job; anything else stops the judge visibly.

The backends here are the real API backend against the loopback zoo server, with one fault
planted in a subclass (a bug in a job, a backend that cannot start, the study file changing
under the worker) -- the faults the catch-alls exist for, since real replies can no longer
raise anything but typed failures.
"""

from __future__ import annotations

import sqlite3

from tests.support import STORIES
from tui_rater.domain.decoding import Decoding
from tui_rater.judge import queue
from tui_rater.judge.backends.api import ApiBackend
from tui_rater.judge.spec import JudgeSpec
from tui_rater.service.judging import judge_study


class BuggyBackend(ApiBackend):
    def complete(self, messages, decoding, **params):
        if "BUG" in messages[-1]["content"]:
            return 1 / 0  # a bug in our code, in one job
        return super().complete(messages, decoding, **params)


def test_a_bug_in_one_job_fails_that_job_and_the_rest_go_on(story_study, serve_zoo):
    story_study.add_items(story_study.task("story"), [dict(STORIES[0], id="bug", story="BUG in this one.")])
    _, url = serve_zoo()
    spec = JudgeSpec("api:zoo", decoding=Decoding(samples=1), base_url=url).validate()
    run = judge_study(story_study, spec, ["story"], workers=3, backend_factory=BuggyBackend)
    assert run.progress.fatal is None and not run.alive()
    counts = queue.counts(story_study, run.plan.rater.id)
    assert (counts["done"], counts["failed"], counts["leased"]) == (16, 4, 0)
    kinds = {(f["item"], f["error_kind"]) for f in queue.failures(story_study)}
    assert kinds == {("bug", "internal")}
    assert all("ZeroDivisionError" in f["last_error"] for f in queue.failures(story_study))


def test_a_backend_that_cannot_start_stops_the_judge_visibly(story_study, serve_zoo):
    def broken(spec):
        raise RuntimeError("the backend's library is broken")

    _, url = serve_zoo()
    spec = JudgeSpec("api:zoo", decoding=Decoding(samples=1), base_url=url).validate()
    run = judge_study(story_study, spec, ["story"], workers=2, backend_factory=broken)
    assert not run.alive()
    assert run.progress.fatal is not None and run.progress.fatal.kind == "internal"
    assert "RuntimeError: the backend's library is broken" in run.progress.fatal.message
    assert queue.counts(story_study, run.plan.rater.id)["queued"] == 16  # nothing leased, nothing lost


class TableThief(ApiBackend):
    """Renames the ratings table under the worker (another program changing the file), once."""

    def complete(self, messages, decoding, **params):
        conn = sqlite3.connect(self.db_path, timeout=30)
        try:
            with conn:
                conn.execute("ALTER TABLE ratings RENAME TO ratings_elsewhere")
        except sqlite3.OperationalError:
            pass  # already gone
        finally:
            conn.close()
        return super().complete(messages, decoding, **params)


def test_the_study_changing_under_a_worker_stops_the_judge_visibly(story_study, serve_zoo):
    _, url = serve_zoo()
    spec = JudgeSpec("api:zoo", decoding=Decoding(samples=1), base_url=url).validate()

    def factory(spec):
        backend = TableThief(spec)
        backend.db_path = story_study.path
        return backend

    run = judge_study(story_study, spec, ["story"], workers=1, backend_factory=factory)
    assert not run.alive()
    assert run.progress.fatal is not None and run.progress.fatal.kind == "internal"
    assert "OperationalError" in run.progress.fatal.message
    counts = queue.counts(story_study, run.plan.rater.id)
    assert counts["leased"] == 0 and counts["queued"] == 16  # the batch it held is given back

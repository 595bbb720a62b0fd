"""The `judge` use case called in-process (``service.judge_command``), as a script would: one request, one
outcome, on a real study and a loopback OpenAI-compatible server (tests/zoo.py)."""

from __future__ import annotations

import pytest

from tests.support import STORIES, digest, story_study
from tui_rater.domain.errors import UserError
from tui_rater.service import judge_command as use
from tui_rater.service.judging import JudgeOptions
from tui_rater.service.study import open_study


class Recorded:
    """The events the use case reports, kept in order (and the run waited for, as ``QuietEvents`` does)."""

    def __init__(self) -> None:
        self.seen: list[tuple] = []

    def note(self, text: str) -> None:
        self.seen.append(("note", text))

    def planned(self, plan, workers: int) -> None:
        self.seen.append(("planned", plan.rater.label, plan.added, workers))

    def sending(self, plan) -> None:
        self.seen.append(("sending", plan.rater.label))

    def watch(self, run, unfinished) -> None:
        run.wait()
        self.seen.append(("watched", unfinished()))


def zoo_judge(url: str, **given) -> JudgeOptions:
    return JudgeOptions("api:zoo", base_url=url, decoding={"samples": 1}, **given)


def test_a_live_run_rates_every_item_and_says_what_it_stored(tmp_path, serve_zoo):
    _, url = serve_zoo()
    study = open_study(story_study(tmp_path / "s.db"), create=False)
    events = Recorded()
    outcome = use.judge(study, use.JudgeRequest(zoo_judge(url), workers=2), events=events)
    assert isinstance(outcome, use.Judged)
    questions = len(STORIES) * len(study.task("story").attribute_names)  # one sample each
    assert events.seen == [("planned", outcome.plan.rater.label, questions, 2), ("watched", 0)]
    assert outcome.run.progress.done == questions
    assert outcome.left["done"] == questions and outcome.left["failed"] == 0 and outcome.by_others == 0
    stored = study._db.execute("SELECT COUNT(*) FROM ratings WHERE rater_id = ?", [outcome.plan.rater.id]).fetchone()
    assert stored[0] == questions
    assert outcome.produced.total == questions and not outcome.produced.useless
    assert outcome.ready is not None
    study.close()


def test_a_second_run_has_nothing_left_to_do(tmp_path, serve_zoo):
    _, url = serve_zoo()
    study = open_study(story_study(tmp_path / "s.db"), create=False)
    request = use.JudgeRequest(zoo_judge(url), limit=1)
    first = use.judge(study, request)
    again = use.judge(study, request)
    assert isinstance(first, use.Judged) and isinstance(again, use.Judged)
    assert first.plan.added == len(study.task("story").attribute_names) and again.plan.added == 0
    assert again.run.progress.done == 0 and again.left["done"] == first.left["done"]
    study.close()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"cancel": True}, "--cancel goes with --batch"),
        ({"batch": True, "check": True}, "--check and --batch go separately"),
        ({"task": "nosuchtask"}, "nosuchtask"),
    ],
)
def test_a_bad_request_is_one_sentence_and_stores_nothing(tmp_path, serve_zoo, given, said):
    _, url = serve_zoo()
    db = story_study(tmp_path / "s.db")
    before = digest(db)
    study = open_study(db, create=False)
    with pytest.raises(UserError, match=said):
        use.judge(study, use.JudgeRequest(zoo_judge(url), **given))
    study.close()
    assert digest(db) == before


def test_cancelling_the_batches_of_a_judge_the_study_lacks_changes_nothing(tmp_path, serve_zoo):
    _, url = serve_zoo()
    db = story_study(tmp_path / "s.db")
    study = open_study(db, create=False)
    outcome = use.judge(study, use.JudgeRequest(zoo_judge(url), batch=True, cancel=True))
    assert isinstance(outcome, use.Cancelled) and outcome.plan is None and outcome.queued_again == 0
    assert study.raters("llm") == []
    study.close()


def test_a_check_reads_the_first_items_and_stores_nothing(tmp_path, serve_zoo):
    _, url = serve_zoo()
    db = story_study(tmp_path / "s.db")
    before = digest(db)
    study = open_study(db, create=False, readonly=True)
    outcome = use.judge(study, use.JudgeRequest(zoo_judge(url), check=True, check_items=1))
    assert isinstance(outcome, use.Checked)
    assert outcome.result.judge  # the pre-flight names the judge it checked
    study.close()
    assert digest(db) == before

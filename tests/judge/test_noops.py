"""A command of judge, queue and judges that finds nothing to do leaves the study byte for byte as it was
(issue 36.8: `judge --batch --cancel` with no batch said "no batch to cancel", exit 0, and added a judge)."""

from __future__ import annotations

import pytest

from tests.support import digest, story_study
from tui_rater.store.study import Study

URL = "http://127.0.0.1:9/v1"  # nothing listens: none of these may need a server
BATCH_CANCEL = ["judge", "--model", "api:m", "--base-url", URL, "--task", "story", "--batch", "--cancel"]


@pytest.fixture
def study_file(tmp_path):
    db = story_study(tmp_path / "s.db")
    study = Study.open(db)
    judge = study.judge("judge-x", {"imported_from": "x"})
    for item in study.items("story"):
        study.add_rating(item.key, "cohesiveness", judge.id, 3.0)
    study.close()
    return db


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (BATCH_CANCEL, "judge api:m: no batch to cancel (the study has no such judge)"),
        (["queue", "--cancel"], "cancelled 0 jobs"),
        (["queue", "--retry"], "queued 0 jobs again"),
        (["queue", "--cancel", "--retry"], "queued 0 jobs again"),
    ],
    ids=["judge --batch --cancel", "queue --cancel", "queue --retry", "queue --cancel --retry"],
)
def test_a_command_with_nothing_to_do_leaves_the_study_byte_for_byte(argv, said, study_file, cli):
    before = digest(study_file)
    code, out, err = cli(*argv[:1], "--db", study_file, *argv[1:])
    assert code == 0, err
    assert said in out
    assert digest(study_file) == before
    study = Study.open(study_file, create=False)
    try:
        assert [r.name for r in study.raters("llm")] == ["judge-x"]
    finally:
        study.close()


def test_refused_commands_leave_the_study_byte_for_byte(study_file, cli):
    """`judges --forget` without a yes, of an unknown judge; `judge --batch` of a mode that cannot be batched."""
    before = digest(study_file)
    for argv, code_wanted in (
        (["judges", "--forget", "judge-x"], 2),  # stdin is not a terminal: needs --yes
        (["judges", "--forget", "nobody", "--yes"], 2),
        (["judge", "--model", "api:m", "--base-url", URL, "--batch", "--mode", "distribution"], 2),
        (["queue", "--cancel", "--rater", "nobody"], 2),
    ):
        code, _out, err = cli(argv[0], "--db", study_file, *argv[1:])
        assert code == code_wanted and err.count("\n") == 1, (argv, err)
        assert digest(study_file) == before, argv


def test_cancelling_with_a_judge_but_no_batch_queues_nothing(study_file, cli, monkeypatch):
    """A judge that exists but has no batch: "no batch to cancel", and not one job queued (it used to queue the
    judge's whole missing work on the way to finding nothing to cancel)."""
    monkeypatch.setenv("TEST_KEY", "k")
    batch = ["judge", "--db", study_file, *BATCH_CANCEL[1:-1], "--api-key-env", "TEST_KEY"]
    code, _out, _err = cli(*batch)
    assert code != 0  # nothing listens: the batch is never sent, the judge and its jobs are stored
    study = Study.open(study_file, create=False)
    try:
        (judge,) = [r for r in study.raters("llm") if r.name != "judge-x"]
        study._db.conn.execute("DELETE FROM jobs")  # as after a run whose jobs were all forgotten
        study._db.conn.commit()
    finally:
        study.close()
    before = digest(study_file)
    code, out, err = cli(*batch, "--cancel")
    assert code == 0, err
    assert f"judge {judge.label} ({judge.name}): no batch to cancel" in out
    assert digest(study_file) == before

"""The `report` use case called in-process (``service.report_command``): the same report the command prints or
writes, its notes given to the caller, and a refused target that leaves the study as it was."""

from __future__ import annotations

import json

import pytest

from tests.support import digest, story_study
from tui_rater.domain.errors import UserError
from tui_rater.service.report_command import ReportRequest, report
from tui_rater.service.study import open_study


@pytest.fixture
def rated(tmp_path):
    """Four stories rated by three people (values chosen so that the raters disagree a little)."""
    db = story_study(tmp_path / "rated.db")
    study = open_study(db)
    attributes = study.task("story").attribute_names
    for r, name in enumerate(("ann", "bob", "cat")):
        person = study.human(name)
        for n, item in enumerate(study.items("story")):
            for a, attribute in enumerate(attributes):
                study.add_rating(item.key, attribute, person.id, 1 + (n + r * a) % 5)
    study.close()
    return db


def test_the_json_report_is_the_commands(rated, cli):
    study = open_study(rated, create=False, readonly=True)
    notes: list[str] = []
    output = report(study, ReportRequest(format="json", excluded_annotators=("cat",)), notes=notes.append)
    study.close()
    code, out, err = cli("report", "--db", rated, "--format", "json", "--exclude-annotator", "cat")
    assert code == 0
    assert output.text is not None and json.loads(output.text) == json.loads(out)
    assert notes and all(note in err for note in notes)
    assert any("by cat" in note and "--exclude-annotator" in note for note in notes)


def test_a_terminal_report_is_tables_and_a_file_report_is_written(rated, tmp_path):
    study = open_study(rated, create=False, readonly=True)
    shown = report(study, ReportRequest())
    assert shown.text is None and shown.written is None and shown.shown  # Rich tables for the terminal
    out = tmp_path / "r.md"
    written = report(study, ReportRequest(format="markdown", out=out))
    study.close()
    assert written.written == out and out.read_text(encoding="utf-8") == written.text
    assert "story" in written.text


def test_a_report_over_the_study_file_is_refused_and_the_study_is_unchanged(rated):
    before = digest(rated)
    study = open_study(rated, create=False, readonly=True)
    with pytest.raises(UserError):
        report(study, ReportRequest(format="json", out=rated))
    study.close()
    assert digest(rated) == before


def test_a_bad_epsilon_is_one_sentence_before_a_study_is_opened():
    with pytest.raises(UserError, match="--epsilon must be at least 0 and below 1"):
        ReportRequest(epsilon=1.5).settings()

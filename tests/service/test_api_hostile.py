"""The Python API (``tui_rater.service``) given what a script can get wrong: one sentence (``UserError``) before any
work, nothing written, the study untouched."""

from __future__ import annotations

import pytest

from tests.support import digest, story_study
from tui_rater.domain.errors import UserError
from tui_rater.service import ReportRequest, open_study, report


@pytest.mark.parametrize("shape", ["xml", "TABLE", "", "pdf"])
def test_a_report_format_that_does_not_exist_is_one_sentence_and_no_file(tmp_path, shape):
    # any other name was rendered as the terminal's plain table text and written to report.xml, without a word
    db = story_study(tmp_path / "s.db")
    study = open_study(db)
    person = study.human("ann")
    for item in study.items("story"):
        study.add_rating(item.key, "grammaticality", person.id, 3.0)
    study.close()
    before = digest(db)
    study = open_study(db, create=False)
    target = tmp_path / f"report.{shape or 'out'}"
    try:
        with pytest.raises(UserError, match="no report format"):
            report(study, ReportRequest(task="story", format=shape, out=target))
    finally:
        study.close()
    assert not target.exists()
    assert digest(db) == before

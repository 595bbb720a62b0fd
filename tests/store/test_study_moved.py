"""A session notices, before and after each save, that its study's path no longer names the file it holds (issue
36): renamed, removed, replaced or given a second name, it stops saving rather than commit into a `-wal` that a
connection opening the study by its name never reads. Real study files; `tests/ui/test_terminal_renamed.py` runs
the two-annotator scenario in the real app."""

from __future__ import annotations

import os
import shutil
import sqlite3

import pytest

from tui_rater.domain.errors import StudyMoved
from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study

TASK = "title-fluency"


def opened(tmp_path):
    path = tmp_path / "a.db"
    study = Study.open(path)
    study.add_items(study.task(TASK), [{"id": f"t{i}", "title": f"Title {i}"} for i in range(4)])
    return path, AnnotationSession.open(study, TASK, "alpha")


def alphas(path) -> int:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT count(*) FROM ratings").fetchone()[0]


def move(path, how):
    b = path.with_name("b.db")
    if how == "renamed":
        path.rename(b)
    elif how == "removed":
        os.link(path, b)  # (kept under another name, to read it afterwards)
        path.unlink()
    elif how == "replaced":  # a copy put in its place (`cp a.db c.db; mv c.db a.db`): a.db names another file
        shutil.copyfile(path, b)
        os.replace(b, path)
        return path
    elif how == "hard-linked":
        os.link(path, b)
    return b


@pytest.mark.parametrize("how", ["renamed", "removed", "replaced", "hard-linked"])
def test_a_session_stops_saving_once_its_path_names_another_file(tmp_path, how):
    path, session = opened(tmp_path)
    session.save(lambda: session.rate(0, "fluency", 4.0), 1.0)
    held = move(path, how)
    with pytest.raises(StudyMoved, match="nothing more is saved here"):
        session.save(lambda: session.rate(1, "fluency", 3.0), 1.0)
    assert set(session.mine) == {(session.items[0].key, "fluency")}  # the view is as the file has it
    session.study.close()
    assert alphas(held) == 1  # the rating saved before is in the study under the name it has now


def test_a_rating_saved_before_the_rename_is_in_the_file_not_only_in_its_journal(tmp_path):
    path, session = opened(tmp_path)
    for index in range(3):
        session.save(lambda index=index: session.rate(index, "fluency", 2.0), 1.0)
    b = path.with_name("b.db")
    path.rename(b)
    # the file under its new name, read without the session's journal (a.db-wal): what a colleague opening b.db sees
    assert alphas(b) == 3
    session.study.close()

"""ui/state.py: the ratings, notes and undo on screen, kept once, changed only by submissions and commit reports.

A real study file and the real store thread (``StoreWriter``): its reports are applied here as the app applies
them on its UI thread.
"""

from __future__ import annotations

import queue

from tui_rater.store.session import AnnotationSession
from tui_rater.ui.state import RatingState, Undoable
from tui_rater.ui.writer import Change, Committed, StoreWriter


def _writer(session: AnnotationSession) -> tuple[StoreWriter, queue.Queue]:
    reports: queue.Queue = queue.Queue()
    return StoreWriter(session.save, reports.put), reports


def _save(state: RatingState, writer: StoreWriter, change: Change) -> None:
    """As the app saves a change: shown as unsaved, then handed to the store thread."""
    state.submit(change)
    writer.submit(change)


def _commit_all(state: RatingState, reports: queue.Queue) -> None:
    """Apply the store thread's reports until every submitted change is reported committed."""
    while state.view.unsaved:
        report = reports.get(timeout=10)
        if isinstance(report, Committed):
            state.committed(report)


def test_a_rating_is_unsaved_until_its_commit_is_reported_then_counted_rated(study):
    session = AnnotationSession.open(study.reopen(), "story", "alice")
    state, names = RatingState(session), session.task.attribute_names
    writer, reports = _writer(session)
    try:
        for name in names:
            _save(state, writer, state.rating(0, name, 4))
        assert state.shown(0, names[0]) == (4, "…") and state.item_complete(0)
        assert state.completed == set() and state.saving() == 1  # complete on screen, not in the file yet
        assert state.first_unrated(0) == 0 and state.first_unrated(1) == 0
        _commit_all(state, reports)
        assert state.shown(0, names[0]) == (4, "") and state.completed == {0} and state.saving() == 0
    finally:
        writer.close()
    # what a new session reads back from the file is what the state called saved
    again = RatingState(AnnotationSession.open(study.reopen(), "story", "alice"))
    assert again.completed == {0} and again.shown(0, names[-1]) == (4, "")


def test_undo_takes_back_the_last_rating_to_the_value_shown_before_it(study):
    """Undo typed before the rating's commit is reported: the rating it names is committed first (in order)."""
    session = AnnotationSession.open(study.reopen(), "story", "alice")
    state, name = RatingState(session), session.task.attribute_names[0]
    writer, reports = _writer(session)
    try:
        _save(state, writer, state.rating(1, name, 2))
        _commit_all(state, reports)
        _save(state, writer, state.rating(1, name, 5))  # a changed mind: undo goes back to 2
        assert state.undoable == [Undoable(1, name, None), Undoable(1, name, 2)]
        last = state.undo()
        assert last is not None and state.undoable == [Undoable(1, name, None)]
        _save(state, writer, state.undo_change(last))
        assert state.shown(1, name) == (2, "…")  # shown at once, unsaved
        _commit_all(state, reports)
        assert state.shown(1, name) == (2, "") and last.rating_id is not None
        assert session.value(1, name) == 2  # the file agrees: the 5 is retracted, the 2 in force again
    finally:
        writer.close()


def test_notes_and_the_review_mark_follow_the_commits(study):
    session = AnnotationSession.open(study.reopen(), "story", "alice")
    state, name = RatingState(session), session.task.attribute_names[0]
    writer, reports = _writer(session)
    try:
        key = session.key(2)
        _save(state, writer, Change("note", lambda: session.note(2, "flag"), key, note="flag"))
        _save(state, writer, Change("note", lambda: session.review(2, name, "agree"), key, name, note="review"))
        assert state.view.is_flagged(key) and state.review_mark(2, name) == "…"
        _commit_all(state, reports)
        assert key in state.view.flagged and state.review_mark(2, name) == ""
    finally:
        writer.close()

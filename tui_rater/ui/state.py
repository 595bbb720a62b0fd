"""The rating screen's state, kept once: what is shown, what is saved, what undo takes back.

The session (``store/session.py``) is the store thread's: its ratings, notes and undo stack change
inside the transactions the store thread commits. The UI thread reads it once, here, at start, and
from then on hears of it only through the commit reports (``Committed``): ``RatingState`` is the
one place the app, its widgets and its screens read ratings, notes, comments and undo from. The
committed view and the unsaved changes over it are its ``SaveView``; what the app kept beside it
(this session's undo, the comments, the items complete in the file, the items others got first)
is here too, so nothing is kept twice on the UI thread.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui_rater.domain.tasks import Task
from tui_rater.store.session import AnnotationSession
from tui_rater.ui.saving import SaveView
from tui_rater.ui.writer import Change, Committed


@dataclass(frozen=True)
class Undoable:
    """A rating of this session, as undo will take it back: the session's undo stack grows and shrinks in
    the same order (the save queue commits in order), so the last one here is the last one there."""

    index: int
    attribute: str
    before: float | None  # the value on screen before it: shown (unsaved) once undo is typed


class RatingState:
    def __init__(self, session: AnnotationSession):
        self.session = session
        # what is in the file (changed only by reported commits) and what is not yet
        self.view = SaveView(session.saved_values(), set(session.skipped), set(session.flagged))
        # this session's ratings, newest last, as undo will take them back
        self.undoable: list[Undoable] = []
        # showing key -> index (an item's key finds its first showing; a retest has a key of its own)
        self.index_of = {session.key(i): i for i in range(len(session.items))}
        # items fully rated in the file, kept up to date on each commit (no recount over every item per key)
        self.completed = {i for i in range(len(session.items)) if self.saved_complete(i)}
        # item key -> this annotator's comment on it, as typed (``c`` shows it to edit)
        self.comments = {item_key: text for item_key, (_id, text) in session.comments.items()}
        # a team plan's dynamic items: those whose lease is being asked for, the answers typed meanwhile,
        # and those K others got first (never shown again)
        self.claiming: set[int] = set()
        self.deferred: list[float] = []
        self.taken: set[int] = set(session.taken)

    @property
    def task(self) -> Task:
        return self.session.task

    # --- what is shown ---------------------------------------------------------------------------

    def value(self, index: int, attribute: str) -> float | None:
        """The value on screen: the last one typed, saved or not."""
        return self.view.shown((self.session.key(index), attribute))[0]

    def shown(self, index: int, attribute: str) -> tuple[float | None, str]:
        """The value on screen and its mark: "" when it is in the file, else "…" (or "!" while saves fail)."""
        value, unsaved = self.view.shown((self.session.key(index), attribute))
        return value, self.view.mark() if unsaved else ""

    def item_complete(self, index: int) -> bool:
        return all(self.value(index, a) is not None for a in self.task.attribute_names)

    def saved_complete(self, index: int) -> bool:
        key = self.session.key(index)
        return all((key, a) in self.view.saved for a in self.task.attribute_names)

    def showable(self, index: int) -> bool:
        """A retest showing only once its item is rated (on screen): nobody is asked to repeat what they
        have not rated. (Dictionary look-ups only: this runs on every move.)"""
        if self.session.items[index].key in self.taken:
            return False
        if not self.session.is_retest[index]:
            return True
        key = self.session.items[index].key
        return all(self.view.shown((key, a))[0] is not None for a in self.task.attribute_names)

    def first_unrated(self, index: int) -> int:
        for position, name in enumerate(self.task.attribute_names):
            if self.value(index, name) is None:
                return position
        return 0

    def saving(self) -> int:
        """Items complete on screen whose last ratings are not in the file yet ("+N saving")."""
        return sum(
            1
            for key in self.view.unsaved_keys()
            if self.index_of.get(key) is not None
            and self.index_of[key] not in self.completed
            and self.item_complete(self.index_of[key])
        )

    def yours(self) -> int:
        """The showings left to this annotator (dynamic mode: the items others got first are not theirs)."""
        total = len(self.session.items)
        return total - sum(1 for i in range(total) if self.session.items[i].key in self.taken) if self.taken else total

    def review_mark(self, index: int, attribute: str) -> str:
        key = self.session.key(index)
        unsaved = any(c.note == "review" and c.item_key == key and c.attribute == attribute for c in self.view.unsaved)
        return self.view.mark() if unsaved else ""

    # --- changes -----------------------------------------------------------------------------------

    def submit(self, change: Change, index: int | None = None) -> None:
        """A change handed to the store thread: shown as unsaved until its commit is reported. A rating of
        showing ``index`` is one undo takes back, to the value shown before it."""
        if change.kind == "rating" and index is not None and change.attribute is not None:
            self.undoable.append(Undoable(index, change.attribute, self.value(index, change.attribute)))
        self.view.add(change)

    def committed(self, report: Committed) -> None:
        self.view.apply(report)
        key = report.change.item_key
        index = self.index_of.get(key) if key is not None else None
        if index is not None:
            (self.completed.add if self.saved_complete(index) else self.completed.discard)(index)

"""The rating screen's state, kept once: what is shown, what is saved, what undo takes back.

The session (``store/session.py``) is the store thread's: its ratings and notes change inside the
transactions the store thread commits. The UI thread reads it once, here, at start, and from then on
hears of it only through the commit reports (``Committed``): ``RatingState`` is the one place the app,
its widgets and its screens read ratings, notes, comments and undo from. The committed view and the
unsaved changes over it are its ``SaveView``; what the app kept beside it (the comments, the items
complete in the file, the items others got first) is here too, and this session's undo is kept here
alone: each entry names the rating it takes back, so undo never relies on a second stack (the
session's) growing and shrinking in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tui_rater.domain.tasks import Task
from tui_rater.domain.values import ShowingKey
from tui_rater.service.session import AnnotationSession
from tui_rater.ui.saving import SaveView
from tui_rater.ui.writer import Change, Committed


@dataclass
class Undoable:
    """A rating of this session, as undo will take it back."""

    index: int
    attribute: str
    before: float | None  # the value on screen before it: shown (unsaved) once undo is typed
    # the rating's id, set on the store thread when it is committed: always before an undo of it runs there,
    # as the save queue commits in the order typed (the UI thread never reads it)
    rating_id: int | None = field(default=None, compare=False)


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
        # (each answer typed meanwhile has a placeholder change in the view: counted as not saved, on screen and
        # when quitting, until the lease is answered -- a lease that could not be saved lost them without a word)
        self.deferred: list[tuple[float, Change]] = []
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

    def defer(self, value: float, item_key: ShowingKey) -> None:
        """An answer typed while the item's lease is asked for: not saved, and said to be, until it is answered."""
        placeholder = Change("rating", _never_run, item_key)
        self.deferred.append((value, placeholder))
        self.view.add(placeholder)

    def take_deferred(self) -> list[float]:
        """The answers typed while the lease was asked for, oldest first; their placeholders leave the view."""
        typed, self.deferred = self.deferred, []
        for _value, placeholder in typed:
            self.view.discard(placeholder)
        return [value for value, _placeholder in typed]

    def held_back(self) -> list[Change]:
        """The answers typed that never reached the save queue (their item's lease was never granted)."""
        return [placeholder for _value, placeholder in self.deferred]

    def submit(self, change: Change) -> None:
        """A change handed to the store thread: shown as unsaved until its commit is reported."""
        self.view.add(change)

    def rating(
        self, index: int, attribute: str, value: float, *, seconds: float | None = None, revision: bool = False
    ) -> Change:
        """A rating of showing ``index``, to submit; undo takes it back to the value shown before it.
        ``revision``: a changed mind in reveal mode, linked to the rating it revises."""
        session = self.session
        entry = Undoable(index, attribute, self.value(index, attribute))

        def run() -> int:
            # on the store thread, after every earlier change: the rating in force is committed by now
            revises = session.rating_id(index, attribute) if revision else None
            entry.rating_id = session.rate(index, attribute, value, seconds=seconds, revises=revises)
            return entry.rating_id

        self.undoable.append(entry)
        return Change("rating", run, session.key(index), attribute, value)

    def undo(self) -> Undoable | None:
        """This session's last rating, to take back with ``undo_change``; None when there is none."""
        return self.undoable.pop() if self.undoable else None

    def undo_change(self, last: Undoable) -> Change:
        """Take ``last`` back: the earlier rating (if any) is in force again, as the file says after the commit."""
        session = self.session

        def run() -> tuple[tuple[ShowingKey, str], float | None]:
            assert last.rating_id is not None  # committed before this runs: the queue is in order
            session.study.retract_rating(last.rating_id)
            session.reload()
            return (session.key(last.index), last.attribute), session.value(last.index, last.attribute)

        return Change("undo", run, session.key(last.index), last.attribute, last.before)

    def committed(self, report: Committed) -> None:
        self.view.apply(report)
        key = report.change.item_key
        index = self.index_of.get(key) if key is not None else None
        if index is not None:
            (self.completed.add if self.saved_complete(index) else self.completed.discard)(index)


def _never_run() -> None:
    raise RuntimeError("a deferred answer's placeholder is never saved: the answer is submitted once its lease is ours")

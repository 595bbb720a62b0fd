"""One annotator's session on one task: item order, resume point, ratings, undo, notes.

No Textual here: the app calls these methods from a worker thread and renders the results.
Every rating is committed before ``rate`` returns, so a crash loses nothing acknowledged. The app
runs each change through ``save`` instead: one transaction whose lock wait it controls, so that it
can show that it waits and keep trying rather than give up.
"""

from __future__ import annotations

import hashlib
import json
import random
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Task
from tui_rater.store.db import BUSY_TIMEOUT_S
from tui_rater.store.study import Item, Study

T = TypeVar("T")

ORDERS = ("imported", "random", "grouped")


class StudyLocked(Exception):
    """Another process still holds the study file's write lock after the wait asked for."""


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc) or "busy" in str(exc)


@dataclass
class OtherRating:
    rater: str
    kind: str
    value: float | None
    sample: int
    explanation: str | None


@dataclass
class Undo:
    item_index: int
    attribute: str
    rating_id: int
    previous: float | None  # the value in force before this rating, if any


@dataclass
class AnnotationSession:
    study: Study
    task: Task
    annotator: str
    order: str = "imported"
    seed: int = 0
    items: list[Item] = field(default_factory=list)
    # (item_key, attribute) -> (rating id, value) of this annotator's ratings in force
    mine: dict[tuple[int, str], tuple[int, float]] = field(default_factory=dict)
    skipped: set[int] = field(default_factory=set)
    flagged: set[int] = field(default_factory=set)
    undo_stack: list[Undo] = field(default_factory=list)

    @classmethod
    def open(
        cls, study: Study, task_name: str, annotator: str, order: str = "imported", seed: int = 0
    ) -> AnnotationSession:
        if order not in ORDERS:
            raise UserError(f"--order must be one of {', '.join(ORDERS)}, not {order!r}")
        task = study.task(task_name)
        items = study.items(task.name)
        if not items:
            raise UserError(f"{study.path} holds no items for task {task.name!r}; import some first")
        session = cls(study, task, annotator, order, seed)
        session.rater = study.human(annotator)
        if protocols.one_item_per_annotator(task):
            items = [session._spa_packet(items)]
        session.items = session._ordered(items)
        session.reload()
        return session

    def _spa_packet(self, items: list[Item]) -> Item:
        """SPA gives each annotator one packet: theirs if begun, else one nobody has rated yet."""
        rated = dict(
            self.study.db.conn.execute(
                "SELECT r.item_key, min(r.rater_id = ?) FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
                "WHERE ra.kind = 'human' GROUP BY r.item_key",
                [self.rater.id],
            ).fetchall()
        )
        mine = [i for i in items if i.key in rated and rated[i.key] == 1]
        if mine:
            return mine[0]
        untouched = [i for i in items if i.key not in rated]
        if untouched:
            return untouched[0]
        digest = hashlib.sha256(self.annotator.encode()).hexdigest()
        return items[int(digest[:8], 16) % len(items)]

    def _ordered(self, items: list[Item]) -> list[Item]:
        if self.order == "random":
            # stable per annotator: the same person sees the same order after a restart
            digest = hashlib.sha256(f"{self.seed}:{self.annotator}".encode()).hexdigest()
            shuffled = items[:]
            random.Random(int(digest[:16], 16)).shuffle(shuffled)
            return shuffled
        if self.order == "grouped":
            # one writer's items as a block, in import order (Chiang & Lee rated GPT-2's first)
            systems = list(dict.fromkeys(i.system or "" for i in items))
            return sorted(items, key=lambda i: (systems.index(i.system or ""), i.position))
        return items

    def reload(self) -> None:
        """Read this annotator's ratings and notes back from the file."""
        rows = self.study.db.conn.execute(
            "SELECT r.id, r.item_key, r.attribute, r.value FROM ratings r JOIN items i ON i.key = r.item_key "
            "WHERE r.rater_id = ? AND i.task = ? AND r.retracted = 0 ORDER BY r.id",
            [self.rater.id, self.task.name],
        ).fetchall()
        self.mine = {(item_key, attribute): (rating_id, value) for rating_id, item_key, attribute, value in rows}
        notes = self.study.db.conn.execute(
            "SELECT item_key, kind FROM notes WHERE rater_id = ? AND kind IN ('skip', 'flag')", [self.rater.id]
        ).fetchall()
        self.skipped = {k for k, kind in notes if kind == "skip"}
        self.flagged = {k for k, kind in notes if kind == "flag"}

    # --- where we are --------------------------------------------------------------------

    def complete(self, index: int) -> bool:
        key = self.items[index].key
        return all((key, a) in self.mine for a in self.task.attribute_names)

    def resume_index(self) -> int:
        """The first item neither fully rated nor skipped (or the last item when all are done)."""
        for index, item in enumerate(self.items):
            if not self.complete(index) and item.key not in self.skipped:
                return index
        return len(self.items) - 1

    def first_unrated_attribute(self, index: int) -> int:
        key = self.items[index].key
        for position, name in enumerate(self.task.attribute_names):
            if (key, name) not in self.mine:
                return position
        return 0

    def value(self, index: int, attribute: str) -> float | None:
        found = self.mine.get((self.items[index].key, attribute))
        return found[1] if found else None

    def find(self, query: str) -> int | None:
        """An item by its 1-based position or its id."""
        query = query.strip()
        if query.isdigit() and 1 <= int(query) <= len(self.items):
            return int(query) - 1
        for index, item in enumerate(self.items):
            if item.id == query:
                return index
        return None

    # --- changes (each one committed before it returns) -----------------------------------

    def save(self, change: Callable[[], T], lock_wait: float) -> T:
        """Run one change (``rate``, ``undo``, ``note``, ``review``) as one transaction, committed before
        this returns.

        The write lock is taken here, waiting at most ``lock_wait`` seconds (else ``StudyLocked``), so the
        caller can say that it waits and ask again. Any failure (disk full ...) rolls the transaction back
        and leaves this session's view (its ratings, undo stack, notes) as it was: the same change can be
        tried again as it is, and nothing uncommitted is ever reported as saved.
        """
        conn = self.study.db.conn
        if conn.in_transaction:  # left open by a failed COMMIT: a new change must never join it
            conn.execute("ROLLBACK")
        before = (dict(self.mine), list(self.undo_stack), set(self.skipped), set(self.flagged))
        conn.execute(f"PRAGMA busy_timeout = {int(lock_wait * 1000)}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise StudyLocked(str(exc)) from None
            raise
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        try:
            result = change()  # its store calls join this transaction (``db.write`` nests)
            conn.execute("COMMIT")
        except BaseException:
            self.mine, self.undo_stack, self.skipped, self.flagged = before
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    def rate(
        self, index: int, attribute: str, value: float, seconds: float | None = None, revises: int | None = None
    ) -> int:
        scale = self.task.attribute(attribute).scale
        if not scale.contains(value):
            raise UserError(f"{value:g} is off the scale ({scale.describe()})")
        item = self.items[index]
        previous = self.mine.get((item.key, attribute))
        rating_id = self.study.add_rating(
            item.key, attribute, self.rater.id, value, parse_status="human", seconds=seconds, revises=revises
        )
        self.mine[(item.key, attribute)] = (rating_id, value)
        self.undo_stack.append(Undo(index, attribute, rating_id, previous[1] if previous else None))
        return rating_id

    def undo(self) -> Undo | None:
        """Retract this session's last rating; the earlier rating (if any) is in force again."""
        if not self.undo_stack:
            return None
        last = self.undo_stack.pop()
        self.study.retract_rating(last.rating_id)
        self.reload()
        return last

    def note(
        self, index: int, kind: str, text: str | None = None, attribute: str | None = None, rating_id: int | None = None
    ) -> None:
        key = self.items[index].key
        self.study.add_note(key, self.rater.id, kind, text, attribute, rating_id)
        if kind == "skip":
            self.skipped.add(key)
        elif kind == "flag":
            self.flagged.add(key)

    # --- reveal mode (Chiang & Lee App. C.3.2) ---------------------------------------------

    def others(self, index: int, study: Study | None = None) -> dict[str, list[OtherRating]]:
        """Other raters' ratings of an item, per attribute, with any LLM reply as its explanation.

        ``study``: another connection to the same file, so the app can read while its saves wait.
        """
        rows = (
            (study or self.study)
            .db.conn.execute(
                "SELECT r.attribute, ra.name, ra.kind, r.value, r.sample, r.raw FROM ratings r "
                "JOIN raters ra ON ra.id = r.rater_id WHERE r.item_key = ? AND r.rater_id != ? AND r.retracted = 0 "
                "ORDER BY r.attribute, ra.kind, ra.name, r.sample",
                [self.items[index].key, self.rater.id],
            )
            .fetchall()
        )
        found: dict[str, list[OtherRating]] = {}
        for attribute, name, kind, value, sample, raw in rows:
            found.setdefault(attribute, []).append(OtherRating(name, kind, value, sample, raw))
        return found

    def rating_id(self, index: int, attribute: str) -> int | None:
        found = self.mine.get((self.items[index].key, attribute))
        return found[0] if found else None

    def review(self, index: int, attribute: str, verdict: str, comment: str = "") -> None:
        """Record agree / disagree (+ comment) with the revealed ratings of one attribute."""
        text = json.dumps({"verdict": verdict, "comment": comment})
        self.note(index, "review", text, attribute, self.rating_id(index, attribute))

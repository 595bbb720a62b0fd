"""One annotator's session on one task: item order, resume point, ratings, undo, notes.

The session is a list of *showings*: each item once, and with ``--retest`` a share of them a second
time, blind and spaced (``store/retest.py``), in a plan stored in the file so a restart continues it.
A showing's key is the item's key for its first showing and ``RetestShowing(key)`` for its retest:
the app keeps what it shows per showing, so a retest starts empty whatever the first rating was.

No Textual here: the app calls these methods from a worker thread and renders the results.
Every rating is committed before ``rate`` returns, so a crash loses nothing acknowledged. The app
runs each change through ``save`` instead: one transaction whose lock wait it controls, so that it
can show that it waits and keep trying rather than give up.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tui_rater.domain import protocols
from tui_rater.domain.errors import StudyLocked, UserError
from tui_rater.domain.protocols import derive_seed
from tui_rater.domain.tasks import Task
from tui_rater.domain.values import Item, ItemHead, OtherRating, Rater, RetestShowing, ShowingKey
from tui_rater.store.allocations import load_allocation
from tui_rater.store.db import BUSY_TIMEOUT_S, utc_now, write
from tui_rater.store.item_texts import ItemTexts
from tui_rater.store.plans import Showing, load_plan, save_plan
from tui_rater.store.retest import (
    RETEST_NOTE,
    RETEST_SPACING,
    choose_retests,
    recent_items,
    retest_order,
    retested_items,
)
from tui_rater.store.study import Study, ratings_in_force
from tui_rater.store.team import TeamPlan, assignments, check_member, claim, gold_keys, load_team_plan, others_per_item

T = TypeVar("T")

ORDERS = ("imported", "random", "grouped", "uncertain", "allocated")
READ_BEHIND, READ_AHEAD = 2, 8  # the showings around the one on screen whose texts are held (``read_ahead``)


Ratings = dict[tuple[int, str], tuple[int, float]]


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in str(exc) or "busy" in str(exc)


def commit_change(conn: sqlite3.Connection, change: Callable[[], T], lock_wait: float) -> T:
    """Run ``change`` as one transaction, committed before this returns (``AnnotationSession.save``).

    The write lock is waited for at most ``lock_wait`` seconds (else ``StudyLocked``); any failure rolls back.
    """
    if conn.in_transaction:  # left open by a failed COMMIT: a new change must never join it
        conn.execute("ROLLBACK")
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
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def commit_in_place(study: Study, change: Callable[[], T], lock_wait: float) -> T:
    """``commit_change``, only while the study's path still names the file this connection holds
    (``StudyMoved`` otherwise): a session never commits into a journal nobody reads again, and never reports
    as saved what is not in the study under its name. After the commit, a passive checkpoint copies it from
    the ``-wal`` (kept by name) into the file itself, so that a rename after this returns strands nothing."""
    study.check_still_named()
    result = commit_change(study._db.conn, change, lock_wait)
    with contextlib.suppress(sqlite3.Error):  # committed either way: a checkpoint that cannot run now is no failure
        study._db.conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    study.check_still_named()
    return result


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
    retest: float = 0.0  # the share of the items shown a second time (0: none)
    spacing: int = RETEST_SPACING  # a retest never comes within this many showings of the item
    # the item of each showing, in order, without its texts: those are read when shown (``item``)
    items: list[ItemHead] = field(default_factory=list)
    is_retest: list[bool] = field(default_factory=list)  # per showing: the item's second, blind showing
    # (item_key, attribute) -> (rating id, value) of this annotator's ratings in force
    mine: Ratings = field(default_factory=dict)
    # the same for their retest ratings (never in force: the first rating stays the rating)
    retested: Ratings = field(default_factory=dict)
    skipped: set[ShowingKey] = field(default_factory=set)
    flagged: set[ShowingKey] = field(default_factory=set)
    # item key -> (note id, text) of this annotator's comment in force on the item
    comments: dict[int, tuple[int, str]] = field(default_factory=dict)
    undo_stack: list[Undo] = field(default_factory=list)
    uncertain_plan: int | None = None  # the stored plan of --order uncertain this session follows
    # a team plan (``tui-rater assign``): this annotator's gold items; in the dynamic mode, K and the lease
    per_item: int = 0  # 0: not the dynamic mode
    lease_s: float = 0.0
    gold: set[int] = field(default_factory=set)
    taken: set[int] = field(default_factory=set)  # dynamic: items K others got first (not shown any more)
    team_plan: TeamPlan | None = None
    rater: Rater = field(init=False)  # set by ``open``
    texts: ItemTexts | None = field(default=None, repr=False)  # the shown items' texts (``item``)

    @classmethod
    def open(
        cls,
        study: Study,
        task_name: str,
        annotator: str,
        order: str = "imported",
        seed: int = 0,
        *,
        retest: float = 0.0,
        spacing: int = RETEST_SPACING,
        replan: bool = False,
    ) -> AnnotationSession:
        if order not in ORDERS:
            raise UserError(f"--order must be one of {', '.join(ORDERS)}, not {order!r}")
        if not 0 <= retest <= 1:
            raise UserError(f"--retest takes the share of your rated items to show again, in (0, 1], not {retest:g}")
        if spacing < 1:
            raise UserError(f"--retest-spacing must be at least 1 item, not {spacing}")
        task = study.task(task_name)
        items = study.item_heads(task.name)
        if not items:
            raise UserError(f"{study.path} holds no items for task {task.name!r}; import some first")
        if protocols.one_item_per_annotator(task) and (retest or order == "uncertain"):
            what = "--retest" if retest else "--order uncertain"
            raise UserError(f"{what} does not apply to task {task.name!r}: each annotator rates one packet of it")
        plan = load_team_plan(study, task.name)
        if plan is not None:
            check_member(plan, annotator)  # before the rater is created: a refusal writes nothing
        if order == "allocated" and load_allocation(study, task.name) is None:
            raise UserError(
                f"no stratified draw is stored for task {task.name!r}: a lead draws one with "
                f"`tui-rater assign --task {task.name} --allocate M`"
            )
        session = cls(study, task, annotator, order, seed, retest, spacing)
        session.team_plan = plan
        session.rater = study.human(annotator)
        session.reload()
        gold: list[tuple[ItemHead, float]] = []
        if plan is not None:
            items, gold = session._team_stream(plan, items)
        if protocols.one_item_per_annotator(task):
            items = [session._spa_packet(items)]
        items = _with_gold(session._ordered(items), gold)
        showings = session._with_retests(items, replan) if retest else [(item, False) for item in items]
        session.items = [item for item, _ in showings]
        session.is_retest = [again for _, again in showings]
        session.read_ahead(session.resume_index())  # the first screen's item and its neighbours
        return session

    def _team_stream(
        self, plan: TeamPlan, items: list[ItemHead]
    ) -> tuple[list[ItemHead], list[tuple[ItemHead, float]]]:
        """A team plan's items for this annotator: their assigned items (fixed), or every item still short of
        K raters (dynamic); and their gold items with each one's place in the stream."""
        mine = assignments(self.study, self.task.name, self.rater.id)
        by_key = {item.key: item for item in items}
        gold = [(by_key[a.item_key], a.slot) for a in mine if a.gold and a.item_key in by_key]
        gold_items = gold_keys(self.study, self.task.name)
        self.gold = {item.key for item, _slot in gold}
        if plan.mode == "fixed":
            assigned = {a.item_key for a in mine if not a.gold}
            return [item for item in items if item.key in assigned], gold
        self.per_item, self.lease_s = plan.per_item, plan.lease_s
        started = {key for key, _attribute in self.mine} | {k for k in self.skipped if isinstance(k, int)}
        others = others_per_item(self.study, self.task.name, self.rater.id, time.time())
        regular = [
            item
            for item in items
            if item.key not in gold_items and (item.key in started or others.get(item.key, 0) < plan.per_item)
        ]
        return regular, gold

    @property
    def dynamic(self) -> bool:
        return self.per_item > 0

    def claim(self, index: int) -> bool:
        """Dynamic mode: take (or renew) the lease on this showing's item; False when K others are on it.
        Run it as a change (``save``): its transaction decides between two annotators' claims."""
        key = self.items[index].key
        if not self.dynamic or key in self.gold:
            return True
        granted = claim(self.study, key, self.rater.id, self.per_item, self.lease_s)
        if granted:
            self.taken.discard(key)
        else:
            self.taken.add(key)
        return granted

    def _spa_packet(self, items: list[ItemHead]) -> ItemHead:
        """SPA gives each annotator one packet: theirs if begun, else one nobody has rated yet."""
        rated = dict(
            self.study._db.conn.execute(
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

    def _ordered(self, items: list[ItemHead]) -> list[ItemHead]:
        if self.order == "uncertain":
            # drawn once by service/planning.py (it needs the judge's ratings and the statistics)
            plan = load_plan(self.study, self.rater.id, self.task.name, "uncertain")
            if plan is None:
                raise UserError(f"no uncertain order is planned for {self.annotator} on {self.task.name!r} yet")
            self.uncertain_plan = plan.id
            return _planned(items, [s.item_key for s in plan.showings])
        if self.order == "allocated":
            # the task's stratified draw (service/allocation.py), the same for everyone; only its items: a rating
            # of another item is no part of the stratified sample
            drawn = load_allocation(self.study, self.task.name)
            if drawn is None:  # checked in ``open``
                raise ValueError(f"no stratified draw for task {self.task.name!r}")
            by_key = {item.key: item for item in items}
            return [by_key[key] for key in drawn.drawn if key in by_key]
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

    def _with_retests(self, items: list[ItemHead], replan: bool) -> list[tuple[ItemHead, bool]]:
        """The showings with retests: the stored plan when it was made with these settings, else a new one."""
        settings = {"share": self.retest, "spacing": self.spacing, "seed": self.seed, "order": self.order}
        if self.order == "uncertain":
            settings["uncertain_plan"] = self.uncertain_plan
        plan = load_plan(self.study, self.rater.id, self.task.name, "retest")
        if plan is None or plan.settings != settings or replan:
            rng = random.Random(derive_seed(self.seed, self.annotator, self.task.name, "retest"))
            retested = retested_items(self.study, self.task.name, self.rater.id)
            chosen = choose_retests(sorted(i.key for i in items), self.retest, rng, retested)
            done = {i.key for i in items if self._complete(i.key, self.mine) or i.key in self.skipped}
            recent = recent_items(self.study, self.task.name, self.rater.id, self.spacing)
            order = retest_order([i.key for i in items], done, recent, chosen, self.spacing, rng)
            showings = [Showing(key, again) for key, again in order]
            plan = save_plan(self.study, self.rater.id, self.task.name, "retest", settings, showings)
        by_key = {item.key: item for item in items}
        planned = [(by_key[s.item_key], s.retest) for s in plan.showings if s.item_key in by_key]
        in_plan = {s.item_key for s in plan.showings}
        return planned + [(item, False) for item in items if item.key not in in_plan]  # imported since

    def reload(self) -> None:
        """Read this annotator's ratings and notes back from the file."""
        rows = self.study._db.conn.execute(
            "SELECT r.id, r.item_key, r.attribute, r.value, r.retest_of FROM ratings r "
            "JOIN items i ON i.key = r.item_key WHERE r.rater_id = ? AND i.task = ? AND r.retracted = 0 "
            "AND r.sample = 0 ORDER BY r.id",  # a person's rating under another sample is never in force (study.py)
            [self.rater.id, self.task.name],
        ).fetchall()
        self.mine = {
            (item, attribute): (rating_id, value) for rating_id, item, attribute, value, of in rows if of is None
        }
        self.retested = {(item, a): (rating_id, value) for rating_id, item, a, value, of in rows if of is not None}
        notes = self.study._db.conn.execute(
            "SELECT id, item_key, kind, text FROM notes WHERE rater_id = ? AND kind IN ('skip', 'flag', 'comment') "
            "AND retracted_at IS NULL ORDER BY id",  # a flag taken back, a comment replaced by its edit: not in force
            [self.rater.id],
        ).fetchall()
        keys = [(RetestShowing(k) if text == RETEST_NOTE else k, kind) for _id, k, kind, text in notes]
        self.skipped = {key for key, kind in keys if kind == "skip"}
        self.flagged = {key for key, kind in keys if kind == "flag"}
        self.comments = {k: (note_id, text or "") for note_id, k, kind, text in notes if kind == "comment"}

    # --- the items' texts, read when shown ---------------------------------------------------

    def item(self, index: int) -> Item:
        """The item of a showing, texts and all: held if read ahead, else read now (one row, by its key)."""
        return self._texts().get(self.items[index].key)

    def read_ahead(self, index: int) -> int:
        """Read the texts of the showings around ``index`` not held yet (a worker calls it after each move);
        returns how many items were read."""
        return self._texts().read_ahead(self._around(index))

    def needs_read_ahead(self, index: int) -> bool:
        return bool(self._texts().missing(self._around(index)))

    def _around(self, index: int) -> list[int]:
        window = range(max(0, index - READ_BEHIND), min(len(self.items), index + READ_AHEAD + 1))
        return list(dict.fromkeys(self.items[i].key for i in window))

    def _texts(self) -> ItemTexts:
        if self.texts is None:
            self.texts = ItemTexts(self.study.reopen())
        return self.texts

    def close_texts(self) -> None:
        if self.texts is not None:
            self.texts.close()
            self.texts = None

    # --- where we are --------------------------------------------------------------------

    def key(self, index: int) -> ShowingKey:
        """What the screen keeps this showing's answers and marks under."""
        item_key = self.items[index].key
        return RetestShowing(item_key) if self.is_retest[index] else item_key

    def _ratings(self, index: int) -> Ratings:
        return self.retested if self.is_retest[index] else self.mine

    def _complete(self, item_key: int, ratings: Ratings) -> bool:
        return all((item_key, a) in ratings for a in self.task.attribute_names)

    def complete(self, index: int) -> bool:
        return self._complete(self.items[index].key, self._ratings(index))

    def first_complete(self, index: int) -> bool:
        """Is the item of this showing rated (its first showing)? A retest is shown only then."""
        return self._complete(self.items[index].key, self.mine)

    def resume_index(self) -> int:
        """The first showing neither fully rated nor skipped (a retest: only once its item is rated),
        or the last showing when all are done."""
        for index in range(len(self.items)):
            if self.complete(index) or self.key(index) in self.skipped:
                continue
            if self.is_retest[index] and not self.first_complete(index):
                continue
            return index
        return len(self.items) - 1

    def first_unrated_attribute(self, index: int) -> int:
        key, ratings = self.items[index].key, self._ratings(index)
        for position, name in enumerate(self.task.attribute_names):
            if (key, name) not in ratings:
                return position
        return 0

    def saved_values(self) -> dict[tuple[ShowingKey, str], float]:
        """(showing key, attribute) -> value of every rating in force, first and retest: what the app shows."""
        values: dict[tuple[ShowingKey, str], float] = {key: value for key, (_id, value) in self.mine.items()}
        for (item_key, attribute), (_id, value) in self.retested.items():
            values[(RetestShowing(item_key), attribute)] = value
        return values

    def value(self, index: int, attribute: str) -> float | None:
        found = self._ratings(index).get((self.items[index].key, attribute))
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
        before = (dict(self.mine), dict(self.retested), list(self.undo_stack), set(self.skipped), set(self.flagged))
        try:
            return commit_in_place(self.study, change, lock_wait)
        except BaseException:
            self.mine, self.retested, self.undo_stack, self.skipped, self.flagged = before
            raise

    def rate(
        self, index: int, attribute: str, value: float, seconds: float | None = None, revises: int | None = None
    ) -> int:
        scale = self.task.attribute(attribute).scale
        if not scale.contains(value):
            raise UserError(f"{value:g} is off the scale ({scale.describe()})")
        item = self.items[index]
        if self.dynamic and item.key not in self.gold:  # each rating renews the lease (work is kept either way)
            claim(self.study, item.key, self.rater.id, self.per_item, self.lease_s)
        ratings, retest_of = self._ratings(index), None
        if self.is_retest[index]:
            first = self.mine.get((item.key, attribute))
            if first is None:  # (the app shows a retest only once its item is rated: this is the first rating)
                ratings = self.mine
            else:
                retest_of = first[0]
        previous = ratings.get((item.key, attribute))
        rating_id = self.study.add_rating(
            item.key,
            attribute,
            self.rater.id,
            value,
            parse_status="human",
            seconds=seconds,
            revises=revises,
            retest_of=retest_of,
        )
        ratings[(item.key, attribute)] = (rating_id, value)
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
        if self.is_retest[index] and kind in ("skip", "flag"):
            text = RETEST_NOTE  # a mark of the retest showing, not of the item's first showing
        self.study.add_note(self.items[index].key, self.rater.id, kind, text, attribute, rating_id)
        if kind == "skip":
            self.skipped.add(self.key(index))
        elif kind == "flag":
            self.flagged.add(self.key(index))

    def unflag(self, index: int) -> int:
        """Take back this showing's flag: the note stays in the file, marked when it was taken back
        (``retracted_at``); a flag of the item's retest showing is another showing's. Returns how many."""
        retest = self.is_retest[index]
        with write(self.study._db) as conn:
            cur = conn.execute(
                "UPDATE notes SET retracted_at = ? WHERE rater_id = ? AND item_key = ? AND kind = 'flag' "
                f"AND retracted_at IS NULL AND {'text = ?' if retest else '(text IS NULL OR text != ?)'}",
                [utc_now(), self.rater.id, self.items[index].key, RETEST_NOTE],
            )
        self.flagged.discard(self.key(index))
        return cur.rowcount

    def comment(self, index: int, text: str) -> int | None:
        """Comment on the item, or edit the comment in force: the edit is a new note that names the one it
        replaces (``supersedes``), which is kept, marked replaced (``retracted_at``). An empty edit removes the
        comment (only marked). Returns the new note's id (None: removed)."""
        item_key = self.items[index].key
        previous = self.comments.get(item_key)
        note_id = None
        with write(self.study._db) as conn:
            if previous is not None:
                conn.execute("UPDATE notes SET retracted_at = ? WHERE id = ?", [utc_now(), previous[0]])
            if text:
                note_id = self.study.add_note(
                    item_key, self.rater.id, "comment", text, supersedes=previous[0] if previous else None
                )
        if note_id is None:
            self.comments.pop(item_key, None)
        else:
            self.comments[item_key] = (note_id, text)
        return note_id

    # --- reveal mode (Chiang & Lee App. C.3.2) ---------------------------------------------

    def others(self, index: int, study: Study | None = None) -> dict[str, list[OtherRating]]:
        """Other raters' ratings of an item, per attribute, with any LLM reply as its explanation.

        ``study``: another connection to the same file, so the app can read while its saves wait.
        """
        rows = (
            (study or self.study)
            ._db.conn.execute(
                # the ratings in force: a rating someone changed is not shown beside the one that replaced it
                f"SELECT r.attribute, ra.label, ra.kind, r.value, r.sample, r.raw FROM {ratings_in_force(True)} "
                "WHERE r.rater_id != ? ORDER BY r.attribute, ra.kind, ra.label, r.sample",
                [self.items[index].key, self.rater.id],
            )
            .fetchall()
        )
        found: dict[str, list[OtherRating]] = {}
        for attribute, name, kind, value, sample, raw in rows:
            found.setdefault(attribute, []).append(OtherRating(name, kind, value, sample, raw))
        return found

    def rating_id(self, index: int, attribute: str) -> int | None:
        found = self._ratings(index).get((self.items[index].key, attribute))
        return found[0] if found else None

    def review(self, index: int, attribute: str, verdict: str, comment: str = "") -> None:
        """Record agree / disagree (+ comment) with the revealed ratings of one attribute."""
        text = json.dumps({"verdict": verdict, "comment": comment})
        self.note(index, "review", text, attribute, self.rating_id(index, attribute))


def _with_gold(items: list[ItemHead], gold: list[tuple[ItemHead, float]]) -> list[ItemHead]:
    """Gold items mixed into the stream, each at its drawn place (a share of the way through)."""
    stream = list(items)
    for offset, (item, slot) in enumerate(sorted(gold, key=lambda g: g[1])):
        stream.insert(min(len(stream), int(slot * (len(items) + 1)) + offset), item)
    return stream


def _planned(items: list[ItemHead], keys: list[int]) -> list[ItemHead]:
    """``items`` in a stored plan's order; items imported since the plan was made come last."""
    by_key = {item.key: item for item in items}
    planned = [by_key[key] for key in keys if key in by_key]
    in_plan = set(keys)
    return planned + [item for item in items if item.key not in in_plan]

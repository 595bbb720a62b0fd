"""A study file: items, raters, ratings and notes, through sqlite-utils (imported at the first write or query: a
command that only reads counts, `info`, never waits for it).

Every method that writes commits before it returns (see ``db.write``).
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Task, TaskRegistry, definition_change, load_task_file, task_from_definition
from tui_rater.domain.values import ChangeMarker, Item, ItemHead, Rater
from tui_rater.store.db import (
    StudyConnection,
    check_still_named,
    connect,
    file_identity,
    inserted_id,
    utc_now,
    write,
)
from tui_rater.store.labels import is_configured, judge_label
from tui_rater.store.ratings import NewRating, insert_ratings, newest_change, record_changes


# The one definition of "the ratings in force" (a FROM clause, aliases r, i, ra): not retracted,
# not a retest (a blind second rating never replaces the first: store/retest.py reads those), and
# for each (item, attribute, rater, presentation, sample) the latest -- a changed mind replaces,
# undo retracts. Samples are a judge's repeated readings: a person rates an item once (sample 0), and
# a person's rating under another sample (earlier versions' import-ratings took them) is never in force -- else every
# table would keep one of the two, by row order (``stray_human_samples`` counts them, the report says so).
def ratings_in_force(of_one_item: bool = False) -> str:
    """The FROM clause; ``of_one_item``: only the item bound to its first ``?`` (the reveal reads one item:
    grouping the whole table costs 0.1 s at 100k ratings)."""
    item = "item_key = ? AND " if of_one_item else ""
    return f"""ratings r
    JOIN (SELECT max(id) AS id FROM ratings WHERE {item}retracted = 0 AND retest_of IS NULL
                 AND (sample = 0 OR rater_id NOT IN (SELECT id FROM raters WHERE kind = 'human'))
          GROUP BY item_key, attribute, rater_id, presentation, sample) latest ON latest.id = r.id
    JOIN items i ON i.key = r.item_key
    JOIN raters ra ON ra.id = r.rater_id"""


RATINGS_IN_FORCE = ratings_in_force()
ADJUDICATOR_SUFFIX = " (adjudicator)"  # an adjudicator's rater is NAME (adjudicator): ``Study.adjudicator``


def content_hash(task: str, system: str | None, fields: dict[str, str]) -> str:
    payload = json.dumps({"task": task, "system": system, "fields": fields}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


_ITEM_COLUMNS = "key, id, task, system, fields, position"
_decode_fields = json.JSONDecoder().decode


def _item(row: tuple[Any, ...]) -> Item:
    """An item from a row of ``SELECT {_ITEM_COLUMNS}``.

    The names repeated across items (task, system, field names) are interned: one string each,
    not one per item (about 20 MB less for 100,000 items in the app).
    """
    key, item_id, task, system, fields, position = row
    names = {sys.intern(name): text for name, text in _decode_fields(fields).items()}
    return Item(key, item_id, sys.intern(task), sys.intern(system) if system else system, names, position)


class Study:
    """One study file. Thread-safe for one thread at a time; open one per worker thread."""

    def __init__(
        self, db: StudyConnection, path: str | Path, task_files: list[str] | None = None, readonly: bool = False
    ):
        self._db = db
        self.path = Path(path)
        self._task_files = task_files or []
        self._registry: TaskRegistry | None = None
        self.readonly = readonly  # opened by a command that only reads (see ``db.connect``)
        self.identity = file_identity(self.path)  # the file its name named at open (``check_still_named``)
        # the last change marker, with the connection and the file's state it was read at (``change_marker``)
        self._marker: tuple[sqlite3.Connection, tuple[int, int], ChangeMarker] | None = None

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        create: bool = True,
        shared: bool = False,
        task_files: list[str] | None = None,
        durable: bool = True,
        readonly: bool = False,
    ) -> Study:
        db = connect(path, create=create, shared=shared, durable=durable, readonly=readonly)
        return cls(db, path, task_files, readonly)

    @property
    def task_files(self) -> list[str]:
        """The task files it was opened with (another process opens the study with them: the pane's worker)."""
        return list(self._task_files)

    def reopen(self) -> Study:
        """A new connection to the same file (for another thread)."""
        return Study.open(self.path, create=False, task_files=self._task_files, readonly=self.readonly)

    def close(self) -> None:
        self._db.conn.close()

    def check_still_named(self) -> None:
        """``StudyMoved`` when the study's path no longer names the file this connection holds."""
        check_still_named(self.path, self.identity)

    def discard_if_empty(self) -> None:
        """Close, and remove the file when it holds nothing (no item, rater or task): what a failed first
        import created. A file with anything in it, perhaps another process's, is left as it is."""
        try:
            held = self._db.conn.execute(
                "SELECT (SELECT count(*) FROM items) + (SELECT count(*) FROM raters) + (SELECT count(*) FROM tasks)"
            ).fetchone()[0]
        except sqlite3.Error:
            held = 1
        self.close()
        if held == 0 and str(self.path) != ":memory:":
            for name in (str(self.path), f"{self.path}-wal", f"{self.path}-shm"):
                Path(name).unlink(missing_ok=True)

    # --- tasks ---------------------------------------------------------------------------

    @property
    def tasks(self) -> TaskRegistry:
        if self._registry is None:
            definitions = [
                json.loads(row["definition"]) for row in self._db.query("SELECT definition FROM tasks ORDER BY name")
            ]
            stored: list[Task] = []
            unusable: dict[str, UserError] = {}
            for definition in definitions:
                try:
                    stored.append(task_from_definition(definition))
                except UserError as exc:  # one task's missing protocol package must not lock the study's others
                    unusable[str(definition.get("name"))] = exc
            from_files = [task for path in self._task_files for task in load_task_file(path)]
            # a file overrides the stored copy, as `import` would store it: not a rated task's other definition
            by_name = {str(definition.get("name")): definition for definition in definitions}
            for task in from_files:
                if task.name in by_name and task.definition is not None:
                    self._check_redefinition(task, by_name[task.name])
            self._registry = TaskRegistry(stored + from_files, unusable)
        return self._registry

    def _check_redefinition(self, task: Task, stored: Any) -> None:
        """A task's stored definition is replaced (or read as another) only while nobody has rated the task:
        ratings of 5 must never end up on a 1-3 scale, nor a renamed question's ratings vanish from the report."""
        if task.definition is None or stored == task.definition:
            return
        rated = self._db.conn.execute(
            "SELECT count(*) FROM ratings WHERE item_key IN (SELECT key FROM items WHERE task = ?)", [task.name]
        ).fetchone()[0]
        if rated:
            change = definition_change(stored, task.definition)
            raise UserError(
                f"task {task.name!r} in the study has {rated} rating(s) under another definition ({change}); "
                "keep its task file as it was, or give the changed task a new name (the study is unchanged)"
            )

    def task(self, name: str) -> Task:
        return self.tasks.get(name)

    def remember_task(self, task: Task) -> None:
        """Store a custom task's definition with the items that use it (inside the caller's write).

        A stored definition that differs is replaced only while nobody has rated the task: ratings of
        5 must never end up on a 1-3 scale, nor a renamed question's ratings vanish from the report.
        """
        if task.builtin or task.definition is None:
            return
        row = self._db.conn.execute("SELECT definition FROM tasks WHERE name = ?", [task.name]).fetchone()
        if row is not None:
            self._check_redefinition(task, json.loads(row[0]))
        self._db.conn.execute(
            "INSERT INTO tasks (name, definition, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET definition = excluded.definition",
            (task.name, json.dumps(task.definition, ensure_ascii=False), utc_now()),
        )
        self._registry = None

    # --- items ---------------------------------------------------------------------------

    def item(self, key: int) -> Item:
        row = self._db.conn.execute(f"SELECT {_ITEM_COLUMNS} FROM items WHERE key = ?", [key]).fetchone()
        if row is None:
            raise KeyError(key)
        return _item(row)

    def item_by_id(self, task: str | None, item_id: str) -> list[Item]:
        if task:
            sql, params = f"SELECT {_ITEM_COLUMNS} FROM items WHERE id = ? AND task = ?", [item_id, task]
        else:
            sql, params = f"SELECT {_ITEM_COLUMNS} FROM items WHERE id = ?", [item_id]
        return [_item(r) for r in self._db.conn.execute(sql, params)]

    def items(self, task: str | None = None) -> list[Item]:
        if task:
            rows = self._db.conn.execute(f"SELECT {_ITEM_COLUMNS} FROM items WHERE task = ? ORDER BY position", [task])
        else:
            rows = self._db.conn.execute(f"SELECT {_ITEM_COLUMNS} FROM items ORDER BY task, position")
        return [_item(r) for r in rows]

    def item_heads(self, task: str) -> list[ItemHead]:
        """The task's items in import order, without their texts (20,000 stories' texts are ~40 MB)."""
        rows = self._db.conn.execute(
            "SELECT key, id, system, position FROM items WHERE task = ? ORDER BY position", [task]
        )
        name = sys.intern(task)
        return [
            ItemHead(key, item_id, name, sys.intern(system) if system else system, at)
            for key, item_id, system, at in rows
        ]

    def items_of(self, keys: Sequence[int]) -> dict[int, Item]:
        """The items with these keys, texts and all (keys not in the study are left out)."""
        found: dict[int, Item] = {}
        for start in range(0, len(keys), 500):  # (SQLite's limit on bound values is 32,766 since 3.32; 999 before)
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for row in self._db.conn.execute(f"SELECT {_ITEM_COLUMNS} FROM items WHERE key IN ({marks})", chunk):
                found[row[0]] = _item(row)
        return found

    def longest_items(self, task: str, count: int, first: int | None = None) -> list[Item]:
        """The ``count`` items with the most text among the task's first ``first`` (import order; None: all),
        longest first -- chosen in SQL, so that 100,000 items are not loaded to keep 8."""
        keys = [
            r[0]
            for r in self._db.conn.execute(
                "SELECT key FROM (SELECT key, position, fields FROM items WHERE task = ? ORDER BY position, key "
                "LIMIT ?) ORDER BY length(CAST(fields AS BLOB)) DESC, position, key LIMIT ?",
                [task, -1 if first is None else first, count],
            )
        ]
        return [self.item(key) for key in keys]

    def item_task_names(self) -> list[str]:
        return [r["task"] for r in self._db.query("SELECT DISTINCT task FROM items ORDER BY task")]

    def add_items(
        self, task: Task, rows: Iterable[dict[str, Any]], source: str = "", *, new_task: bool = False
    ) -> tuple[int, int]:
        """Insert validated item rows atomically; return (added, already present).

        Each row has ``id`` (or None), ``system`` (or None) and the task's fields. Re-adding an
        identical item is a no-op; the same id with different text is refused, whole file.
        ``new_task``: the task must have no items yet, checked inside the write (two ``spa setup``
        runs at once: the second is refused rather than overwriting the first one's definition).
        """
        return self.add_item_batches(task, [list(rows)], source, new_task=new_task)

    def add_item_batches(
        self, task: Task, batches: Iterable[list[dict[str, Any]]], source: str = "", *, new_task: bool = False
    ) -> tuple[int, int]:
        """``add_items`` over batches of rows read as they are written, all in one transaction: a batch that
        raises (a bad row, an id already stored with another text) rolls back every one before it."""
        added = skipped = 0
        now = utc_now()
        with write(self._db) as conn:
            if new_task and conn.execute("SELECT 1 FROM items WHERE task = ? LIMIT 1", [task.name]).fetchone():
                raise UserError(f"the study already has items in task {task.name!r}; choose another name")
            self.remember_task(task)
            position = conn.execute(
                "SELECT coalesce(max(position), -1) + 1 FROM items WHERE task = ?", [task.name]
            ).fetchone()[0]
            for rows in batches:
                for row in rows:
                    fields = {name: row[name] for name in task.fields}
                    digest = content_hash(task.name, row.get("system"), fields)
                    item_id = row.get("id") or digest[:12]
                    existing = conn.execute(
                        "SELECT content_hash FROM items WHERE task = ? AND id = ?", [task.name, item_id]
                    ).fetchone()
                    if existing:
                        if existing[0] != digest:
                            raise UserError(
                                f"{source or 'input'}, row {row.get('_row', '?')}: item id {item_id!r} is already "
                                f"in the study with a different text or system (nothing was imported)"
                            )
                        skipped += 1
                        continue
                    conn.execute(
                        "INSERT INTO items (id, task, system, fields, position, content_hash, source, created_at) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [
                            item_id,
                            task.name,
                            row.get("system"),
                            json.dumps(fields, ensure_ascii=False),
                            position,
                            digest,
                            source,
                            now,
                        ],
                    )
                    position += 1
                    added += 1
                for row in rows:
                    if row.get("_gold"):  # a gold item's known answers (``store/team.py``), apart from any rating
                        digest = content_hash(task.name, row.get("system"), {n: row[n] for n in task.fields})
                        (key,) = conn.execute(
                            "SELECT key FROM items WHERE task = ? AND id = ?", [task.name, row.get("id") or digest[:12]]
                        ).fetchone()
                        conn.executemany(
                            "INSERT OR REPLACE INTO gold (item_key, attribute, value) VALUES (?, ?, ?)",
                            [(key, attribute, value) for attribute, value in row["_gold"].items()],
                        )
        return added, skipped

    # --- raters --------------------------------------------------------------------------

    def human(self, name: str) -> Rater:
        return self._rater(name, "human", None)

    def judge(self, name: str, config: dict[str, Any]) -> Rater:
        return self._rater(name, "llm", config)

    def existing_judge(self, name: str, config: dict[str, Any]) -> Rater | None:
        """The judge ``judge(name, config)`` would return, or None where it would create one: nothing is written
        (a command that finds nothing to do leaves the study as it was)."""
        config_hash = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()
        row = self._db.conn.execute("SELECT id, kind, label FROM raters WHERE name = ?", [name]).fetchone()
        if row is None:
            row = self._db.conn.execute(
                "SELECT id, kind, label, name FROM raters WHERE config_hash = ?", [config_hash]
            ).fetchone()
            if row is None:
                return None
            name = row[3]
        return Rater(row[0], name, "llm", config, row[2]) if row[1] == "llm" else None

    def adjudicator(self, name: str) -> Rater:
        """Whom ``tui-rater adjudicate`` stores NAME's decisions under: ``NAME (adjudicator)``, a rater of its own
        kind, apart from NAME's own ratings as an annotator (and never counted as one)."""
        if not name or not name.strip():
            raise UserError("an adjudicator needs a non-empty name")
        return self._rater(name.strip() + ADJUDICATOR_SUFFIX, "adjudicator", None)

    def _rater(self, name: str, kind: str, config: dict[str, Any] | None) -> Rater:
        if not name or not name.strip():
            raise UserError("a rater needs a non-empty name")
        config_json = json.dumps(config, sort_keys=True) if config is not None else None
        config_hash = hashlib.sha256(config_json.encode()).hexdigest() if config_json else None
        with write(self._db) as conn:
            row = conn.execute("SELECT id, kind, config_hash, label FROM raters WHERE name = ?", [name]).fetchone()
            if row is None:
                if config_hash:
                    same = conn.execute(
                        "SELECT id, name, label FROM raters WHERE config_hash = ?", [config_hash]
                    ).fetchone()
                    if same:
                        return Rater(same[0], same[1], kind, config, same[2])
                label = self._new_label(conn, name, kind, config)
                cur = conn.execute(
                    "INSERT INTO raters (name, kind, config, config_hash, created_at, label) VALUES (?, ?, ?, ?, ?, ?)",
                    [name, kind, config_json, config_hash, utc_now(), label],
                )
                return Rater(inserted_id(cur), name, kind, config, label)
            if row[1] != kind:
                raise UserError(f"rater {name!r} already exists, of kind {row[1]!r}, not {kind!r}")
            return Rater(row[0], name, kind, config, row[3])

    @staticmethod
    def _new_label(conn: sqlite3.Connection, name: str, kind: str, config: dict[str, Any] | None) -> str:
        """A new rater's label (``store/labels.py``): unique, and never taken from a judge that has it."""
        taken = {label for (label,) in conn.execute("SELECT label FROM raters WHERE label IS NOT NULL")}
        if not is_configured(kind, config):
            if name in taken:
                raise UserError(f"{name!r} is already the label of a judge in this study; choose another name")
            return name
        labels = [
            label
            for (label,) in conn.execute(
                "SELECT label FROM raters WHERE kind = 'llm' AND json_valid(config) AND json_type(config) = 'object' "
                "AND json_type(config, '$.backend') = 'text'"
            )
        ]
        # after a judge was forgotten (`judges --forget`) the count is lower than the highest number in use
        numbers = [int(m[1]) for label in labels if label and (m := re.match(r"J(\d+) ", label))]
        return judge_label(max([len(labels), *numbers]) + 1, config or {}, name, taken)

    def raters(self, kind: str | None = None) -> list[Rater]:
        sql = "SELECT * FROM raters" + (" WHERE kind = ?" if kind else "") + " ORDER BY id"
        return [
            Rater(r["id"], r["name"], r["kind"], json.loads(r["config"]) if r["config"] else None, r["label"] or "")
            for r in self._db.query(sql, [kind] if kind else [])
        ]

    # --- ratings -------------------------------------------------------------------------

    def add_rating(
        self,
        item_key: int,
        attribute: str,
        rater_id: int,
        value: float | None,
        *,
        sample: int = 0,
        raw: str | None = None,
        parse_status: str = "ok",
        seconds: float | None = None,
        revises: int | None = None,
        details: dict[str, Any] | None = None,
        retest_of: int | None = None,
    ) -> int:
        """``retest_of``: the id of the rating this one repeats, blind (a test-retest rating, never in force)."""
        rating = NewRating(
            item_key,
            attribute,
            rater_id,
            value,
            utc_now(),
            sample=sample,
            raw=raw,
            parse_status=parse_status,
            seconds=seconds,
            revises=revises,
            details=details,
            retest_of=retest_of,
        )
        with write(self._db) as conn:
            rating_id = insert_ratings(conn, [rating])
        assert rating_id is not None
        return rating_id

    def retract_rating(self, rating_id: int) -> None:
        with write(self._db) as conn:
            conn.execute("UPDATE ratings SET retracted = 1 WHERE id = ?", [rating_id])

    def add_note(
        self,
        item_key: int,
        rater_id: int,
        kind: str,
        text: str | None = None,
        attribute: str | None = None,
        rating_id: int | None = None,
        supersedes: int | None = None,
    ) -> int:
        """``supersedes``: the note this one replaces (an edited comment; ``AnnotationSession.comment``)."""
        with write(self._db) as conn:
            cur = conn.execute(
                "INSERT INTO notes (item_key, rater_id, kind, attribute, rating_id, text, created_at, supersedes) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [item_key, rater_id, kind, attribute, rating_id, text, utc_now(), supersedes],
            )
            return inserted_id(cur)

    def stray_human_samples(self, task: str | None = None) -> dict[str, int]:
        """Per annotator, how many (item, attribute) they hold ratings of under a sample other than 0: none is
        in force (``RATINGS_IN_FORCE``)."""
        rows = self._db.conn.execute(
            f"""SELECT ra.name, count(DISTINCT r.item_key || ' ' || r.attribute) FROM ratings r
                JOIN raters ra ON ra.id = r.rater_id JOIN items i ON i.key = r.item_key
                WHERE ra.kind = 'human' AND r.sample != 0 AND r.retracted = 0 AND r.retest_of IS NULL
                {"AND i.task = ?" if task else ""} GROUP BY ra.name ORDER BY ra.name""",
            [task] if task else [],
        )
        return dict(rows.fetchall())

    def current_ratings(self, task: str | None = None) -> list[dict[str, Any]]:
        """The ratings in force: not retracted, and the latest per (item, attribute, rater, sample)."""
        sql = f"""
            SELECT r.id, i.key AS item_key, i.id AS item, i.task, i.system, r.attribute,
                   ra.name AS rater, ra.kind, r.presentation, r.sample, r.value, r.raw, r.parse_status,
                   r.seconds, r.created_at, r.details
            FROM {RATINGS_IN_FORCE}
            {"WHERE i.task = ?" if task else ""}
            ORDER BY i.task, i.position, r.attribute, ra.id, r.presentation, r.sample
        """
        return list(self._db.query(sql, [task] if task else []))

    # --- judge replies (reparse) ---------------------------------------------------------

    def judgements(self) -> list[dict[str, Any]]:
        """Every rating a judge produced through the queue, with what is needed to read it again."""
        return [
            dict(r)
            for r in self._db.query(
                """SELECT r.id, r.job_id, r.item_key, i.task, r.attribute, r.presentation, r.sample, r.value,
                          r.raw, r.parse_status, r.details, ra.config
                   FROM ratings r JOIN items i ON i.key = r.item_key JOIN raters ra ON ra.id = r.rater_id
                   WHERE ra.kind = 'llm' AND r.job_id IS NOT NULL AND r.retracted = 0
                   ORDER BY r.job_id, r.attribute, r.sample"""
            )
        ]

    def update_judgements(self, changes: list[tuple[int, float | None, str, dict[str, Any]]]) -> None:
        """Store re-read values: (rating id, value, status, details), in one transaction."""
        with write(self._db) as conn:
            conn.executemany(
                "UPDATE ratings SET value = ?, parse_status = ?, details = ? WHERE id = ?",
                [(value, status, json.dumps(details), rating_id) for rating_id, value, status, details in changes],
            )
            # a change in place: recorded, so an open pane and the change marker see it (schema 15)
            record_changes(conn, [rating_id for rating_id, *_ in changes], "reparsed")

    def change_marker(self) -> ChangeMarker:
        """Changes when a rating, a judge job or a rater changes (the live pane recomputes only then).

        Asked every 2 s by an open pane (twice: its figures and the test-retest lines), and the counts below read
        every row of the ratings and jobs tables (0.12 s at 1.6M ratings: 10-15 % of a core while the app sat
        idle with the pane open). So the marker is kept with the file's state as this connection sees it:
        SQLite's ``data_version`` changes when another connection commits, and the connection's ``total_changes``
        when it writes itself; while both are the same, nothing in the file changed and the kept marker is it.
        (Not for a study opened read-only: it may be read ``immutable``, where SQLite tracks no other writer.)"""
        conn = self._db.conn
        (version,) = conn.execute("PRAGMA data_version").fetchone()
        state = (version, conn.total_changes)
        if not self.readonly and self._marker is not None and self._marker[0] is conn and self._marker[1] == state:
            return self._marker[2]
        ratings = conn.execute("SELECT count(*), max(id) FROM ratings WHERE retracted = 0").fetchone()
        # a rating rewritten in place (``reparse``) or voided changes no id: its record does (schema 15)
        ratings = (*ratings, newest_change(conn))
        jobs = conn.execute("SELECT count(*), max(updated_at) FROM jobs").fetchone()
        # a jury made or forgotten (``tui-rater jury``) changes what the pane shows without a rating changing
        raters = conn.execute("SELECT count(*), max(id) FROM raters").fetchone()
        marker = (*ratings, *jobs, *raters)
        # not kept when read inside a transaction: it counts rows not yet committed, and a rollback moves neither
        # data_version nor total_changes, so a kept one would outlive the rows it counted
        self._marker = None if conn.in_transaction else (conn, state, marker)
        return marker

    # --- summary -------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        # through the connection, as sqlite-utils' ``query`` reads rows (dicts by column name): `info` only reads
        # counts, and importing sqlite-utils was ~40 % of its time
        def q(sql: str) -> Iterator[dict[str, Any]]:
            cursor = self._db.conn.execute(sql)
            names = [column[0] for column in cursor.description]
            return (dict(zip(names, row, strict=True)) for row in cursor)

        return {
            "path": str(self.path),
            "items": [
                dict(r)
                for r in q(
                    "SELECT task, coalesce(system, '') AS system, count(*) AS n FROM items "
                    "GROUP BY task, system ORDER BY task, system"
                )
            ],
            "raters": [
                dict(r)
                for r in q(
                    "SELECT ra.name, ra.label, ra.kind, count(r.id) AS ratings FROM raters ra "
                    "LEFT JOIN ratings r ON r.rater_id = ra.id AND r.retracted = 0 "
                    "GROUP BY ra.id ORDER BY ra.kind, ra.name"
                )
            ],
            "ratings": next(q("SELECT count(*) AS n FROM ratings WHERE retracted = 0"))["n"],
            "jobs": {r["status"]: r["n"] for r in q("SELECT status, count(*) AS n FROM jobs GROUP BY status")},
        }


if TYPE_CHECKING:  # mypy checks that a Study is what the layers above see (domain/study_store.py)
    from tui_rater.domain.study_store import StudyStore

    def _a_study_is_a_study_store(study: Study) -> StudyStore:
        return study

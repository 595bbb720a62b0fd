"""`import-ratings`: a ratings file validated and written in batches, in one transaction (issue 35).

The file is read in batches (``row_stream``); each batch's items are found with one query per task through the
``UNIQUE (task, id)`` index -- a file without a ``task`` column used to look each row's item up by ``id`` alone,
which no index serves: a scan of every item per rating row, quadratic in the study (96k rows of a 6,000-item
study took 290 s). Only an item's key, id and task are read, never its texts. A rating given twice in the file is
found through a temporary table of the (item, question, rater, sample) keys seen, so that memory does not grow with
the file; a rating already stored with another value is remembered and reported once the whole file has been
validated, as before. Everything is written inside one write transaction: any problem rolls it all back, so a bad
file leaves the study as it was. The sentences are those of the row-by-row import this replaces.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Task
from tui_rater.store.db import utc_now, write
from tui_rater.store.ratings import insert_imported
from tui_rater.store.row_stream import stream_rows
from tui_rater.store.study import Study
from tui_rater.store.table_files import (
    IGNORED_RATING_COLUMNS,
    OPTIONAL_RATING_COLUMNS,
    RATING_COLUMNS,
    ImportResult,
    _sample,
    _text,
    _value,
)

_IN_CHUNK = 500  # bound values per IN (...) list (SQLite allowed 999 before 3.32)
_SEEN = "temp.tui_rater_import_seen"
_REST = ("attribute", "rater", "kind", "sample", "value")  # a row's columns besides its item (and task)


class _Rating(NamedTuple):  # (a tuple: made 1.6M times at 100k items, a frozen dataclass's __init__ cost twice)
    row: int
    item_id: str
    item_key: int
    attribute: str
    rater: str
    kind: str
    sample: int
    value: float


class _Where:
    """A row's place in the file ("PATH, row N"), written out only when a sentence about it is."""

    __slots__ = ("path", "row")

    def __init__(self, path: Path, row: int):
        self.path, self.row = path, row

    def __str__(self) -> str:
        return f"{self.path}, row {self.row}"


@dataclass
class _Importer:
    study: Study
    path: Path
    default_kind: str
    rater_kinds: dict[str, str]
    rater_ids: dict[str, int] = field(default_factory=dict)
    task_names: list[str] = field(default_factory=list)
    values: dict[tuple[str, str, type, Any], float] = field(default_factory=dict)
    person_answers: dict[tuple[str, str, float], bool] = field(default_factory=dict)
    rests: dict[tuple[Any, ...], tuple[str, str, str, int, float]] = field(default_factory=dict)
    attribute_names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    conflict: UserError | None = None
    added: int = 0
    skipped: int = 0

    def batch(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> None:
        items = self._items(conn, rows)
        ratings: list[_Rating] = []
        problem: UserError | None = None
        for row in rows:
            try:
                ratings.append(self._rating(row, items))
            except UserError as exc:
                problem = exc  # a second rating in an earlier row is the first problem of the file
                break
        self._check_repeats(conn, ratings)
        if problem is not None:
            raise problem
        self._write(conn, ratings)

    def _items(self, conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> dict[tuple[str | None, str], list[Any]]:
        """(task or None, item id) -> [(key, task), ...] for the batch's rows, read through ``UNIQUE (task, id)``."""
        wanted: dict[str | None, set[str]] = defaultdict(set)
        for row in rows:
            item, task = row.get("item"), row.get("task")
            if isinstance(item, (str, int)) and not isinstance(item, bool):
                task_name = task.strip() if isinstance(task, str) and task.strip() else None
                wanted[task_name].add(str(item).strip())
        found: dict[tuple[str | None, str], list[Any]] = defaultdict(list)
        for task_name, ids in wanted.items():
            for name in [task_name] if task_name else self.task_names:
                for key, item_id in _by_ids(conn, name, sorted(ids)):
                    found[(task_name, item_id)].append((key, name))
        return found

    def _rating(self, row: dict[str, Any], items: dict[tuple[str | None, str], list[Any]]) -> _Rating:
        path = self.path
        where = _Where(path, row["_row"])  # formatted only into a failing row's sentence
        item_id = _text(path, row, "item", required=True).strip()
        task_name = _text(path, row, "task", required=False) if "task" in row else None
        matches = items.get((task_name.strip() if task_name else None, item_id), [])
        if not matches:
            raise UserError(f"{where}, column 'item': no item {item_id!r} in the study (import the items first)")
        if len(matches) > 1:
            raise UserError(f"{where}, column 'item': {item_id!r} exists in several tasks; add a 'task' column")
        item_key, item_task = matches[0]
        # the rest of a row is one of a few combinations (a question, a rater, a value): each is checked once, in
        # the first row that has it, and its reading reused (checking them on every row was half the import's time)
        raw = tuple(map(row.get, _REST))
        key = (item_task, raw, tuple(map(type, raw)))  # (the types: 1, 1.0, True and "1" are four readings)
        try:
            rest = self.rests.get(key)
            keep = True
        except TypeError:  # a JSON Lines value that is a list or an object: checked in the row (one sentence)
            rest, keep = None, False
        if rest is None:
            rest = self._rest(row, where, self.study.tasks.get(item_task))
            if keep and len(self.rests) < 100_000:
                self.rests[key] = rest
        return _Rating(row["_row"], item_id, item_key, *rest)

    def _rest(self, row: dict[str, Any], where: _Where, task: Task) -> tuple[str, str, str, int, float]:
        """(question, rater, kind, sample, value) of a row, checked: one sentence for the first problem."""
        path = self.path
        attribute_name = _text(path, row, "attribute", required=True).strip()
        names = self.attribute_names.get(task.name)
        if names is None:  # a property building a tuple: once per task, not once per row
            names = self.attribute_names[task.name] = task.attribute_names
        if attribute_name not in names:
            raise UserError(
                f"{where}, column 'attribute': task {task.name!r} has no attribute {attribute_name!r} "
                f"(it has: {', '.join(task.attribute_names)})"
            )
        value = self._value(row, task, attribute_name)
        rater = _text(path, row, "rater", required=True).strip()
        kind = (_text(path, row, "kind", required=False) or self.default_kind).strip().lower()
        if kind not in ("human", "llm"):
            raise UserError(f"{where}, column 'kind': {kind!r} is neither 'human' nor 'llm'")
        if self.rater_kinds.setdefault(rater, kind) != kind:
            raise UserError(f"{where}, column 'kind': rater {rater!r} is already a {self.rater_kinds[rater]} rater")
        sample = _sample(str(where), row.get("sample")) if row.get("sample") not in (None, "") else 0
        if kind == "human" and not self._person_answer(task, attribute_name, value):
            # a judge's x.5 is kept (Chiang & Lee App. D.2.1); a person answers on the scale's points
            points = task.attribute(attribute_name).scale.points
            raise UserError(
                f"{where}, column 'value': {row.get('value')} for human rater {rater!r}; a person's rating on "
                f"this scale is one of its points ({', '.join(f'{p:g}' for p in points)})"
            )
        if kind == "human" and sample != 0:
            # samples are a judge's repeated readings (Chiang & Lee §3.2); a human's second rating of
            # an item would be a second annotator under one name, and the reports would keep only one
            raise UserError(
                f"{where}, column 'sample': {sample} for human rater {rater!r}; a human has one rating "
                "of an item (sample 0), samples 1, 2, ... are a judge's"
            )
        return attribute_name, rater, kind, sample, value

    def _value(self, row: dict[str, Any], task: Task, attribute_name: str) -> float:
        # a file repeats a handful of values: each is read once per question (a protocol call a row was most of
        # the validation's time); a value that fails is read again in its row, for the row's sentence
        raw = row.get("value")
        key = (task.name, attribute_name, type(raw), raw)
        cached = self.values.get(key)
        if cached is None:
            cached = _value(self.path, row, task.attribute(attribute_name))
            if len(self.values) < 100_000:
                self.values[key] = cached
        return cached

    def _person_answer(self, task: Task, attribute_name: str, value: float) -> bool:
        key = (task.name, attribute_name, value)
        if key not in self.person_answers:
            question = task.attribute(attribute_name)
            self.person_answers[key] = protocols.of(question).is_person_answer(question, value)
        return self.person_answers[key]

    def _rater_id(self, rating: _Rating) -> int:
        if rating.rater not in self.rater_ids:
            study, name = self.study, rating.rater
            rater = study.human(name) if rating.kind == "human" else study.judge(name, {"imported_from": name})
            self.rater_ids[name] = rater.id
        return self.rater_ids[rating.rater]

    def _check_repeats(self, conn: sqlite3.Connection, ratings: list[_Rating]) -> None:
        """A second rating of the same (item, question, rater, sample) in the file: the rows seen so far are keys
        of a temporary table (SQLite's, spilled to disk when large), not a dict that grows with the file."""
        keyed = [(r.item_key, r.attribute, r.rater, r.sample, r.row) for r in ratings]
        try:
            conn.executemany(f"INSERT INTO {_SEEN} VALUES (?, ?, ?, ?, ?)", keyed)
        except sqlite3.IntegrityError:
            for rating, key in zip(ratings, keyed, strict=True):
                first = conn.execute(
                    f"SELECT row FROM {_SEEN} WHERE item_key = ? AND attribute = ? AND rater = ? AND sample = ?",
                    key[:4],
                ).fetchone()
                if first is not None and first[0] != rating.row:
                    raise UserError(
                        f"{self.path}, row {rating.row}: a second rating of item {rating.item_id!r}, "
                        f"{rating.attribute}, by {rating.rater} (sample {rating.sample}), first in row {first[0]}"
                    ) from None
            raise

    def _write(self, conn: sqlite3.Connection, ratings: list[_Rating]) -> None:
        existing = _stored(conn, sorted({r.item_key for r in ratings}))
        new: list[tuple[int, str, int, int, float]] = []
        for rating in ratings:
            rater_id = self._rater_id(rating)
            stored = existing.get((rating.item_key, rating.attribute, rater_id, rating.sample))
            if stored is not None:
                if stored != rating.value and self.conflict is None:
                    self.conflict = UserError(
                        f"{self.path}: {rating.rater} already rated item {rating.item_id!r} {rating.attribute} "
                        f"as {stored:g}, not {rating.value:g} (nothing was imported)"
                    )
                self.skipped += 1
                continue
            new.append((rating.item_key, rating.attribute, rater_id, rating.sample, rating.value))
        if self.conflict is None and new:
            insert_imported(conn, new, utc_now(), {"source": str(self.path)})
        self.added += len(new)


def _by_ids(conn: sqlite3.Connection, task: str, ids: list[str]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for at in range(0, len(ids), _IN_CHUNK):
        chunk = ids[at : at + _IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        found.extend(conn.execute(f"SELECT key, id FROM items WHERE task = ? AND id IN ({marks})", [task, *chunk]))
    return found


def _stored(conn: sqlite3.Connection, keys: list[int]) -> dict[tuple[int, str, int, int], float]:
    """The ratings in force of these items, as the row-by-row import read them: the latest not retracted and not
    a retest, per (item, question, rater, sample)."""
    stored: dict[tuple[int, str, int, int], float] = {}
    for at in range(0, len(keys), _IN_CHUNK):
        chunk = keys[at : at + _IN_CHUNK]
        marks = ",".join("?" * len(chunk))
        for item_key, attribute, rater_id, sample, value in conn.execute(
            "SELECT item_key, attribute, rater_id, sample, value FROM ratings WHERE item_key IN "
            f"({marks}) AND retracted = 0 AND retest_of IS NULL ORDER BY id",
            chunk,
        ):
            stored[(item_key, attribute, rater_id, sample)] = value
    return stored


def import_ratings(study: Study, path: str | Path, default_kind: str = "human") -> ImportResult:
    path = Path(path)
    columns, batches = stream_rows(path)
    missing = [c for c in RATING_COLUMNS if c not in columns]
    if missing:
        raise UserError(f"{path}: missing column {missing[0]!r} (ratings need: {', '.join(RATING_COLUMNS)})")
    known = (*RATING_COLUMNS, *OPTIONAL_RATING_COLUMNS, *IGNORED_RATING_COLUMNS)
    extra = [c for c in columns if c not in known]
    if extra:
        raise UserError(f"{path}: unknown column {extra[0]!r} (ratings use: {', '.join(known[:7])})")
    importer = _Importer(study, path, default_kind, {r.name: r.kind for r in study.raters()})
    importer.task_names = [t for (t,) in study._db.conn.execute("SELECT DISTINCT task FROM items ORDER BY task")]
    with write(study._db) as conn:
        conn.execute(
            f"CREATE TEMP TABLE {_SEEN.removeprefix('temp.')} (item_key INTEGER, attribute TEXT, rater TEXT, "
            "sample INTEGER, row INTEGER, PRIMARY KEY (item_key, attribute, rater, sample)) WITHOUT ROWID"
        )
        try:
            allowed = {*known, "_row"}
            for rows in batches:
                for row in rows:
                    if not allowed.issuperset(row):  # a JSON Lines row with a key the first rows did not have
                        unknown = next(c for c in row if c not in allowed)
                        raise UserError(f"{path}: unknown column {unknown!r} (ratings use: {', '.join(known[:7])})")
                importer.batch(conn, rows)
            if importer.conflict is not None:
                raise importer.conflict
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(f"DROP TABLE IF EXISTS {_SEEN}")
    return ImportResult(importer.added, importer.skipped)

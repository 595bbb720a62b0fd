"""`export --what wide` written as it is read (issue 35), its cells chosen by SQLite, not per rating in Python.

``io.wide_frame`` builds the long table as one dict per rating, every item with its texts, then pivots: 2.9 GB at
100k stories. Here the file is the same bytes, written a batch of items at a time:

- the columns: each (rater, question, presentation, sample) that has a rating in force (``RATINGS_IN_FORCE``: not
  undone, not a retest, a person's only under sample 0) -- one ``DISTINCT`` over the ratings -- and, for each, the first
  item (task, position) that has one: a walk of the items in order that stops at the first hit. A column's name is
  ``rater:question[:sample]``; the columns are in the order of their first rating in the long table (task, position,
  question, rater id, presentation, sample), as a pivot of the whole table gives them;
- the rows: one query over the items in order (no texts) with a correlated subquery per column that picks the
  cell's rating in force through the index of ratings by item: the newest (highest id) of the first of the column's
  (question, rater, presentation, sample) in the long table's order that the item has -- the pivot's "first" where two
  presentations (or two raters whose names collide) share a column.

The rows come as Python tuples of floats a batch at a time: no Python object per rating and no sort of the ratings
(the batches before merged two sorted cursors, one of the 1.6M ratings in force, in Python: 20.8-23.6 s at 100k
stories x 16 columns against 9.4-9.8 s now, interleaved at load 6, bench/RESULTS.md section 11 run 15). A column
whose first rating comes late costs a walk of the items before it (an index probe each: 0.12 s for all of 100k
items). A Parquet file (which cannot be appended to) is collected column-wise from the batches, without texts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import polars as pl

from tui_rater.domain.display import spreadsheet_safe
from tui_rater.store.outputs import write_output
from tui_rater.store.study import Study
from tui_rater.store.table_files import file_format

BATCH_ITEMS = 5_000
# SQLite allows 2,000 result columns a statement (SQLITE_MAX_COLUMN): the cells are read by statements of at most
# this many columns each, walking the items in the same order side by side
COLUMNS_PER_QUERY = 200

# a column's sort key is that of its first rating in the long table: (task, position, question, rater id,
# presentation, sample)
_ColumnKey = tuple[str, int, str, int, str, int]
# one (question, rater id, presentation, sample) with ratings in force: what the long table's rows are grouped by
_Combo = tuple[str, int, str, int]

_IN_FORCE = "r.retracted = 0 AND r.retest_of IS NULL"


def _column_name(rater: str, attribute: str, sample: int) -> str:
    return f"{rater}:{attribute}" if sample == 0 else f"{rater}:{attribute}:{sample}"


@dataclass
class _Column:
    name: str
    key: _ColumnKey
    combos: list[_Combo] = field(default_factory=list)


def _columns(conn: sqlite3.Connection, task: str | None) -> list[_Column]:
    task_only = " AND r.item_key IN (SELECT key FROM items WHERE task = ?)" if task else ""
    combos: list[_Combo] = conn.execute(
        f"""SELECT DISTINCT r.attribute, r.rater_id, r.presentation, r.sample FROM ratings r
            WHERE {_IN_FORCE} AND (r.sample = 0 OR r.rater_id NOT IN (SELECT id FROM raters WHERE kind = 'human'))
            {task_only}""",
        [task] if task else [],
    ).fetchall()
    names = dict(conn.execute("SELECT id, name FROM raters").fetchall())
    columns: dict[str, _Column] = {}
    for combo in sorted(combos):
        attribute, rater_id, presentation, sample = combo
        # the first item in the export's order with this combination in force: the walk stops at the first hit
        first = conn.execute(
            f"""SELECT i.task, i.position FROM items i WHERE {"i.task = ? AND" if task else ""}
                EXISTS (SELECT 1 FROM ratings r WHERE r.item_key = i.key AND r.attribute = ? AND r.rater_id = ?
                        AND r.presentation = ? AND r.sample = ? AND {_IN_FORCE})
                ORDER BY i.task, i.position LIMIT 1""",
            [*([task] if task else []), *combo],
        ).fetchone()
        key: _ColumnKey = (first[0], first[1], attribute, rater_id, presentation, sample)
        name = _column_name(names[rater_id], attribute, sample)
        column = columns.setdefault(name, _Column(name, key))
        column.key = min(column.key, key)
        column.combos.append(combo)  # in the long table's order within an item: ``combos`` is sorted
    return sorted(columns.values(), key=lambda c: c.key)


def wide_columns(conn: sqlite3.Connection, task: str | None) -> list[str]:
    """The rating columns in the order ``wide_frame``'s pivot gives them (first appearance in the long table)."""
    return [c.name for c in _columns(conn, task)]


def _cell(column: _Column) -> tuple[str, list[Any]]:
    """A correlated subquery for the column's cell of item ``i``, and its parameters."""
    if len(column.combos) == 1:
        return (
            f"""(SELECT r.value FROM ratings r WHERE r.item_key = i.key AND r.attribute = ? AND r.rater_id = ?
                 AND r.presentation = ? AND r.sample = ? AND {_IN_FORCE} ORDER BY r.id DESC LIMIT 1)""",
            list(column.combos[0]),
        )
    ranks = " ".join(
        "WHEN r.attribute = ? AND r.rater_id = ? AND r.presentation = ? AND r.sample = ? THEN ?" for _ in column.combos
    )
    attributes = sorted({c[0] for c in column.combos})
    params: list[Any] = [a for at, combo in enumerate(column.combos) for a in (*combo, at)]
    return (
        f"""(SELECT r.value FROM ratings r WHERE r.item_key = i.key
             AND r.attribute IN ({", ".join("?" * len(attributes))}) AND {_IN_FORCE} AND (CASE {ranks} END) IS NOT NULL
             ORDER BY (CASE {ranks} END), r.id DESC LIMIT 1)""",
        [*attributes, *params, *params],
    )


def _batches(
    conn: sqlite3.Connection, task: str | None, columns: list[_Column], multi_task: bool
) -> Iterator[pl.DataFrame]:
    where, task_params = ("WHERE i.task = ?", [task]) if task else ("", [])
    order = "ORDER BY i.task, i.position, i.key"
    cursors = [conn.execute(f"SELECT i.id, i.task, i.system FROM items i {where} {order}", task_params)]
    for start in range(0, len(columns), COLUMNS_PER_QUERY):
        cells = [_cell(c) for c in columns[start : start + COLUMNS_PER_QUERY]]
        sql = f"SELECT {', '.join(s for s, _ in cells)} FROM items i {where} {order}"
        cursors.append(conn.cursor().execute(sql, [p for _, ps in cells for p in ps] + task_params))
    schema: dict[str, Any] = {"id": pl.Utf8, **({"task": pl.Utf8} if multi_task else {}), "system": pl.Utf8}
    schema.update(dict.fromkeys((c.name for c in columns), pl.Float64))
    while heads := cursors[0].fetchmany(BATCH_ITEMS):
        values: list[list[Any]] = [list(c) for c in zip(*heads, strict=True)]
        if not multi_task:
            del values[1]
        for cursor in cursors[1:]:
            rows = cursor.fetchmany(BATCH_ITEMS)
            values.extend(list(c) for c in zip(*rows, strict=True))
        yield pl.DataFrame(dict(zip(schema, values, strict=True)), schema=schema)


def _safe_cells(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    changed = 0
    columns = []
    for series in frame.get_columns():
        if series.dtype == pl.Utf8:
            safe = series.map_elements(spreadsheet_safe, return_dtype=pl.Utf8, skip_nulls=True)
            changed += int((safe != series).sum() or 0)
            series = safe
        columns.append(series)
    return pl.DataFrame(columns), changed


def write_wide(study: Study, out: str | Path, task: str | None = None, *, raw: bool = False) -> tuple[int, int]:
    """Write the wide table to ``out`` as ``write_frame(wide_frame(...))`` would; (rows written, cells made
    spreadsheet-safe). Atomic and never over a study, as every export (``outputs.write_output``)."""
    out = Path(out)
    fmt = file_format(out)
    conn = study._db.conn
    if conn.in_transaction:  # a caller's own transaction: its snapshot (or its writes) are the export's
        return _write_wide(study, conn, out, fmt, task, raw)
    # one read transaction from the columns' choice to the last row: the file is the study at one moment, whatever
    # another process saves meanwhile (in WAL mode a reader's snapshot holds no lock that stops a writer)
    conn.execute("BEGIN")
    try:
        return _write_wide(study, conn, out, fmt, task, raw)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")  # nothing written: ends the snapshot


def _write_wide(
    study: Study, conn: sqlite3.Connection, out: Path, fmt: str, task: str | None, raw: bool
) -> tuple[int, int]:
    columns = _columns(conn, task)
    multi_task = task is None
    safe = fmt in ("csv", "tsv") and not raw
    names = ["id", *(["task"] if multi_task else []), "system", *(c.name for c in columns)]
    header = [spreadsheet_safe(n) for n in names] if safe else names
    counts = {"rows": 0, "changed": sum(a != b for a, b in zip(header, names, strict=True))}

    def write(path: Path) -> None:
        try:
            with path.open("wb") as handle:
                _write_batches(handle, path, fmt, _batches(conn, task, columns, multi_task), header, safe, counts)
        except pl.exceptions.PolarsError as exc:  # polars wraps some I/O failures (a full disk) in its own types
            raise OSError(f"{str(exc).splitlines()[0]}") from None

    write_output(out, write, study.path)
    return counts["rows"], counts["changed"]


def _write_batches(
    handle: IO[bytes],
    path: Path,
    fmt: str,
    batches: Iterator[pl.DataFrame],
    header: list[str],
    safe: bool,
    counts: dict[str, int],
) -> None:
    parquet: list[pl.DataFrame] = []
    first = True
    for batch in batches:
        frame = batch
        if safe:
            frame, changed = _safe_cells(frame)
            counts["changed"] += changed
        frame = frame.rename(dict(zip(frame.columns, header, strict=True)))
        counts["rows"] += frame.height
        if fmt in ("csv", "tsv"):
            frame.write_csv(handle, separator="\t" if fmt == "tsv" else ",", include_header=first)
        elif fmt == "jsonl":
            frame.write_ndjson(handle)
        else:
            parquet.append(frame)
        first = False
    if first:  # no items: the header alone, as an empty frame writes it
        empty = pl.DataFrame(schema=dict.fromkeys(header, pl.Utf8))
        if fmt in ("csv", "tsv"):
            empty.write_csv(handle, separator="\t" if fmt == "tsv" else ",")
        elif fmt == "jsonl":
            empty.write_ndjson(handle)
        else:
            parquet.append(empty)
    if fmt == "parquet":
        handle.close()
        pl.concat(parquet, rechunk=False).write_parquet(path)

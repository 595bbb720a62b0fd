"""`export --what wide` written as it is read (issue 35): a batch of items at a time, never the whole study.

``io.wide_frame`` builds the long table as one dict per rating, every item with its texts, then pivots: 2.9 GB at
100k stories. Here the items (key, id, task, system: no texts) and the ratings in force are read by two cursors in
the same order (task, position, question, rater, presentation, sample), merged a batch of items at a time into a
frame of the final columns, and each frame is appended to the file. The bytes are ``wide_frame``'s: the columns in
the order a pivot of the whole table gives (each column where it first appears), an item's first rating where two
presentations share a column, and a Parquet file (which cannot be appended to) collected column-wise from the
batches, without texts.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import polars as pl

from tui_rater.domain.display import spreadsheet_safe
from tui_rater.store.outputs import write_output
from tui_rater.store.study import RATINGS_IN_FORCE, Study
from tui_rater.store.table_files import file_format

BATCH_ITEMS = 5_000

# a column's sort key is that of its first rating in the long table: (task, position, question, rater id,
# presentation, sample)
_ColumnKey = tuple[str, int, str, int, str, int]


def _column_name(rater: str, attribute: str, sample: int) -> str:
    return f"{rater}:{attribute}" if sample == 0 else f"{rater}:{attribute}:{sample}"


def wide_columns(conn: sqlite3.Connection, task: str | None) -> list[str]:
    """The rating columns in the order ``wide_frame``'s pivot gives them (first appearance in the long table)."""
    first: dict[str, _ColumnKey] = {}
    for item_task, position, attribute, rater_id, rater, presentation, sample in conn.execute(
        f"""SELECT i.task, min(i.position), r.attribute, ra.id, ra.name, r.presentation, r.sample
            FROM {RATINGS_IN_FORCE} {"WHERE i.task = ?" if task else ""}
            GROUP BY i.task, r.attribute, ra.id, r.presentation, r.sample""",
        [task] if task else [],
    ):
        name = _column_name(rater, attribute, sample)
        key = (item_task, position, attribute, rater_id, presentation, sample)
        if name not in first or key < first[name]:
            first[name] = key
    return sorted(first, key=first.__getitem__)


def _batches(
    conn: sqlite3.Connection, task: str | None, columns: list[str], multi_task: bool
) -> Iterator[pl.DataFrame]:
    where, params = ("WHERE i.task = ?", [task]) if task else ("", [])
    items = conn.execute(
        f"SELECT i.key, i.id, i.task, i.system FROM items i {where} ORDER BY i.task, i.position", params
    )
    ratings = conn.cursor().execute(
        f"""SELECT i.key, ra.name, r.attribute, r.sample, r.value FROM {RATINGS_IN_FORCE} {where}
            ORDER BY i.task, i.position, r.attribute, ra.id, r.presentation, r.sample""",
        params,
    )
    index = {name: at for at, name in enumerate(columns)}
    pending = ratings.fetchone()
    while chunk := items.fetchmany(BATCH_ITEMS):
        row_of = {key: at for at, (key, *_rest) in enumerate(chunk)}
        values: list[list[float | None]] = [[None] * len(chunk) for _ in columns]
        seen: set[tuple[int, int]] = set()
        while pending is not None and pending[0] in row_of:
            item_key, rater, attribute, sample, value = pending
            column, row = index[_column_name(rater, attribute, sample)], row_of[item_key]
            if (column, row) not in seen:  # the pivot's "first": the earlier presentation of a pair
                seen.add((column, row))
                values[column][row] = value
            pending = ratings.fetchone()
        frame: dict[str, Any] = {"id": [r[1] for r in chunk]}
        if multi_task:
            frame["task"] = [r[2] for r in chunk]
        frame["system"] = [r[3] for r in chunk]
        schema: dict[str, Any] = {name: pl.Utf8 for name in frame}
        frame.update(zip(columns, values, strict=True))
        schema.update(dict.fromkeys(columns, pl.Float64))
        yield pl.DataFrame(frame, schema=schema)


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
    columns = wide_columns(conn, task)
    multi_task = task is None
    safe = fmt in ("csv", "tsv") and not raw
    names = ["id", *(["task"] if multi_task else []), "system", *columns]
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

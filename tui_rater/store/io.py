"""Import and export through polars: items, long ratings, wide ratings.

Every problem in an input file ends in one ``UserError`` naming the file, the row and the
column, raised before anything is written: an import is validated whole, then written in
one transaction, so a bad file leaves the study unchanged.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import polars as pl

from tui_rater.domain.display import spreadsheet_safe
from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Task
from tui_rater.store.item_rows import GOLD_PREFIX, ItemColumns  # noqa: F401 -- GOLD_PREFIX: io's name before
from tui_rater.store.outputs import write_output
from tui_rater.store.study import Study
from tui_rater.store.table_files import (  # noqa: F401 -- io's names before the split, for its callers
    FORMATS,
    IGNORED_RATING_COLUMNS,
    MAX_FIELD_CHARS,
    MAX_SAMPLE,
    OPTIONAL_ITEM_COLUMNS,
    OPTIONAL_RATING_COLUMNS,
    RATING_COLUMNS,
    ImportResult,
    _read_parquet,
    _sample,
    _text,
    _value,
    file_format,
    json_row,
)

# --- reading --------------------------------------------------------------------------------


def read_rows(path: str | Path) -> tuple[list[str], list[dict[str, Any]]]:
    """Read a table file into (columns, rows); rows are dicts with a 1-based ``_row``."""
    path = Path(path)
    fmt = file_format(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    if not data.strip():
        raise UserError(f"{path} is empty")
    if fmt == "parquet":
        frame = _read_parquet(path, data)
        columns = frame.columns
        rows = frame.to_dicts()
    else:
        text = _decode(path, data)
        if fmt == "jsonl":
            columns, rows = _read_jsonl(path, text)
        else:
            frame = _read_csv(path, text, "\t" if fmt == "tsv" else ",")
            columns, rows = frame.columns, frame.to_dicts()
    if not rows:
        raise UserError(f"{path} has a header but no rows")
    for number, row in enumerate(rows, 1):
        row["_row"] = number
    return list(columns), rows


def _decode(path: Path, data: bytes) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UserError(
            f"{path}, line {line}: the file is not valid UTF-8 (byte {exc.start}); save it as UTF-8"
        ) from None
    return text.removeprefix("\ufeff")


def _read_csv(path: Path, text: str, separator: str) -> pl.DataFrame:
    try:
        frame = pl.read_csv(io.StringIO(text), separator=separator, infer_schema=False, raise_if_empty=True)
    except pl.exceptions.NoDataError:
        raise UserError(f"{path} is empty") from None
    except (pl.exceptions.ComputeError, pl.exceptions.PolarsError) as exc:
        first = str(exc).strip().splitlines()[0]
        raise UserError(f"{path}: cannot read it as {'TSV' if separator == chr(9) else 'CSV'} ({first})") from None
    duplicated = [c for c in frame.columns if c.endswith("_duplicated_0")]
    if duplicated:
        raise UserError(f"{path}: the header names column {duplicated[0].removesuffix('_duplicated_0')!r} twice")
    return frame


def _read_jsonl(path: Path, text: str) -> tuple[list[str], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    columns: dict[str, None] = {}
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        row = json_row(path, line_no, line)
        rows.append(row)
        columns.update(dict.fromkeys(row))
    return list(columns), rows


def parse_mapping(pairs: list[str] | None) -> dict[str, str]:
    """``--map story=text`` -> {"story": "text"}: the task's name = the file's column."""
    mapping = {}
    for pair in pairs or []:
        name, sep, column = pair.partition("=")
        if not sep or not name.strip() or not column.strip():
            raise UserError(f"--map expects NAME=COLUMN (e.g. story=text), got {pair!r}")
        mapping[name.strip()] = column.strip()
    return mapping


# --- items ----------------------------------------------------------------------------------


def import_items(
    study: Study, path: str | Path, task: Task, mapping: dict[str, str] | None = None, ignore_extra: bool = False
) -> ImportResult:
    from tui_rater.store.item_import import add_checked_items, check_items  # it imports this module

    checked = check_items(Path(path), task, mapping or {}, ignore_extra)
    return ImportResult(*add_checked_items(study, checked, source=str(path)))


def prepare_items(
    path: str | Path, task: Task, mapping: dict[str, str] | None = None, ignore_extra: bool = False
) -> list[dict[str, Any]]:
    """Read and validate an items file without touching any study (rows ready for ``add_items``)."""
    path = Path(path)
    columns, rows = read_rows(path)
    plan = ItemColumns(path, columns, task, mapping or {}, ignore_extra)
    items: list[dict[str, Any]] = []
    seen_ids: dict[str, int] = {}
    for row in rows:
        item = plan.item(row)
        key = plan.key(item)
        if key in seen_ids:
            raise plan.duplicate(item, row["_row"], seen_ids[key])
        seen_ids[key] = row["_row"]
        items.append(item)
    return items


# --- ratings --------------------------------------------------------------------------------


def import_ratings(study: Study, path: str | Path, default_kind: str = "human") -> ImportResult:
    """Validate and write a ratings file in batches, in one transaction (``store/rating_import.py``)."""
    from tui_rater.store.rating_import import import_ratings as import_in_batches

    return import_in_batches(study, path, default_kind)


# --- export ---------------------------------------------------------------------------------


def items_frame(study: Study, task: str | None = None) -> pl.DataFrame:
    items = study.items(task)
    field_names: list[str] = []
    for name in dict.fromkeys(i.task for i in items):
        field_names.extend(f for f in study.task(name).fields if f not in field_names)
    multi_task = len({i.task for i in items}) > 1 or task is None
    records = []
    for item in items:
        record: dict[str, str | None] = {"id": item.id}
        if multi_task:
            record["task"] = item.task
        record["system"] = item.system
        record.update({name: item.fields.get(name) for name in field_names})
        records.append(record)
    schema = {
        "id": pl.Utf8,
        **({"task": pl.Utf8} if multi_task else {}),
        "system": pl.Utf8,
        **{name: pl.Utf8 for name in field_names},
    }
    return pl.DataFrame(records, schema=schema)


def ratings_frame(study: Study, task: str | None = None) -> pl.DataFrame:
    schema = {
        "item": pl.Utf8,
        "task": pl.Utf8,
        "system": pl.Utf8,
        "rater": pl.Utf8,
        "kind": pl.Utf8,
        "attribute": pl.Utf8,
        "sample": pl.Int64,
        "value": pl.Float64,
        "raw": pl.Utf8,
        "parse_status": pl.Utf8,
        "seconds": pl.Float64,
        "created_at": pl.Utf8,
    }
    rows = [{name: r[name] for name in schema} for r in study.current_ratings(task)]
    return pl.DataFrame(rows, schema=schema)


def wide_frame(study: Study, task: str | None = None) -> pl.DataFrame:
    long = ratings_frame(study, task)
    base = items_frame(study, task).select(["id", *(["task"] if task is None else []), "system"])
    if long.is_empty():
        return base
    long = long.with_columns(
        pl.when(pl.col("sample") == 0)
        .then(pl.col("rater") + ":" + pl.col("attribute"))
        .otherwise(pl.col("rater") + ":" + pl.col("attribute") + ":" + pl.col("sample").cast(pl.Utf8))
        .alias("column")
    )
    keys = ["item", "task"]
    wide = long.pivot(on="column", index=keys, values="value", aggregate_function="first")
    base = base.rename({"id": "item"})
    if "task" not in base.columns:
        wide = wide.drop("task")
        keys = ["item"]
    return base.join(wide, on=keys, how="left").rename({"item": "id"})


def spreadsheet_safe_frame(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """The frame with every text cell and column name that a spreadsheet would run as a formula
    written with a leading ``'`` (``display.spreadsheet_safe``), and how many were changed."""
    changed = 0
    names = []
    for name in frame.columns:
        safe = spreadsheet_safe(name)
        changed += safe != name
        names.append(safe)
    columns = []
    for series in frame.get_columns():
        if series.dtype == pl.Utf8:
            safe_series = series.map_elements(spreadsheet_safe, return_dtype=pl.Utf8, skip_nulls=True)
            changed += int((safe_series != series).sum() or 0)
            series = safe_series
        columns.append(series)
    return pl.DataFrame(columns).rename(dict(zip(frame.columns, names))) if frame.columns else frame, changed


def write_frame(frame: pl.DataFrame, out: str | Path, like: str | Path | None = None, *, raw: bool = False) -> int:
    """Write an export atomically, with the permissions of ``like`` (the study file); never over a
    study or any SQLite file (``outputs.write_output``). CSV and TSV cells that a spreadsheet would
    run as formulas get a leading ``'`` unless ``raw``; returns how many did."""
    out = Path(out)
    fmt = file_format(out)
    changed = 0
    if fmt in ("csv", "tsv") and not raw:
        frame, changed = spreadsheet_safe_frame(frame)

    def write(path: Path) -> None:
        try:
            if fmt == "csv":
                frame.write_csv(path)
            elif fmt == "tsv":
                frame.write_csv(path, separator="\t")
            elif fmt == "jsonl":
                frame.write_ndjson(path)
            else:
                frame.write_parquet(path)
        except pl.exceptions.PolarsError as exc:  # polars wraps some I/O failures (a full disk) in its own types
            raise OSError(f"{str(exc).splitlines()[0]}") from None

    write_output(out, write, like)
    return changed

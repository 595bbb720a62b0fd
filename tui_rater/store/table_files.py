"""What every reader of a table file shares (``io`` for items and exports, ``rating_import`` and ``row_stream``
for ratings): the formats, the limits, and a cell read as text, a rating value or a sample number, each problem one
sentence naming the file, the row and the column. A module of its own so that the batched rating import does not
import ``io`` (which hands ``import_ratings`` to it)."""

from __future__ import annotations

import io
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, SupportsFloat, SupportsIndex, overload

import polars as pl

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Attribute

FORMATS = {".csv": "csv", ".tsv": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
MAX_FIELD_CHARS = 100_000  # a story fragment is < 150 words; 100k characters is surely a mistake
OPTIONAL_ITEM_COLUMNS = ("id", "system")
RATING_COLUMNS = ("item", "rater", "attribute", "value")
OPTIONAL_RATING_COLUMNS = ("kind", "sample", "task")
# columns `export --what ratings` writes, so an export can be imported again
IGNORED_RATING_COLUMNS = ("system", "raw", "parse_status", "seconds", "created_at")


def file_format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise UserError(f"{path}: unknown file type {path.suffix or '(none)'!r}; use .csv, .tsv, .jsonl or .parquet")
    return fmt


def json_row(path: Path, line_no: int, line: str) -> dict[str, Any]:
    """One line of a JSON Lines file as a row, or one sentence naming the line (the whole-file reader in ``io`` and
    the streaming one in ``row_stream`` both read lines through here)."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise UserError(f"{path}, line {line_no}: not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise UserError(f"{path}, line {line_no}: the JSON is nested too deeply to be a row") from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise UserError(f"{path}, line {line_no}: cannot read a value ({str(exc).split(';')[0]})") from None
    if not isinstance(row, dict):
        raise UserError(f"{path}, line {line_no}: each line must be a JSON object")
    if "_row" in row:  # the readers number the rows under this key: the line's own value would be lost
        raise UserError(
            f"{path}, line {line_no}: the key '_row' is the name tui-rater numbers rows with; rename that key"
        )
    if _SURROGATE_ESCAPE.search(line):  # a pair's halves are joined by ``json.loads``; one alone is no character
        try:
            json.dumps(row, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise UserError(
                f"{path}, line {line_no}: a \\u escape names half of a UTF-16 surrogate pair, not a character; "
                "write the character itself or both halves"
            ) from None
    return row


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _read_parquet(path: Path, data: bytes) -> pl.DataFrame:
    try:
        return pl.read_parquet(io.BytesIO(data))
    except Exception as exc:  # polars raises several types for a damaged file
        raise parquet_error(path, exc) from None


def parquet_error(path: Path, exc: Exception) -> UserError:
    """The one sentence for a file polars cannot read as Parquet."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return UserError(f"{path}: cannot read it as Parquet ({first})")


@overload
def _text(path: Path, row: dict[str, Any], column: str, required: Literal[True]) -> str: ...
@overload
def _text(path: Path, row: dict[str, Any], column: str, required: bool) -> str | None: ...
def _text(path: Path, row: dict[str, Any], column: str, required: bool) -> str | None:
    # called four times a row of an import (1.6M rows at 100k items): the row's place is written out only for
    # the sentence of a row that fails, not formatted on every call (a fifth of import-ratings' time)
    value = row.get(column)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        if required:
            raise UserError(f"{_where(path, row, column)}: the value is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise UserError(f"{_where(path, row, column)}: expected text, found {type(value).__name__} {value!r:.40}")
    value = str(value)
    if required and not value.strip():
        raise UserError(f"{_where(path, row, column)}: the value is empty")
    if len(value) > MAX_FIELD_CHARS:
        raise UserError(
            f"{_where(path, row, column)}: the text has {len(value):,} characters, "
            f"more than the limit of {MAX_FIELD_CHARS:,}"
        )
    return value


def _where(path: Path, row: dict[str, Any], column: str) -> str:
    return f"{path}, row {row['_row']}, column {column!r}"


@dataclass
class ImportResult:
    added: int
    skipped: int


def _value(path: Path, row: dict[str, Any], attribute: Attribute, column: str = "value") -> float:
    raw = row.get("value")
    scale = attribute.scale
    where = f"{path}, row {row['_row']}, column {column!r}"
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        raise UserError(f"{where}: the value is missing")
    if isinstance(raw, str):  # a choice may be written as its key ("A")
        known = protocols.of(attribute).value_from_text(attribute, raw)
        if known is not None:
            return known
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"{where}: {str(raw)[:40]!r} is not a number") from None
    if not scale.contains(value):
        raise UserError(f"{where}: {raw} is off the scale ({scale.describe()})")
    return value


MAX_SAMPLE = 1_000_000  # samples are numbered 0, 1, ... per question: a larger number is a mistake


def _sample(where: str, raw: object) -> int:
    """The ``sample`` column: a whole number from 0 to MAX_SAMPLE (not inf, not 2**70, not true)."""
    if raw is None or raw == "":
        return 0
    try:
        if isinstance(raw, bool) or not isinstance(raw, (str, bytes, SupportsFloat, SupportsIndex)):
            raise ValueError  # float() would raise TypeError: the same answer
        number = float(raw)
        if not number.is_integer() or not 0 <= number <= MAX_SAMPLE:  # inf and nan fail here too
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        raise UserError(
            f"{where}, column 'sample': {str(raw)[:40]!r} is not a whole number from 0 to {MAX_SAMPLE:,}"
        ) from None
    return int(number)

"""A table file read in batches of rows, in memory independent of the file's length (issue 35).

``io.read_rows`` holds the whole file three times (its bytes, its text, a dict per row): right for an items
file, whose texts are kept anyway, and wrong for a ratings file of 1.6M rows (3.2 GB at 100k stories). Here the
file is checked as UTF-8 in 1 MB pieces, then CSV/TSV are parsed by polars a few megabytes of whole records at a
time (``csv_pieces``: its streaming scan held 1.7 times the file) and JSON Lines a line at a time; the errors are
``read_rows``' sentences. A Parquet file is read a slice of rows at a time through polars' lazy scan, which decodes
only the row groups a slice touches (held whole, an 8M-row ratings file took 501 MB; sliced, 77 MB, as 2M rows did).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl

from tui_rater.domain.errors import UserError
from tui_rater.store.csv_pieces import frames, read_header
from tui_rater.store.table_files import file_format, json_row, parquet_error

BATCH_ROWS = 5_000
_PIECE = 1 << 20


def stream_rows(path: str | Path, batch_rows: int = BATCH_ROWS) -> tuple[list[str], Iterator[list[dict[str, Any]]]]:
    """(columns, batches of rows): rows are dicts with a 1-based ``_row``, as ``read_rows`` gives them.

    The file's encoding and header are checked before this returns; a problem further down is raised (a
    ``UserError``) by the batch that meets it, so a caller writing as it reads must do so in one transaction.
    For JSON Lines the columns are those of the first batch; a later row with another key is refused there.
    """
    path = Path(path)
    fmt = file_format(path)
    _check_file(path, fmt)
    if fmt == "parquet":
        return _parquet(path, batch_rows)
    if fmt == "jsonl":
        return _jsonl(path, batch_rows)
    separator = "\t" if fmt == "tsv" else ","
    try:
        columns, header, offset = read_header(path, separator)
    except pl.exceptions.NoDataError:
        raise UserError(f"{path} is empty") from None
    except pl.exceptions.PolarsError as exc:
        raise _csv_error(path, separator, exc) from None
    duplicated = [c for c in columns if c.endswith("_duplicated_0")]
    if duplicated:
        raise UserError(f"{path}: the header names column {duplicated[0].removesuffix('_duplicated_0')!r} twice")
    return columns, _csv_batches(path, header, offset, separator, batch_rows)


def _check_file(path: Path, fmt: str) -> None:
    """``read_rows``' checks without holding the file: it exists, is not blank, and (text) is UTF-8."""
    if path.exists() and not path.is_file() and not path.is_dir():
        # a named pipe gives its bytes once: the second of the import's reads would wait forever for a writer
        raise UserError(
            f"{path} is not a regular file (a pipe or a device): the import reads it more than once; "
            "save it to a file first"
        )
    try:
        with path.open("rb") as handle:
            blank = True
            carried = b""
            offset = lines = 0
            while piece := handle.read(_PIECE):
                blank = blank and not piece.strip()
                if fmt != "parquet":
                    carried = _check_utf8(path, carried + piece, offset - len(carried), lines)
                offset += len(piece)
                lines += piece.count(b"\n")
            if carried:
                _check_utf8(path, carried, offset - len(carried), lines - carried.count(b"\n"), final=True)
    except FileNotFoundError:
        raise UserError(f"{path} does not exist") from None
    except IsADirectoryError:
        raise UserError(f"{path} is a directory, not a file") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    if blank:
        raise UserError(f"{path} is empty")


def _check_utf8(path: Path, data: bytes, start: int, lines_before: int, final: bool = False) -> bytes:
    """Check ``data`` (from byte ``start``); return an incomplete character at its end, to be read with the next
    piece. ``lines_before``: the newlines before ``start``."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not final and exc.end == len(data) and len(data) - exc.start < 4:
            return data[exc.start :]
        line = lines_before + data[: exc.start].count(b"\n") + 1
        raise UserError(
            f"{path}, line {line}: the file is not valid UTF-8 (byte {start + exc.start}); save it as UTF-8"
        ) from None
    return b""


def _csv_error(path: Path, separator: str, exc: Exception) -> UserError:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return UserError(f"{path}: cannot read it as {'TSV' if separator == chr(9) else 'CSV'} ({first})")


def _numbered(path: Path, batches: Iterator[list[dict[str, Any]]]) -> Iterator[list[dict[str, Any]]]:
    number = 0
    for rows in batches:
        for row in rows:
            number += 1
            row["_row"] = number
        if rows:
            yield rows
    if number == 0:
        raise UserError(f"{path} has a header but no rows")


def _csv_batches(
    path: Path, header: bytes, offset: int, separator: str, batch_rows: int
) -> Iterator[list[dict[str, Any]]]:
    def batches() -> Iterator[list[dict[str, Any]]]:
        try:
            for frame in frames(path, header, offset, separator):
                for at in range(0, frame.height, batch_rows):
                    yield frame.slice(at, batch_rows).to_dicts()
        except pl.exceptions.PolarsError as exc:
            raise _csv_error(path, separator, exc) from None

    return _numbered(path, batches())


def _parquet(path: Path, batch_rows: int) -> tuple[list[str], Iterator[list[dict[str, Any]]]]:
    """The columns from the file's schema, its row count from its metadata, then each batch a slice of its own
    (8M rows of ratings in 5,000-row slices: 4.5 s against 5.7 s read whole, as the rows are made either way)."""
    # Each slice opens the file again (read whole, it was read once): a file replaced or rewritten meanwhile would
    # give the later batches another file's rows (a pipeline saving the next version under the same name), so the
    # file's identity is taken first and checked after every slice.
    identity = _identity(path)
    scan = pl.scan_parquet(path, glob=False, hive_partitioning=False)  # a name with `*` or `[` is a name
    try:
        columns = list(scan.collect_schema().names())
        total = int(scan.select(pl.len()).collect().item())
    except Exception as exc:  # polars raises several types for a damaged file
        raise parquet_error(path, exc) from None

    def batches() -> Iterator[list[dict[str, Any]]]:
        for start in range(0, total, batch_rows):
            try:
                frame = scan.slice(start, batch_rows).collect()
            except Exception as exc:
                _check_unchanged(path, identity)  # a changed file's own sentence, not the damage it seems
                raise parquet_error(path, exc) from None
            _check_unchanged(path, identity)
            yield frame.to_dicts()

    return columns, _numbered(path, batches())


def _identity(path: Path) -> tuple[int, int, int, int]:
    try:
        stat = path.stat()
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror}") from None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns


def _check_unchanged(path: Path, identity: tuple[int, int, int, int]) -> None:
    try:
        same = _identity(path) == identity
    except UserError:
        same = False  # removed or renamed away
    if not same:
        raise UserError(f"{path} was replaced or changed while it was being read; import it again")


def _jsonl(path: Path, batch_rows: int) -> tuple[list[str], Iterator[list[dict[str, Any]]]]:
    lines = _jsonl_rows(path)
    first: list[dict[str, Any]] = []
    columns: dict[str, None] = {}
    for row in lines:
        first.append(row)
        columns.update(dict.fromkeys(row))
        if len(first) == batch_rows:
            break

    def batches() -> Iterator[list[dict[str, Any]]]:
        yield first
        rows: list[dict[str, Any]] = []
        for row in lines:
            rows.append(row)
            if len(rows) == batch_rows:
                yield rows
                rows = []
        yield rows

    return list(columns), _numbered(path, batches())


def _jsonl_rows(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8", newline="") as handle:
        for line_no, line in enumerate(handle, 1):
            if line_no == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            yield json_row(path, line_no, line)

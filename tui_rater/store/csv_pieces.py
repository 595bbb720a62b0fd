"""A CSV or TSV file parsed by polars a few megabytes at a time, cut between records (issue 35 item 3).

polars' own streaming scan (``scan_csv(...).collect_batches``) holds about 1.7 times the file in memory by the end
(measured with polars 2.1: 160 MB of anonymous memory for a 92 MB file, however fast the batches are taken), so a
file is read here in pieces of ``PIECE`` bytes, each cut after its last newline outside a quoted field and parsed by
``pl.read_csv`` with the header's columns: the same parser, options and cells as reading the file whole.

Where a record ends is found by following the quotes as RFC 4180 (and polars' parser) reads them: a quote opens a
quoted field only at the start of a field, and inside one a doubled quote is a quote of the text. This is written
here because no library offers the cut alone; jumping from quote to quote keeps it to a ``bytes.find`` per quote.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl

PIECE = 4 << 20
_QUOTE = b'"'


def _quoted(data: bytes, separator: bytes) -> list[tuple[int, int]]:
    """The quoted fields of ``data`` (which starts a record) as [open, close) byte ranges; one left open at the end
    closes at ``len(data)``."""
    regions: list[tuple[int, int]] = []
    at = data.find(_QUOTE)
    while at != -1:
        before = data[at - 1 : at] if at else b"\n"
        if before not in (separator, b"\n", b"\r"):  # a quote inside an unquoted field is text
            at = data.find(_QUOTE, at + 1)
            continue
        close = at + 1
        while (close := data.find(_QUOTE, close)) != -1 and data[close + 1 : close + 2] == _QUOTE:
            close += 2  # a doubled quote: text
        if close == -1:  # the field goes on in the next piece
            regions.append((at, len(data)))
            break
        regions.append((at, close))
        at = data.find(_QUOTE, close + 1)
    return regions


def record_end(data: bytes, separator: bytes, *, first: bool = False) -> int:
    """The index just past the last newline of ``data`` that ends a record (``first``: the first one), or 0;
    ``data`` starts a record."""
    regions = _quoted(data, separator)
    if first:
        end = data.find(b"\n")
        for start, stop in regions:
            if end == -1 or end < start:
                break
            if end < stop:  # inside this quoted field: take the first newline after it
                end = data.find(b"\n", stop)
        return end + 1
    end = data.rfind(b"\n")
    for start, stop in reversed(regions):
        if end == -1 or end > stop:
            break
        if end > start:  # inside this quoted field: take the last newline before it
            end = data.rfind(b"\n", 0, start)
    return end + 1


def pieces(handle: BinaryIO, separator: bytes, piece: int = PIECE) -> Iterator[bytes]:
    """The file's bytes from where ``handle`` stands, in runs of whole records (the last one as it ends)."""
    carried = b""
    while chunk := handle.read(piece):
        data = carried + chunk
        cut = record_end(data, separator)
        if cut:
            yield data[:cut]
            carried = data[cut:]
        else:  # a record longer than a piece: read on
            carried = data
    if carried:
        yield carried


def read_header(path: Path, separator: str) -> tuple[list[str], bytes, int]:
    """The header's column names (as ``pl.read_csv`` names them), its bytes, and the byte offset of the first
    record."""
    with path.open("rb") as handle:
        first = next(pieces(handle, separator.encode()), b"")
    bom = 3 if first.startswith(b"\xef\xbb\xbf") else 0
    first = first[bom:]
    cut = record_end(first, separator.encode(), first=True) or len(first)
    header = first[:cut] if first[:cut].endswith(b"\n") else first[:cut] + b"\n"
    frame = pl.read_csv(io.BytesIO(header), separator=separator, infer_schema=False, raise_if_empty=True)
    return list(frame.columns), header, bom + cut


def frames(path: Path, header: bytes, offset: int, separator: str, piece: int = PIECE) -> Iterator[pl.DataFrame]:
    """The records after ``offset`` as frames of text columns, a piece at a time: each piece is parsed after the
    header, as the parser met its records when it read the file whole (the same columns, the same sentences)."""
    with path.open("rb") as handle:
        handle.seek(offset)
        for data in pieces(handle, separator.encode(), piece):
            yield pl.read_csv(io.BytesIO(header + data), separator=separator, infer_schema=False)

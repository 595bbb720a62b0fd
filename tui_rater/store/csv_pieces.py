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
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import polars as pl

PIECE = 4 << 20


def _quoted(data: bytes, separator: bytes) -> list[tuple[int, int]]:
    """The quoted fields of ``data`` (which starts a record) as [open, close) byte ranges; one left open at the end
    closes at ``len(data)``.

    A quote opens a field only at a field's start (after a separator or a line break): elsewhere it is text. polars'
    parser then toggles on every quote of the field: ``"ab"c"d<newline>e"`` is one field (``abcd<newline>e``), its
    newline inside quotes -- a closing quote followed by text, not by a separator or a newline, leaves the field
    open to a later quote in it, which quotes again; a doubled quote is two toggles. One regular expression
    (possessive: no backtracking) finds the fields in C, not a Python step per quote."""
    regions: list[tuple[int, int]] = []
    # every field found starts at a quote: the search starts at the first one (a file without quotes, as a ratings
    # file is, costs one memchr a piece, not the expression tried at each of its 4M positions: 12 % of an import)
    first = data.find(b'"')
    if first == -1:
        return regions
    for field in _fields(separator).finditer(data, first):
        if field.group(1) is None:  # the field goes on in the next piece
            regions.append((field.start(), len(data)))
            break
        regions.append((field.start(), field.end() - 1))
    return regions


def _fields(separator: bytes) -> re.Pattern[bytes]:
    pattern = _FIELDS.get(separator)
    if pattern is None:
        sep = re.escape(separator)
        # at a field's start: open quote, quoted text, then (close, unquoted text, open again, quoted text)*, then
        # the close (group 1) or the end of the data
        pattern = _FIELDS[separator] = re.compile(
            rb"(?:^|(?<=[" + sep + rb'\n\r]))"[^"]*+(?:"[^"' + sep + rb'\n]*+"[^"]*+)*+(?:(")|\Z)'
        )
    return pattern


_FIELDS: dict[bytes, re.Pattern[bytes]] = {}


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
    size = piece
    while chunk := handle.read(size):
        data = carried + chunk
        cut = record_end(data, separator)
        if cut:
            yield data[:cut]
            carried, size = data[cut:], piece
        else:  # a record longer than a piece: read on, as much again (its bytes scanned a few times, not once a piece)
            carried, size = data, max(piece, len(data))
    if carried:
        yield carried


def read_header(path: Path, separator: str) -> tuple[list[str], bytes, int]:
    """The header's column names (as ``pl.read_csv`` names them), its bytes, and the byte offset of the first
    record."""
    with path.open("rb") as handle:
        start = 3 if handle.read(3) == b"\xef\xbb\xbf" else 0
        start += _blank_lines(handle, start)
        handle.seek(start)
        first = next(pieces(handle, separator.encode()), b"")
    cut = record_end(first, separator.encode(), first=True) or len(first)
    header = first[:cut] if first[:cut].endswith(b"\n") else first[:cut] + b"\n"
    frame = pl.read_csv(io.BytesIO(header), separator=separator, infer_schema=False, raise_if_empty=True)
    return list(frame.columns), header, start + cut


_BLANK_LINES = re.compile(rb"(?:\r?\n)*")


def _blank_lines(handle: BinaryIO, start: int) -> int:
    """How many bytes of empty lines (LF or CRLF) there are from ``start``: polars skips them before the header
    when it reads the file whole, and so does the header read here."""
    skipped = 0
    while True:
        handle.seek(start + skipped)
        data = handle.read(PIECE)
        match = _BLANK_LINES.match(data)  # it matches the empty string: never None
        blank = match.end() if match else 0
        skipped += blank
        if blank == 0 or blank < len(data) - 1:  # a line with text (a lone CR at the end: read it again whole)
            return skipped


def frames(path: Path, header: bytes, offset: int, separator: str, piece: int = PIECE) -> Iterator[pl.DataFrame]:
    """The records after ``offset`` as frames of text columns, a piece at a time: each piece is parsed after the
    header, as the parser met its records when it read the file whole (the same columns, the same sentences)."""
    with path.open("rb") as handle:
        handle.seek(offset)
        for data in pieces(handle, separator.encode(), piece):
            yield pl.read_csv(io.BytesIO(header + data), separator=separator, infer_schema=False)

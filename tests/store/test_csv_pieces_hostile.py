"""CSV files the piece-wise reader (``store/csv_pieces.py``, issue 35 item 3) must read as polars reads them whole
(the items import and ``import-ratings`` before the rewrite): empty lines before the header, and a quoted field
whose quotes are not doubled around a newline, cut at a piece's end."""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tui_rater.store.csv_pieces import PIECE, frames, read_header


def _stories(db: Path) -> dict[str, str]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return {i: json.loads(f)["story"] for i, f in conn.execute("SELECT id, fields FROM items")}


@pytest.mark.parametrize("blank", ["\n", "\r\n\n", "\ufeff\n\n"])
def test_empty_lines_before_the_header_are_skipped_as_polars_skips_them(tmp_path, cli, blank):
    """polars reading a file whole skips empty lines before the header; the items import and ``import-ratings``
    before the rewrite read such a file, and the header read alone said "is empty"."""
    items = tmp_path / "items.csv"
    items.write_bytes(f"{blank}id,prompt,story\ns1,P,Story one.\ns2,P,Story two.\n".encode())
    db = tmp_path / "study.db"
    code, out, err = cli("import", items, "--task", "story", "--db", db)
    assert (code, err) == (0, "")
    assert "2 new items" in out
    assert _stories(db) == {"s1": "Story one.", "s2": "Story two."}
    ratings = tmp_path / "ratings.csv"
    ratings.write_bytes(f"{blank}item,rater,attribute,value\ns1,ann,likability,3\ns2,ann,likability,4\n".encode())
    code, out, err = cli("import-ratings", ratings, "--db", db)
    assert (code, err) == (0, "")
    assert "2 new ratings" in out
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert sorted(conn.execute("SELECT value FROM ratings")) == [(3.0,), (4.0,)]
    # the header read alone names the columns polars names reading the whole file
    columns, _header, _offset = read_header(items, ",")
    assert columns == pl.read_csv(items, infer_schema=False).columns == ["id", "prompt", "story"]


@pytest.mark.parametrize(
    "record",
    [
        '"She said "no"\nand left."',  # quotes not doubled: polars quotes again at the third one
        '"She said "no"\r\nand "left"."',
        '"a"b"c\n,d"',
        '"a"\r"b\n"',
    ],
)
def test_a_field_quoted_again_is_cut_where_polars_reads_a_record_end(tmp_path, record):
    """Pieces of every size from 1 byte: the records polars reads from the whole file, where a closing quote
    followed by text leaves a later quote of the field to quote again (a newline there is inside the field)."""
    source = tmp_path / "quoted.csv"
    source.write_bytes(f"id,story\nx,before\ny,{record}\nz,after\n".encode())
    whole = pl.read_csv(source, infer_schema=False)
    assert whole.height == 3  # polars reads the record as one row
    for piece in range(1, len(record) + 12):
        columns, header, offset = read_header(source, ",")
        assert columns == whole.columns
        assert pl.concat(list(frames(source, header, offset, ",", piece))).equals(whole), piece


def test_unescaped_quotes_around_a_newline_at_the_4mb_cut_import_as_before(tmp_path, cli):
    """A story with quotes not doubled around a newline (``"She said "no"<newline>and left."``), the newline the
    last one before the first 4 MB piece ends: the rewrite cut the record there and refused the file ("could not
    parse"); it was imported whole before, and polars reads it whole."""
    header = b"id,prompt,story\n"
    special = b's_q,P,"She said "no"\nand left."\n'
    inner = special.index(b"\n")
    rows: list[bytes] = []
    at, i = len(header), 0
    target = len(header) + PIECE - 3  # the story's newline, 3 bytes before the first piece ends
    while at + 100 + inner < target:
        rows.append(b"s%d,P,Story %d told once%s.\n" % (i, i, b"." * 60))
        at, i = at + len(rows[-1]), i + 1
    rows.append(b"pad,P,%s\n" % (b"x" * (target - at - inner - 7)))
    at += len(rows[-1])
    assert at + inner < len(header) + PIECE <= at + len(special)  # the record spans the piece's end
    rows += [special, *(b"t%d,P,After %d.\n" % (j, j) for j in range(5))]
    source = tmp_path / "quotes.csv"
    source.write_bytes(header + b"".join(rows))
    db = tmp_path / "study.db"
    code, _out, err = cli("import", source, "--task", "story", "--db", db)
    assert (code, err) == (0, "")
    whole = pl.read_csv(io.BytesIO(source.read_bytes()), infer_schema=False)
    stories = _stories(db)
    assert len(stories) == whole.height == i + 7
    assert stories["s_q"] == "She said no\nand left." == whole.filter(pl.col("id") == "s_q")["story"].item()
    assert stories["t4"] == "After 4."


@pytest.mark.parametrize("separator", [",", "\t"])
def test_random_quoting_reads_as_polars_reads_the_whole_file(tmp_path, separator):
    """Seeded random files of quotes (doubled, stray, quoted again), separators, LF, CRLF and lone CR, after
    empty lines or a byte-order mark: wherever polars reads the whole file, pieces of every size read the same."""
    import random

    rng = random.Random(35)
    alphabet = ["\r", "\t", "a", "b", ",", ",", '"', '"', "\n", "\n", "\r\n", 'x"y']
    source = tmp_path / "random.csv"
    checked = 0
    for _ in range(120):
        body = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14)))
        start = rng.choice(["", "", "\ufeff", "\n", "\r\n\n"])
        data = f"{start}h{separator}k\n{body}".encode()
        source.write_bytes(data)
        try:
            whole = pl.read_csv(io.BytesIO(data), separator=separator, infer_schema=False, raise_if_empty=True)
        except pl.exceptions.PolarsError:
            continue  # polars refuses it whole: the pieces' refusal is another test's
        checked += 1
        for piece in range(1, len(data) + 1):
            columns, header, offset = read_header(source, separator)
            read = list(frames(source, header, offset, separator, piece))
            got = pl.concat(read) if read else whole.clear()
            assert (columns, got.rows()) == (whole.columns, whole.rows()), (data, piece)
    assert checked > 40


def test_a_named_pipe_is_refused_in_one_sentence_not_waited_on(tmp_path):
    """The import reads its file several times (checks, duplicates, writes): a named pipe (``mkfifo items.csv``)
    gives its bytes once, and the second read waited forever for another writer. It is refused before any read."""
    import os
    import subprocess

    from tests.support import run_cli_process

    items = tmp_path / "items.csv"
    items.write_text("id,prompt,story\ns1,P,Story one.\n", encoding="utf-8")
    pipe = tmp_path / "pipe.csv"
    os.mkfifo(pipe)
    writer = subprocess.Popen(["sh", "-c", f"cat '{items}' > '{pipe}'"])  # the pipe's one writer
    try:
        done = run_cli_process("import", pipe, "--task", "story", "--db", tmp_path / "s.db", timeout=30)
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 2
    assert done.stderr == (
        f"tui-rater: error: {pipe} is not a regular file (a pipe or a device): the import reads it more than "
        "once; save it to a file first\n"
    )
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('{"id": "s1", "prompt": "P", "story": "half \\ud800 a pair"}', "line 2"),
        ('{"id": "\\uDC00", "prompt": "P", "story": "S"}', "line 2"),
        ('{"id": "s1", "prompt": "P", "story": "S", "gold_likability": "\\ud83d"}', "line 2"),
    ],
)
def test_a_json_escape_of_half_a_surrogate_pair_is_one_sentence(tmp_path, cli, line, where):
    """``\\ud800`` alone is valid JSON but no character: it crashed the import (exit 70, UnicodeEncodeError from
    the text's hash), before the rewrite and after. One sentence naming the line; no study is created."""
    source = tmp_path / "items.jsonl"
    source.write_text('{"id": "s0", "prompt": "P", "story": "A whole \\ud83d\\ude00 pair."}\n' + line + "\n")
    code, _out, err = cli("import", source, "--task", "story", "--db", tmp_path / "s.db")
    assert (code, err) == (
        2,
        f"tui-rater: error: {source}, {where}: a \\u escape names half of a UTF-16 surrogate pair, not a "
        "character; write the character itself or both halves\n",
    )
    assert not (tmp_path / "s.db").exists()
    source.write_text('{"id": "s0", "prompt": "P", "story": "A whole \\ud83d\\ude00 pair."}\n')
    code, _out, err = cli("import", source, "--task", "story", "--db", tmp_path / "s.db")
    assert (code, err) == (0, "")
    assert _stories(tmp_path / "s.db") == {"s0": "A whole \U0001f600 pair."}


@pytest.mark.parametrize("at", [2, 5_003])
@pytest.mark.parametrize("ignore_extra", [False, True])
def test_a_json_lines_key_named_row_is_one_sentence_wherever_it_is(tmp_path, cli, at, ignore_extra):
    """The readers number rows under ``_row``: a line of the file's own with that key was refused as an unknown
    column in the first 5,000 lines (or silently dropped with --ignore-extra) and imported, its value replaced,
    after them. Now one sentence naming the line, for items and ratings alike; nothing is written."""
    source = tmp_path / "items.jsonl"
    lines = [json.dumps({"id": f"s{i}", "prompt": "P", "story": "S"}) for i in range(1, at + 2)]
    lines[at - 1] = json.dumps({"id": f"s{at}", "prompt": "P", "story": "S", "_row": 7})
    source.write_text("\n".join(lines) + "\n")
    extra = ["--ignore-extra"] if ignore_extra else []
    code, _out, err = cli("import", source, "--task", "story", "--db", tmp_path / "s.db", *extra)
    assert (code, err) == (
        2,
        f"tui-rater: error: {source}, line {at}: the key '_row' is the name tui-rater numbers rows with; rename "
        "that key\n",
    )
    assert not (tmp_path / "s.db").exists()
    ratings = tmp_path / "ratings.jsonl"
    ratings.write_text(json.dumps({"item": "s1", "rater": "ann", "attribute": "likability", "value": 3, "_row": 1}))
    code, _out, err = cli("import-ratings", ratings, "--db", tmp_path / "s.db")
    assert code == 2 and "line 1: the key '_row' is the name tui-rater numbers rows with" in err


@pytest.mark.parametrize("separator", [b",", b"\t"])
def test_the_quoted_fields_are_found_from_the_first_quote_as_from_the_start(separator):
    """``_quoted`` starts its search at the first quote (a field it finds starts with one): the same fields as the
    expression run over the whole piece, on random pieces of text, separators, quotes and line breaks."""
    import random

    from tui_rater.store.csv_pieces import _fields, _quoted

    rng = random.Random(7)
    alphabet = [b"a", b"b", separator, b'"', b"\n", b"\r"]
    for _ in range(3000):
        data = b"".join(rng.choices(alphabet, weights=[6, 6, 3, 2, 2, 1], k=rng.randint(0, 40)))
        whole: list[tuple[int, int]] = []
        for found in _fields(separator).finditer(data):
            if found.group(1) is None:
                whole.append((found.start(), len(data)))
                break
            whole.append((found.start(), found.end() - 1))
        assert _quoted(data, separator) == whole, data

"""The items import read a batch at a time (``store/item_import.py``, issue 35 item 3) against the whole-file
reader it replaces in ``import`` (``io.prepare_items``, kept): the same stored rows and the same sentence for every
bad file, with batches of a few rows so that every problem falls past the first batch."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from tui_rater.domain.errors import UserError
from tui_rater.store.io import prepare_items, write_frame
from tui_rater.store.item_import import add_checked_items, check_items
from tui_rater.store.study import Study

BATCH = 4


def _rows(n: int) -> list[dict[str, str | None]]:
    return [
        {
            "id": f"s{i}" if i % 5 else None,  # every fifth row without an id: keyed by its text and system
            "system": ["gpt2", "human", " "][i % 3],
            "prompt": f"Prompt {i % 7}",
            "story": f"Story {i}, told once.",
            "gold_likability": str(1 + i % 5) if i % 6 == 0 else None,
        }
        for i in range(n)
    ]


def _table_dump(path: Path) -> list[tuple[object, ...]]:
    """Every row of the items and gold tables, without the time of writing."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        items = conn.execute(
            "SELECT key, id, task, system, fields, position, content_hash, source FROM items ORDER BY key"
        ).fetchall()
        gold = conn.execute("SELECT * FROM gold ORDER BY item_key, attribute").fetchall()
    return [*items, ("gold",), *gold]


def _both(tmp_path: Path, source: Path, *, seed: list[dict[str, str | None]] | None = None) -> None:
    """Import ``source`` with each reader into a study holding ``seed``; the stored rows are the same."""
    dumps = []
    for name in ("whole", "stream"):
        study = Study.open(tmp_path / f"{name}.db")
        task = study.task("story")
        if seed:
            study.add_items(task, seed, source="seed")
        if name == "whole":
            result = study.add_items(task, prepare_items(source, task), source=str(source))
        else:
            result = add_checked_items(study, check_items(source, task, {}, False, batch_rows=BATCH), str(source))
        study.close()
        dumps.append((result, _table_dump(tmp_path / f"{name}.db")))
    assert dumps[0] == dumps[1]
    assert dumps[1][0][0] > 0


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "parquet"])
def test_streamed_import_stores_what_the_whole_file_import_stored(tmp_path, ext):
    rows = _rows(30)
    source = tmp_path / f"items.{ext}"
    write_frame(pl.DataFrame(rows), source, raw=True)
    # some already present (skipped), one more at the end of the task (positions carry on from it)
    seed = [{**row, "system": (row["system"] or "").strip() or None} for row in rows[3:9]]  # as the import reads
    seed.append({"id": "other", "system": None, "prompt": "P", "story": "Stored before."})
    _both(tmp_path, source, seed=seed)


def test_a_jsonl_key_first_seen_past_the_first_batch_is_a_column(tmp_path):
    """The whole-file reader's columns are every key of every line: ``system`` met only on line 10 is stored, and
    an unknown key met only there is refused, as before."""
    lines = [f'{{"id": "j{i}", "prompt": "P", "story": "S {i}"}}' for i in range(12)]
    lines[9] = '{"id": "j9", "prompt": "P", "story": "S 9", "system": "late"}'
    source = tmp_path / "late.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _both(tmp_path, source)
    with contextlib.closing(sqlite3.connect(tmp_path / "stream.db")) as conn:
        assert conn.execute("SELECT system FROM items WHERE id = 'j9'").fetchone() == ("late",)
    lines[10] = '{"id": "j10", "prompt": "P", "story": "S 10", "colour": "red"}'
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert _sentences(tmp_path, source)[1] == (
        f"{source}: unknown column 'colour' for task 'story' (expected id, system, prompt, story; "
        "--ignore-extra skips others)"
    )


CSV_HEAD = "id,system,prompt,story\n"
GOOD = "".join(f"s{i},gpt2,P,Story {i}.\n" for i in range(12))
GOLD = "id,prompt,story,gold_likability\n" + GOOD.replace("gpt2,", "")[:-1].replace("\n", ",3\n") + ",9\n"


def _sentences(tmp_path: Path, source: Path) -> tuple[str, str]:
    """The sentence of each reader on ``source`` (none writes anything: both only check)."""
    study = Study.open(tmp_path / "sentences.db")
    task = study.task("story")
    said = []
    for check in (lambda: prepare_items(source, task), lambda: check_items(source, task, {}, False, batch_rows=BATCH)):
        with pytest.raises(UserError) as caught:
            check()
        said.append(str(caught.value))
    study.close()
    return said[0], said[1]


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("empty story past the first batch", CSV_HEAD + GOOD + "s99,gpt2,P,\n", "row 13, column 'story': the value"),
        ("duplicate id, first in batch 1", CSV_HEAD + GOOD + "s1,gpt2,P,Other.\n", "row 13: duplicate id 's1', first "),
        ("duplicate text without id", CSV_HEAD + ",x,P,T.\n" + GOOD + ",x,P,T.\n", "row 14: duplicate item (same text"),
        ("bad gold at the end", GOLD, "row 12, column 'gold_likability': 9 is off the scale"),
        ("ragged row after a bad row", CSV_HEAD + ",g,P,\n" + GOOD + "s50,a,b,c,d,e\n", "cannot read it as CSV"),
        ("bad header and a ragged row", "id,prompt,tale\n" + GOOD + "x,y\n", "cannot read it as CSV"),
        ("bad header", "id,prompt,tale\n" + GOOD.replace("gpt2,", ""), "missing column 'story'"),
        ("header only", CSV_HEAD, "has a header but no rows"),
    ],
)
def test_streamed_import_says_the_whole_file_sentence(tmp_path, name, text, expected):
    source = tmp_path / "bad.csv"
    source.write_text(text, encoding="utf-8")
    whole, stream = _sentences(tmp_path, source)
    assert stream == whole, name
    assert expected in stream


@pytest.mark.parametrize(
    ("first", "last", "expected"),
    [
        (None, '{"id": "j99", "prompt": "P", "story": ""}', "row 13, column 'story': the value is empty"),
        (None, '{"id": "j2", "prompt": "P", "story": "again"}', "row 13: duplicate id 'j2', first seen in row 3"),
        (None, "{not json", "line 13: not valid JSON"),
        # a bad JSON line anywhere is told before a bad row (the whole file was parsed first)
        ('{"id": "e", "prompt": "P", "story": " "}', "{not json", "line 14: not valid JSON"),
        ('{"id": "e", "prompt": "P", "story": " "}', '{"id": "z", "prompt": "P", "story": "Z"}', "row 1, column"),
    ],
)
def test_streamed_jsonl_says_the_whole_file_sentence(tmp_path, first, last, expected):
    lines = [f'{{"id": "j{i}", "prompt": "P", "story": "S {i}"}}' for i in range(12)]
    source = tmp_path / "bad.jsonl"
    source.write_text("\n".join([*([first] if first else []), *lines, last]) + "\n", encoding="utf-8")
    whole, stream = _sentences(tmp_path, source)
    assert stream == whole
    assert expected in stream


@pytest.mark.parametrize("separator", [",", "\t"])
def test_pieces_cut_between_records_as_polars_reads_the_whole_file(tmp_path, separator):
    """Pieces of a few bytes, cut anywhere a record can end and nowhere else: quoted newlines (LF and CRLF), doubled
    quotes, separators inside quotes, quotes inside an unquoted field, a blank line (a row of nulls), a byte-order
    mark, no final newline."""
    from tui_rater.store.csv_pieces import frames, read_header

    s = separator
    rows = [
        f'"i""d"{s}story\r\n',
        f'a{s}"one\nline two, ""quoted""\r\nand three"\n',
        f"b{s}plain{s[:0]}\n",
        f'c{s}half"quote"in text\n',
        f'"d{s}x"{s}"""starts with a quote"\n',
        "\n",
        f'e{s}"ends with ""a"" newline\n"\n',
        f'f{s}"last, unterminated line"',
    ]
    source = tmp_path / "quoted.csv"
    source.write_bytes(b"\xef\xbb\xbf" + "".join(rows).encode())
    whole = pl.read_csv(source, separator=separator, infer_schema=False)
    for piece in (1, 2, 3, 5, 8, 13, 1 << 20):
        columns, header, offset = read_header(source, separator)
        assert columns == whole.columns
        read = pl.concat(list(frames(source, header, offset, separator, piece)))
        assert read.equals(whole), piece


def test_a_parquet_file_named_like_a_glob_is_read_as_named(tmp_path):
    """polars' scan takes `*` and `[...]` as a pattern and `key=value/` folders as Hive columns; a file is its name."""
    from tui_rater.store.row_stream import stream_rows

    folder = tmp_path / "year=2024"
    folder.mkdir()
    source = folder / "items[1]*.parquet"
    pl.DataFrame(_rows(7)).write_parquet(source)
    (folder / "items1x.parquet").write_bytes(b"PAR1 not this one")  # what the pattern would also match
    columns, batches = stream_rows(source, batch_rows=3)
    assert columns == list(_rows(1)[0])
    rows = [row for batch in batches for row in batch]
    assert [row["id"] for row in rows] == [row["id"] for row in _rows(7)]
    assert [row["_row"] for row in rows] == list(range(1, 8))

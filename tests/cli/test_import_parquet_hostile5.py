"""Hostile Parquet files for the import read a slice of rows per batch (``row_stream._parquet``): the rows are those
of the file read whole, whatever its row groups and pages, and damage met past the first batch is the Parquet
sentence with the study left as it was."""

from __future__ import annotations

import contextlib
import random
import sqlite3
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tui_rater.domain.errors import UserError
from tui_rater.store.row_stream import stream_rows

N = 12_000


def _table() -> pa.Table:
    draw = random.Random(5)
    return pa.table(
        {
            "s": [draw.choice(["a", "bb", None, "ééé", "x" * 50, ""]) for _ in range(N)],
            "i": [draw.choice([1, 2, None, -5, 2**40]) for _ in range(N)],
            "l": [draw.choice([None, [], [1], [1, None, 3], list(range(20))]) for _ in range(N)],
            "st": [draw.choice([None, {"a": 1, "b": "x"}, {"a": None, "b": None}]) for _ in range(N)],
            "d": pa.array([draw.choice(["p", "q", None]) for _ in range(N)]).dictionary_encode(),
        }
    )


def _streamed(path: Path, batch_rows: int) -> tuple[list[str], list[dict]]:
    columns, batches = stream_rows(path, batch_rows)
    rows = [row for batch in batches for row in batch]
    assert [row.pop("_row") for row in rows] == list(range(1, len(rows) + 1))
    return columns, rows


@pytest.mark.parametrize("layout", ["uneven row groups", "small pages"])
def test_slices_are_the_file_read_whole(tmp_path, layout):
    path = tmp_path / "rows.parquet"
    table = _table()
    if layout == "uneven row groups":  # row groups of 1 to 3,000 rows: slices start and end inside them
        draw = random.Random(7)
        with pq.ParquetWriter(path, table.schema) as writer:
            at = 0
            while at < N:
                size = draw.randint(1, 3_000)
                writer.write_table(table.slice(at, size))
                at += size
    else:  # pages of a few hundred bytes inside row groups of 4,096 rows
        pq.write_table(table, path, data_page_size=512, row_group_size=4_096)
    whole = pl.read_parquet(path)
    for batch_rows in (1_000, 4_999, 5_000, 7_919):
        assert _streamed(path, batch_rows) == (whole.columns, whole.to_dicts())


def _damaged_ratings(path: Path, items: int) -> None:
    """30,000 ratings in row groups of 5,000, the fifth one's data overwritten (snappy: it cannot decode)."""
    rows = 30_000
    pq.write_table(
        pa.table(
            {
                "item": [f"i{i % items}" for i in range(rows)],
                "rater": [f"r{i // items}" for i in range(rows)],
                "attribute": ["grammaticality"] * rows,
                "value": [(i % 5) + 1 for i in range(rows)],
                "raw": [f"raw text {i}" for i in range(rows)],
            }
        ),
        path,
        row_group_size=5_000,
        compression="snappy",
    )
    chunk = pq.ParquetFile(path).metadata.row_group(4).column(4)  # the `raw` texts of rows 20,001-25,000
    data = bytearray(path.read_bytes())
    start = chunk.data_page_offset + 40
    data[start : start + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))


def test_damage_past_the_first_batch_leaves_the_study_untouched(tmp_path, cli):
    items = 7_000
    db, items_file, ratings = tmp_path / "s.db", tmp_path / "items.csv", tmp_path / "ratings.parquet"
    items_file.write_text("id,prompt,story\n" + "".join(f"i{i},p{i},s{i}\n" for i in range(items)))
    assert cli("import", items_file, "--task", "story", "--db", db)[0] == 0
    _damaged_ratings(ratings, items)
    columns, batches = stream_rows(ratings)  # the schema and the row count are whole: the damage is met later
    assert columns == ["item", "rater", "attribute", "value", "raw"]
    assert len(next(batches)) == 5_000
    with pytest.raises(UserError, match="cannot read it as Parquet"):
        for _rows in batches:
            pass

    code, out, err = cli("import-ratings", ratings, "--db", db)
    assert (code, out) == (2, "")
    assert f"{ratings}: cannot read it as Parquet (" in err and err.count("\n") == 1
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT count(*) FROM ratings").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM raters").fetchone() == (0,)


def _versioned(path: Path, version: str) -> None:
    """12,000 ratings by rater ``version``: two versions have the same layout, byte for byte but the rater's name."""
    frame = pl.DataFrame({"item": [f"i{i}" for i in range(N)], "rater": [version] * N, "value": [3] * N})
    frame.write_parquet(path, row_group_size=5_000, statistics=False)


@pytest.mark.parametrize("how", ["renamed over it", "rewritten in place"])
def test_a_file_replaced_while_it_is_read_is_refused_not_mixed(tmp_path, how):
    """Each slice opens the file again: without a check the batches after the first came from the new file (the
    ratings of two versions stored by one import)."""
    path = tmp_path / "ratings.parquet"
    _versioned(path, "v1")
    _columns, batches = stream_rows(path)
    assert {row["rater"] for row in next(batches)} == {"v1"}
    if how == "renamed over it":  # a pipeline saving its next version atomically
        _versioned(tmp_path / "next.parquet", "v2")
        (tmp_path / "next.parquet").replace(path)
    else:
        _versioned(path, "v2")
    with pytest.raises(UserError, match="was replaced or changed while it was being read; import it again"):
        for _rows in batches:
            pass

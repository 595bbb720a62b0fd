"""`export --what wide` written a batch of items at a time (issue 35): the same bytes as the whole-table pivot
(``io.wide_frame`` through polars' ``pivot`` and ``join``), without reading any item's texts."""

from __future__ import annotations

import polars as pl
import pytest

from tui_rater.store.io import import_items, import_ratings, wide_frame, write_frame
from tui_rater.store.study import Study
from tui_rater.store.wide_export import write_wide

STORIES = [
    {"id": "=a", "system": "human", "prompt": "P1", "story": "One."},
    {"id": "b", "system": "@gpt2", "prompt": "P1", "story": "Two."},
    {"id": "c", "system": None, "prompt": "P2", "story": "Three."},
    {"id": "d", "system": "human", "prompt": "P2", "story": "Four."},
]


@pytest.fixture
def study(tmp_path):
    study = Study.open(tmp_path / "s.db")
    write_frame(pl.DataFrame(STORIES), tmp_path / "i.csv", raw=True)
    import_items(study, tmp_path / "i.csv", study.task("story"))
    write_frame(pl.DataFrame([{"id": "b", "title": "T"}, {"id": "z", "title": "U"}]), tmp_path / "t.csv")
    import_items(study, tmp_path / "t.csv", study.task("title-fluency"))
    rows = [
        ("d", "story", "t1", "likability", "4", "human", 0),  # the judge's columns appear first at item =a
        ("=a", "story", "gpt", "relevance", "4.5", "llm", 1),
        ("=a", "story", "gpt", "relevance", "3", "llm", 0),
        ("b", "story", "t2", "likability", "2", "human", 0),
        ("b", "story", "t1", "grammaticality", "5", "human", 0),
        ("c", "story", "=cmd", "likability", "1", "human", 0),
        ("b", "title-fluency", "t1", "fluency", "2", "human", 0),
    ]
    ratings = pl.DataFrame(rows, schema=["item", "task", "rater", "attribute", "value", "kind", "sample"], orient="row")
    write_frame(ratings, tmp_path / "r.csv", raw=True)
    import_ratings(study, tmp_path / "r.csv")
    # a changed mind: the later rating is in force
    rater = study.human("t2")
    key = next(i.key for i in study.items("story") if i.id == "b")
    study.add_rating(key, "likability", rater.id, 5.0)
    return study


@pytest.mark.parametrize("ext", ["csv", "tsv", "jsonl", "parquet"])
@pytest.mark.parametrize("task", [None, "story", "title-fluency"])
@pytest.mark.parametrize("raw", [False, True])
def test_same_bytes_as_the_pivot(study, tmp_path, monkeypatch, ext, task, raw):
    monkeypatch.setattr("tui_rater.store.wide_export.BATCH_ITEMS", 2)  # several batches on a small study
    expected, got = tmp_path / f"expected.{ext}", tmp_path / f"got.{ext}"
    frame = wide_frame(study, task)
    changed = write_frame(frame, expected, raw=raw)
    assert write_wide(study, got, task, raw=raw) == (frame.height, changed)
    if ext == "parquet":
        assert pl.read_parquet(got).equals(pl.read_parquet(expected))
    else:
        assert got.read_bytes() == expected.read_bytes()


def test_no_text_is_read(study, tmp_path):
    statements: list[str] = []
    study._db.conn.set_trace_callback(statements.append)
    try:
        write_wide(study, tmp_path / "w.csv")
    finally:
        study._db.conn.set_trace_callback(None)
    assert statements
    assert not [s for s in statements if "fields" in s]


def test_the_cli_writes_it(study, tmp_path, cli):
    code, out, err = cli("export", "--what", "wide", "--out", tmp_path / "w.csv", "--db", study.path)
    assert code == 0, err
    assert "wrote 6 rows of wide" in out
    write_frame(wide_frame(study), tmp_path / "expected.csv")
    assert (tmp_path / "w.csv").read_bytes() == (tmp_path / "expected.csv").read_bytes()


def test_memory_does_not_hold_the_texts(tmp_path, cli):
    """300 stories of 20,000 characters (6 MB of text): the export's Python allocations stay well under the texts
    (the whole-table export held every item with its text)."""
    import tracemalloc

    db = tmp_path / "big.db"
    rows = [{"id": f"s{i}", "prompt": "P", "story": f"{i} " + "x" * 20_000} for i in range(300)]
    write_frame(pl.DataFrame(rows), tmp_path / "big.csv")
    assert cli("import", tmp_path / "big.csv", "--task", "story", "--db", db)[0] == 0
    ratings = [(f"s{i}", "ann", "likability", str(1 + i % 5)) for i in range(300)]
    write_frame(pl.DataFrame(ratings, schema=["item", "rater", "attribute", "value"], orient="row"), tmp_path / "r.csv")
    assert cli("import-ratings", tmp_path / "r.csv", "--db", db)[0] == 0
    tracemalloc.start()
    try:
        code, _, err = cli("export", "--what", "wide", "--out", tmp_path / "w.csv", "--db", db)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 0, err
    assert peak < 3_000_000, peak

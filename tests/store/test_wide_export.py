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


def test_a_rating_saved_by_another_process_during_the_export_is_in_all_of_it_or_none(study, tmp_path, monkeypatch):
    """The export is one snapshot of the study: a rating another process saves after the columns were chosen and
    before the rows are read (an annotator at work; a new rater's first rating is a new column) is not half in it
    -- its value in a row whose column was left out, or a rater's changed mind in one row and not another. The
    file is the export of the study as it was when the export began."""
    monkeypatch.setattr("tui_rater.store.wide_export.BATCH_ITEMS", 1)
    before = tmp_path / "before.csv"
    write_wide(study, before)
    other = Study.open(study.path)  # another connection: what another process's save goes through
    keys = {item.id: item.key for item in other.items("story")}
    import tui_rater.store.wide_export as wide

    chosen = wide._columns

    def columns_then_a_save(conn, task):  # type: ignore[no-untyped-def]
        found = chosen(conn, task)
        other.add_rating(keys["d"], "likability", other.human("t1").id, 1.0)  # t1 changes their mind
        other.add_rating(keys["=a"], "likability", other.human("late").id, 2.0)  # a new rater: a new column
        return found

    monkeypatch.setattr(wide, "_columns", columns_then_a_save)
    during = tmp_path / "during.csv"
    write_wide(study, during)
    assert during.read_bytes() == before.read_bytes()
    after = tmp_path / "after.csv"
    monkeypatch.setattr(wide, "_columns", chosen)
    write_wide(study, after)  # the saved ratings are there for the next export
    assert "late:likability" in after.read_text() and after.read_bytes() != before.read_bytes()

from __future__ import annotations

import polars as pl
import pytest

from tests.support import SAMPLE
from tui_rater.store.io import import_items, import_ratings, items_frame, ratings_frame, wide_frame, write_frame
from tui_rater.store.study import Study

STORY_ROWS = [
    {"id": "a", "system": "human", "prompt": "P1", "story": 'Line one.\nLine "two", with a comma.'},
    {"id": "b", "system": "gpt2", "prompt": "P1", "story": "Ünïcödé — and [bold red]markup[/] {braces} \x1b[31m."},
    {"id": "c", "system": "human", "prompt": "P2", "story": "   leading and trailing spaces   "},
]


def _write(frame: pl.DataFrame, path):
    write_frame(frame, path)
    return path


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet", "tsv"])
def test_round_trip_items(tmp_path, ext):
    source = _write(pl.DataFrame(STORY_ROWS), tmp_path / f"items.{ext}")
    study = Study.open(tmp_path / "s.db")
    result = import_items(study, source, study.task("story"))
    assert (result.added, result.skipped) == (3, 0)
    exported = items_frame(study, "story")
    assert exported.to_dicts() == STORY_ROWS  # exact text, byte for byte
    out = _write(exported, tmp_path / f"out.{ext}")
    if ext == "parquet":
        assert pl.read_parquet(out).equals(pl.DataFrame(STORY_ROWS))
    if ext == "csv":
        assert out.read_bytes() == source.read_bytes()
    # what was written imports again, unchanged, into another study
    again = Study.open(tmp_path / "again.db")
    assert import_items(again, out, again.task("story")).added == 3
    assert items_frame(again, "story").to_dicts() == STORY_ROWS


def test_reimport_adds_nothing_and_ids_default_to_content_hash(tmp_path):
    rows = [{"title": "Stocks fall"}, {"title": "Oil rises"}]
    source = _write(pl.DataFrame(rows), tmp_path / "titles.csv")
    study = Study.open(tmp_path / "s.db")
    assert import_items(study, source, study.task("title-fluency")).added == 2
    again = import_items(study, source, study.task("title-fluency"))
    assert (again.added, again.skipped) == (0, 2)
    ids = [i.id for i in study.items("title-fluency")]
    assert len(set(ids)) == 2 and all(len(i) == 12 for i in ids)


def test_column_mapping(tmp_path):
    source = _write(pl.DataFrame({"headline": ["A", "B"], "writer": ["x", "y"]}), tmp_path / "h.csv")
    study = Study.open(tmp_path / "s.db")
    import_items(study, source, study.task("title-fluency"), {"title": "headline", "system": "writer"})
    assert [(i.fields["title"], i.system) for i in study.items()] == [("A", "x"), ("B", "y")]


def test_ratings_round_trip_and_wide(tmp_path):
    study = Study.open(tmp_path / "s.db")
    import_items(study, _write(pl.DataFrame(STORY_ROWS), tmp_path / "i.csv"), study.task("story"))
    ratings = pl.DataFrame(
        {
            "item": ["a", "a", "b", "b"],
            "rater": ["t1", "t2", "t1", "gpt"],
            "attribute": ["likability"] * 4,
            "value": [4.0, 3.0, 2.0, 4.5],
            "kind": ["human", "human", "human", "llm"],
            "sample": [0, 0, 0, 1],
        }
    )
    source = _write(ratings, tmp_path / "r.csv")
    assert import_ratings(study, source).added == 4
    assert import_ratings(study, source).skipped == 4
    long = ratings_frame(study, "story")
    assert (
        long.select("item", "rater", "attribute", "value", "kind", "sample")
        .sort("item", "rater")
        .equals(ratings.sort("item", "rater"))
    )
    # an export of ratings imports again (its extra columns are known)
    exported = _write(long, tmp_path / "export.csv")
    assert import_ratings(study, exported).skipped == 4
    wide = wide_frame(study, "story")
    assert wide.filter(pl.col("id") == "a")["t1:likability"].item() == 4.0
    assert wide.filter(pl.col("id") == "b")["gpt:likability:1"].item() == 4.5
    assert wide.filter(pl.col("id") == "c")["t1:likability"].item() is None


def test_sample_hanna_ratings_import(tmp_path):
    study = Study.open(tmp_path / "s.db")
    import_items(study, SAMPLE / "hanna_items.csv", study.task("hanna"))
    assert import_ratings(study, SAMPLE / "hanna_human_ratings.csv").added == 3 * 6 * 96
    assert {r.name for r in study.raters("human")} == {"hanna-human-1", "hanna-human-2", "hanna-human-3"}


def test_choice_values_import_as_keys(tmp_path):
    study = Study.open(tmp_path / "s.db")
    rows = [{"id": "p1", "prompt": "P", "story_a": "A.", "story_b": "B."}]
    import_items(study, _write(pl.DataFrame(rows), tmp_path / "p.csv"), study.task("story-pairwise"))
    r = _write(
        pl.DataFrame({"item": ["p1"], "rater": ["h"], "attribute": ["preference"], "value": ["B"]}), tmp_path / "r.csv"
    )
    import_ratings(study, r)
    assert ratings_frame(study)["value"].to_list() == [1.0]

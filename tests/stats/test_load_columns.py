"""The report loads a task's ratings as columns a batch at a time (issue 35): the Python objects it holds while
loading do not grow with the study (1.6M rating tuples held at once were most of a 100k report's memory)."""

from __future__ import annotations

import tracemalloc

import polars as pl

from tests.stats.test_live_columns import _generated, _in_force_by_hand
from tui_rater.stats.sections.data import load_all
from tui_rater.store import rating_columns
from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study, content_hash


def _study(tmp_path, items: int) -> Study:
    study = Study.open(tmp_path / f"s{items}.db")
    conn, now = study._db.conn, utc_now()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO items (id, task, system, fields, position, content_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (f"i{i}", "story", "human" if i % 2 else "gpt2", "{}", i, content_hash("story", None, {"n": str(i)}), now)
            for i in range(items)
        ],
    )
    conn.execute("COMMIT")
    raters = [study.human(f"h{k}").id for k in range(3)] + [study.judge("j", {"m": 1}).id]
    keys = [k for (k,) in conn.execute("SELECT key FROM items")]
    questions = ("grammaticality", "cohesiveness", "likability", "relevance")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO ratings (item_key, attribute, rater_id, sample, value, created_at) VALUES (?, ?, ?, 0, ?, ?)",
        ((key, q, r, float(1 + (key + r) % 5), now) for key in keys for q in questions for r in raters),
    )
    conn.execute("COMMIT")
    return study


def _peak(study: Study) -> tuple[int, int]:
    tracemalloc.start()
    try:
        frame, _ = load_all(study, "story")
        return frame.height, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_loading_holds_a_batch_not_the_study(tmp_path):
    small_rows, small = _peak(_study(tmp_path, 1_000))
    large_rows, large = _peak(_study(tmp_path, 16_000))
    assert (small_rows, large_rows) == (16_000, 256_000)
    # 16x the ratings: the rows held as tuples at once grew ~16x; a batch of 50,000 at a time stays within ~5x
    assert large < 8 * small, (small, large)


def test_the_frame_holds_its_strings_as_categories(tmp_path):
    """The report's frame keeps its five string columns as categories (4 bytes a row, not a 16-byte string view:
    half of a 100k study's frame, held the whole report long), with the same strings in the same rows."""
    study = _study(tmp_path, 50)
    frame, readings = load_all(study, "story")
    by_text = rating_columns.ratings_in_force(study, "story")
    for column in ("system", "attribute", "rater", "kind", "presentation"):
        assert frame.schema[column] == pl.Categorical, column
        assert by_text.schema[column] == pl.Utf8, column
    assert frame.with_columns(pl.col(pl.Categorical).cast(pl.Utf8)).rows() == by_text.rows()
    assert readings.schema["rater"] == pl.Utf8  # a judge's readings: few rows, as text


def test_groups_too_wide_for_one_integer_are_sorted_by_their_columns(tmp_path):
    """The ratings in force are chosen by sorting each group as one integer; where its columns' spans do not fit in
    62 bits (a sample numbered 2**61) the columns are sorted instead: the same rows either way."""
    study = _generated(tmp_path, "story", 5)
    try:
        judge = study.judge("wide", {"m": 2}).id
        key = study.items("story")[0].key
        with write(study._db) as conn:
            for sample, value in ((2**61, 2.0), (0, 3.0), (2**61, 4.0)):  # the last of sample 2**61 is in force
                conn.execute(
                    "INSERT INTO ratings (item_key, attribute, rater_id, sample, value, created_at) "
                    "VALUES (?, 'relevance', ?, ?, ?, ?)",
                    [key, judge, sample, value, utc_now()],
                )
        expected = _in_force_by_hand(study, "story")
        assert any(row[6] == 2**61 and row[7] == 4.0 for row in expected)
        assert rating_columns.ratings_in_force(study, "story", readings=True).rows() == expected
    finally:
        study.close()

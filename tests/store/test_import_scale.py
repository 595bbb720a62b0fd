"""`import-ratings` without a `task` column costs work in proportion to the file, not to file x study (issue 35).

The work is counted, not timed: SQLite calls a progress handler every 1,000 virtual-machine instructions, so the
count is the statements' work, the same on a loaded machine. The row-by-row import looked each item up by ``id``
alone, which no index serves (a scan of every item per rating row): 4x the items and rows cost ~16x.
"""

from __future__ import annotations

import polars as pl

from tui_rater.store.io import import_items, import_ratings
from tui_rater.store.study import Study

QUESTIONS = ("grammaticality", "cohesiveness", "likability", "relevance")


def _study_and_ratings(tmp_path, n: int):
    items = tmp_path / f"items{n}.csv"
    pl.DataFrame(
        {"id": [f"s{i}" for i in range(n)], "prompt": ["P"] * n, "story": [f"story {i} " + "x" * 400 for i in range(n)]}
    ).write_csv(items)
    study = Study.open(tmp_path / f"s{n}.db")
    import_items(study, items, study.task("story"))
    ratings = tmp_path / f"ratings{n}.csv"
    rows = [(f"s{i}", question, str(1 + (i + j) % 5)) for i in range(n) for j, question in enumerate(QUESTIONS)]
    pl.DataFrame(rows, schema=["item", "attribute", "value"], orient="row").with_columns(rater=pl.lit("ann")).select(
        "item", "rater", "attribute", "value"
    ).write_csv(ratings)  # no `task` column
    return study, ratings


def _work(study: Study, ratings) -> int:
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    study._db.conn.set_progress_handler(count, 1_000)
    try:
        result = import_ratings(study, ratings)
    finally:
        study._db.conn.set_progress_handler(None, 0)
    assert result.added == 4 * int(str(ratings.stem).removeprefix("ratings"))
    return steps


def test_import_without_task_column_is_linear(tmp_path):
    small = _work(*_study_and_ratings(tmp_path, 300))
    large = _work(*_study_and_ratings(tmp_path, 1_200))
    # linear: 4x the rows and items -> ~4x the work (an index lookup adds a log factor); quadratic gives ~16x
    assert large / small < 6, (small, large)


def test_import_never_reads_the_texts(tmp_path):
    """A rating row needs its item's key, not its story: the old import decoded the whole item per row."""
    study, ratings = _study_and_ratings(tmp_path, 50)
    statements: list[str] = []
    study._db.conn.set_trace_callback(statements.append)
    try:
        assert import_ratings(study, ratings).added == 200
    finally:
        study._db.conn.set_trace_callback(None)
    assert statements
    assert not [s for s in statements if "fields" in s and "FROM items" in s]
